// llmc-absorb-mla: DeepSeek's multi-head latent attention (MLA) computed in the latent space.
//
// An MLA export caches per-head keys [nope | rope] and values, both expanded from one compressed
// latent per token by kv_b_proj (W_UK, W_UV) plus one rotary key shared by the heads; or (as
// transformers 5 exports it) caches the latent and the rotary key, and expands the whole cache
// through kv_b_proj every step. This pass caches the latent and the rotary key in one cache
// (past_key_values.N.latent, length-major [T, B, latent + rope], replacing the .key/.value pair)
// and replaces the attention by llmc.latent_attention, which folds W_UK into the query and W_UV
// into the output (scores = (q_nope · W_UK[h]) · latentᵀ + q_rope · ropeᵀ;
// out = (P · latent) · W_UV[h]); its kernel
// expands the cache instead when that is cheaper for a call (long prompts). W_UK and W_UV stay
// separate per-head factors unless the cost estimate says that multiplying W_UK into the query
// projection, or W_UV into the output projection, costs less per token. Every decision and the
// KV-cache bytes per token before and after are reported (llmc --print-stats).
//
// Runs after llmc-kv-cache-layout (caches are [T, B, H*D]) and before fusion (the attention is
// still matmul, scale, mask, softmax, matmul).
#include "AttentionSinks.h"
#include "LatentAttentionCost.h"
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCABSORBMLA
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::createValue;
using fusion::def;
using fusion::i64Constant;
using fusion::tensorType;

constexpr const char *kPass = "llmc-absorb-mla";

// The one op that reads `v` (once), or null.
Operation *onlyUser(Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; }

// `v`'s only reader when it is a transpose by `perm`: its result, else null.
Value transposedBy(Value v, ArrayRef<int64_t> perm) {
  auto t = dyn_cast_or_null<TransposeOp>(onlyUser(v));
  return t && t.getPerm() == perm ? t.getResult() : Value();
}

bool isAxis(int64_t axis, int64_t rank, int64_t want) { return axis == want || axis + rank == want; }

// The one op besides shape ops that reads `v` (once), or null: torch's exported attention measures
// the keys it reshapes.
Operation *onlyUserBesidesShapes(Value v) {
  Operation *found = nullptr;
  for (OpOperand &use : v.getUses()) {
    if (isa<ShapeOp>(use.getOwner()))
      continue;
    if (found)
      return nullptr;
    found = use.getOwner();
  }
  return found;
}

// Kᵀ [B, H, D, T] of keys `k` [B, H, T, D] as an export computes it: transpose(0,1,3,2), or
// reshape to [B*H, T, D] -> transpose(0,2,1) -> reshape (torch's scaled_dot_product_attention);
// null where `k` has another reader.
Value transposedKeysOf(Value k) {
  Operation *user = onlyUserBesidesShapes(k);
  if (auto t = dyn_cast_or_null<TransposeOp>(user))
    return t.getPerm() == ArrayRef<int64_t>{0, 1, 3, 2} ? t.getResult() : Value();
  auto merged = dyn_cast_or_null<ReshapeOp>(user);
  auto t = merged ? dyn_cast_or_null<TransposeOp>(onlyUser(merged.getResult())) : TransposeOp();
  auto split = t && t.getPerm() == ArrayRef<int64_t>{0, 2, 1} ? dyn_cast_or_null<ReshapeOp>(onlyUser(t.getResult()))
                                                             : ReshapeOp();
  if (!split)
    return {};
  auto in = tensorType(k), out = tensorType(split.getResult());
  if (tensorType(merged.getResult()).getRank() != 3 || out.getRank() != 4 || out.getDimSize(1) != in.getDimSize(1) ||
      out.getDimSize(2) != in.getDimSize(3))
    return {};
  return split.getResult();
}

// A product by a constant matrix: matmul(x, W) or a linear without epilogue. Gives x and W as
// [K, N] values (transposed when the linear has transB).
struct ConstantProduct {
  Value input;
  std::vector<float> weight; // [K, N], row-major
  int64_t k = 0, n = 0;
};

