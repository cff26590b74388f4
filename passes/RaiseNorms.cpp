// llmc-raise-norms: decomposed RMSNorm and LayerNorm (as torch.onnx exports them) become
// llmc.rms_norm and llmc.layer_norm over the last axis.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCRAISENORMS
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// x * x or pow(x, 2): returns x.
Value squared(Value v) {
  if (auto pow = def<PowOp>(v); pow && fusion::isScalar(pow.getRhs(), 2.0))
    return pow.getLhs();
  if (auto mul = def<MulOp>(v); mul && mul.getLhs() == mul.getRhs())
    return mul.getLhs();
  return {};
}

struct Stats {
  Value source;   // what is normalized
  Value centered; // LayerNorm: x - mean(x)
  double epsilon;
};

// mean(sq) + eps with single-use intermediates: fills the squared value, the op that squares it
// and epsilon.
bool matchMeanSquare(Value radicand, Value &squaredOf, Operation *&squareOp, double &epsilon) {
  auto add = def<AddOp>(radicand);
  if (!add || !add.getResult().hasOneUse())
    return false;
  for (int i = 0; i < 2; ++i) {
    auto mean = def<ReduceMeanOp>(add->getOperand(i));
    auto eps = fusion::scalarValue(add->getOperand(1 - i));
    if (!mean || !eps || !mean.getResult().hasOneUse() || !fusion::reducesLastAxisKeepingIt(mean))
      continue;
    Value sq = mean.getInput();
    squaredOf = squared(sq);
    squareOp = sq.getDefiningOp();
    if (!squaredOf || !sq.hasOneUse())
      return false;
    epsilon = *eps;
    return true;
  }
  return false;
}

// numerator / sqrt(radicand) as div(n, sqrt(r)), mul(n, reciprocal(sqrt(r))) or, since session
// 36, mul(n, pow(r, -0.5)) (Gemma 4's norms), the products in either order; the square root or
// the power read by the quotient alone.
bool matchNormQuotient(Operation *op, Value &numerator, Value &radicand) {
  auto rootOf = [&](Value denominator) {
    auto sqrt = def<SqrtOp>(denominator);
    if (!sqrt || !sqrt.getResult().hasOneUse())
      return false;
    radicand = sqrt.getInput();
    return true;
  };
  if (auto div = dyn_cast<DivOp>(op)) {
    numerator = div.getLhs();
    return rootOf(div.getRhs());
  }
  if (auto mul = dyn_cast<MulOp>(op))
    for (int i = 0; i < 2; ++i) {
      numerator = mul->getOperand(1 - i);
      if (auto rec = def<ReciprocalOp>(mul->getOperand(i)); rec && rec.getResult().hasOneUse())
        return rootOf(rec.getInput());
      if (auto pow = def<PowOp>(mul->getOperand(i));
          pow && pow.getResult().hasOneUse() && fusion::isScalar(pow.getRhs(), -0.5)) {
        radicand = pow.getLhs();
        return true;
      }
    }
  return false;
}

// The single user of `v` that multiplies it by a constant vector over the last axis, or null.
Operation *constantScaleUser(Value v, Value &scale, bool add) {
  if (!v.hasOneUse())
    return nullptr;
  Operation *user = *v.getUsers().begin();
  if (!(add ? isa<AddOp>(user) : isa<MulOp>(user)))
    return nullptr;
  Value c = fusion::other(user, v);
  const int64_t d = fusion::tensorType(v).getShape().back();
  auto type = c ? fusion::tensorType(c) : RankedTensorType();
  if (!c || !fusion::isConstant(c) || type.getRank() != 1 || type.getDimSize(0) != d ||
      type.getElementType() != fusion::tensorType(v).getElementType())
    return nullptr;
  scale = c;
  return user;
}

Value ones(PatternRewriter &rewriter, Location loc, RankedTensorType like, double value) {
  auto type = RankedTensorType::get({like.getShape().back()}, like.getElementType());
  return ConstantOp::create(rewriter, loc, type,
                            DenseElementsAttr::get(type, rewriter.getFloatAttr(like.getElementType(), value)));
}

