// llmc-fuse-linear: matmuls by constant matrices become llmc.linear, then the ops after them
// fold into the linear's epilogue: bias add, activation, gate multiply, residual add.
#include "ExpertWeights.h"
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFUSELINEAR
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::abandonBuilt;
using fusion::def;

// A linear's operands and attributes, to rebuild it with one more epilogue stage.
struct LinearParts {
  Value input, weight, bias, gate, residual;
  std::string activation = "none";
  int64_t transB = 0;

  static LinearParts of(LinearOp op) {
    return {op.getInput(), op.getWeight(), op.getBias(), op.getGate(), op.getResidual(), op.getActivation().str(),
            int64_t(op.getTransB())};
  }
  Operation *build(PatternRewriter &rewriter, Location loc) const {
    return fusion::create(rewriter, loc, "llmc.linear", {input, weight, bias, gate, residual},
                          {rewriter.getNamedAttr("activation", rewriter.getStringAttr(activation)),
                           rewriter.getNamedAttr("transB", rewriter.getI64IntegerAttr(transB))});
  }
};

Value empty(PatternRewriter &rewriter, Location loc, Value like) {
  return fusion::emptyTensor(rewriter, loc, fusion::tensorType(like).getElementType());
}

// matmul(x, W) with a constant W [K, N]  ->  linear(x, W)
struct MatMulToLinear : OpRewritePattern<MatMulOp> {
  RewriteCounter &count;
  MatMulToLinear(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(MatMulOp op, PatternRewriter &rewriter) const override {
    // A transposed constant (tied embeddings) is read as [N, K] instead of transposed per run.
    Value weight = op.getRhs();
    int64_t transB = 0;
    if (auto t = def<TransposeOp>(weight);
        t && fusion::isConstant(t.getInput()) && t.getPerm() == ArrayRef<int64_t>{1, 0}) {
      weight = t.getInput();
      transB = 1;
    }
    if (!fusion::isConstant(weight) || fusion::tensorType(weight).getRank() != 2 ||
        fusion::tensorType(op.getLhs()).getRank() < 2 || !fusion::isFusedFloat(op.getLhs()))
      return failure();
    Value none = empty(rewriter, op.getLoc(), op.getLhs());
    LinearParts parts{op.getLhs(), weight, none, none, none, "none", transB};
    Operation *linear = parts.build(rewriter, op.getLoc());
    if (!linear || linear->getResult(0).getType() != op.getType())
      return failure();
    rewriter.replaceOp(op, linear->getResults());
    ++count;
    return success();
  }
};

// Whether `axes` (of a squeeze or unsqueeze, rank `rank`) is axis `want` alone.
bool isOnlyAxis(ArrayRef<int64_t> axes, int64_t want, int64_t rank) {
  return axes.size() == 1 && fusion::isAxis(axes[0], want, rank);
}

// The expert patterns' last step: the root replaced by an llmc.expert_linear of `operands` and
// `attrs` and counted, or failure with the IR as it was.
template <typename OpT> struct ExpertPattern : fusion::CountedPattern<OpT, RewriteCounter> {
  using fusion::CountedPattern<OpT, RewriteCounter>::CountedPattern;

  LogicalResult replaceByExpert(PatternRewriter &rewriter, Operation *root, ValueRange operands,
                                ArrayRef<NamedAttribute> attrs = {}) const {
    Operation *expert = fusion::create(rewriter, root->getLoc(), "llmc.expert_linear", operands, attrs);
    if (failed(fusion::replaceByLastBuilt(rewriter, root, {expert})))
      return failure();
    ++this->count;
    return success();
  }
};

// squeeze(matmul(gather_nd(W, ids), unsqueeze(x, -1)), -1)  ->  expert_linear(x, W, ids): a mixture
// of experts' projection as transformers' "batched_mm" experts export it, W [E, M, K] the
// experts' matrices, ids [N, 1] each row's expert. The gather copied a matrix per row; the
// expert_linear reads each where it is.
struct GatheredMatVecToExpertLinear : ExpertPattern<SqueezeOp> {
  using ExpertPattern::ExpertPattern;