std::optional<ConstantProduct> constantProduct(Value v) {
  ConstantProduct p;
  Value w;
  bool transB = false;
  if (auto mm = def<MatMulOp>(v)) {
    p.input = mm.getLhs(), w = mm.getRhs();
  } else if (auto lin = def<LinearOp>(v)) {
    if (!fusion::isEmpty(lin.getBias()) || !fusion::isEmpty(lin.getGate()) || !fusion::isEmpty(lin.getResidual()) ||
        lin.getActivation() != "none")
      return std::nullopt;
    p.input = lin.getInput(), w = lin.getWeight(), transB = lin.getTransB() != 0;
  } else {
    return std::nullopt;
  }
  auto values = fusion::floatValues(w); // (f32, f16 or bf16: absorbed in f32, rounded once to the type)
  if (!values || tensorType(w).getRank() != 2 || !fusion::isFusedFloat(p.input))
    return std::nullopt;
  const int64_t rows = tensorType(w).getDimSize(0), cols = tensorType(w).getDimSize(1);
  p.k = transB ? cols : rows, p.n = transB ? rows : cols;
  p.weight.resize(values->size());
  for (int64_t r = 0; r < p.k; ++r)
    for (int64_t c = 0; c < p.n; ++c)
      p.weight[size_t(r * p.n + c)] = transB ? (*values)[size_t(c * p.k + r)] : (*values)[size_t(r * p.n + c)];
  return p;
}

// `v` = transpose(reshape(product, [B, S, H, width]), [0, 2, 1, 3]): a projection split into
// heads, heads-major. Gives the product and H.
std::optional<std::pair<ConstantProduct, int64_t>> headsOfProduct(Value v, int64_t width) {
  auto t = def<TransposeOp>(v);
  if (!t || t.getPerm() != ArrayRef<int64_t>{0, 2, 1, 3} || !t.getResult().hasOneUse())
    return std::nullopt;
  auto r = def<ReshapeOp>(t.getInput());
  if (!r || !r.getResult().hasOneUse())
    return std::nullopt;
  auto out = tensorType(r.getResult());
  if (out.getRank() != 4 || out.isDynamicDim(2) || out.getDimSize(3) != width)
    return std::nullopt;
  auto product = constantProduct(r.getInput());
  if (!product || !product->input.hasOneUse() || !r.getInput().hasOneUse())
    return std::nullopt;
  // The product's rows are [B, S] or [B, 1, S] (one latent head): splitting its last axis into
  // [H, width] is the only reshape to [B, S, H, width] that keeps the element order.
  auto in = tensorType(r.getInput());
  if (in.getRank() != 3 && !(in.getRank() == 4 && in.getDimSize(1) == 1))
    return std::nullopt;
  if (product->n != out.getDimSize(2) * width)
    return std::nullopt;
  return std::make_pair(std::move(*product), out.getDimSize(2));
}

struct CachePair {
  BlockArgument past;
  ConcatOp concat; // concat(past, fresh, axis 0), returned as the present
  unsigned result = 0;
  Value view; // the [B, H, T, D] view attention reads
  Value fresh4; // the new entries [B, H, S, D]
};

// A length-major past/present pair (llmc-kv-cache-layout's form) whose new entries come from
// `fresh4` [B, H, S, D].
std::optional<CachePair> cachePairOf(func::FuncOp func, Value fresh4) {
  Operation *user = onlyUser(fresh4);
  auto timeMajor = dyn_cast_or_null<TransposeOp>(user);
  if (!timeMajor || timeMajor.getPerm() != ArrayRef<int64_t>{2, 0, 1, 3})
    return std::nullopt;
  auto flat = dyn_cast_or_null<ReshapeOp>(onlyUser(timeMajor.getResult()));
  if (!flat || !flat.getResult().hasOneUse())
    return std::nullopt;
  auto concat = dyn_cast<ConcatOp>(*flat.getResult().getUsers().begin());
  if (!concat || concat.getInputs().size() != 2 || concat.getInputs()[1] != flat.getResult() ||
      !isAxis(concat.getAxis(), 3, 0))
    return std::nullopt;
  auto past = dyn_cast<BlockArgument>(concat.getInputs()[0]);
  if (!past || past.getOwner() != &func.getBody().front())
    return std::nullopt;
  CachePair pair{past, concat};
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  int returned = 0;
  for (OpOperand &use : concat.getResult().getUses()) {
    if (use.getOwner() == ret.getOperation()) {
      pair.result = use.getOperandNumber();
      ++returned;
    } else if (auto view = dyn_cast<ReshapeOp>(use.getOwner()); view && !pair.view) {
      auto headsMajor = dyn_cast_or_null<TransposeOp>(onlyUser(view.getResult()));
      if (!headsMajor || headsMajor.getPerm() != ArrayRef<int64_t>{1, 2, 0, 3})
        return std::nullopt;
      pair.view = headsMajor.getResult();
    } else {
      return std::nullopt;
    }
  }
  if (returned != 1 || !pair.view)
    return std::nullopt;
  // Besides the concatenation the past may only be measured along its length or batch.
  for (Operation *user : past.getUsers()) {
    if (user == concat.getOperation())
      continue;
    auto shape = dyn_cast<ShapeOp>(user);
    auto end = shape ? shape->getAttrOfType<IntegerAttr>("end") : IntegerAttr();
    if (!shape || !end || end.getInt() > 2 || end.getInt() < 0)
      return std::nullopt;
  }
  pair.fresh4 = fresh4;
  return pair;
}

