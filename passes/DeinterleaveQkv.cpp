// llmc-deinterleave-qkv (see Passes.td): a QKV projection whose output keeps each head's query,
// key and value together gets its weight's columns reordered so that the three come one after
// the other, as a merged QKV projection's do.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCDEINTERLEAVEQKV
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// p = x · W (+ b): W [K, N] and b [N] float constants, each value on the way read once but b
// (a bias may be shared: equal constants are one after CSE; its reordered copy is small).
struct Projection {
  MatMulOp matmul;
  Value bias;
};

std::optional<Projection> projectionOf(Value p) {
  if (!p.hasOneUse())
    return std::nullopt;
  Projection out;
  if (auto add = def<AddOp>(p)) {
    for (int i = 0; i < 2 && !out.matmul; ++i)
      if (auto m = def<MatMulOp>(add->getOperand(i)); m && m.getResult().hasOneUse()) {
        out.matmul = m;
        out.bias = add->getOperand(1 - i);
      }
    auto n = out.matmul ? fusion::tensorType(out.matmul.getResult()).getShape().back() : 0;
    auto bias = out.bias ? fusion::tensorType(out.bias) : RankedTensorType();
    if (!out.matmul || bias.getRank() != 1 || bias.getDimSize(0) != n || !fusion::isFloatConstant(out.bias))
      return std::nullopt;
  } else if (!(out.matmul = def<MatMulOp>(p))) {
    return std::nullopt;
  }
  Value w = out.matmul.getRhs();
  if (fusion::tensorType(w).getRank() != 2 || !w.hasOneUse() || !fusion::isFloatConstant(w) ||
      fusion::tensorType(w).getElementType() != fusion::tensorType(p).getElementType())
    return std::nullopt;
  return out;
}

// The bytes of a constant [rows, H * G * D] with its columns (h, g, d) moved to (g, h, d).
std::vector<char> columnsDeinterleaved(ArrayRef<char> bytes, int64_t rows, int64_t heads, int64_t parts, int64_t d,
                                       size_t elementSize) {
  std::vector<char> out(bytes.size());
  const size_t run = size_t(d) * elementSize, row = size_t(heads * parts) * run;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t g = 0; g < parts; ++g)
        std::memcpy(out.data() + size_t(r) * row + size_t(g * heads + h) * run,
                    bytes.data() + size_t(r) * row + size_t(h * parts + g) * run, run);
  return out;
}

Value deinterleaved(PatternRewriter &rewriter, Location loc, Value constant, int64_t heads, int64_t parts, int64_t d) {
  auto type = fusion::tensorType(constant);
  std::vector<char> storage;
  const ArrayRef<char> bytes = *fusion::floatBytes(constant, storage); // (projectionOf checked)
  const int64_t rows = type.getRank() == 2 ? type.getDimSize(0) : 1;
  return fusion::bytesConstant(
      rewriter, loc, type,
      columnsDeinterleaved(bytes, rows, heads, parts, d, fusion::elementSize(type.getElementType())));
}

// The projection again over the reordered weight and bias, split into its `parts` parts, each
// reshaped to [..., heads, d]: the values the interleaved form's parts become. Empty where a
// build fails (with what it built erased).
SmallVector<Value> projectedParts(PatternRewriter &rewriter, Projection p, Value projected, int64_t heads,
                                  int64_t parts, int64_t d) {
  Location loc = projected.getLoc();
  rewriter.setInsertionPointAfterValue(projected);
  SmallVector<Operation *> made;
  auto build = [&](StringRef name, ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) -> Operation * {
    Operation *op = fusion::create(rewriter, loc, name, operands, attrs);
    made.push_back(op);
    return op;
  };
  Value w = deinterleaved(rewriter, loc, p.matmul.getRhs(), heads, parts, d);
  made.push_back(w.getDefiningOp());
  Operation *mm = build("llmc.matmul", {p.matmul.getLhs(), w});
  Operation *sum = nullptr;
  if (mm && p.bias) {
    Value b = deinterleaved(rewriter, loc, p.bias, heads, parts, d);
    made.push_back(b.getDefiningOp());
    sum = build("llmc.add", {mm->getResult(0), b});
  }
  Operation *whole = p.bias ? sum : mm;
  const int64_t rank = whole ? fusion::tensorType(whole->getResult(0)).getRank() : 0;
  Operation *split =
      whole ? build("llmc.split", {whole->getResult(0)},
                    {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(rank - 1)),
                     rewriter.getNamedAttr("split", rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(parts, heads * d)))})
            : nullptr;
  SmallVector<Value> out;
  if (split && int64_t(split->getNumResults()) == parts) {
    SmallVector<int64_t> dims(size_t(rank - 1), 0); // 0: the part's own dimension
    dims.append({heads, d});
    Value shape = fusion::i64Constant(rewriter, loc, dims);
    made.push_back(shape.getDefiningOp());
    for (Value part : split->getResults())
      if (Operation *r = build("llmc.reshape", {part, shape}))
        out.push_back(r->getResult(0));
  }
  if (int64_t(out.size()) == parts && !llvm::is_contained(made, nullptr))
    return out;
  for (Operation *op : llvm::reverse(made))
    if (op)
      rewriter.eraseOp(op);
  return {};
}