  LogicalResult matchAndRewrite(SqueezeOp op, PatternRewriter &rewriter) const override {
    auto product = def<MatMulOp>(op.getInput());
    auto gather = product ? def<GatherNdOp>(product.getLhs()) : GatherNdOp();
    auto column = product ? def<UnsqueezeOp>(product.getRhs()) : UnsqueezeOp();
    if (!gather || !column || !product.getResult().hasOneUse() || !gather.getResult().hasOneUse() ||
        gather.getBatchDims() != 0 || !fusion::isFusedFloat(column.getInput()))
      return failure();
    auto w = fusion::tensorType(gather.getData()), ids = fusion::tensorType(gather.getIndices()),
         x = fusion::tensorType(column.getInput()), y = fusion::tensorType(product.getResult());
    if (w.getRank() != 3 || ids.getRank() != 2 || ids.getDimSize(1) != 1 || x.getRank() != 2 || y.getRank() != 3 ||
        !isOnlyAxis(column.getAxes(), 2, 3) || (!op.getAxes().empty() && !isOnlyAxis(op.getAxes(), 2, 3)))
      return failure();
    return replaceByExpert(rewriter, op, {column.getInput(), gather.getData(), gather.getIndices()});
  }
};

// squeeze(matmul(unsqueeze(x, 1), gather_nd(W, ids)), 1)  ->  expert_linear(x, W', ids): the same
// projection with each expert's matrix on the right, W [E, K, M] (GPT-OSS's experts), a constant
// that becomes W' [E, M, K], the layout expert_linear reads.
struct GatheredVecMatToExpertLinear : ExpertPattern<SqueezeOp> {
  TransposedWeights &transposed;
  GatheredVecMatToExpertLinear(MLIRContext *ctx, RewriteCounter &count, TransposedWeights &transposed)
      : ExpertPattern(ctx, count), transposed(transposed) {}

  LogicalResult matchAndRewrite(SqueezeOp op, PatternRewriter &rewriter) const override {
    auto product = def<MatMulOp>(op.getInput());
    auto row = product ? def<UnsqueezeOp>(product.getLhs()) : UnsqueezeOp();
    auto gather = product ? def<GatherNdOp>(product.getRhs()) : GatherNdOp();
    if (!gather || !row || !product.getResult().hasOneUse() || !gather.getResult().hasOneUse() ||
        gather.getBatchDims() != 0 || !fusion::isFusedFloat(row.getInput()) || !fusion::isFloatConstant(gather.getData()))
      return failure();
    auto w = fusion::tensorType(gather.getData()), ids = fusion::tensorType(gather.getIndices()),
         x = fusion::tensorType(row.getInput()), y = fusion::tensorType(product.getResult());
    if (w.getRank() != 3 || !w.hasStaticShape() || ids.getRank() != 2 || ids.getDimSize(1) != 1 || x.getRank() != 2 ||
        y.getRank() != 3 || !isOnlyAxis(row.getAxes(), 1, 3) || !isOnlyAxis(op.getAxes(), 1, 3))
      return failure();
    ElementsAttr values = turnedExperts(gather.getData(), transposed);
    Value weight = ConstantOp::create(rewriter, op.getLoc(), cast<RankedTensorType>(values.getType()), values);
    return replaceByExpert(rewriter, op, {row.getInput(), weight, gather.getIndices()});
  }
};

// expert_linear(x, W, ids) + gather_nd(B, ids)  ->  expert_linear(x, W, ids, none, B): each
// expert's bias B [E, M] (a constant) added by the expert_linear (GPT-OSS's experts), before its
// activation and weighted sum, which may then fold into it too.
struct ExpertBias : ExpertPattern<AddOp> {
  using ExpertPattern::ExpertPattern;

  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    for (int i = 0; i < 2; ++i) {
      auto expert = def<ExpertLinearOp>(op->getOperand(i));
      auto gather = def<GatherNdOp>(op->getOperand(1 - i));
      if (!expert || !gather || !expert.getResult().hasOneUse() || !gather.getResult().hasOneUse() ||
          expert.getActivation() != "none" || !expert.getExtras().empty() || gather.getBatchDims() != 0 ||
          gather.getIndices() != expert.getIds() || !fusion::isFloatConstant(gather.getData()) ||
          op.getType() != expert.getType())
        continue;
      auto bias = fusion::tensorType(gather.getData()), w = fusion::tensorType(expert.getWeight());
      if (bias.getRank() != 2 || bias.getDimSize(0) != w.getDimSize(0) || bias.getDimSize(1) != w.getDimSize(1))
        continue;
      Value none = fusion::emptyTensor(rewriter, op.getLoc(), bias.getElementType());
      return replaceByExpert(rewriter, op, {expert.getInput(), expert.getWeight(), expert.getIds(), none, gather.getData()},
                             expert->getAttrs());
    }
    return failure();
  }
};