// The pair whose present `view` (the [B, 1, T, D] that attention reads) is: where the export
// caches the latent and the rotated key themselves (transformers 5).
std::optional<CachePair> cachePairOfView(func::FuncOp func, Value view) {
  auto headsMajor = def<TransposeOp>(view);
  auto unflat = headsMajor && headsMajor.getPerm() == ArrayRef<int64_t>{1, 2, 0, 3} ? def<ReshapeOp>(headsMajor.getInput())
                                                                                    : ReshapeOp();
  auto concat = unflat ? def<ConcatOp>(unflat.getInput()) : ConcatOp();
  auto flat = concat && concat.getInputs().size() == 2 ? def<ReshapeOp>(concat.getInputs()[1]) : ReshapeOp();
  auto timeMajor = flat ? def<TransposeOp>(flat.getInput()) : TransposeOp();
  if (!timeMajor)
    return std::nullopt;
  auto pair = cachePairOf(func, timeMajor.getInput());
  if (!pair || pair->view != view)
    return std::nullopt;
  return pair;
}

// What the pass reports about one site.
struct Report {
  int64_t kvBefore = 0, kvAfter = 0; // KV-cache bytes per token
  std::string text;
};

// One MLA attention site, as the export computes it.
struct Site {
  Report report;
  int layer = -1;
  CachePair keys, values; // with latentCached, the latents' and the rotated keys'
  bool latentCached = false; // the export caches the latent (transformers 5), not the expanded keys
  Value latent;  // the new latents [B, 1, S, L]
  Value ropeKey; // the new rotated keys [B, 1, S, R]
  Value keysT;     // Kᵀ [B, H, n + R, T] that the scores read
  Value valueView; // V [B, H, T, v] that the weighted sum reads
  std::vector<float> wkv; // kv_b_proj [L, H * (nope + v)]
  int64_t heads = 0, nope = 0, rope = 0, v = 0, latent_ = 0;
  Value q;      // [B, H, S, nope + rope]
  Value mask;   // additive, or null
  Value sinks;  // the sinks' column [B, H, Sq, 1] (AttentionSinks.h), or null
  double scale = 1.0;
  MatMulOp scores, weighted;
};

// A scalar factor of `x`: mul(x, c) or mul(c, x) as `x`'s only reader; gives its result.
bool scaledBy(Value &x, double &scale) {
  auto mul = dyn_cast_or_null<MulOp>(onlyUser(x));
  auto c = mul ? fusion::scalarValue(fusion::other(mul, x)) : std::nullopt;
  if (!c)
    return false;
  scale *= *c, x = mul.getResult();
  return true;
}

// From Kᵀ to the weighted sum of the values: [q * c] · [Kᵀ * c] [* or / scale] [+ mask] ->
// softmax [-> where(is_nan(p), 0, p)] -> · V (torch's scaled_dot_product_attention scales q and
// Kᵀ by the root of the scale, and guards the probabilities of fully masked rows); or with
// GPT-OSS's sinks, the softmax of the scores and the sinks' column, sliced (HY V4).
bool matchScoresToOutput(Site &s) {
  Value kT = s.keysT;
  scaledBy(kT, s.scale);
  s.scores = dyn_cast_or_null<MatMulOp>(onlyUser(kT));
  if (!s.scores || s.scores.getRhs() != kT)
    return false;
  s.q = s.scores.getLhs();
  if (auto mul = def<MulOp>(s.q); mul && s.q.hasOneUse()) {
    for (int i = 0; i < 2; ++i)
      if (auto c = fusion::scalarValue(mul->getOperand(1 - i)); c && tensorType(mul->getOperand(i)) == tensorType(s.q)) {
        s.scale *= *c, s.q = mul->getOperand(i);
        break;
      }
  }
  auto qType = tensorType(s.q);
  if (qType.getRank() != 4 || qType.getDimSize(1) != s.heads || qType.getDimSize(3) != s.nope + s.rope)
    return false;
  Value x = s.scores.getResult();
  auto next = [&] { return onlyUser(x); };
  Operation *op = next();
  if (auto mul = dyn_cast_or_null<MulOp>(op)) {
    auto c = fusion::scalarValue(fusion::other(mul, x));
    if (!c)
      return false;
    s.scale *= *c, x = mul.getResult(), op = next();
  } else if (auto div = dyn_cast_or_null<DivOp>(op); div && div.getLhs() == x) {
    auto c = fusion::scalarValue(div.getRhs());
    if (!c || *c == 0)
      return false;
    s.scale /= *c, x = div.getResult(), op = next();
  }
  if (auto add = dyn_cast_or_null<AddOp>(op)) {
    s.mask = fusion::other(add, x);
    auto m = tensorType(s.mask);
    if (!isFusedFloatType(m.getElementType()) || m.getRank() > 4 || m.getRank() < 2 ||
        tensorType(add.getResult()) != tensorType(x))
      return false;
    x = add.getResult(), op = next();
  }
  auto softmax = dyn_cast_or_null<SoftmaxOp>(op);
  std::optional<SinkColumn> sinks;
  if (!softmax && (softmax = softmaxWithSinksOf(x))) {
    sinks = sinkColumn(softmax);
    OpBuilder checkOnly(softmax.getContext());
    if (!sinksPerHead(checkOnly, softmax.getLoc(), sinks->column, s.heads, /*build=*/false))
      return false;
    s.sinks = sinks->column;
  }
  if (!softmax || !isAxis(softmax.getAxis(), 4, 3))
    return false;
  x = sinks ? sinks->keys.getResult() : softmax.getResult();
  // where(is_nan(p), 0, p): a row that masks every key has no NaN to guard in latent_attention,
  // whose masked rows sum to nothing as the export's do after the guard.
  if (!x.hasOneUse()) {
    WhereOp guard;
    for (Operation *user : x.getUsers()) {
      if (WhereOp where = fusion::nanGuardOf(user, x))
        guard = where;
      else if (!isa<IsNanOp>(user))
        return false;
    }
    if (!guard)
      return false;
    x = guard.getResult();
  }
  s.weighted = dyn_cast_or_null<MatMulOp>(next());
  return s.weighted && s.weighted.getLhs() == x && s.weighted.getRhs() == s.valueView && s.valueView.hasOneUse();
}

