// llmc-raise-attention: scaled dot-product attention as exporters write it (head split,
// rotary embedding, repeated KV heads, Q·Kᵀ, scale, mask, softmax, ·V, head merge) becomes one
// llmc.fused_attention on [batch, seq, heads * head] tensors.
#include "AttentionSinks.h"
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"
#include "ScaledSinks.h"
#include "SharedProbabilities.h"

#include "llmc/Dialect/KernelBridge.h"
#include "llmc/Dialect/SymbolicShapes.h"

#include "llvm/ADT/DenseSet.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCRAISEATTENTION
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

bool isPerm(Operation *op, ArrayRef<int64_t> perm) {
  auto t = dyn_cast_or_null<TransposeOp>(op);
  return t && t.getPerm() == perm;
}

// x reshaped to `dims` (an llmc.reshape by a constant shape; 0 copies x's dimension, -1 takes the
// rest); null where x is null or the reshape cannot be built.
Value reshapeTo(PatternRewriter &rewriter, Location loc, Value x, ArrayRef<int64_t> dims) {
  if (!x)
    return Value();
  auto shapeType = RankedTensorType::get({int64_t(dims.size())}, rewriter.getI64Type());
  Value shape = ConstantOp::create(rewriter, loc, shapeType, DenseElementsAttr::get(shapeType, dims));
  Operation *r = fusion::create(rewriter, loc, "llmc.reshape", {x, shape});
  return r ? r->getResult(0) : Value();
}

// Multiplications and divisions by scalar constants around `v`: returns the value inside and
// multiplies `scale` by what they contributed.
Value stripScale(Value v, double &scale) {
  while (true) {
    if (auto mul = def<MulOp>(v)) {
      if (auto c = fusion::scalarValue(mul.getRhs())) {
        scale *= *c;
        v = mul.getLhs();
        continue;
      }
      if (auto c = fusion::scalarValue(mul.getLhs())) {
        scale *= *c;
        v = mul.getRhs();
        continue;
      }
    }
    if (auto div = def<DivOp>(v))
      if (auto c = fusion::scalarValue(div.getRhs()); c && *c != 0) {
        scale /= *c;
        v = div.getLhs();
        continue;
      }
    return v;
  }
}

// x where `v` is x * s with s a factor per query position, [B or 1, 1, S, 1] beside x [B, H, S, D]
// (Ministral 3's and Llama 4's attention temperature, 1 + beta * log(1 + floor(pos / max))); sets
// `factor` to s. Else v itself, factor untouched.
Value stripPositionFactor(Value v, Value &factor) {
  auto mul = def<MulOp>(v);
  auto vType = mul ? fusion::tensorType(v) : RankedTensorType();
  if (!mul || vType.getRank() != 4)
    return v;
  for (int i = 0; i < 2; ++i) {
    Value x = mul->getOperand(i), s = mul->getOperand(1 - i);
    auto sType = fusion::tensorType(s);
    if (x.getType() != vType || sType.getRank() != 4 || sType.getElementType() != vType.getElementType() ||
        (sType.getDimSize(0) != 1 && sType.getDimSize(0) != vType.getDimSize(0)) || sType.getDimSize(1) != 1 ||
        sType.getDimSize(2) != vType.getDimSize(2) || sType.getDimSize(3) != 1)
      continue;
    factor = s;
    return x;
  }
  return v;
}

// The scores inside `v`: scale * (Q · Kᵀ) with scalar factors around them, or those capped,
// c * tanh(s / c) (Gemma 2's softcap). Returns the value inside and multiplies `scale` by what
// the factors contributed; sets `softcap` to c where the scores are capped.
Value stripScores(Value v, double &scale, double &softcap) {
  double outer = 1.0;
  Value inner = stripScale(v, outer);
  auto tanh = def<TanhOp>(inner);
  if (!tanh || outer <= 0.0 || !tanh.getResult().hasOneUse()) {
    scale *= outer;
    return inner;
  }
  // c * tanh(x * f): the cap c is the outer factor, the scores' scale f * c.
  double f = 1.0;
  Value x = stripScale(tanh.getInput(), f);
  softcap = outer;
  scale *= f * outer;
  return x;
}

using fusion::abandonBuilt;
using fusion::isSliceOfLast;

// [B, H, S, D] as transpose(perm) of a reshape that splits the last axis of a 3-D value into
// [H, D]: returns that value and sets the head count, or null.
Value splitHeads(Value v, ArrayRef<int64_t> perm, int64_t &heads) {
  auto t = def<TransposeOp>(v);
  if (!t || !isPerm(t, perm))
    return {};
  auto r = def<ReshapeOp>(t.getInput());
  if (!r)
    return {};
  auto in = fusion::tensorType(r.getInput()), split = fusion::tensorType(r.getResult());
  if (in.getRank() != 3 || split.getRank() != 4 || split.isDynamicDim(2) || split.isDynamicDim(3) ||
      in.isDynamicDim(2) || in.getDimSize(2) != split.getDimSize(2) * split.getDimSize(3))
    return {};
  heads = split.getDimSize(2);
  return r.getInput();
}

// [B, H, S, D] from [B, S, H*D]: transpose(0,2,1,3) of a reshape to [B, S, H, D].
Value headsToSequence(Value v, int64_t &heads) { return splitHeads(v, {0, 2, 1, 3}, heads); }

// How a [B, H, S, D] operand becomes the [B, S, H*D] one fused_attention reads: the 3-D value it
// was split from (nothing to build); a [B, S, H, D] value it is transpose(0,2,1,3) of, normalized
// per head, say (Qwen3's q_norm and k_norm: a reshape to build, a view); or, for the queries, the
// operand itself, transposed and reshaped (a partial rotary's concatenation). Built only once the
// whole pattern has matched (buildSequence).
struct SequenceForm {
  enum Build { Nothing, Reshape, TransposeReshape };
  Value v;
  int64_t heads = 0;
  Build build = Nothing;
};

SequenceForm toSequence(Value v4, bool anyLayout) {
  SequenceForm f;
  if ((f.v = headsToSequence(v4, f.heads)))
    return f;
  auto staticHeads = [](Value x, int axis) {
    auto t = fusion::tensorType(x);
    return t.getRank() == 4 && !t.isDynamicDim(axis) && !t.isDynamicDim(3);
  };
  if (auto t = def<TransposeOp>(v4); t && isPerm(t, {0, 2, 1, 3}) && staticHeads(t.getInput(), 2))
    return {t.getInput(), fusion::tensorType(t.getInput()).getDimSize(2), SequenceForm::Reshape};
  if (anyLayout && staticHeads(v4, 1))
    return {v4, fusion::tensorType(v4).getDimSize(1), SequenceForm::TransposeReshape};
  return {};
}

// The same for a value already [B, S, H, D]: the 3-D value it was split from, or itself reshaped.
SequenceForm positionMajorToSequence(Value v) {
  auto type = fusion::tensorType(v);
  if (type.getRank() != 4 || type.isDynamicDim(2) || type.isDynamicDim(3))
    return {};
  if (Value rows = fusion::rowsSplitInto(v))
    return {rows, type.getDimSize(2), SequenceForm::Nothing};
  return {v, type.getDimSize(2), SequenceForm::Reshape};
}

Value buildSequence(PatternRewriter &rewriter, Location loc, const SequenceForm &f) {
  Value x = f.v;
  if (f.build == SequenceForm::Nothing || !x)
    return x;
  const int64_t d = fusion::tensorType(x).getShape().back();
  if (f.build == SequenceForm::TransposeReshape) {
    Operation *t = fusion::create(rewriter, loc, "llmc.transpose", {x},
                                  {rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}))});
    x = t ? t->getResult(0) : Value();
  }
  return reshapeTo(rewriter, loc, x, {0, 0, f.heads * d});
}

// [B, H, T, D] from a length-major cache [T, B, H*D] (llmc-kv-cache-layout): transpose(1,2,0,3)
// of a reshape to [T, B, H, D].
Value timeMajorToHeads(Value v, int64_t &heads) { return splitHeads(v, {1, 2, 0, 3}, heads); }

// K from Kᵀ: transpose(0,1,3,2), or reshape -> transpose(0,2,1) -> reshape as torch exports it.
Value untranspose(Value kt) {
  if (auto t = def<TransposeOp>(kt); t && isPerm(t, {0, 1, 3, 2}))
    return t.getInput();
  auto outer = def<ReshapeOp>(kt);
  auto t = outer ? def<TransposeOp>(outer.getInput()) : TransposeOp();
  auto inner = t && isPerm(t, {0, 2, 1}) ? def<ReshapeOp>(t.getInput()) : ReshapeOp();
  if (!inner)
    return {};
  auto k = fusion::tensorType(inner.getInput()), result = fusion::tensorType(kt);
  if (k.getRank() != 4 || result.getRank() != 4 || k.getDimSize(2) != result.getDimSize(3) ||
      k.getDimSize(3) != result.getDimSize(2) || k.getDimSize(1) != result.getDimSize(1))
    return {};
  return inner.getInput();
}

// Grouped-query heads repeated as reshape(expand(unsqueeze(x, 2))): returns x (fewer heads).
Value unrepeat(Value v) {
  auto r = def<ReshapeOp>(v);
  auto e = r ? def<ExpandOp>(r.getInput()) : ExpandOp();
  auto u = e ? def<UnsqueezeOp>(e.getInput()) : UnsqueezeOp();
  if (!u || u.getAxes() != ArrayRef<int64_t>{2})
    return v;
  auto x = fusion::tensorType(u.getInput()), out = fusion::tensorType(v);
  if (x.getRank() != 4 || out.getRank() != 4 || x.getDimSize(3) != out.getDimSize(3) || x.isDynamicDim(1) ||
      out.isDynamicDim(1) || out.getDimSize(1) % x.getDimSize(1) != 0)
    return v;
  return u.getInput();
}

bool isLastAxis(ConcatOp cat) {
  return cat.getAxis() == -1 || cat.getAxis() == fusion::tensorType(cat.getResult()).getRank() - 1;
}

// Which features a rotary embedding turns together: the two halves (i, i + D/2), Llama's
// rotate_half; or neighbours (2i, 2i + 1), GPT-J's rotate_every_two (Cohere, CodeGen).
enum class Pairing { Halves, Neighbours };