// silu(a) * b of the two halves [a | b] of an expert_linear's rows  ->  that expert_linear with
// activation "swiglu" (a mixture of experts' gate/up projection: the split and the product were two
// more kernels). Not after a combine: the swiglu of a weighted sum is not the weighted sum of swiglus.
struct ExpertSwiglu : ExpertPattern<MulOp> {
  using ExpertPattern::ExpertPattern;

  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (int i = 0; i < 2; ++i) {
      auto silu = def<SiluOp>(op->getOperand(i));
      auto split = silu ? def<SplitOp>(silu.getInput()) : SplitOp();
      auto expert = split ? def<ExpertLinearOp>(split.getInput()) : ExpertLinearOp();
      if (!expert || split->getNumResults() != 2 || silu.getInput() != split->getResult(0) ||
          op->getOperand(1 - i) != split->getResult(1) || !silu.getResult().hasOneUse() ||
          !split->getResult(0).hasOneUse() || !split->getResult(1).hasOneUse() || !expert.getResult().hasOneUse() ||
          expert.getActivation() != "none" || expert.getCombine() || (split.getAxis() != 1 && split.getAxis() != -1) ||
          split->getResult(0).getType() != split->getResult(1).getType() ||
          fusion::tensorType(expert.getResult()).isDynamicDim(1))
        continue;
      NamedAttrList attrs(expert->getAttrs());
      attrs.set("activation", rewriter.getStringAttr("swiglu"));
      return replaceByExpert(rewriter, op, expert->getOperands(), attrs);
    }
    return failure();
  }
};

// The experts' weights (attributes) that a pattern replaced by new layouts, to release once
// nothing reads them.
using ReplacedWeights = llvm::SmallVector<Attribute>;

// The bytes of a constant [outer, M, inner] with its rows along M taken apart: the even ones
// first, then the odd ones (gate and up columns that alternate become the two halves).
std::vector<char> evenRowsFirst(ArrayRef<char> bytes, int64_t outer, int64_t m, int64_t inner, size_t size) {
  std::vector<char> out(bytes.size());
  const size_t row = size_t(inner) * size;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      const int64_t from = j < m / 2 ? 2 * j : 2 * (j - m / 2) + 1;
      std::memcpy(out.data() + size_t(o * m + j) * row, bytes.data() + size_t(o * m + from) * row, row);
    }
  return out;
}

// GPT-OSS's experts' gating, (clamp(u, -L, L) + 1) * g * sigmoid(alpha * g) with g = min(gate, L),
// or HY V4's, silu(g) * clamp(u, -L, L) (alpha 1, no + 1), of gate and up taken from one
// expert_linear's rows: alternating (gate = y[:, 0::2], up = y[:, 1::2], as GPT-OSS's
// gate_up_proj holds them) or the two halves  ->  that expert_linear with activation
// "clamped_swiglu" (alpha, limit, up_offset 1 or 0); alternating columns are made halves by
// reordering the weight's rows and the bias (constants that only it reads). Two strided slices and an
// elementwise kernel fewer, and the [N, M] product never written. Not after a combine (the
// gating of a weighted sum is not the weighted sum of gatings).
struct ExpertClampedSwiglu : ExpertPattern<MulOp> {
  ReplacedWeights &replaced;
  ExpertClampedSwiglu(MLIRContext *ctx, RewriteCounter &count, ReplacedWeights &replaced)
      : ExpertPattern(ctx, count), replaced(replaced) {}

  // glu = g * sigmoid(g * alpha): g, and alpha.
  static Value gatedBySigmoid(Value glu, double &alpha) {
    auto m = def<MulOp>(glu);
    for (int i = 0; m && i < 2; ++i) {
      auto sigmoid = def<SigmoidOp>(m->getOperand(1 - i));
      if (sigmoid && fusion::byScalar<MulOp>(sigmoid.getInput(), alpha) == m->getOperand(i))
        return m->getOperand(i);
    }
    return {};
  }