// Bloom: reshape(p) to [..., H, G, D], each part a gather of index g on the G axis.
struct GatheredParts : fusion::CountedPattern<ReshapeOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto in = fusion::tensorType(op.getInput()), out = fusion::tensorType(op.getResult());
    const int64_t rank = out.getRank();
    if (rank != in.getRank() + 2 || rank < 4 || in.isDynamicDim(in.getRank() - 1) || !fusion::keepsLeading(in, out) ||
        llvm::any_of(out.getShape().take_back(3), ShapedType::isDynamic) ||
        out.getDimSize(rank - 3) * out.getDimSize(rank - 2) * out.getDimSize(rank - 1) != in.getShape().back())
      return failure();
    const int64_t heads = out.getDimSize(rank - 3), parts = out.getDimSize(rank - 2), d = out.getDimSize(rank - 1);
    if (heads < 2) // (one head: the parts are one after the other already)
      return failure();
    SmallVector<std::pair<GatherOp, int64_t>> gathers;
    for (Operation *user : op.getResult().getUsers()) {
      auto g = dyn_cast<GatherOp>(user);
      auto index = g ? fusion::scalarValue(g.getIndices()) : std::nullopt;
      if (!g || fusion::tensorType(g.getIndices()).getRank() != 0 || !index || *index < 0 || *index >= parts ||
          (g.getAxis() != rank - 2 && g.getAxis() != -2))
        return failure();
      gathers.push_back({g, int64_t(*index)});
    }
    auto p = gathers.empty() ? std::nullopt : projectionOf(op.getInput());
    if (!p)
      return failure();
    SmallVector<Value> made = projectedParts(rewriter, *p, op.getInput(), heads, parts, d);
    if (made.empty())
      return failure();
    for (auto [g, index] : gathers)
      rewriter.replaceOp(g, made[size_t(index)]);
    ++count;
    return success();
  }
};

// A split of each head in two whose parts are only multiplied: the halves of a rotation
// (GPT-OSS: x1 * cos - x2 * sin, x2 * cos + x1 * sin), which llmc-raise-attention makes one
// llmc.rotary of the heads as they are, rather than two parts of a projection.
bool isRotationsHalves(SplitOp op) {
  if (op.getNumResults() != 2)
    return false;
  for (Value part : op.getResults())
    for (Operation *user : part.getUsers())
      if (!isa<MulOp>(user))
        return false;
  return true;
}

// GPT-NeoX: reshape(p) to [B, S, H, G * D], transposed to [B, H, S, G * D] and split into its G
// parts along the last axis; CodeGen: reshape(p) to [..., M, G * D] split so, untransposed (its
// M model-parallel groups of heads).
struct SplitParts : fusion::CountedPattern<SplitOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(SplitOp op, PatternRewriter &rewriter) const override {
    auto t = def<TransposeOp>(op.getInput());
    const bool transposed = t && t.getResult().hasOneUse() && t.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3};
    auto r = def<ReshapeOp>(transposed ? t.getInput() : op.getInput());
    if (!r || !r.getResult().hasOneUse())
      return failure();
    auto in = fusion::tensorType(r.getInput()), split = fusion::tensorType(r.getResult());
    const int64_t rank = split.getRank(), parts = op.getNumResults();
    if (rank != in.getRank() + 1 || rank < 3 || (transposed && rank != 4) ||
        (op.getAxis() != rank - 1 && op.getAxis() != -1) || split.isDynamicDim(rank - 2) ||
        split.isDynamicDim(rank - 1) || in.isDynamicDim(rank - 2) ||
        split.getDimSize(rank - 2) * split.getDimSize(rank - 1) != in.getDimSize(rank - 2) ||
        !fusion::keepsLeading(in, split) || parts < 2 || split.getDimSize(rank - 1) % parts != 0)
      return failure();
    const int64_t heads = split.getDimSize(rank - 2), d = split.getDimSize(rank - 1) / parts;
    if (heads < 2) // (one group: the parts are one after the other already)
      return failure();
    for (Value part : op.getResults())
      if (fusion::tensorType(part).getShape().back() != d)
        return failure();
    if (isRotationsHalves(op))
      return failure();
    auto p = projectionOf(r.getInput());
    if (!p)
      return failure();
    SmallVector<Value> made = projectedParts(rewriter, *p, r.getInput(), heads, parts, d);
    if (made.empty())
      return failure();
    if (transposed) // back to heads first
      for (Value &part : made)
        if (!(part = fusion::createValue(rewriter, part.getLoc(), "llmc.transpose", {part},
                                         {rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}))})))
          return failure(); // (a transpose of a 4-D value always infers)
    rewriter.replaceOp(op, made);
    ++count;
    return success();
  }
};

struct DeinterleaveQkv : impl::LlmcDeinterleaveQkvBase<DeinterleaveQkv> {
  RewriteCounter projections{"llmc-deinterleave-qkv", "projections with heads' parts interleaved reordered"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GatheredParts, SplitParts>(&getContext(), projections);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