// Whether `rotated` is x's partner in a rotation: concat(-x[..., D/2:], x[..., :D/2]) for halves;
// for neighbours the stacked and flattened (-x[..., 1::2], x[..., 0::2]), as torch exports
// stack(...).flatten(-2): reshape(concat(unsqueeze(-odd, -1), unsqueeze(even, -1), axis -1)).
// With `negated`, the halves' partner negated, concat(x[..., D/2:], -x[..., :D/2]) (NanoChat's
// rotate_half): the rotation by the opposite angles.
bool isPartner(Value rotated, Value x, Pairing pairing, bool negated = false) {
  auto xType = fusion::tensorType(x);
  const int64_t d = xType.getShape().back();
  if (pairing == Pairing::Halves) {
    auto cat = def<ConcatOp>(rotated);
    if (!cat || cat.getInputs().size() != 2 || !isLastAxis(cat))
      return false;
    if (negated) {
      auto neg = def<NegOp>(cat.getInputs()[1]);
      return neg && isSliceOfLast(neg.getInput(), x, 0, d / 2) && isSliceOfLast(cat.getInputs()[0], x, d / 2, d);
    }
    auto neg = def<NegOp>(cat.getInputs()[0]);
    return neg && isSliceOfLast(neg.getInput(), x, d / 2, d) && isSliceOfLast(cat.getInputs()[1], x, 0, d / 2);
  } else if (negated) {
    return false;
  }
  auto flat = def<ReshapeOp>(rotated);
  auto cat = flat ? def<ConcatOp>(flat.getInput()) : ConcatOp();
  if (!cat || flat.getResult().getType() != x.getType() || cat.getInputs().size() != 2 || !isLastAxis(cat) ||
      fusion::tensorType(cat.getResult()).getShape().back() != 2)
    return false;
  auto inner = [&](Value v) { // the slice that unsqueeze(., -1) stacks
    auto u = def<UnsqueezeOp>(v);
    const int64_t rank = xType.getRank();
    return u && u.getAxes().size() == 1 && (u.getAxes()[0] == -1 || u.getAxes()[0] == rank) ? u.getInput() : Value();
  };
  Value odd = inner(cat.getInputs()[0]), even = inner(cat.getInputs()[1]);
  auto neg = odd ? def<NegOp>(odd) : NegOp();
  return neg && even && isSliceOfLast(neg.getInput(), x, 1, d, 2) && isSliceOfLast(even, x, 0, d, 2);
}

// x * cos + partner(x) * sin: returns x and the tables, and sets `pairing` (only halves, the form
// fused_attention turns, where `pairing` is null) and `negated` (the halves' partner negated, so
// the rotation is by -sin; only where `negated` is given).
Value unrotate(Value v, Value &cos, Value &sin, Pairing *pairing = nullptr, bool *negated = nullptr) {
  auto add = def<AddOp>(v);
  if (!add)
    return {};
  for (int i = 0; i < 2; ++i) {
    auto direct = def<MulOp>(add->getOperand(i)), rotated = def<MulOp>(add->getOperand(1 - i));
    if (!direct || !rotated)
      continue;
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) {
        Value x = direct->getOperand(j), c = direct->getOperand(1 - j);
        Value partner = rotated->getOperand(k), s = rotated->getOperand(1 - k);
        auto xType = fusion::tensorType(x);
        if (xType.getRank() < 1) // (a scalar has no last axis)
          continue;
        const int64_t d = xType.getShape().back();
        if (d == ShapedType::kDynamic || d % 2 != 0)
          continue;
        for (Pairing p : {Pairing::Halves, Pairing::Neighbours}) {
          if (p == Pairing::Neighbours && !pairing)
            continue;
          const bool plain = isPartner(partner, x, p);
          const bool opposite = !plain && negated && isPartner(partner, x, p, /*negated=*/true);
          if (!plain && !opposite)
            continue;
          cos = c;
          sin = s;
          if (pairing)
            *pairing = p;
          if (negated)
            *negated = opposite;
          return x;
        }
      }
  }
  return {};
}

// A constant additive mask that is exactly the causal one (0 where key j <= query i + Sk - Sq,
// very negative elsewhere), the same for every batch and head.
bool isCausalMask(Value mask, int64_t sq, int64_t sk) {
  auto type = fusion::tensorType(mask);
  if (type.getRank() < 2 || type.getDimSize(type.getRank() - 2) != sq || type.getDimSize(type.getRank() - 1) != sk ||
      type.getNumElements() != sq * sk)
    return false;
  std::vector<char> storage;
  auto bytes = fusion::floatBytes(mask, storage); // (f32, f16 or bf16)
  if (failed(bytes))
    return false;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j) {
      const float v = fusion::floatAt(*bytes, type.getElementType(), i * sk + j);
      if (j <= i + sk - sq ? v != 0.0f : !(v <= -1e4f))
        return false;
    }
  return true;
}

// Whether `merged` [B*H, X, Y] is `split` [B, H, X, Y] with its first two axes merged, or the
// other way round, as Bloom's attention runs its batched products on [B*H, ...] operands. The
// heads must be static; a dynamic batch is taken as the rest of a dynamic first axis.
bool mergesHeads(RankedTensorType split, RankedTensorType merged) {
  if (split.getRank() != 4 || merged.getRank() != 3 || split.isDynamicDim(1))
    return false;
  for (int64_t d : {2, 3})
    if (split.getDimSize(d) != merged.getDimSize(d - 1))
      return false;
  if (split.isDynamicDim(0) || merged.isDynamicDim(0))
    return split.isDynamicDim(0) && merged.isDynamicDim(0);
  return split.getDimSize(0) * split.getDimSize(1) == merged.getDimSize(0);
}

// [B, H, X, D] for a [B*H, X, D] operand of the merged-heads form: the value it was reshaped
// from, or null.
Value unmergeHeads(Value v3) {
  auto r = def<ReshapeOp>(v3);
  if (!r || !mergesHeads(fusion::tensorType(r.getInput()), fusion::tensorType(r.getResult())) ||
      fusion::tensorType(v3).isDynamicDim(2))
    return {};
  return r.getInput();
}

// What the softmax's scores are below the mask: scale * (Q · Kᵀ), capped or not (stripScores),
// plus a float `bias` where one is added (ALiBi's position bias: MPT's, Bloom's), the sum
// reshaped from [B*H, Sq, Sk] where the product runs on merged heads (Bloom's baddbmm).
// Multiplies `scale` and sets `softcap` as stripScores does.
struct ScoreTerms {
  MatMulOp qk;
  Value bias;
  bool mergedHeads = false;
};

std::optional<ScoreTerms> scoreTerms(Value v, double &scale, double &softcap) {
  ScoreTerms t;
  if (auto r = def<ReshapeOp>(v);
      r && mergesHeads(fusion::tensorType(r.getResult()), fusion::tensorType(r.getInput()))) {
    if (!r.getInput().hasOneUse())
      return std::nullopt;
    v = r.getInput();
    t.mergedHeads = true;
  }
  if (auto add = def<AddOp>(v)) {
    for (int i = 0; i < 2 && !t.bias; ++i) {
      double s = 1.0, cap = 0.0;
      Value x = add->getOperand(i), bias = add->getOperand(1 - i);
      if (x.hasOneUse() && def<MatMulOp>(stripScores(x, s, cap)) && fusion::isFusedFloat(bias)) {
        t.bias = bias;
        v = x;
      }
    }
    if (!t.bias)
      return std::nullopt;
  }
  t.qk = def<MatMulOp>(stripScores(v, scale, softcap));
  if (!t.qk || !t.qk.getResult().hasOneUse())
    return std::nullopt;
  return t;
}

// A bias added to merged-heads scores [B*H or 1, Sq or 1, Sk or 1] (or of lower rank) as one that
// broadcasts to the scores [B, H, Sq, Sk]: with a [B*H] axis, unsqueezed and reshaped to
// [B, H, ., .] (B from the scores where it is static).
Value biasPerHead(PatternRewriter &rewriter, Location loc, Value bias, RankedTensorType scores) {
  const int64_t heads = scores.getDimSize(1), batch = scores.isDynamicDim(0) ? -1 : scores.getDimSize(0);
  auto type = fusion::tensorType(bias);
  if (type.getRank() < 3 || type.getDimSize(0) == 1)
    return bias; // broadcasts the same way over [B, H, Sq, Sk] as over [B*H, Sq, Sk]
  Value wide = fusion::createValue(rewriter, loc, "llmc.unsqueeze", {bias},
                                   {rewriter.getNamedAttr("axes", rewriter.getDenseI64ArrayAttr({1}))});
  return reshapeTo(rewriter, loc, wide, {batch, heads, 0, 0});
}

struct Raised {
  Value q, k, v, mask, cos, sin, bias, sinks;
  Value hidden; // where a boolean mask selects: the value its hidden scores take
  Value keep;   // a boolean mask that selects under an additive one (`mask`), and its hidden value
  Value keepHidden;
  int64_t qHeads = 0, kvHeads = 0;
  double scale = 1.0, softcap = 0.0;
  bool causal = false, negateMask = false, negateKeep = false, rotateKeys = true, timeMajor = false;
};

// Scores a boolean mask selects: where(keep, s, -big) or where(hide, -big, s), s read by the
// where alone. The mask, the value hidden scores take and whether the mask hides.
struct Selected {
  Value scores, mask, hidden;
  bool hides = false;
};

// Whether a scalar value hides the score it stands for (-1e4 or below: no softmax weighs it).
bool hidesScores(Value v) {
  auto x = fusion::scalarValue(v);
  return x && *x <= -1e4;
}

std::optional<Selected> selectedScores(Value v) {
  auto where = def<WhereOp>(v);
  if (!where)
    return std::nullopt;
  if (hidesScores(where.getY()) && where.getX().hasOneUse())
    return Selected{where.getX(), where.getCondition(), where.getY(), false};
  if (hidesScores(where.getX()) && where.getY().hasOneUse())
    return Selected{where.getY(), where.getCondition(), where.getX(), true};
  return std::nullopt;
}