  // u clamped to [-limit, limit]: min(max(u, -limit), limit) or max(min(u, limit), -limit).
  static Value clampedBoth(Value v, double limit) {
    double hi = 0, lo = 0;
    if (Value inner = fusion::byScalar<MinOp>(v, hi); inner && hi == limit)
      if (Value u = fusion::byScalar<MaxOp>(inner, lo); u && lo == -limit)
        return u;
    if (Value inner = fusion::byScalar<MaxOp>(v, lo); inner && lo == -limit)
      if (Value u = fusion::byScalar<MinOp>(inner, hi); u && hi == limit)
        return u;
    return {};
  }

  // The expert_linear [N, M] that gate and up are taken from (alternating, when `alternate`, or
  // halves), each read once.
  static ExpertLinearOp partsOf(Value gate, Value up, bool &alternate) {
    Value y = fusion::partedFrom(gate);
    auto expert = def<ExpertLinearOp>(y);
    if (!expert || !gate.hasOneUse() || !up.hasOneUse())
      return {};
    const int64_t m = fusion::tensorType(y).getDimSize(1);
    alternate = fusion::isSliceOfLast(gate, y, 0, m, 2) && fusion::isSliceOfLast(up, y, 1, m, 2);
    return alternate || (fusion::isHalf(gate, y, 0) && fusion::isHalf(up, y, 1)) ? expert : ExpertLinearOp();
  }

  // Whether v is a constant [E, M(, K)] whose rows along M can be reordered: read only by the
  // expert_linear (a weight: a copy would double it), or any (a bias, small).
  static bool reorderable(Value v, bool mayShare) {
    auto type = fusion::tensorType(v);
    return fusion::isFloatConstant(v) && type.hasStaticShape() && (type.getRank() == 2 || type.getRank() == 3) &&
           (mayShare || v.hasOneUse());
  }

  // v (reorderable) with its rows along M even first, a new constant; the old attribute is
  // released at the end of the pass when nothing reads it.
  Value evenFirst(PatternRewriter &rewriter, Location loc, Value v) const {
    auto type = fusion::tensorType(v);
    std::vector<char> storage;
    const ArrayRef<char> bytes = *fusion::floatBytes(v, storage);
    const int64_t inner = type.getRank() == 3 ? type.getDimSize(2) : 1;
    replaced.push_back(def<ConstantOp>(v).getValue());
    return fusion::bytesConstant(rewriter, loc, type,
                                 evenRowsFirst(bytes, type.getDimSize(0), type.getDimSize(1), inner,
                                               fusion::elementSize(type.getElementType())));
  }

  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (int i = 0; i < 2; ++i) {
      double one = 0, alpha = 0, limit = 0;
      Value clampedUp = fusion::byScalar<AddOp>(op->getOperand(i), one);
      Value clampedGate = clampedUp ? gatedBySigmoid(op->getOperand(1 - i), alpha) : Value();
      Value gate = clampedGate ? fusion::byScalar<MinOp>(clampedGate, limit) : Value();
      Value up = gate && one == 1.0 && limit > 0 ? clampedBoth(clampedUp, limit) : Value();
      if (!up) { // HY V4's: silu(min(gate, L)) * clamp(up, -L, L)
        auto silu = def<SiluOp>(op->getOperand(1 - i));
        gate = silu && silu.getResult().hasOneUse() ? fusion::byScalar<MinOp>(silu.getInput(), limit) : Value();
        up = gate && limit > 0 ? clampedBoth(op->getOperand(i), limit) : Value();
        alpha = 1.0, one = 0.0;
      }
      bool alternate = false;
      auto expert = up ? partsOf(gate, up, alternate) : ExpertLinearOp();
      if (!expert || expert.getActivation() != "none" || expert.getCombine() ||
          fusion::tensorType(expert.getResult()).isDynamicDim(1) ||
          !llvm::all_of(expert->getUsers(),
                        [&](Operation *user) { return user == gate.getDefiningOp() || user == up.getDefiningOp(); }) ||
          (alternate && (!reorderable(expert.getWeight(), false) ||
                         (expert.getBias() && !reorderable(expert.getBias(), true)))))
        continue;
      // Built in front of the product; a failure erases what was built (abandonBuilt).
      Operation *before = op->getPrevNode();
      SmallVector<Value> operands(expert->getOperands());
      if (alternate) {
        operands[1] = evenFirst(rewriter, op.getLoc(), expert.getWeight());
        if (expert.getBias())
          operands[4] = evenFirst(rewriter, op.getLoc(), expert.getBias());
      }
      NamedAttrList attrs(expert->getAttrs());
      attrs.set("activation", rewriter.getStringAttr("clamped_swiglu"));
      attrs.set("alpha", rewriter.getF32FloatAttr(float(alpha)));
      attrs.set("limit", rewriter.getF32FloatAttr(float(limit)));
      if (one != 1.0)
        attrs.set("up_offset", rewriter.getF32FloatAttr(float(one)));
      if (failed(replaceByExpert(rewriter, op, operands, attrs)))
        return abandonBuilt(rewriter, op, before);
      return success();
    }
    return failure();
  }
};