// Matches the site around the split of kv_b_proj's result into per-head [nope | v].
std::optional<Site> matchSite(func::FuncOp func, SplitOp split) {
  auto sizes = split.getSplit();
  if (split.getNumResults() != 2 || !sizes || sizes->size() != 2 || !isAxis(split.getAxis(), 4, 3))
    return std::nullopt;
  Site s;
  s.nope = (*sizes)[0], s.v = (*sizes)[1];
  auto heads = headsOfProduct(split.getInput(), s.nope + s.v);
  if (!heads)
    return std::nullopt;
  s.heads = heads->second;
  s.latent = heads->first.input;
  s.latent_ = heads->first.k;
  s.wkv = std::move(heads->first.weight);
  auto latentType = tensorType(s.latent);
  if (latentType.getRank() != 4 || latentType.getDimSize(1) != 1)
    return std::nullopt;
  // keys = concat(k_nope, expand(rope key to every head)), values = the other half; either
  // cached as they are, or (transformers 5) made each step from the cached latents and rotated keys.
  Value kNope = split.getResult(0);
  ExpandOp expand;
  Value keys; // concat(k_nope, expand), where the export makes it
  if (auto keyConcat = dyn_cast_or_null<ConcatOp>(onlyUser(kNope)); keyConcat && keyConcat.getInputs().size() == 2 &&
                                                                    keyConcat.getInputs()[0] == kNope &&
                                                                    isAxis(keyConcat.getAxis(), 4, 3)) {
    expand = def<ExpandOp>(keyConcat.getInputs()[1]);
    keys = keyConcat.getResult();
  } else if (auto piece = dyn_cast_or_null<TransposeOp>(onlyUser(kNope));
             piece && piece.getPerm() == ArrayRef<int64_t>{3, 1, 2, 0}) {
    // Kᵀ as concat(transpose(k_nope), transpose(expand), axis 0) transposed (new_empty and two
    // slice copies, after llmc-fold-slice-assignments).
    auto pieces = dyn_cast_or_null<ConcatOp>(onlyUser(piece.getResult()));
    auto other = pieces && pieces.getInputs().size() == 2 && pieces.getInputs()[0] == piece.getResult() &&
                         isAxis(pieces.getAxis(), 4, 0)
                     ? def<TransposeOp>(pieces.getInputs()[1])
                     : TransposeOp();
    if (!other || other.getPerm() != ArrayRef<int64_t>{3, 1, 2, 0} || !other.getResult().hasOneUse())
      return std::nullopt;
    expand = def<ExpandOp>(other.getInput());
    s.keysT = transposedBy(pieces.getResult(), {3, 1, 0, 2});
  }
  if (!expand || !expand.getResult().hasOneUse())
    return std::nullopt;
  s.ropeKey = expand.getInput();
  if (auto latentPair = cachePairOfView(func, s.latent)) {
    auto ropePair = cachePairOfView(func, s.ropeKey);
    // (The views only expanded: nothing else may read the caches that the pass replaces.)
    if (!ropePair || !s.latent.hasOneUse() || !s.ropeKey.hasOneUse())
      return std::nullopt;
    s.latentCached = true;
    s.keys = *latentPair, s.values = *ropePair;
    s.latent = latentPair->fresh4, s.ropeKey = ropePair->fresh4;
    s.valueView = split.getResult(1);
    if (keys)
      s.keysT = transposedKeysOf(keys);
  } else {
    if (!keys || s.keysT)
      return std::nullopt;
    auto keyPair = cachePairOf(func, keys);
    auto valuePair = cachePairOf(func, split.getResult(1));
    if (!keyPair || !valuePair)
      return std::nullopt;
    s.keys = *keyPair, s.values = *valuePair;
    s.keysT = transposedKeysOf(s.keys.view);
    s.valueView = s.values.view;
  }
  if (!s.keysT)
    return std::nullopt;
  auto ropeType = tensorType(s.ropeKey);
  if (ropeType.getRank() != 4 || ropeType.getDimSize(1) != 1 || ropeType.isDynamicDim(3) ||
      !isFusedFloatType(ropeType.getElementType()))
    return std::nullopt;
  s.rope = ropeType.getDimSize(3);
  // What attention reads is [B, H, T, width] of the right widths.
  auto keysT = tensorType(s.keysT), values = tensorType(s.valueView);
  if (keysT.getRank() != 4 || keysT.getDimSize(1) != s.heads || keysT.getDimSize(2) != s.nope + s.rope ||
      values.getRank() != 4 || values.getDimSize(1) != s.heads || values.getDimSize(3) != s.v)
    return std::nullopt;
  // The pair must be past_key_values.N.key / .value of the same N.
  auto nameOf = [&](BlockArgument a) { return func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "llmc.name"); };
  auto kName = nameOf(s.keys.past), vName = nameOf(s.values.past);
  if (!kName || !vName || !kName.getValue().starts_with("past_key_values.") || !kName.getValue().ends_with(".key"))
    return std::nullopt;
  StringRef layer = kName.getValue().drop_front(strlen("past_key_values.")).drop_back(strlen(".key"));
  if (vName.getValue() != ("past_key_values." + layer + ".value").str() || layer.getAsInteger(10, s.layer))
    return std::nullopt;
  if (!matchScoresToOutput(s))
    return std::nullopt;
  return s;
}