// The one mask for scores that a boolean `keep` selects and an additive `mask` is then added to
// (GPT-Neo's causal or local buffer under the causal mask): where(keep and m, 0, h) where `mask`
// is where(m, 0, h) itself with h hiding scores, else where(keep, mask, hidden). (A score both
// hide was -big + h: as hidden as either; with an h that does not hide, a score keep hides would
// come back as h, so that mask is kept whole.)
Value maskUnderKeep(PatternRewriter &rewriter, Location loc, Value keep, Value mask, Value hidden) {
  if (!mask)
    return keep;
  auto inner = def<WhereOp>(mask);
  if (inner && fusion::tensorType(inner.getCondition()).getElementType().isInteger(1) &&
      fusion::isScalar(inner.getX(), 0.0) && hidesScores(inner.getY())) {
    Value both = fusion::createValue(rewriter, loc, "llmc.and", {keep, inner.getCondition()});
    return both ? fusion::createValue(rewriter, loc, "llmc.where", {both, inner.getX(), inner.getY()}) : Value();
  }
  return fusion::createValue(rewriter, loc, "llmc.where", {keep, mask, hidden});
}

// The one mask fused_attention reads for a mask and a bias beside it: the bias alone, the two
// added (an additive mask), or the bias where a boolean mask keeps a score and its hidden value
// elsewhere. `merged`: the bias was added to [B*H, Sq, Sk] scores, the softmax's of `scores`.
Value maskWithBias(PatternRewriter &rewriter, Location loc, const Raised &r, bool merged, RankedTensorType scores) {
  Value bias = merged ? biasPerHead(rewriter, loc, r.bias, scores) : r.bias;
  if (!bias || !r.mask)
    return bias;
  if (fusion::isFusedFloat(r.mask))
    return fusion::createValue(rewriter, loc, "llmc.add", {r.mask, bias});
  return r.hidden ? fusion::createValue(rewriter, loc, "llmc.where", {r.mask, bias, r.hidden}) : Value();
}

// x where `v` is max(x, lowest) (XGLM's and OPT's clamp of the masked scores, -3.4e38 or
// below -1e30), read by nothing else: the clamp changes only scores that were -inf, which the
// softmax gives no weight either way (but in a row whose every score is hidden); else v.
Value unclamped(Value v) {
  auto max = def<MaxOp>(v);
  if (!max || max->getNumOperands() != 2)
    return v;
  for (int i = 0; i < 2; ++i) {
    auto floor = fusion::scalarValue(max->getOperand(1 - i));
    if (floor && *floor <= -1e30 && max->getOperand(i).hasOneUse())
      return max->getOperand(i);
  }
  return v;
}

// softmax(reshape(x)) where x is [B, H, Sq, Sk] and the reshape merges B and H (XGLM's softmax on
// [B*H, Sq, Sk]; the softmax over the last axis commutes with it) becomes reshape(softmax(x)),
// and the reshapes of its result back to x's dimensions read softmax(x) itself: SdpaPattern then
// sees a softmax of [B, H, Sq, Sk] scores. "Back to x's dimensions" is proven by static types, or
// by the symbolic shapes where dimensions are dynamic (a row-major reshape to the same dimensions
// undoes the merge); computed once, before any of these rewrites, and asked only about values
// that were there then.
void softmaxesOnSplitHeads(func::FuncOp func) {
  // The candidates first, so that a function without any skips the analysis.
  SmallVector<SoftmaxOp> softmaxes;
  bool dynamic = false;
  func.walk([&](SoftmaxOp softmax) {
    auto merge = def<ReshapeOp>(softmax.getInput());
    auto merged = fusion::tensorType(softmax.getResult());
    if (merge && merged.getRank() == 3 && (softmax.getAxis() == -1 || softmax.getAxis() == 2) &&
        merge.getResult().hasOneUse() && mergesHeads(fusion::tensorType(merge.getInput()), merged)) {
      softmaxes.push_back(softmax);
      dynamic = dynamic || !fusion::tensorType(merge.getInput()).hasStaticShape();
    }
  });
  if (softmaxes.empty())
    return;
  std::string error;
  FailureOr<SymbolicShapes> shapes = failure(); // (static types need no analysis)
  if (dynamic)
    shapes = SymbolicShapes::analyze(func, error);
  llvm::DenseSet<Value> built; // (values made below, which the analysis never saw)
  auto sameDims = [&](Value a, Value b) {
    return a.getType() == b.getType() && !built.contains(a) && !built.contains(b) &&
           llmc::sameDims(succeeded(shapes) ? &*shapes : nullptr, a, b);
  };
  for (SoftmaxOp softmax : softmaxes) {
    auto merge = def<ReshapeOp>(softmax.getInput());
    if (built.contains(merge.getInput()))
      continue;
    Value split = merge.getInput();
    SmallVector<ReshapeOp> backs;
    for (Operation *user : softmax.getResult().getUsers())
      if (auto back = dyn_cast<ReshapeOp>(user); back && sameDims(back.getResult(), split))
        backs.push_back(back);
    OpBuilder b(softmax);
    Value probs = fusion::createValue(b, softmax.getLoc(), "llmc.softmax", {split},
                                      {b.getNamedAttr("axis", b.getI64IntegerAttr(-1))});
    if (!probs || probs.getType() != split.getType()) {
      if (probs)
        probs.getDefiningOp()->erase();
      continue;
    }
    IRMapping toProbs; // the same reshape of the probabilities (its type as it was: inference may know less)
    toProbs.map(split, probs);
    Value again = b.clone(*merge, toProbs)->getResult(0);
    built.insert(probs);
    built.insert(again);
    for (ReshapeOp back : backs) {
      back.getResult().replaceAllUsesWith(probs);
      back.erase();
    }
    softmax.getResult().replaceAllUsesWith(again);
    softmax.erase();
    merge.erase();
    if (again.use_empty())
      again.getDefiningOp()->erase();
  }
}

struct SdpaPattern : OpRewritePattern<SoftmaxOp> {
  RewriteCounter &count, &rotaries, &causalMasks;
  SdpaPattern(MLIRContext *ctx, RewriteCounter &count, RewriteCounter &rotaries, RewriteCounter &causalMasks)
      : OpRewritePattern(ctx), count(count), rotaries(rotaries), causalMasks(causalMasks) {}