// expert_linear of a token's rows repeated once per chosen expert, reshape(expand(unsqueeze(x, 1),
// [T, k, K]), [T * k, K])  ->  expert_linear of x with repeat k: each row read by its k ids, not
// copied k times first.
struct ExpertSharedRows : ExpertPattern<ExpertLinearOp> {
  using ExpertPattern::ExpertPattern;

  LogicalResult matchAndRewrite(ExpertLinearOp op, PatternRewriter &rewriter) const override {
    auto flat = def<ReshapeOp>(op.getInput());
    auto spread = flat ? def<ExpandOp>(flat.getInput()) : ExpandOp();
    auto column = spread ? def<UnsqueezeOp>(spread.getInput()) : UnsqueezeOp();
    if (!column || column.getAxes() != ArrayRef<int64_t>{1} || op.getRepeat() != 1)
      return failure();
    auto x = fusion::tensorType(column.getInput()), copies = fusion::tensorType(spread.getResult());
    if (x.getRank() != 2 || copies.getRank() != 3 || copies.isDynamicDim(1) || copies.getDimSize(0) != x.getDimSize(0) ||
        copies.getDimSize(2) != x.getDimSize(1))
      return failure();
    NamedAttrList attrs(op->getAttrs());
    attrs.set("repeat", rewriter.getI64IntegerAttr(copies.getDimSize(1)));
    SmallVector<Value> operands(op->getOperands()); // (a combine, if any, stays)
    operands[0] = column.getInput();
    return replaceByExpert(rewriter, op, operands, attrs);
  }
};

// The weighted sum of a down projection's rows over each token's experts, reduce_sum(reshape(
// expert_linear(...) * unsqueeze(reshape(weights [T, k], [N]), -1), [T, k, M]), axis 1)  ->  the
// expert_linear with combine = weights (two kernels fewer; each result row one warp's sum).
struct ExpertCombine : ExpertPattern<ReduceSumOp> {
  using ExpertPattern::ExpertPattern;

  LogicalResult matchAndRewrite(ReduceSumOp op, PatternRewriter &rewriter) const override {
    auto grouped = def<ReshapeOp>(op.getInput());
    auto product = grouped ? def<MulOp>(grouped.getInput()) : MulOp();
    auto groups = fusion::tensorType(op.getInput());
    if (!product || !grouped.getResult().hasOneUse() || !product.getResult().hasOneUse() || op.getKeepdims() ||
        op.getAxes() != ArrayRef<int64_t>{1} || groups.getRank() != 3 || groups.isDynamicDim(1))
      return failure();
    for (int i = 0; i < 2; ++i) {
      auto expert = def<ExpertLinearOp>(product->getOperand(i));
      auto column = def<UnsqueezeOp>(product->getOperand(1 - i));
      auto flat = column ? def<ReshapeOp>(column.getInput()) : ReshapeOp();
      if (!expert || !flat || expert.getCombine() || !expert.getResult().hasOneUse() ||
          (column.getAxes() != ArrayRef<int64_t>{-1} && column.getAxes() != ArrayRef<int64_t>{1}))
        continue;
      Value weights = flat.getInput();
      auto w = fusion::tensorType(weights), rows = fusion::tensorType(expert.getResult());
      if (w.getRank() != 2 || w.getDimSize(1) != groups.getDimSize(1) || fusion::tensorType(flat.getResult()).getRank() != 1 ||
          groups.getDimSize(2) != rows.getDimSize(1) || w.getElementType() != rows.getElementType())
        continue;
      SmallVector<Value> operands(expert->getOperands());
      if (expert.getBias())
        operands[3] = weights; // (in the empty combine's place, before the bias)
      else
        operands.push_back(weights);
      return replaceByExpert(rewriter, op, operands, expert->getAttrs());
    }
    return failure();
  }
};