// The query projection: q = concat(split#0 of heads(q_b(x)), rotated split#1).
struct QueryProjection {
  ConstantProduct product;
  SplitOp split;
  ConcatOp concat;
};

std::optional<QueryProjection> queryProjection(Site &s) {
  auto concat = def<ConcatOp>(s.q);
  if (!concat || concat.getInputs().size() != 2 || !isAxis(concat.getAxis(), 4, 3) || !s.q.hasOneUse())
    return std::nullopt;
  auto split = def<SplitOp>(concat.getInputs()[0]);
  auto sizes = split ? split.getSplit() : std::nullopt;
  if (!split || split.getNumResults() != 2 || !sizes || sizes->size() != 2 || (*sizes)[0] != s.nope ||
      (*sizes)[1] != s.rope || !isAxis(split.getAxis(), 4, 3) || !split.getResult(0).hasOneUse())
    return std::nullopt;
  auto heads = headsOfProduct(split.getInput(), s.nope + s.rope);
  if (!heads || heads->second != s.heads)
    return std::nullopt;
  return QueryProjection{std::move(heads->first), split, concat};
}

// The output projection: o_proj(reshape(transpose(attention, [0, 2, 1, 3]), [B, S, H * v])).
struct OutputProjection {
  ConstantProduct product;
  Operation *op; // the matmul or linear
  ReshapeOp reshape;
};

std::optional<OutputProjection> outputProjection(Site &s) {
  Value t = transposedBy(s.weighted.getResult(), {0, 2, 1, 3});
  auto reshape = t ? dyn_cast_or_null<ReshapeOp>(onlyUser(t)) : ReshapeOp();
  if (!reshape || !reshape.getResult().hasOneUse() || tensorType(reshape.getResult()).getRank() != 3 ||
      tensorType(reshape.getResult()).getDimSize(2) != s.heads * s.v)
    return std::nullopt;
  Operation *user = *reshape.getResult().getUsers().begin();
  auto product = constantProduct(user->getResult(0));
  if (!product || product->input != reshape.getResult() || product->k != s.heads * s.v)
    return std::nullopt;
  return OutputProjection{std::move(*product), user, reshape};
}