  LogicalResult matchAndRewrite(SoftmaxOp softmax, PatternRewriter &rewriter) const override {
    RankedTensorType probsType = fusion::tensorType(softmax.getResult());
    if (probsType.getRank() != 4 || (softmax.getAxis() != -1 && softmax.getAxis() != 3) ||
        !fusion::isFusedFloat(softmax.getResult()))
      return failure();
    Raised r;
    // Scores: [mask +] the score terms; the mask is the addend that is not them; with sinks, those
    // inside the concatenation with the sinks' column.
    Value scores = softmax.getInput();
    if (!scores.hasOneUse())
      return failure();
    std::optional<SinkColumn> sinks = sinkColumn(softmax);
    if (sinks) {
      scores = sinks->scores;
      probsType = fusion::tensorType(sinks->keys.getResult());
      if (!sinksPerHead(rewriter, softmax.getLoc(), sinks->column, probsType.getDimSize(1), /*build=*/false))
        return failure();
    }
    scores = unclamped(scores);
    if (auto add = def<AddOp>(scores)) {
      for (int i = 0; i < 2 && !r.mask; ++i) {
        double s = 1.0, cap = 0.0;
        Value terms = add->getOperand(i);
        auto selected = selectedScores(terms);
        if (terms.hasOneUse() && scoreTerms(selected ? selected->scores : terms, s, cap)) {
          scores = terms;
          r.mask = add->getOperand(1 - i);
        }
      }
      if (!r.mask)
        return failure();
    }
    // A boolean mask selects: where(keep, scores, -big) or where(hide, -big, scores); under an
    // additive mask too (GPT-Neo's). The negations are built with the fused op, once the whole
    // pattern matched.
    if (auto selected = selectedScores(scores)) {
      if (!r.mask) {
        r.mask = selected->mask;
        r.hidden = selected->hidden;
        r.negateMask = selected->hides;
      } else {
        r.keep = selected->mask;
        r.keepHidden = selected->hidden;
        r.negateKeep = selected->hides;
      }
      scores = selected->scores;
    }
    auto terms = scoreTerms(scores, r.scale, r.softcap);
    if (!terms)
      return failure();
    MatMulOp qk = terms->qk;
    r.bias = terms->bias;
    const bool merged = terms->mergedHeads;
    // Merged heads: Q, Kᵀ (transpose(0,2,1)) and V are [B*H, ., .] reshapes of [B, H, ., .] values.
    // (The rotation commutes with a factor per query position: the query sequence the attention
    // reads is multiplied by it, before the attention turns it.)
    Value qFactor;
    Value q4 = stripScale(stripPositionFactor(stripScale(qk.getLhs(), r.scale), qFactor), r.scale);
    Value k4 = stripScale(qk.getRhs(), r.scale);
    Value kByPosition; // or K as [B, Sk, H, D], not rotated here, where Kᵀ is made from it
    if (merged) {
      auto kt = def<TransposeOp>(k4);
      q4 = unmergeHeads(q4);
      k4 = kt && isPerm(kt, {0, 2, 1}) ? unmergeHeads(kt.getInput()) : Value();
    } else if (auto t = def<TransposeOp>(k4); t && isPerm(t, {0, 2, 3, 1})) {
      kByPosition = t.getInput(); // Kᵀ straight from [B, Sk, H, D] (MPT)
    } else {
      k4 = untranspose(k4);
    }
    if (!q4 || !(k4 || kByPosition))
      return failure();
    // Output: softmax [-> where(is_nan(p), 0, p)] -> · V -> transpose(0,2,1,3) -> reshape to 3-D;
    // with merged heads the probabilities reshaped to [B*H, Sq, Sk] and the product back to 4-D.
    // With sinks, the keys' probabilities are the slice that leaves the sinks' column.
    Value probs = sinks ? sinks->keys.getResult() : softmax.getResult();
    if (merged && sinks)
      return failure();
    if (merged) {
      auto toMerged = probs.hasOneUse() ? dyn_cast<ReshapeOp>(*probs.getUsers().begin()) : ReshapeOp();
      if (!toMerged || !mergesHeads(probsType, fusion::tensorType(toMerged.getResult())))
        return failure();
      probs = toMerged.getResult();
    }
    Operation *pv = nullptr;
    for (Operation *user : probs.getUsers()) {
      if (WhereOp where = fusion::nanGuardOf(user, probs)) {
        if (!where.getResult().hasOneUse())
          return failure();
        pv = *where.getResult().getUsers().begin();
      } else if (isa<MatMulOp>(user) && user->getOperand(0) == probs) {
        pv = user;
      } else if (!isa<IsNanOp>(user)) {
        return failure();
      }
    }
    auto pvMatmul = dyn_cast_or_null<MatMulOp>(pv);
    if (!pvMatmul || !pvMatmul.getResult().hasOneUse())
      return failure();
    // (Through a reshape to the product's own shape, which a dynamic export keeps: with at most one
    // dynamic dimension the element count fixes it, so it moves nothing.)
    Operation *merger = *pvMatmul.getResult().getUsers().begin();
    if (merged) {
      auto split = dyn_cast<ReshapeOp>(merger);
      if (!split || !split.getResult().hasOneUse() ||
          !mergesHeads(fusion::tensorType(split.getResult()), fusion::tensorType(pvMatmul.getResult())) ||
          fusion::tensorType(split.getResult()).getDimSize(1) != probsType.getDimSize(1))
        return failure();
      merger = *split.getResult().getUsers().begin();
    }
    if (auto same = dyn_cast<ReshapeOp>(merger); same && same.getResult().hasOneUse() && fusion::isIdentityReshape(same))
      merger = *same.getResult().getUsers().begin();
    auto merge = dyn_cast<TransposeOp>(merger);
    if (!merge || !isPerm(merge, {0, 2, 1, 3}) || !merge.getResult().hasOneUse())
      return failure();
    // The head merge reshapes to [B, S, H*D], or straight to [B*S, H*D] ahead of a 2-D gemm; or
    // the heads are read as they are, [B, S, H, D] with static H and D (Laguna gates each head's
    // output before merging them): the attention's rows viewed so replace the transpose.
    Operation *root = *merge.getResult().getUsers().begin();
    auto headsType = fusion::tensorType(merge.getResult());
    int64_t rootRank = isa<ReshapeOp>(root) ? fusion::tensorType(root->getResult(0)).getRank() : 0;
    if (rootRank != 3 && rootRank != 2) {
      if (headsType.isDynamicDim(2) || headsType.isDynamicDim(3))
        return failure();
      root = merge;
      rootRank = 4;
    }
    // Inputs: strip the rotary embedding, repeated KV heads and the head split.
    Value v4 = merged ? unmergeHeads(pvMatmul.getRhs()) : unrepeat(pvMatmul.getRhs());
    if (!v4)
      return failure();
    if (kByPosition) {
      k4 = Value(); // (nothing to unrepeat or unrotate: the keys' form is known, or nothing)
    } else {
      k4 = unrepeat(k4);
    }
    Value qCos, qSin, kCos, kSin;
    Value qPlain = unrotate(q4, qCos, qSin);
    Value kPlain = qPlain && k4 ? unrotate(k4, kCos, kSin) : Value();
    const bool bothRotated = qPlain && kPlain && kCos == qCos && kSin == qSin;
    if (qPlain) {
      r.cos = qCos;
      r.sin = qSin;
    }
    const SequenceForm qForm = toSequence(qPlain ? qPlain : q4, /*anyLayout=*/true);
    if (!qForm.v)
      return failure();
    r.qHeads = qForm.heads;
    // K and V split from [B, S, H*D] like Q; or else (a KV cache: past keys concatenated with the
    // new ones) taken as [B, Hkv, Sk, D], in which case only Q turns by the rotary tables.
    // Keys rotated together with Q, or not at all here (a cache holds them rotated already).
    const SequenceForm kForm =
        kByPosition ? positionMajorToSequence(kByPosition) : toSequence(bothRotated ? kPlain : k4, /*anyLayout=*/false);
    const SequenceForm vForm = kForm.v ? toSequence(v4, /*anyLayout=*/false) : SequenceForm();
    if (kByPosition && !(vForm.v && vForm.heads == kForm.heads))
      return failure();
    r.rotateKeys = bothRotated;
    int64_t tmHeads = 0, tmvHeads = 0;
    Value kt = kForm.v ? Value() : timeMajorToHeads(k4, tmHeads), vt = kt ? timeMajorToHeads(v4, tmvHeads) : Value();
    if (kForm.v && vForm.v && vForm.heads == kForm.heads) {
      r.kvHeads = kForm.heads;
    } else if (kt && vt && tmHeads == tmvHeads) { // a length-major KV cache, read where it is
      r.k = kt;
      r.v = vt;
      r.kvHeads = tmHeads;
      r.timeMajor = true;
      r.rotateKeys = false; // k4, as it is read, is rotated already
    } else {
      auto kt = fusion::tensorType(k4), vt = fusion::tensorType(v4);
      const int64_t d = fusion::tensorType(q4).getShape().back();
      if (kt.getRank() != 4 || vt.getRank() != 4 || kt.isDynamicDim(1) || kt.getDimSize(1) != vt.getDimSize(1) ||
          kt.getDimSize(3) != d || vt.isDynamicDim(3) || kt.getDimSize(0) != vt.getDimSize(0) ||
          kt.getDimSize(2) != vt.getDimSize(2))
        return failure();
      r.k = k4;
      r.v = v4;
      r.kvHeads = kt.getDimSize(1);
      r.rotateKeys = false; // as above
    }
    if (r.qHeads % r.kvHeads != 0)
      return failure();
    const int64_t sq = probsType.getDimSize(2), sk = probsType.getDimSize(3);
    if (r.mask && !ShapedType::isDynamic(sq) && !ShapedType::isDynamic(sk) && isCausalMask(r.mask, sq, sk)) {
      r.mask = Value();
      r.causal = true;
    }
    // Rotary tables must be [1 or B, S, D] or [1 or B, 1, S, D] (reshaped below).
    for (Value table : {r.cos, r.sin}) {
      auto type = table ? fusion::tensorType(table) : RankedTensorType();
      if (table && type.getRank() != 3 && (type.getRank() != 4 || type.getDimSize(1) != 1))
        return failure();
    }
    // Build: nothing above changed the IR, so a failure there left it as it was; from here on a
    // failure erases what was built (abandonBuilt).
    rewriter.setInsertionPoint(root);
    Operation *before = root->getPrevNode();
    auto abandon = [&] { return abandonBuilt(rewriter, root, before); };
    Location loc = root->getLoc();
    auto element = fusion::tensorType(q4).getElementType();
    Value none = fusion::emptyTensor(rewriter, loc, element);
    r.q = buildSequence(rewriter, loc, qForm);
    if (qFactor && r.q) { // [B or 1, S, 1] beside the sequence [B, S, H * D]
      Value perRow = reshapeTo(rewriter, loc, qFactor, {0, -1, 1});
      r.q = perRow ? fusion::createValue(rewriter, loc, "llmc.mul", {r.q, perRow}) : Value();
    }
    if (kForm.v && !r.k) {
      r.k = buildSequence(rewriter, loc, kForm);
      r.v = buildSequence(rewriter, loc, vForm);
    }
    if (!r.q || !r.k || !r.v)
      return abandon();
    if (r.negateMask)
      r.mask = fusion::create(rewriter, loc, "llmc.not", {r.mask})->getResult(0);
    if (r.keep) {
      Value keep = r.negateKeep ? fusion::create(rewriter, loc, "llmc.not", {r.keep})->getResult(0) : r.keep;
      if (!r.mask)
        r.hidden = r.keepHidden; // (the additive mask was the causal one, now is_causal)
      if (!(r.mask = maskUnderKeep(rewriter, loc, keep, r.mask, r.keepHidden)))
        return abandon();
    }
    if (r.bias && !(r.mask = maskWithBias(rewriter, loc, r, merged, probsType)))
      return abandon();
    if (sinks && !(r.sinks = sinksPerHead(rewriter, loc, sinks->column, r.qHeads, /*build=*/true)))
      return abandon();
    for (Value *table : {&r.cos, &r.sin}) {
      if (!*table)
        continue;
      auto type = fusion::tensorType(*table);
      if (type.getRank() == 3)
        continue;
      *table = reshapeTo(rewriter, loc, *table,
                         {type.isDynamicDim(0) ? 0 : type.getDimSize(0), -1, type.getShape().back()});
      if (!*table)
        return abandon();
    }
    const double defaultScale = 1.0 / std::sqrt(double(fusion::tensorType(q4).getShape().back()));
    SmallVector<Value, 7> operands{r.q, r.k, r.v, r.mask ? r.mask : none, r.cos ? r.cos : none, r.sin ? r.sin : none};
    if (r.sinks)
      operands.push_back(r.sinks);
    Operation *fused = fusion::create(
        rewriter, loc, "llmc.fused_attention", operands,
        {rewriter.getNamedAttr("q_num_heads", rewriter.getI64IntegerAttr(r.qHeads)),
         rewriter.getNamedAttr("kv_num_heads", rewriter.getI64IntegerAttr(r.kvHeads)),
         rewriter.getNamedAttr("scale", rewriter.getF32FloatAttr(std::fabs(r.scale - defaultScale) < 1e-7 * defaultScale
                                                                     ? 0.0f
                                                                     : float(r.scale))),
         rewriter.getNamedAttr("is_causal", rewriter.getI64IntegerAttr(r.causal)),
         rewriter.getNamedAttr("rotate_keys", rewriter.getI64IntegerAttr(r.rotateKeys || !r.cos)),
         rewriter.getNamedAttr("kv_time_major", rewriter.getI64IntegerAttr(r.timeMajor)),
         rewriter.getNamedAttr("softcap", rewriter.getF32FloatAttr(float(r.softcap)))});
    if (!fused)
      return abandon();
    Value result = fused->getResult(0);
    if (rootRank == 2) {
      Operation *flat = fusion::create(rewriter, loc, "llmc.reshape", {result, cast<ReshapeOp>(root).getShape()});
      result = flat ? flat->getResult(0) : Value();
    } else if (rootRank == 4) {
      result = reshapeTo(rewriter, loc, result, {0, 0, headsType.getDimSize(2), headsType.getDimSize(3)});
    }
    if (!result || result.getType() != root->getResult(0).getType())
      return abandon();
    rewriter.replaceOp(root, result);
    ++count;
    rotaries += r.cos ? 1 : 0;
    causalMasks += r.causal ? 1 : 0;
    return success();
  }
};