// x / sqrt(mean(x^2) + eps) [* w]  ->  rms_norm(x, w) (the quotient in any of matchNormQuotient's forms)
struct RmsNormPattern : RewritePattern {
  RewriteCounter &count;
  RmsNormPattern(MLIRContext *ctx, RewriteCounter &count) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx), count(count) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    Value x, radicand, sq;
    Operation *square;
    double eps;
    if (!isa<DivOp, MulOp>(op) || !matchNormQuotient(op, x, radicand) || !matchMeanSquare(radicand, sq, square, eps) ||
        sq != x)
      return failure();
    auto type = fusion::tensorType(op->getResult(0));
    if (!isa<FloatType>(type.getElementType()) || type.getRank() < 1 || type.isDynamicDim(type.getRank() - 1) ||
        fusion::tensorType(x) != type)
      return failure();
    Value scale;
    Operation *root = constantScaleUser(op->getResult(0), scale, false);
    if (!root) {
      root = op;
      scale = ones(rewriter, op->getLoc(), type, 1.0);
    }
    rewriter.setInsertionPoint(root);
    Operation *norm = fusion::create(rewriter, root->getLoc(), "llmc.rms_norm", {x, scale},
                                     {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1)),
                                      rewriter.getNamedAttr("epsilon", rewriter.getF32FloatAttr(float(eps)))});
    if (!norm)
      return failure();
    rewriter.replaceOp(root, norm->getResults());
    ++count;
    return success();
  }
};

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* g] [+ b]  ->  layer_norm(x, g, b)
struct LayerNormPattern : RewritePattern {
  RewriteCounter &count;
  LayerNormPattern(MLIRContext *ctx, RewriteCounter &count)
      // Benefit 2: tried before RMSNorm, which would match the centered value's normalization.
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/2, ctx), count(count) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    Value centered, radicand, sq;
    Operation *square;
    double eps;
    if (!isa<DivOp, MulOp>(op) || !matchNormQuotient(op, centered, radicand) ||
        !matchMeanSquare(radicand, sq, square, eps) || sq != centered)
      return failure();
    auto sub = def<SubOp>(centered);
    auto mean = sub ? def<ReduceMeanOp>(sub.getRhs()) : ReduceMeanOp();
    if (!mean || mean.getInput() != sub.getLhs() || !fusion::reducesLastAxisKeepingIt(mean) ||
        !mean.getResult().hasOneUse())
      return failure();
    // The centered value feeds exactly the square and the quotient.
    for (Operation *user : centered.getUsers())
      if (user != op && user != square)
        return failure();
    Value x = sub.getLhs();
    auto type = fusion::tensorType(op->getResult(0));
    if (!isa<FloatType>(type.getElementType()) || type.getRank() < 1 || type.isDynamicDim(type.getRank() - 1) ||
        fusion::tensorType(x) != type)
      return failure();
    Value scale, bias;
    Operation *root = op;
    if (Operation *mul = constantScaleUser(root->getResult(0), scale, false))
      root = mul;
    if (Operation *add = constantScaleUser(root->getResult(0), bias, true))
      root = add;
    if (!scale)
      scale = ones(rewriter, op->getLoc(), type, 1.0);
    rewriter.setInsertionPoint(root);
    SmallVector<Value> operands = {x, scale};
    if (bias)
      operands.push_back(bias);
    Operation *norm = fusion::create(rewriter, root->getLoc(), "llmc.layer_norm", operands,
                                     {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1)),
                                      rewriter.getNamedAttr("epsilon", rewriter.getF32FloatAttr(float(eps)))});
    if (!norm)
      return failure();
    rewriter.replaceOp(root, norm->getResults());
    ++count;
    return success();
  }
};

// norm(transpose(x)) over the last axis, the transpose keeping that axis last and read by the
// norm alone  ->  transpose(norm(x)): each row is normalized alone, wherever the transpose puts
// it. Gemma 3 normalizes its queries and keys per head after the heads move ([B, H, S, D]);
// moved in front, the heads move last, as Qwen3's, and llmc-raise-attention reads the keys as
// the rows [B, S, H * D] they were (rotating them in the attention, without a copy).
template <typename NormOp> struct NormBeforeTranspose : fusion::CountedPattern<NormOp, RewriteCounter> {
  using fusion::CountedPattern<NormOp, RewriteCounter>::CountedPattern;

  LogicalResult matchAndRewrite(NormOp op, PatternRewriter &rewriter) const override {
    auto t = def<TransposeOp>(op.getInput());
    const int64_t rank = fusion::tensorType(op.getInput()).getRank();
    if (!t || !t.getResult().hasOneUse() || rank < 1 || t.getPerm().back() != rank - 1 ||
        (op.getAxis() != -1 && op.getAxis() != rank - 1) || fusion::tensorType(op.getScale()).getRank() > 1)
      return failure();
    SmallVector<Value> operands(op->getOperands());
    operands[0] = t.getInput();
    Operation *norm = fusion::create(rewriter, op.getLoc(), op->getName().getStringRef(), operands, op->getAttrs());
    Operation *moved = norm ? fusion::create(rewriter, op.getLoc(), "llmc.transpose", {norm->getResult(0)},
                                             {rewriter.getNamedAttr("perm", t.getPermAttr())})
                            : nullptr;
    if (failed(fusion::replaceByLastBuilt(rewriter, op, {norm, moved})))
      return failure();
    ++this->count;
    return success();
  }
};

struct RaiseNorms : impl::LlmcRaiseNormsBase<RaiseNorms> {
  RewriteCounter rmsNorms{"llmc-raise-norms", "RMSNorms raised"};
  RewriteCounter layerNorms{"llmc-raise-norms", "LayerNorms raised"};
  RewriteCounter moved{"llmc-raise-norms", "norms moved in front of a transpose"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RmsNormPattern>(&getContext(), rmsNorms);
    patterns.add<LayerNormPattern>(&getContext(), layerNorms);
    patterns.add<NormBeforeTranspose<RmsNormOp>, NormBeforeTranspose<LayerNormOp>>(&getContext(), moved);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
