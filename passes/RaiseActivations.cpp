// llmc-raise-activations: GELU written out (erf form and tanh approximation) becomes llmc.gelu,
// x * sigmoid(x) becomes llmc.silu.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCRAISEACTIVATIONS
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// Splits the factors of a product into non-constant values and the product of the constants.
void splitFactors(Value root, SmallVectorImpl<Value> &values, double &constant) {
  SmallVector<Value> factors;
  fusion::productFactors(root, factors);
  constant = 1.0;
  for (Value f : factors) {
    if (auto c = fusion::scalarValue(f))
      constant *= *c;
    else
      values.push_back(f);
  }
}

// `v` as x * c (or x / c): returns x and sets c; a bare value is x * 1.
Value scaled(Value v, double &c) {
  if (auto div = def<DivOp>(v); div && div.getResult().hasOneUse()) {
    auto d = fusion::scalarValue(div.getRhs());
    if (d && *d != 0) {
      c = 1.0 / *d;
      return div.getLhs();
    }
  }
  SmallVector<Value> values;
  if (def<MulOp>(v) && v.hasOneUse()) {
    splitFactors(v, values, c);
    if (values.size() == 1)
      return values[0];
  }
  c = 1.0;
  return v;
}

// x * x * x, pow(x, 3) or pow(x, 2) * x: returns x.
Value cubed(Value v) {
  if (auto pow = def<PowOp>(v); pow && fusion::isScalar(pow.getRhs(), 3.0))
    return pow.getLhs();
  if (!def<MulOp>(v))
    return {};
  SmallVector<Value> factors;
  fusion::productFactors(v, factors);
  if (factors.size() == 3 && factors[0] == factors[1] && factors[1] == factors[2])
    return factors[0];
  if (factors.size() == 2)
    for (int i = 0; i < 2; ++i)
      if (auto pow = def<PowOp>(factors[i]);
          pow && fusion::isScalar(pow.getRhs(), 2.0) && pow.getLhs() == factors[1 - i] && factors[i].hasOneUse())
        return factors[1 - i];
  return {};
}

// 1 + f(t) as add(f(t), 1) in either order, with single-use parts: returns f's op.
template <typename OpT> OpT onePlus(Value v) {
  auto add = def<AddOp>(v);
  if (!add || !v.hasOneUse())
    return OpT();
  for (int i = 0; i < 2; ++i)
    if (fusion::isScalar(add->getOperand(1 - i), 1.0))
      if (auto f = def<OpT>(add->getOperand(i)); f && f.getResult().hasOneUse())
        return f;
  return OpT();
}

// The x of sqrt(2/pi) * x * (1 + 0.044715 * x * x), the tanh approximation's argument factored
// (Bloom's bloom_gelu_forward), or null.
Value factoredTanhArgument(Value u) {
  if (!def<MulOp>(u) || !u.hasOneUse())
    return {};
  const Type t = fusion::tensorType(u).getElementType();
  SmallVector<Value> values;
  double c1;
  splitFactors(u, values, c1);
  if (values.size() != 2 || !fusion::nearConstant(c1, 0.7978845608028654, 1e-4, t))
    return {};
  for (int i = 0; i < 2; ++i) {
    Value x = values[i];
    auto add = values[1 - i].hasOneUse() ? def<AddOp>(values[1 - i]) : AddOp();
    for (int j = 0; add && j < 2; ++j) {
      Value square = add->getOperand(j);
      if (!fusion::isScalar(add->getOperand(1 - j), 1.0) || !def<MulOp>(square) || !square.hasOneUse())
        continue;
      SmallVector<Value> xs;
      double c2;
      splitFactors(square, xs, c2);
      if (xs.size() == 2 && xs[0] == x && xs[1] == x && fusion::nearConstant(c2, 0.044715, 1e-5, t))
        return x;
    }
  }
  return {};
}

// The x of a tanh-approximation argument sqrt(2/pi) * (x + 0.044715 * x^3), or null.
Value tanhArgument(Value u) {
  if (Value x = factoredTanhArgument(u))
    return x;
  double c1;
  Value inner = scaled(u, c1);
  auto add = def<AddOp>(inner);
  const Type t = fusion::tensorType(u).getElementType();
  if (!add || !fusion::nearConstant(c1, 0.7978845608028654, 1e-4, t) || (inner != u && !inner.hasOneUse()))
    return {};
  for (int i = 0; i < 2; ++i) {
    Value x = add->getOperand(i);
    double c2;
    Value cube = scaled(add->getOperand(1 - i), c2);
    if (fusion::nearConstant(c2, 0.044715, 1e-5, t) && cubed(cube) == x)
      return x;
  }
  return {};
}

// 0.5 * x * (1 + erf(x / sqrt(2)))  or  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
struct GeluPattern : OpRewritePattern<MulOp> {
  RewriteCounter &erfCount, &tanhCount;
  GeluPattern(MLIRContext *ctx, RewriteCounter &erfCount, RewriteCounter &tanhCount)
      : OpRewritePattern(ctx), erfCount(erfCount), tanhCount(tanhCount) {}

  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    // Its constants match to 1e-4 (exporters round them), or are their rounding to a 16-bit
    // type: a model in doubles keeps its own.
    if (!fusion::isFusedFloat(op.getResult()))
      return failure();
    SmallVector<Value> values;
    double half;
    splitFactors(op.getResult(), values, half);
    if (values.size() != 2 || std::fabs(half - 0.5) > 1e-6)
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value x = values[1 - i];
      std::string approximate;
      if (auto erf = onePlus<ErfOp>(values[i])) {
        double c;
        if (scaled(erf.getInput(), c) != x ||
            !fusion::nearConstant(c, 0.7071067811865476, 1e-4, fusion::tensorType(x).getElementType()))
          continue;
        approximate = "none";
      } else if (auto tanh = onePlus<TanhOp>(values[i])) {
        if (tanhArgument(tanh.getInput()) != x)
          continue;
        approximate = "tanh";
      } else {
        continue;
      }
      if (fusion::tensorType(x) != op.getType())
        return failure();
      Operation *gelu = fusion::create(rewriter, op.getLoc(), "llmc.gelu", {x},
                                       {rewriter.getNamedAttr("approximate", rewriter.getStringAttr(approximate))});
      if (!gelu)
        return failure();
      rewriter.replaceOp(op, gelu->getResults());
      ++(approximate == "none" ? erfCount : tanhCount);
      return success();
    }
    return failure();
  }
};

// x * sigmoid(x)  ->  silu(x)
struct SiluPattern : OpRewritePattern<MulOp> {
  RewriteCounter &count;
  SiluPattern(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (int i = 0; i < 2; ++i) {
      auto sigmoid = def<SigmoidOp>(op->getOperand(i));
      if (!sigmoid || sigmoid.getInput() != op->getOperand(1 - i) || !sigmoid.getResult().hasOneUse() ||
          sigmoid.getType() != op.getType())
        continue;
      rewriter.replaceOp(op, fusion::create(rewriter, op.getLoc(), "llmc.silu", {sigmoid.getInput()})->getResults());
      ++count;
      return success();
    }
    return failure();
  }
};

struct RaiseActivations : impl::LlmcRaiseActivationsBase<RaiseActivations> {
  RewriteCounter gelus{"llmc-raise-activations", "erf GELUs raised"};
  RewriteCounter tanhGelus{"llmc-raise-activations", "tanh GELUs raised"};
  RewriteCounter silus{"llmc-raise-activations", "SiLUs raised"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GeluPattern>(&getContext(), gelus, tanhGelus);
    patterns.add<SiluPattern>(&getContext(), silus);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