// Native ONNX Attention with no score output read is the same computation: it becomes
// llmc.fused_attention too (one kernel family to optimize); a left window of L keys becomes
// `sliding_window = L + 1`, a right window only where the causal frontier makes it moot. The 3-D form
// ([batch, seq, heads * head]) as it is; the 4-D form ([batch, heads, seq, head]) with its query
// turned to the 3-D form and the result back. Keys and values of the 4-D form stay 4-D, which
// fused_attention reads as a KV cache holds them. With a KV cache (past keys and values), the
// present ones become concatenations of the past and the new (made 4-D first in the 3-D form),
// which the attention reads: the form of Hugging Face's exports, which llmc-kv-cache-layout and
// the executors' in-place appends know. A causal frontier or a window is raised only where the
// queries and the new keys are equally many (static lengths, or one symbolic length: `sameLength`):
// ONNX aligns them at the past's end, fused_attention at the end of all keys.
struct NativeAttentionPattern : OpRewritePattern<AttentionOp> {
  RewriteCounter &count;
  const llvm::DenseSet<Operation *> &sameLength;
  NativeAttentionPattern(MLIRContext *ctx, RewriteCounter &count, const llvm::DenseSet<Operation *> &sameLength)
      : OpRewritePattern(ctx), count(count), sameLength(sameLength) {}

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    auto q = fusion::tensorType(op.getQ()), k = fusion::tensorType(op.getK()), v = fusion::tensorType(op.getV());
    const bool cached = !fusion::isEmpty(op.getPastKey());
    // (The window getters return the attributes as unsigned.)
    const int64_t left = int64_t(op.getLeftWindowSize()), right = int64_t(op.getRightWindowSize());
    if (cached == fusion::isEmpty(op.getPastValue()) || !fusion::isEmpty(op.getNonpadKvSeqlen()) ||
        op.getSoftcap().convertToDouble() < 0.0 || left < -1 || right < -1 || (right >= 0 && !op.getIsCausal()) ||
        (!cached && (!op.getPresentKey().use_empty() || !op.getPresentValue().use_empty())) ||
        !op.getQkOutput().use_empty() || !fusion::isFusedFloat(op.getQ()))
      return failure();
    const bool split = q.getRank() == 4; // [batch, heads, seq, head]
    int64_t qHeads = op.getQNumHeads(), kvHeads = op.getKvNumHeads(), head = 0;
    if (split) {
      qHeads = q.getDimSize(1), kvHeads = k.getDimSize(1), head = q.getDimSize(3);
      if (k.getRank() != 4 || v.getRank() != 4 || v.getDimSize(1) != kvHeads)
        return failure();
    } else if (q.getRank() == 3 && k.getRank() == 3 && v.getRank() == 3 && qHeads > 0 && kvHeads > 0 &&
               !q.isDynamicDim(2) && q.getDimSize(2) % qHeads == 0) {
      head = q.getDimSize(2) / qHeads;
    } else {
      return failure();
    }
    if (ShapedType::isDynamic(qHeads) || ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(head) ||
        k.getShape().back() != (split ? head : kvHeads * head) || v.getShape().back() != k.getShape().back())
      return failure();
    // ONNX places query i at key position i + past (i without a cache) for its causal frontier and
    // its window, fused_attention at i + (all keys - queries): they agree when there are as many
    // new keys as queries (k's length, past or not), which the types or the symbolic shapes must
    // show.
    const int64_t sq = q.getDimSize(split ? 2 : 1), sk = k.getDimSize(split ? 2 : 1);
    if ((op.getIsCausal() || left >= 0) && !sameLength.contains(op) && (ShapedType::isDynamic(sq) || sq != sk))
      return failure();
    // Build in front of the op; a failure from here on erases what was built (abandonBuilt).
    rewriter.setInsertionPoint(op);
    Operation *before = op->getPrevNode();
    auto abandon = [&] { return abandonBuilt(rewriter, op, before); };
    Location loc = op.getLoc();
    Value none = fusion::emptyTensor(rewriter, loc, q.getElementType());
    Value mask = op.getMask();
    if (fusion::isEmpty(mask))
      mask = none;
    // [batch, heads, seq, head] <-> [batch, seq, heads * head]: a transpose and a reshape (0
    // copies a dimension, so that a dynamic batch or sequence passes).
    // (Each gives a null value where the op cannot be built, and passes one on.)
    auto swapHeadsAndSeq = [&](Value x) -> Value {
      Operation *t = x ? fusion::create(rewriter, loc, "llmc.transpose", {x},
                                        {rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}))})
                       : nullptr;
      return t ? t->getResult(0) : Value();
    };
    auto reshape = [&](Value x, ArrayRef<int64_t> dims) { return reshapeTo(rewriter, loc, x, dims); };
    // The present keys or values: the past ones, then the new ones [batch, heads, seq, head].
    auto present = [&](Value past, Value fresh) -> Value {
      if (!split)
        fresh = swapHeadsAndSeq(reshape(fresh, {0, 0, kvHeads, head}));
      Operation *c = fresh ? fusion::create(rewriter, loc, "llmc.concat", {past, fresh},
                                            {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(2))})
                           : nullptr;
      return c ? c->getResult(0) : Value();
    };
    Value query = split ? reshape(swapHeadsAndSeq(op.getQ()), {0, 0, qHeads * head}) : op.getQ();
    Value keys = cached ? present(op.getPastKey(), op.getK()) : op.getK();
    Value values = cached ? present(op.getPastValue(), op.getV()) : op.getV();
    if (!query || !keys || !values || (cached && (keys.getType() != op.getPresentKey().getType() ||
                                                   values.getType() != op.getPresentValue().getType())))
      return abandon();
    const float scale = op.getScale() ? op.getScale()->convertToFloat() : 0.0f;
    Operation *fused = fusion::create(rewriter, loc, "llmc.fused_attention", {query, keys, values, mask, none, none},
                                      {rewriter.getNamedAttr("q_num_heads", rewriter.getI64IntegerAttr(qHeads)),
                                       rewriter.getNamedAttr("kv_num_heads", rewriter.getI64IntegerAttr(kvHeads)),
                                       rewriter.getNamedAttr("scale", rewriter.getF32FloatAttr(scale)),
                                       rewriter.getNamedAttr("is_causal", op.getIsCausalAttr()),
                                       rewriter.getNamedAttr("softcap", op.getSoftcapAttr()),
                                       rewriter.getNamedAttr("sliding_window", rewriter.getI64IntegerAttr(left + 1))});
    if (!fused)
      return abandon();
    Value result = fused->getResult(0);
    if (split)
      result = swapHeadsAndSeq(reshape(result, {0, 0, qHeads, head}));
    if (!result || result.getType() != op.getOutput().getType())
      return abandon();
    rewriter.replaceAllUsesWith(op.getOutput(), result);
    if (cached) {
      rewriter.replaceAllUsesWith(op.getPresentKey(), keys);
      rewriter.replaceAllUsesWith(op.getPresentValue(), values);
    }
    rewriter.eraseOp(op);
    ++count;
    return success();
  }
};

// Native RotaryEmbedding (rotate-half, all features) on both q and k of a fused_attention moves
// inside it: the half tables, gathered by position when there are position ids, become the full
// [B, S, D] tables the fused op takes. CSE then shares the tables between layers.
struct NativeRotaryPattern : OpRewritePattern<FusedAttentionOp> {
  RewriteCounter &count;
  NativeRotaryPattern(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  static bool plainRotary(RotaryOp r, int64_t heads) {
    const int64_t d = fusion::tensorType(r.getInput()).getShape().back() / std::max<int64_t>(heads, 1);
    return fusion::tensorType(r.getInput()).getRank() == 3 && r.getNumHeads() == heads && !r.getInterleaved() &&
           (r.getRotaryEmbeddingDim() == 0 || r.getRotaryEmbeddingDim() == d);
  }

  LogicalResult matchAndRewrite(FusedAttentionOp op, PatternRewriter &rewriter) const override {
    auto q = def<RotaryOp>(op.getQ()), k = def<RotaryOp>(op.getK());
    if (!fusion::isEmpty(op.getCos()) || !q || !k || !plainRotary(q, op.getQNumHeads()) ||
        !plainRotary(k, op.getKvNumHeads()) || q.getCos() != k.getCos() || q.getSin() != k.getSin() ||
        q.getPositionIds() != k.getPositionIds())
      return failure();
    const bool byPosition = !fusion::isEmpty(q.getPositionIds());
    if (fusion::tensorType(q.getCos()).getRank() != (byPosition ? 2 : 3))
      return failure();
    SmallVector<Value> tables;
    for (Value half : {q.getCos(), q.getSin()}) {
      if (byPosition)
        half = fusion::create(rewriter, op.getLoc(), "llmc.gather", {half, q.getPositionIds()},
                              {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(0))})
                   ->getResult(0);
      tables.push_back(fusion::create(rewriter, op.getLoc(), "llmc.concat", {half, half},
                                      {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1))})
                           ->getResult(0));
    }
    Operation *fused = fusion::create(rewriter, op.getLoc(), "llmc.fused_attention",
                                      fusion::attentionOperands(op, q.getInput(), k.getInput(), op.getV(), op.getMask(),
                                                                tables[0], tables[1]),
                                      op->getAttrs());
    rewriter.replaceOp(op, fused->getResults());
    ++count;
    return success();
  }
};