// [reshape to 2-D ->] gemm(a, W[, c]) [-> reshape back]  ->  linear(x, W, bias = c)
struct GemmToLinear : OpRewritePattern<GemmOp> {
  RewriteCounter &count;
  GemmToLinear(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(GemmOp op, PatternRewriter &rewriter) const override {
    auto w = fusion::tensorType(op.getB());
    if (op.getAlpha().convertToDouble() != 1.0 || op.getTransA() != 0 || !fusion::isConstant(op.getB()) ||
        !fusion::isFusedFloat(op.getA()))
      return failure();
    const int64_t n = op.getTransB() ? w.getDimSize(0) : w.getDimSize(1);
    Value bias = op.getC();
    if (bias && (op.getBeta().convertToDouble() != 1.0 || !fusion::isConstant(bias) ||
                 fusion::tensorType(bias).getRank() != 1 || fusion::tensorType(bias).getDimSize(0) != n))
      return failure();
    // Look through the flattening reshapes exporters put around a gemm.
    Value input = op.getA();
    Operation *root = op;
    if (auto flat = def<ReshapeOp>(op.getA()); flat && op.getResult().hasOneUse()) {
      auto back = dyn_cast<ReshapeOp>(*op.getResult().getUsers().begin());
      auto x = fusion::tensorType(flat.getInput());
      if (back && x.getRank() >= 2 && fusion::tensorType(back.getResult()).getRank() == x.getRank()) {
        auto outShape = fusion::tensorType(back.getResult()).getShape();
        bool same = outShape.back() == n;
        for (int64_t d = 0; same && d + 1 < x.getRank(); ++d)
          same = outShape[d] == x.getDimSize(d) && !x.isDynamicDim(d);
        if (same && x.getShape().back() == fusion::tensorType(op.getA()).getShape().back()) {
          input = flat.getInput();
          root = back;
        }
      }
    }
    rewriter.setInsertionPoint(root);
    Value none = empty(rewriter, op.getLoc(), input);
    LinearParts parts{input, op.getB(), bias ? bias : none, none, none, "none", int64_t(op.getTransB())};
    Operation *linear = parts.build(rewriter, root->getLoc());
    if (!linear || linear->getResult(0).getType() != root->getResult(0).getType())
      return failure();
    rewriter.replaceOp(root, linear->getResults());
    ++count;
    return success();
  }
};

// The single-use linear among `op`'s operands that can take one more epilogue stage.
LinearOp producer(Value v) {
  auto linear = def<LinearOp>(v);
  return linear && v.hasOneUse() ? linear : LinearOp();
}

// bias, activation, gate and residual, in that order.
struct Epilogue : RewritePattern {
  RewriteCounter &count;
  Epilogue(MLIRContext *ctx, RewriteCounter &count) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx), count(count) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    std::optional<LinearParts> parts;
    if (isa<GeluOp, SiluOp, ReluOp>(op)) {
      auto linear = producer(op->getOperand(0));
      if (!linear || linear.getActivation() != "none" || !fusion::isEmpty(linear.getGate()) ||
          !fusion::isEmpty(linear.getResidual()))
        return failure();
      parts = LinearParts::of(linear);
      if (auto gelu = dyn_cast<GeluOp>(op))
        parts->activation = gelu.getApproximate() == "tanh" ? "gelu_tanh" : "gelu";
      else
        parts->activation = isa<SiluOp>(op) ? "silu" : "relu";
    } else if (isa<AddOp, MulOp>(op)) {
      const bool isAdd = isa<AddOp>(op);
      for (int i = 0; i < 2 && !parts; ++i) {
        auto linear = producer(op->getOperand(i));
        Value other = op->getOperand(1 - i);
        if (!linear || fusion::tensorType(op->getResult(0)) != linear.getType())
          continue;
        LinearParts p = LinearParts::of(linear);
        auto otherType = fusion::tensorType(other);
        const bool bare = p.activation == "none" && fusion::isEmpty(p.gate) && fusion::isEmpty(p.residual);
        if (isAdd && bare && fusion::isEmpty(p.bias) && fusion::isConstant(other) && otherType.getRank() == 1 &&
            otherType.getDimSize(0) == linear.getType().getShape().back()) {
          p.bias = other;
        } else if (!isAdd && fusion::isEmpty(p.gate) && fusion::isEmpty(p.residual) && otherType == linear.getType()) {
          // SwiGLU: silu(x Wg) * (x Wu) puts the activated linear in the gate of the other. A
          // value no linear makes gates the activated linear itself, act(x W) * g (Gemma 4's
          // per-layer inputs); one a product makes may yet become such a host.
          if (p.activation != "none") {
            auto host = producer(other);
            if (host && host.getActivation() == "none" && fusion::isEmpty(host.getGate()) &&
                fusion::isEmpty(host.getResidual())) {
              p = LinearParts::of(host);
              other = op->getOperand(i);
            } else if (def<LinearOp>(other) || def<MatMulOp>(other) || def<GemmOp>(other)) {
              continue;
            }
          }
          p.gate = other;
        } else if (isAdd && fusion::isEmpty(p.residual) && otherType == linear.getType()) {
          p.residual = other;
        } else {
          continue;
        }
        parts = p;
      }
    }
    if (!parts)
      return failure();
    Operation *linear = parts->build(rewriter, op->getLoc());
    if (!linear || linear->getResult(0).getType() != op->getResult(0).getType())
      return failure();
    rewriter.replaceOp(op, linear->getResults());
    ++count;
    return success();
  }
};