struct AbsorbMla : impl::LlmcAbsorbMlaBase<AbsorbMla> {
  using impl::LlmcAbsorbMlaBase<AbsorbMla>::LlmcAbsorbMlaBase;
  RewriteCounter sites{kPass, "MLA attentions absorbed into latent space"};
  RewriteCounter queryMerges{kPass, "W_UK multiplied into the query projection"};
  RewriteCounter outputMerges{kPass, "W_UV multiplied into the output projection"};

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (factors != "auto" && factors != "separate" && factors != "multiplied") {
      func.emitError("llmc-absorb-mla: factors must be auto, separate or multiplied, not '") << factors << "'";
      return signalPassFailure();
    }
    std::vector<Site> found;
    func.walk([&](SplitOp split) {
      if (auto s = matchSite(func, split))
        found.push_back(std::move(*s));
    });
    if (found.empty())
      return;
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    llvm::BitVector deadArgs(func.getNumArguments()), deadResults(ret.getNumOperands());
    for (Site &s : found) {
      if (failed(rewrite(func, ret, s))) {
        func.emitError("llmc-absorb-mla: the rewritten attention of layer ") << s.layer << " does not type-check";
        return signalPassFailure();
      }
      deadArgs.set(s.values.past.getArgNumber());
      deadResults.set(s.values.result);
      ++sites;
    }
    reportSites(found);
    // Drop the value caches: first what reads them, then the arguments and results.
    for (int i = int(ret.getNumOperands()) - 1; i >= 0; --i)
      if (deadResults.test(unsigned(i)))
        ret->eraseOperand(unsigned(i));
    eraseDeadOps(func);
    if (failed(func.eraseArguments(deadArgs)) || failed(func.eraseResults(deadResults)))
      return signalPassFailure();
    func.setFunctionType(
        FunctionType::get(func.getContext(), func.getBody().front().getArgumentTypes(), ret.getOperandTypes()));
  }

  LogicalResult rewrite(func::FuncOp func, func::ReturnOp ret, Site &s) {
    OpBuilder b(s.weighted);
    Location loc = s.weighted.getLoc();
    const int64_t H = s.heads, n = s.nope, v = s.v, L = s.latent_, R = s.rope, width = L + R;
    // The latent cache: past_key_values.N.key becomes [T, B, L + R], its present the same.
    BlockArgument past = s.keys.past;
    auto pastType = tensorType(past);
    past.setType(RankedTensorType::get({pastType.getDimSize(0), pastType.getDimSize(1), width}, pastType.getElementType()));
    const std::string layer = std::to_string(s.layer);
    func.setArgAttr(past.getArgNumber(), "llmc.name", b.getStringAttr("past_key_values." + layer + ".latent"));
    func.setResultAttr(s.keys.result, "llmc.name", b.getStringAttr("present." + layer + ".latent"));
    // Readers of the value cache's shape read the latent cache's (same length and batch).
    s.values.past.replaceUsesWithIf(past, [&](OpOperand &use) { return isa<ShapeOp>(use.getOwner()); });
    b.setInsertionPoint(s.keys.concat);
    Value fresh =
        createValue(b, loc, "llmc.concat", {s.latent, s.ropeKey}, {b.getNamedAttr("axis", b.getI64IntegerAttr(3))});
    fresh =
        createValue(b, loc, "llmc.transpose", {fresh}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr({2, 0, 1, 3}))});
    fresh = createValue(b, loc, "llmc.reshape", {fresh, i64Constant(b, loc, {0, 0, width})});
    Value cache = createValue(b, loc, "llmc.concat", {past, fresh}, {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    ret.setOperand(s.keys.result, cache);

    // W_UK [H, n, L] and W_UV [H, L, v] from kv_b_proj's [L, H * (n + v)].
    std::vector<float> uk(size_t(H * n * L)), uv(size_t(H * L * v));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        const float *row = s.wkv.data() + l * H * (n + v) + h * (n + v);
        for (int64_t i = 0; i < n; ++i)
          uk[size_t((h * n + i) * L + l)] = row[i];
        for (int64_t j = 0; j < v; ++j)
          uv[size_t((h * L + l) * v + j)] = row[n + j];
      }

    // Per token and layer at batch 1: multiply-adds, and weight bytes read, of each choice.
    auto query = queryProjection(s);
    auto output = outputProjection(s);
    const rt::mla::Dims dims{n, R, L, v};
    bool mergeQuery = false, mergeOutput = false;
    auto decide = [&](int64_t merged, int64_t separate) {
      return factors == "multiplied" || (factors == "auto" && merged < separate);
    };
    // The report, the same for layers of the same shapes: runOnOperation prints it per group.
    Report &r = s.report;
    const int64_t size = int64_t(fusion::elementSize(tensorType(s.q).getElementType()));
    r.kvBefore = (s.latentCached ? width : H * (n + R + v)) * size, r.kvAfter = width * size;
    if (s.latentCached)
      r.text = "KV cache per token and layer " + std::to_string(r.kvAfter) + " B (latent " + std::to_string(L) +
               " + rotary key " + std::to_string(R) +
               ") as the export caches it, one cache where it had two; kv_b_proj no longer expands the whole cache "
               "each step\n";
    else
      r.text = "KV cache per token and layer " + std::to_string(r.kvBefore) + " B (keys " + std::to_string(n + R) +
               " + values " + std::to_string(v) + " of " + std::to_string(H) + " heads) -> " +
               std::to_string(r.kvAfter) + " B (latent " + std::to_string(L) + " + rotary key " + std::to_string(R) +
               "), " + llvm::formatv("{0:f2}", double(r.kvBefore) / double(r.kvAfter)).str() + "x smaller\n";
    if (query) {
      const int64_t Q = query->product.k, separate = Q * H * n + H * n * L, merged = Q * H * L;
      mergeQuery = decide(merged, separate);
      r.text += "  W_UK: per token " + std::to_string(separate) + " MACs = weight floats read (q_b_proj's nope columns, then W_UK per head) "
                "vs " + std::to_string(merged) + " multiplied into q_b_proj: " +
                (mergeQuery ? "multiplied out\n" : "kept separate\n");
    }
    if (output) {
      const int64_t D = output->product.n, separate = H * L * v + H * v * D, merged = H * L * D;
      mergeOutput = decide(merged, separate);
      r.text += "  W_UV: per token " + std::to_string(separate) + " MACs (W_UV per head, then o_proj) vs " +
                std::to_string(merged) + " multiplied into o_proj: " +
                (mergeOutput ? "multiplied out\n" : "kept separate\n");
    }
    r.text += "  attention MACs per decoded token (context 1 / 256 / 1024): absorbed";
    for (int64_t context : {int64_t(1), int64_t(256), int64_t(1024)})
      r.text += (context == 1 ? " " : " / ") + std::to_string(H * rt::mla::absorbedMacs(dims, 1, context));
    r.text += ", expanded from the latent";
    for (int64_t context : {int64_t(1), int64_t(256), int64_t(1024)})
      r.text += (context == 1 ? " " : " / ") + std::to_string(H * rt::mla::expandedMacs(dims, 1, context));
    r.text += ", uncompressed cache";
    for (int64_t context : {int64_t(1), int64_t(256), int64_t(1024)})
      r.text += (context == 1 ? " " : " / ") + std::to_string(H * rt::mla::uncompressedMacs(dims, 1, context));
    r.text += " (the kernel picks absorbed or expanded per call by this count)\n";
    r.text += "  KV-cache bytes read per decoded token (context 1 / 256 / 1024): latent";
    for (int64_t context : {int64_t(1), int64_t(256), int64_t(1024)})
      r.text += (context == 1 ? " " : " / ") + std::to_string(context * r.kvAfter);
    r.text += s.latentCached ? ", as exported" : ", uncompressed";
    for (int64_t context : {int64_t(1), int64_t(256), int64_t(1024)})
      r.text += (context == 1 ? " " : " / ") + std::to_string(context * r.kvBefore);

    Value q = s.q, wuk, wuv;
    const Type elem = tensorType(s.q).getElementType(); // the model's float type, of every operand
    if (mergeQuery) {
      q = mergeIntoQuery(loc, s, *query, uk);
      wuk = fusion::emptyTensor(b, loc, elem);
      ++queryMerges;
    } else {
      wuk = fusion::floatConstant(b, loc, RankedTensorType::get({H, n, L}, elem), uk);
    }
    wuv = mergeOutput ? fusion::emptyTensor(b, loc, elem)
                      : fusion::floatConstant(b, loc, RankedTensorType::get({H, L, v}, elem), uv);
    b.setInsertionPoint(s.weighted);
    Value mask = s.mask ? s.mask : fusion::emptyTensor(b, loc, elem);
    SmallVector<Value> operands = {q, cache, wuk, wuv, mask};
    if (s.sinks && !operands.emplace_back(sinksPerHead(b, loc, s.sinks, H, /*build=*/true)))
      return failure();
    Value attention = createValue(b, loc, "llmc.latent_attention", operands,
                                  {b.getNamedAttr("scale", b.getF32FloatAttr(float(s.scale))),
                                   b.getNamedAttr("rope_dim", b.getI64IntegerAttr(R))});
    if (!attention)
      return failure();
    if (!mergeOutput) {
      s.weighted.getResult().replaceAllUsesWith(attention);
      return success();
    }
    mergeIntoOutput(loc, s, *output, attention, uv);
    ++outputMerges;
    return success();
  }

  // q_b_proj's nope columns times W_UK[h]: the projection yields the latent-space query.
  Value mergeIntoQuery(Location loc, const Site &s, QueryProjection &qp, const std::vector<float> &uk) {
    const int64_t H = s.heads, n = s.nope, R = s.rope, L = s.latent_, Q = qp.product.k, in = n + R, out = L + R;
    std::vector<float> w(size_t(Q * H * out), 0.0f);
    for (int64_t r = 0; r < Q; ++r)
      for (int64_t h = 0; h < H; ++h) {
        const float *src = qp.product.weight.data() + r * H * in + h * in;
        float *dst = w.data() + r * H * out + h * out;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t l = 0; l < L; ++l)
            dst[l] += src[i] * uk[size_t((h * n + i) * L + l)];
        std::copy(src + n, src + in, dst + L);
      }
    OpBuilder qb(qp.split);
    Value x = createValue(
        qb, loc, "llmc.matmul",
        {qp.product.input,
         fusion::floatConstant(qb, loc, RankedTensorType::get({Q, H * out}, tensorType(qp.product.input).getElementType()),
                               w)});
    x = createValue(qb, loc, "llmc.reshape", {x, i64Constant(qb, loc, {0, 0, H, out})});
    x = createValue(qb, loc, "llmc.transpose", {x}, {qb.getNamedAttr("perm", qb.getDenseI64ArrayAttr({0, 2, 1, 3}))});
    Operation *split = fusion::create(
        qb, loc, "llmc.split", {x},
        {qb.getNamedAttr("axis", qb.getI64IntegerAttr(3)), qb.getNamedAttr("split", qb.getDenseI64ArrayAttr({L, R}))});
    qp.split.getResult(1).replaceAllUsesWith(split->getResult(1)); // the rotary part is unchanged
    OpBuilder cb(qp.concat);
    return createValue(cb, loc, "llmc.concat", {split->getResult(0), qp.concat.getInputs()[1]},
                       {cb.getNamedAttr("axis", cb.getI64IntegerAttr(3))});
  }

  // W_UV[h] times o_proj's rows of head h: the projection reads the latent-space output.
  void mergeIntoOutput(Location loc, const Site &s, const OutputProjection &op, Value attention,
                       const std::vector<float> &uv) {
    const int64_t H = s.heads, v = s.v, L = s.latent_, D = op.product.n;
    std::vector<float> w(size_t(H * L * D), 0.0f);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        float *dst = w.data() + (h * L + l) * D;
        for (int64_t j = 0; j < v; ++j) {
          const float f = uv[size_t((h * L + l) * v + j)];
          const float *src = op.product.weight.data() + (h * v + j) * D;
          for (int64_t o = 0; o < D; ++o)
            dst[o] += f * src[o];
        }
      }
    OpBuilder ob(op.op);
    Value x = createValue(ob, loc, "llmc.transpose", {attention},
                          {ob.getNamedAttr("perm", ob.getDenseI64ArrayAttr({0, 2, 1, 3}))});
    x = createValue(ob, loc, "llmc.reshape", {x, i64Constant(ob, loc, {0, 0, H * L})});
    x = createValue(ob, loc, "llmc.matmul",
                    {x, fusion::floatConstant(ob, loc, RankedTensorType::get({H * L, D}, tensorType(x).getElementType()),
                                              w)});
    op.op->getResult(0).replaceAllUsesWith(x);
  }

  // One note per group of layers with the same report, then the totals.
  static void reportSites(const std::vector<Site> &found) {
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    int64_t before = 0, after = 0;
    for (const Site &s : found) {
      before += s.report.kvBefore, after += s.report.kvAfter;
      auto same = llvm::find_if(groups, [&](const auto &g) { return g.first == s.report.text; });
      if (same == groups.end())
        groups.push_back({s.report.text, {s.layer}});
      else
        same->second.push_back(s.layer);
    }
    for (const auto &[text, layers] : groups) {
      std::string names;
      for (int layer : layers)
        names += (names.empty() ? "" : ", ") + std::to_string(layer);
      noteRewrite(kPass, (layers.size() == 1 ? "layer " : "layers ") + names + ": " + text);
    }
    noteRewrite(kPass, "KV cache per token, " + std::to_string(found.size()) + " MLA layers: " + std::to_string(before) +
                           " B -> " + std::to_string(after) + " B (" +
                           llvm::formatv("{0:f2}", double(before) / double(after)).str() + "x smaller)");
  }

  // Ops of the old attention and caches that nothing reads any more.
  static void eraseDeadOps(func::FuncOp func) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(func.getBody().front().getOperations())))
        if (!isa<func::ReturnOp>(op) && op.use_empty() && isa<LlmcDialect>(op.getDialect())) {
          op.erase();
          changed = true;
        }
    }
  }
};

} // namespace
} // namespace llmc