// A constant holding `half` right after the full table's constant: the one made there for an
// earlier rotation where it holds the same values (the layers share their tables), or a new one.
Value halvedConstantOf(PatternRewriter &rewriter, Location loc, Value full, int64_t batch, int64_t seq,
                       const std::vector<float> &half) {
  auto type = RankedTensorType::get({batch, seq, int64_t(half.size()) / (batch * seq)},
                                    fusion::tensorType(full).getElementType());
  Operation *fullOp = full.getDefiningOp();
  for (Operation *n = fullOp->getNextNode(); n && isa<ConstantOp>(n); n = n->getNextNode()) {
    if (n->getResult(0).getType() != type)
      continue;
    std::optional<std::vector<float>> made = fusion::floatValues(n->getResult(0));
    if (made && std::memcmp(made->data(), half.data(), half.size() * sizeof(float)) == 0)
      return n->getResult(0);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(fullOp);
  return fusion::floatConstant(rewriter, loc, type, half);
}

// A rotation that no attention took (keys on their way into a KV cache, which the attention then
// reads rotated; queries whose rotation fused_attention does not do) becomes one llmc.rotary:
// x * cos + partner(x) * sin (unrotate) on x [B, H, S, D], or [B, S, H, D] before the heads
// move (GPT-J, CodeGen), when the tables are provably each angle twice, the way the pairing
// reads them. The rotary op then takes the half tables [B, S, D/2], which CSE shares between
// layers. A partial rotary, concat(rotation of x[..., :R], x[..., R:]), becomes one llmc.rotary
// of x with rotary_embedding_dim R. Five to eleven launches per rotation become one.
struct RotationPattern : OpRewritePattern<AddOp> {
  RewriteCounter &count;
  RotationPattern(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  // `a` where `v` is each angle of `a` twice on the last axis, as `pairing` reads it: concat(a, a)
  // for halves; for neighbours torch's repeat_interleave(a, 2, -1),
  // reshape(expand(unsqueeze(a, -1), [..., 2]), [..., 2 * n]), whose unsqueeze may also add the
  // heads axis `headsAxis` of the 4-D table (canonicalization merges two unsqueezes), which then
  // sets `heads`.
  static Value undoubled(Value v, Pairing pairing, int64_t headsAxis, bool &heads) {
    if (pairing == Pairing::Halves) {
      auto cat = def<ConcatOp>(v);
      return cat && cat.getInputs().size() == 2 && cat.getInputs()[0] == cat.getInputs()[1] && isLastAxis(cat)
                 ? cat.getInputs()[0]
                 : Value();
    }
    auto flat = def<ReshapeOp>(v);
    auto e = flat ? def<ExpandOp>(flat.getInput()) : ExpandOp();
    auto u = e ? def<UnsqueezeOp>(e.getInput()) : UnsqueezeOp();
    if (!u)
      return {};
    auto a = fusion::tensorType(u.getInput()), spread = fusion::tensorType(u.getResult()),
         twice = fusion::tensorType(e.getResult()), out = fusion::tensorType(flat.getResult());
    const int64_t m = spread.getRank();
    SmallVector<int64_t> axes;
    for (int64_t axis : u.getAxes())
      axes.push_back(axis < 0 ? axis + m : axis);
    llvm::sort(axes);
    const bool withHeads = axes.size() == 2 && axes[0] == headsAxis && !heads;
    if (a.getRank() < 1 || a.isDynamicDim(a.getRank() - 1) || axes.back() != m - 1 ||
        axes.size() != (withHeads ? 2u : 1u) || twice.getRank() != m || twice.getShape().back() != 2 ||
        out.getRank() != m - 1 || out.getShape().back() != 2 * a.getShape().back())
      return {};
    for (int64_t i = 0; i + 1 < m; ++i)
      if (twice.getDimSize(i) != spread.getDimSize(i) || (i + 2 < m && out.getDimSize(i) != spread.getDimSize(i)))
        return {};
    heads |= withHeads;
    return u.getInput();
  }

  // The half table behind a full one: the full table is the half one with each angle twice
  // (undoubled), unsqueezed on the heads axis `headsAxis` of the 4-D result, and possibly taken
  // the cosine or sine of (the op `OpT`, which `apply` says is still to be made on the half),
  // in any order; for neighbours possibly from the first half of a table of halves, concat(a, a)
  // (GLM's, Helium's and ERNIE 4.5's cos[..., :D/2].repeat_interleave(2) of Llama's tables).
  // Returns [batch, seq, r / 2], or null. Only matches: nothing is created.
  template <typename OpT>
  static Value halfTableOf(Value full, Pairing pairing, int64_t headsAxis, int64_t r, int64_t batch, int64_t seq,
                           bool &apply) {
    bool heads = false, doubled = false, firstHalf = false, halvesUndone = false;
    apply = false;
    Value v = full;
    auto firstHalfOf = [](Value sliced) { // the table that `sliced` is the first half of
      auto s = def<SliceOp>(sliced);
      auto in = s ? fusion::tensorType(s.getInput()) : RankedTensorType();
      const int64_t n = in ? in.getShape().back() : 0;
      return s && n != ShapedType::kDynamic && n % 2 == 0 && isSliceOfLast(sliced, s.getInput(), 0, n / 2)
                 ? s.getInput()
                 : Value();
    };
    while (v) {
      if (pairing == Pairing::Neighbours && !firstHalf) {
        if (Value whole = firstHalfOf(v)) {
          firstHalf = true;
          v = whole;
          continue;
        }
      }
      if (firstHalf && !halvesUndone) { // the table of halves, concat(a, a)
        if (Value a = undoubled(v, Pairing::Halves, headsAxis, heads)) {
          halvesUndone = true;
          v = a;
          continue;
        }
      }
      if (auto u = def<UnsqueezeOp>(v); !heads && u && u.getAxes().size() == 1 &&
                                        (u.getAxes()[0] == headsAxis || u.getAxes()[0] == headsAxis - 4)) {
        heads = true;
        v = u.getInput();
      } else if (auto f = def<OpT>(v); !apply && f) {
        apply = true;
        v = f->getOperand(0);
      } else if (Value a = doubled ? Value() : undoubled(v, pairing, headsAxis, heads)) {
        doubled = true;
        v = a;
      } else {
        break;
      }
    }
    // The rotary op takes one table row per token, for each batch or one for all: no broadcast
    // over the tokens (x's `batch` and `seq`; two dynamic sizes are taken as the same symbol, as
    // the exporters make them).
    auto half = v ? fusion::tensorType(v) : RankedTensorType();
    if (!heads || !doubled || firstHalf != halvesUndone || half.getRank() != 3 || half.getShape().back() != r / 2 ||
        (half.getDimSize(0) != batch && half.getDimSize(0) != 1) || half.getDimSize(1) != seq)
      return {};
    return v;
  }

  // The half table [batch, seq, r / 2] of a constant full one (a static sequence's tables,
  // folded from the angles at import): the table broadcast over the heads (axis `headsAxis` of
  // x's [B, H, S, D] or [B, S, H, D]) and over a batch of 1, each angle twice as `pairing` reads
  // them, bit for bit. Only reads: halvedConstantOf makes the constant.
  static std::optional<std::vector<float>> halfOfConstant(Value full, Pairing pairing, int64_t headsAxis, int64_t r,
                                                          int64_t batch, int64_t seq) {
    auto type = fusion::tensorType(full);
    if (type.getRank() > 4 || type.getRank() < 2 || ShapedType::isDynamic(batch) || ShapedType::isDynamic(seq) ||
        !type.hasStaticShape())
      return std::nullopt;
    SmallVector<int64_t> dims(4 - type.getRank(), 1); // right-aligned against x's rank 4
    llvm::append_range(dims, type.getShape());
    const int64_t seqAxis = headsAxis == 1 ? 2 : 1;
    if (dims[headsAxis] != 1 || dims[seqAxis] != seq || dims[3] != r || (dims[0] != 1 && dims[0] != batch))
      return std::nullopt;
    std::optional<std::vector<float>> values = fusion::floatValues(full);
    if (!values)
      return std::nullopt;
    const int64_t half = r / 2;
    std::vector<float> out(size_t(batch * seq * half));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s) {
        const float *row = values->data() + ((dims[0] == 1 ? 0 : b) * seq + s) * r;
        for (int64_t i = 0; i < half; ++i) {
          const float angle = pairing == Pairing::Halves ? row[i] : row[2 * i];
          const float twin = pairing == Pairing::Halves ? row[i + half] : row[2 * i + 1];
          if (std::memcmp(&angle, &twin, sizeof(float)) != 0)
            return std::nullopt;
          out[size_t((b * seq + s) * half + i)] = angle;
        }
      }
    return out;
  }

  // cos or sin (`op`) of a half table, made right after it, so that it comes before every
  // layer's projections (the CUDA executor's split can then rotate the keys).
  static Operation *tableOf(PatternRewriter &rewriter, Location loc, Value half, StringRef op) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfterValue(half);
    return fusion::create(rewriter, loc, op, {half});
  }

  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    Value cos, sin;
    Pairing pairing = Pairing::Halves;
    bool negated = false;
    Value x = unrotate(op.getResult(), cos, sin, &pairing, &negated);
    if (!x || !fusion::isFusedFloat(x) || fusion::tensorType(x).getRank() != 4 ||
        fusion::tensorType(op.getResult()) != fusion::tensorType(x))
      return failure();
    // Partial: x = whole[..., :r] and the sum's one reader concat(sum, whole[..., r:]).
    Value whole = x;
    Operation *replaced = op;
    int64_t r = fusion::tensorType(x).getShape().back();
    if (auto s = def<SliceOp>(x); s && op.getResult().hasOneUse()) {
      auto cat = dyn_cast<ConcatOp>(*op.getResult().getUsers().begin());
      Value in = s.getInput();
      const int64_t d = fusion::tensorType(in).getShape().back();
      if (cat && cat.getInputs().size() == 2 && cat.getInputs()[0] == op.getResult() && isLastAxis(cat) &&
          d != ShapedType::kDynamic && isSliceOfLast(x, in, 0, r) && isSliceOfLast(cat.getInputs()[1], in, r, d) &&
          cat.getResult().getType() == in.getType()) {
        whole = in;
        replaced = cat;
      }
    }
    // The heads axis: where the tables broadcast, 1 ([B, H, S, D]) or 2 ([B, S, H, D]).
    auto xType = fusion::tensorType(x);
    Value cosHalf, sinHalf;
    std::optional<std::vector<float>> cosValues, sinValues; // (constant tables)
    bool applyCos = false, applySin = false;
    const int64_t batch = xType.getDimSize(0);
    int64_t headsAxis = 1, seq = 0;
    for (; headsAxis <= 2; ++headsAxis) {
      seq = xType.getDimSize(headsAxis == 1 ? 2 : 1);
      cosHalf = halfTableOf<CosOp>(cos, pairing, headsAxis, r, batch, seq, applyCos);
      sinHalf = halfTableOf<SinOp>(sin, pairing, headsAxis, r, batch, seq, applySin);
      if (cosHalf && sinHalf)
        break;
      if (fusion::isFloatConstant(cos) && fusion::isFloatConstant(sin)) {
        cosValues = halfOfConstant(cos, pairing, headsAxis, r, batch, seq);
        sinValues = halfOfConstant(sin, pairing, headsAxis, r, batch, seq);
        if (cosValues && sinValues)
          break;
      }
    }
    if (!(cosHalf && sinHalf) && !(cosValues && sinValues))
      return failure();
    Location loc = op.getLoc();
    if (cosValues) { // (shared, so not among `made`: an abandoned rewrite leaves them to DCE)
      applyCos = applySin = false;
      cosHalf = halvedConstantOf(rewriter, loc, cos, batch, seq, *cosValues);
      sinHalf = halvedConstantOf(rewriter, loc, sin, batch, seq, *sinValues);
    }
    SmallVector<Operation *> made;
    auto abandon = [&] {
      for (Operation *m : llvm::reverse(made))
        if (m && m->use_empty())
          rewriter.eraseOp(m);
      return failure();
    };
    auto keep = [&](Operation *m) {
      made.push_back(m);
      return m ? m->getResult(0) : Value();
    };
    const Value cosIn = applyCos ? keep(tableOf(rewriter, loc, cosHalf, "llmc.cos")) : cosHalf;
    Value sinIn = applySin ? keep(tableOf(rewriter, loc, sinHalf, "llmc.sin")) : sinHalf;
    if (negated && sinIn) // the opposite angles: the sines negated (one table, which the layers share)
      sinIn = keep(fusion::create(rewriter, loc, "llmc.neg", {sinIn}));
    if (!cosIn || !sinIn)
      return abandon();
    // The rotary op reads [B, H, S, D]: a [B, S, H, D] value goes through transpose(0,2,1,3) and
    // back (llmc-fold-transposes then rotates its rows [B, S, H * D] where they are).
    auto swapHeads = [&](Value v) {
      NamedAttribute perm = rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
      return v ? keep(fusion::create(rewriter, loc, "llmc.transpose", {v}, {perm})) : Value();
    };
    Value in = headsAxis == 2 ? swapHeads(whole) : whole;
    Value rotated =
        in ? keep(fusion::create(
                 rewriter, loc, "llmc.rotary",
                 {in, cosIn, sinIn, keep(fusion::emptyTensor(rewriter, loc, rewriter.getI64Type()).getDefiningOp())},
                 {rewriter.getNamedAttr("interleaved", rewriter.getI64IntegerAttr(pairing == Pairing::Neighbours)),
                  rewriter.getNamedAttr("rotary_embedding_dim", rewriter.getI64IntegerAttr(r))}))
           : Value();
    Value result = headsAxis == 2 ? swapHeads(rotated) : rotated;
    if (!result || result.getType() != replaced->getResult(0).getType()) // leave the IR as it was
      return abandon();
    rewriter.replaceOp(replaced, result);
    if (replaced != op)
      rewriter.eraseOp(op);
    ++count;
    return success();
  }
};