struct FuseLinear : impl::LlmcFuseLinearBase<FuseLinear> {
  RewriteCounter linears{"llmc-fuse-linear", "matmuls turned into linear"};
  RewriteCounter epilogues{"llmc-fuse-linear", "epilogue ops fused"};
  RewriteCounter experts{"llmc-fuse-linear", "products of gathered experts turned into expert_linear"};
  RewriteCounter expertEpilogues{"llmc-fuse-linear", "swiglus, repeated rows and weighted sums fused into expert_linear"};
  RewriteCounter expertBiases{"llmc-fuse-linear", "experts' biases fused into expert_linear"};
  RewriteCounter clampedGatings{"llmc-fuse-linear",
                                "clamped swiglus (GPT-OSS's and HY V4's experts) fused into expert_linear"};
  RewriteCounter denseExperts{"llmc-fuse-linear", "dense mixtures of experts turned into expert_linear on the chosen"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MatMulToLinear, GemmToLinear>(&getContext(), linears);
    TransposedWeights transposed;
    patterns.add<GatheredMatVecToExpertLinear>(&getContext(), experts);
    patterns.add<GatheredVecMatToExpertLinear>(&getContext(), experts, transposed);
    addDenseExpertPatterns(patterns, denseExperts, transposed);
    patterns.add<ExpertSwiglu, ExpertSharedRows, ExpertCombine>(&getContext(), expertEpilogues);
    patterns.add<ExpertBias>(&getContext(), expertBiases);
    ReplacedWeights reordered;
    patterns.add<ExpertClampedSwiglu>(&getContext(), clampedGatings, reordered);
    patterns.add<Epilogue>(&getContext(), epilogues);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
    for (auto &[old, made] : transposed) // the weights' old layouts, where nothing reads them now
      releaseUnusedElements(getOperation(), old);
    for (Attribute old : reordered) // (a transposed one among them too)
      releaseUnusedElements(getOperation(), old);
  }
};

} // namespace

ElementsAttr turnedExperts(Value w, TransposedWeights &transposed) {
  ElementsAttr &made = transposed[fusion::def<ConstantOp>(w).getValue()];
  if (made)
    return made;
  auto type = fusion::tensorType(w);
  std::vector<char> storage;
  ArrayRef<char> bytes = *fusion::floatBytes(w, storage);
  const int64_t experts = type.getDimSize(0), k = type.getDimSize(1), m = type.getDimSize(2);
  const size_t size = fusion::elementSize(type.getElementType()), matrix = size_t(k * m) * size;
  auto result = RankedTensorType::get({experts, m, k}, type.getElementType());
  made = makeElements(result, bytes.size(), [&](MutableArrayRef<char> out) {
    for (int64_t e = 0; e < experts; ++e)
      fusion::transposeMatrix(bytes.data() + e * matrix, out.data() + e * matrix, k, m, size);
  });
  return made;
}

} // namespace llmc