// Whether `pairs` is `x` [.., D] with its last axis cut into pairs [.., D/2, 2] (the leading
// dimensions kept).
bool cutsIntoPairs(RankedTensorType x, RankedTensorType pairs) {
  const int64_t rank = pairs.getRank();
  return rank >= 2 && x.getRank() == rank - 1 && fusion::keepsLeading(x, pairs) && pairs.getDimSize(rank - 1) == 2 &&
         !x.isDynamicDim(rank - 2) && pairs.getDimSize(rank - 2) * 2 == x.getDimSize(rank - 2);
}

// Whether `gather` takes one feature of every pair of `pairs` [.., 2]: a scalar index on its last axis.
bool takesOneOfPairs(GatherOp gather, Value pairs) {
  const int64_t rank = fusion::tensorType(pairs).getRank();
  return gather.getData() == pairs && fusion::tensorType(gather.getIndices()).getRank() == 0 &&
         fusion::isAxis(gather.getAxis(), rank - 1, rank);
}

// A reshape into pairs [.., D/2, 2] that only gathers read, one feature of each pair, from a value
// that is not [.., D] with the same leading dimensions (the exporter folded a view into it: without
// a cache DeepSeek-V2's key goes [B, S, D] to [B, 1, S, D/2, 2] at once) becomes two: to [.., D]
// first, then the pairs, so that PartsRotationPattern finds the x whose pairs are rotated. Both
// are views; where no rotation follows, one view more is left.
struct PairsCutPattern : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto in = fusion::tensorType(op.getInput()), pairs = fusion::tensorType(op.getResult());
    const int64_t rank = pairs.getRank();
    if (rank < 3 || pairs.getDimSize(rank - 1) != 2 || pairs.isDynamicDim(rank - 2) || op.getResult().use_empty())
      return failure();
    const int64_t d = 2 * pairs.getDimSize(rank - 2);
    if (cutsIntoPairs(in, pairs))
      return failure(); // a cut of the last axis already
    for (Operation *user : op.getResult().getUsers()) {
      auto gather = dyn_cast<GatherOp>(user);
      if (!gather || !takesOneOfPairs(gather, op.getResult()))
        return failure();
    }
    // [.., D] with the one dynamic leading dimension (if any) taking the rest.
    SmallVector<int64_t> flat(pairs.getShape().drop_back(2));
    if (llvm::count_if(flat, ShapedType::isDynamic) > 1)
      return failure();
    for (int64_t &dim : flat)
      dim = ShapedType::isDynamic(dim) ? -1 : dim;
    flat.push_back(d);
    Operation *before = op->getPrevNode();
    Value x = reshapeTo(rewriter, op.getLoc(), op.getInput(), flat);
    SmallVector<int64_t> cut(rank - 2, 0);
    cut.append({d / 2, 2});
    Value cutPairs = reshapeTo(rewriter, op.getLoc(), x, cut);
    if (!cutPairs || cutPairs.getType() != op.getType())
      return abandonBuilt(rewriter, op, before);
    rewriter.replaceOp(op, cutPairs);
    return success();
  }
};

// A rotation written on two parts of x [B, H, S, D], concat(e * cos - o * sin, o * cos + e * sin),
// tables [B, 1, S, D/2] (one angle per pair; since session 36 also x [B, S, H, D] with tables
// [B, S, 1, D/2], rotated as the sequence [B, S, H * D]: Llama 4's), in one of two forms:
// - the halves, e = x[..., :D/2] and o = x[..., D/2:] (a split in two or two slices; GPT-OSS):
//   the rotation of halves, one llmc.rotary;
// - the even and odd features, e = x[..., 0::2] and o = x[..., 1::2] (DeepSeek's
//   apply_rotary_pos_emb_interleave): the interleaved rotation of x (pairs 2i, 2i + 1) with its
//   result de-interleaved, one llmc.rotary (interleaved) and one transpose, [.., D/2, 2] to
//   [.., 2, D/2].
// Either replaces two parts, four products and three elementwise ops (two kernels once fused) and
// a concatenation. A third form takes the pairs as they come and writes them back stacked
// (DeepSeek-V2's rotary in real arithmetic, models/export_kv_models.py's real_rotary_deepseek_v2):
// e, o = x.reshape(.., D/2, 2)[..., 0] and [..., 1], stack([e * cos - o * sin, o * cos + e * sin],
// -1), which is [.., D/2, 2] of the interleaved rotation of x: one llmc.rotary (interleaved) and
// a reshape, which the flatten after it undoes.
struct PartsRotationPattern : OpRewritePattern<ConcatOp> {
  RewriteCounter &halves, &evenOdd, &stackedPairs;
  PartsRotationPattern(MLIRContext *ctx, RewriteCounter &halves, RewriteCounter &evenOdd, RewriteCounter &stackedPairs)
      : OpRewritePattern(ctx), halves(halves), evenOdd(evenOdd), stackedPairs(stackedPairs) {}

  // m = a * b with `a` one factor: the other, or null.
  static Value otherFactor(Value m, Value a) {
    auto mul = def<MulOp>(m);
    return mul && (mul.getLhs() == a || mul.getRhs() == a) ? fusion::other(mul, a) : Value();
  }

  // x where v is x.reshape(.., D/2, 2)[..., index]: a gather of the scalar `index` on the last
  // axis of a reshape that only cuts x's last axis into pairs. Sets `index`; null where v is not
  // of this form.
  static Value pairGatheredFrom(Value v, int64_t &index) {
    auto gather = def<GatherOp>(v);
    auto pairs = gather ? def<ReshapeOp>(gather.getData()) : ReshapeOp();
    std::optional<double> at = pairs ? fusion::scalarValue(gather.getIndices()) : std::nullopt;
    if (!at || !takesOneOfPairs(gather, pairs.getResult()) ||
        !cutsIntoPairs(fusion::tensorType(pairs.getInput()), fusion::tensorType(pairs.getResult())))
      return {};
    index = *at < 0 ? int64_t(*at) + 2 : int64_t(*at);
    return pairs.getInput();
  }

  // Whether v is part `index` (0 or 1) of x as `pairs` takes them: the halves; the even or odd
  // features, strided slices or gathered pairs.
  static bool isPart(Value v, Value x, int64_t index, Pairing pairs) {
    const int64_t d = fusion::tensorType(x).getShape().back();
    if (pairs == Pairing::Halves)
      return fusion::isHalf(v, x, index);
    int64_t gathered = -1;
    return isSliceOfLast(v, x, index, d, 2) || (pairGatheredFrom(v, gathered) == x && gathered == index);
  }

  // The x that v is the first part of, and how its parts are taken; null where it is none.
  static Value firstPartOf(Value v, Pairing &pairs) {
    int64_t index = -1;
    Value x = fusion::partedFrom(v);
    if (!x)
      x = pairGatheredFrom(v, index);
    auto t = x ? fusion::tensorType(x) : RankedTensorType();
    if (!x || t.getRank() != 4 || t.isDynamicDim(3) || t.getDimSize(3) % 2 != 0)
      return {};
    for (Pairing p : {Pairing::Halves, Pairing::Neighbours})
      if (isPart(v, x, 0, p)) {
        pairs = p;
        return x;
      }
    return {};
  }

  // The half table [B or 1, S, D/2] behind a table of x's rotation, x [B, H, S, D] (`headsAxis`
  // 1) or, since session 36, [B, S, H, D] (2: Llama 4's, before its heads move): such a table
  // unsqueezed on the heads axis; or, x [B, H, S, D], a constant [B or 1, 1, S, D/2] (a static
  // length's tables, folded at import), made [B or 1, S, D/2] by halvedConstantOf (`build` false
  // only checks). A table of batch 1 serves every batch.
  static Value halfTable(PatternRewriter &rewriter, Location loc, Value table, RankedTensorType x, int64_t headsAxis,
                         bool build) {
    const int64_t batch = x.getDimSize(0), seq = x.getDimSize(3 - headsAxis), half = x.getDimSize(3) / 2;
    auto fits = [&](int64_t b, int64_t s) { return (b == batch || b == 1) && s == seq; };
    if (auto u = def<UnsqueezeOp>(table);
        u && u.getAxes().size() == 1 && fusion::isAxis(u.getAxes()[0], headsAxis, 4)) {
      auto t = fusion::tensorType(u.getInput());
      return t.getRank() == 3 && fits(t.getDimSize(0), t.getDimSize(1)) && t.getDimSize(2) == half ? u.getInput()
                                                                                                   : Value();
    }
    auto t = fusion::tensorType(table);
    if (headsAxis != 1 || !fusion::isFloatConstant(table) || !t.hasStaticShape() || t.getRank() != 4 ||
        t.getDimSize(1) != 1 || !fits(t.getDimSize(0), t.getDimSize(2)) || t.getDimSize(3) != half)
      return {};
    if (!build)
      return table;
    std::optional<std::vector<float>> values = fusion::floatValues(table);
    return values ? halvedConstantOf(rewriter, loc, table, t.getDimSize(0), seq, *values) : Value();
  }

  // The two values a rotation writes side by side on the last axis: concat(a, b); or, `stacked`,
  // concat(unsqueeze(a, -1), unsqueeze(b, -1)), torch.stack([a, b], -1). False where op is neither.
  static bool writtenParts(ConcatOp op, Value &a, Value &b, bool &stacked) {
    if (op.getInputs().size() != 2 || !isLastAxis(op))
      return false;
    a = op.getInputs()[0];
    b = op.getInputs()[1];
    auto ua = def<UnsqueezeOp>(a), ub = def<UnsqueezeOp>(b);
    const int64_t rank = fusion::tensorType(op.getResult()).getRank();
    auto onLast = [&](UnsqueezeOp u) {
      return u && u.getAxes().size() == 1 && fusion::isAxis(u.getAxes()[0], rank - 1, rank);
    };
    stacked = onLast(ua) && onLast(ub);
    if (stacked) {
      a = ua.getInput();
      b = ub.getInput();
    }
    return true;
  }

  // The type of x's rotation as the concatenation writes it: x's, or [.., D/2, 2] stacked.
  static RankedTensorType writtenType(RankedTensorType x, bool stacked) {
    if (!stacked)
      return x;
    SmallVector<int64_t> shape(x.getShape());
    shape.back() /= 2;
    shape.push_back(2);
    return RankedTensorType::get(shape, x.getElementType());
  }

  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    Value a, b;
    bool stacked = false;
    if (!writtenParts(op, a, b, stacked))
      return failure();
    auto first = def<SubOp>(a);
    auto second = def<AddOp>(b);
    auto direct = first ? def<MulOp>(first.getLhs()) : MulOp();
    if (!second || !direct)
      return failure();
    // e * cos: e is the first part of some x (the factor that is one).
    Value x, e, o, cos, sin;
    Pairing pairs = Pairing::Halves;
    for (Value candidate : {direct.getLhs(), direct.getRhs()})
      if (Value of = firstPartOf(candidate, pairs)) {
        x = of;
        e = candidate;
        cos = fusion::other(direct, e);
        break;
      }
    // (The stacked halves would be an interleaving of the rotation of halves: no exporter's form.)
    if (!x || !fusion::isFusedFloat(x) || op.getType() != writtenType(fusion::tensorType(x), stacked) ||
        (stacked && pairs != Pairing::Neighbours))
      return failure();
    // o * sin beside it, then o * cos + e * sin.
    auto rotated = def<MulOp>(first.getRhs());
    for (Value candidate : rotated ? SmallVector<Value>{rotated.getLhs(), rotated.getRhs()} : SmallVector<Value>{})
      if (isPart(candidate, x, 1, pairs)) {
        o = candidate;
        sin = fusion::other(rotated, o);
      }
    if (!o)
      return failure();
    const bool ordered = otherFactor(second.getLhs(), o) == cos && otherFactor(second.getRhs(), e) == sin;
    const bool swapped = otherFactor(second.getRhs(), o) == cos && otherFactor(second.getLhs(), e) == sin;
    auto xType = fusion::tensorType(x);
    Location loc = op.getLoc();
    if (!ordered && !swapped)
      return failure();
    // x [B, H, S, D], or [B, S, H, D] (its heads static): the axis the tables broadcast over.
    int64_t headsAxis = 0;
    for (int64_t axis : {1, 2})
      if (!headsAxis && halfTable(rewriter, loc, cos, xType, axis, false) &&
          halfTable(rewriter, loc, sin, xType, axis, false) && (axis == 1 || !xType.isDynamicDim(2)))
        headsAxis = axis;
    if (!headsAxis)
      return failure();
    // Built in front of the concatenation; a failure erases what was built (abandonBuilt). (A
    // constant table's half is made beside the full one and shared, so a failure leaves it to DCE.)
    Operation *before = op->getPrevNode();
    Value cosHalf = halfTable(rewriter, loc, cos, xType, headsAxis, true);
    Value sinHalf = halfTable(rewriter, loc, sin, xType, headsAxis, true);
    if (!cosHalf || !sinHalf)
      return abandonBuilt(rewriter, op, before);
    const int64_t d = xType.getShape().back(), heads = xType.getDimSize(headsAxis);
    const bool interleaved = pairs == Pairing::Neighbours;
    Value positions = fusion::emptyTensor(rewriter, loc, rewriter.getI64Type());
    SmallVector<NamedAttribute, 3> attrs{
        rewriter.getNamedAttr("interleaved", rewriter.getI64IntegerAttr(interleaved)),
        rewriter.getNamedAttr("rotary_embedding_dim", rewriter.getI64IntegerAttr(d))};
    // [B, S, H, D] rotates as the sequence [B, S, H * D] (views both ways).
    Value input = headsAxis == 1 ? x : reshapeTo(rewriter, loc, x, {0, 0, heads * d});
    if (headsAxis == 2)
      attrs.push_back(rewriter.getNamedAttr("num_heads", rewriter.getI64IntegerAttr(heads)));
    Value y = input ? fusion::createValue(rewriter, loc, "llmc.rotary", {input, cosHalf, sinHalf, positions}, attrs)
                    : Value();
    if (y && headsAxis == 2)
      y = reshapeTo(rewriter, loc, y, {0, 0, heads, d});
    if (!y)
      return abandonBuilt(rewriter, op, before);
    Value result = y;
    if (interleaved) { // the pairs [.., D/2, 2] as they are (stacked), or de-interleaved
      Value pairsLast = reshapeTo(rewriter, loc, y, {0, 0, 0, d / 2, 2});
      auto perm = rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr({0, 1, 2, 4, 3}));
      Value apart = pairsLast && !stacked ? fusion::createValue(rewriter, loc, "llmc.transpose", {pairsLast}, {perm})
                                          : Value();
      result = stacked ? pairsLast : reshapeTo(rewriter, loc, apart, {0, 0, 0, d});
    }
    if (!result || result.getType() != op.getType())
      return abandonBuilt(rewriter, op, before);
    rewriter.replaceOp(op, result);
    ++(stacked ? stackedPairs : interleaved ? evenOdd : halves);
    return success();
  }
};

// The native Attention ops whose queries and new keys have one length by the symbolic shapes
// (the same symbol, a dynamic sequence: NativeAttentionPattern's causal frontier); none where the
// analysis fails.
llvm::DenseSet<Operation *> queriesAsManyAsNewKeys(func::FuncOp func) {
  llvm::DenseSet<Operation *> out;
  if (!func.walk([](AttentionOp) { return WalkResult::interrupt(); }).wasInterrupted())
    return out; // (no native Attention: no analysis to run)
  std::string error;
  FailureOr<SymbolicShapes> shapes = SymbolicShapes::analyze(func, error);
  if (failed(shapes))
    return out;
  func.walk([&](AttentionOp op) {
    const ValueShape *q = shapes->find(op.getQ()), *k = shapes->find(op.getK());
    const size_t axis = fusion::tensorType(op.getQ()).getRank() == 4 ? 2 : 1;
    if (q && k && q->dims.size() > axis && k->dims.size() > axis && q->dims[axis] == k->dims[axis])
      out.insert(op);
  });
  return out;
}

struct RaiseAttention : impl::LlmcRaiseAttentionBase<RaiseAttention> {
  RewriteCounter attentions{"llmc-raise-attention", "attention blocks raised"};
  RewriteCounter rotaries{"llmc-raise-attention", "rotary embeddings folded in"};
  RewriteCounter causalMasks{"llmc-raise-attention", "causal masks turned into is_causal"};
  RewriteCounter rotations{"llmc-raise-attention", "rotations no attention took turned into llmc.rotary"};
  RewriteCounter deinterleavedRotations{"llmc-raise-attention",
                                        "rotations of de-interleaved pairs turned into llmc.rotary and a transpose"};
  RewriteCounter halvesRotations{"llmc-raise-attention", "rotations of split halves turned into llmc.rotary"};
  RewriteCounter stackedRotations{"llmc-raise-attention", "rotations of stacked pairs turned into llmc.rotary"};
  void runOnOperation() override {
    const llvm::DenseSet<Operation *> sameLength = queriesAsManyAsNewKeys(getOperation());
    RewritePatternSet patterns(&getContext());
    softmaxesOnSplitHeads(getOperation());
    sinksOfScaledOutputs(getOperation());
    untieSharedProbabilities(getOperation());
    patterns.add<SdpaPattern>(&getContext(), attentions, rotaries, causalMasks);
    patterns.add<NativeAttentionPattern>(&getContext(), attentions, sameLength);
    patterns.add<NativeRotaryPattern>(&getContext(), rotaries);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("llmc-raise-attention: the attention rewrites did not converge");
      return signalPassFailure();
    }
    // Then the rotations no attention took (after, so that attention raising sees them first).
    RewritePatternSet rotary(&getContext());
    rotary.add<RotationPattern>(&getContext(), rotations);
    rotary.add<PairsCutPattern>(&getContext());
    rotary.add<PartsRotationPattern>(&getContext(), halvesRotations, deinterleavedRotations, stackedRotations);
    if (failed(applyPatternsGreedily(getOperation(), std::move(rotary)))) {
      getOperation().emitError("llmc-raise-attention: the rotary rewrites did not converge");
      signalPassFailure();
    }
  }
};

} // namespace
} // namespace llmc
