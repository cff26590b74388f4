// llmc-fold-conv-affine: a convolution followed by an inference BatchNormalization, or by
// per-channel multiplications, divisions, additions and subtractions by constants (a
// BatchNormalization decomposed by its exporter, possibly behind a transpose to channels-last),
// becomes one convolution with folded weights and bias; a matmul by a constant matrix followed by
// a constant per-column scale becomes one matmul.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFOLDCONVAFFINE
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;
using fusion::floatValues; // (f32, f16 or bf16: folded in f32, rounded once to the type by floatConstant)

// A conv with constant float weights (and bias, if any) whose result has one use.
ConvOp foldableConv(Value v) {
  auto conv = def<ConvOp>(v);
  if (!conv || !v.hasOneUse() || !fusion::isFloatConstant(conv.getWeight()) ||
      (conv.getBias() && !fusion::isFloatConstant(conv.getBias())))
    return ConvOp();
  return conv;
}

// Rebuilds `conv` with its output channels scaled by `scale` and then shifted by `shift`.
Value rebuild(PatternRewriter &rewriter, ConvOp conv, const std::vector<float> &scale, const std::vector<float> &shift) {
  auto wType = fusion::tensorType(conv.getWeight());
  std::vector<float> w = *floatValues(conv.getWeight());
  const int64_t channels = wType.getDimSize(0), per = int64_t(w.size()) / channels;
  std::vector<float> b = conv.getBias() ? *floatValues(conv.getBias()) : std::vector<float>(size_t(channels), 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < per; ++i)
      w[size_t(c * per + i)] *= scale[size_t(c)];
    b[size_t(c)] = b[size_t(c)] * scale[size_t(c)] + shift[size_t(c)];
  }
  Location loc = conv.getLoc();
  Value weight = fusion::floatConstant(rewriter, loc, wType, w);
  Value bias = fusion::floatConstant(rewriter, loc, RankedTensorType::get({channels}, wType.getElementType()), b);
  SmallVector<NamedAttribute> attrs(conv->getAttrs());
  return fusion::create(rewriter, loc, "llmc.conv", {conv.getInput(), weight, bias}, attrs)->getResult(0);
}

// conv -> batch_norm with constant statistics  ->  conv
struct BatchNormIntoConv : OpRewritePattern<BatchNormOp> {
  RewriteCounter &count;
  BatchNormIntoConv(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(BatchNormOp op, PatternRewriter &rewriter) const override {
    ConvOp conv = foldableConv(op.getInput());
    auto gamma = floatValues(op.getScale()), beta = floatValues(op.getBias()), mean = floatValues(op.getMean()),
         var = floatValues(op.getVar());
    if (!conv || !gamma || !beta || !mean || !var)
      return failure();
    const size_t channels = size_t(fusion::tensorType(conv.getWeight()).getDimSize(0));
    if (gamma->size() != channels || beta->size() != channels || mean->size() != channels || var->size() != channels)
      return failure();
    std::vector<float> scale(channels), shift(channels);
    const double eps = op.getEpsilon().convertToDouble();
    for (size_t c = 0; c < channels; ++c) {
      scale[c] = float((*gamma)[c] / std::sqrt(double((*var)[c]) + eps));
      shift[c] = (*beta)[c] - (*mean)[c] * scale[c];
    }
    rewriter.setInsertionPoint(op);
    rewriter.replaceOp(op, rebuild(rewriter, conv, scale, shift));
    ++count;
    return success();
  }
};

// [transpose ->] (x op c) with c constant per output channel  ->  conv with op folded [-> transpose]
struct AffineIntoConv : RewritePattern {
  RewriteCounter &count;
  AffineIntoConv(MLIRContext *ctx, RewriteCounter &count) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx), count(count) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<AddOp, SubOp, MulOp, DivOp>(op))
      return failure();
    for (int side = 0; side < 2; ++side) {
      if (side == 1 && isa<SubOp, DivOp>(op)) // c - x and c / x are not affine in x
        break;
      Value x = op->getOperand(side), c = op->getOperand(1 - side);
      auto transpose = def<TransposeOp>(x);
      if (transpose && !x.hasOneUse())
        continue;
      ConvOp conv = foldableConv(transpose ? transpose.getInput() : x);
      auto values = floatValues(c);
      if (!conv || !values || fusion::tensorType(op->getResult(0)) != fusion::tensorType(x))
        continue;
      // Where the channels are in x, and whether c varies only along them.
      const int64_t rank = fusion::tensorType(x).getRank();
      int64_t axis = 1;
      if (transpose)
        axis = std::find(transpose.getPerm().begin(), transpose.getPerm().end(), 1) - transpose.getPerm().begin();
      const int64_t channels = fusion::tensorType(conv.getWeight()).getDimSize(0);
      auto cType = fusion::tensorType(c);
      bool perChannel = cType.getRank() <= rank && (values->size() == 1 || int64_t(values->size()) == channels);
      for (int64_t d = 0; perChannel && d < cType.getRank(); ++d) {
        const int64_t at = rank - cType.getRank() + d;
        perChannel = cType.getDimSize(d) == 1 || (at == axis && cType.getDimSize(d) == channels);
      }
      if (!perChannel)
        continue;
      auto per = [&](int64_t ch) { return (*values)[values->size() == 1 ? 0 : size_t(ch)]; };
      std::vector<float> scale(size_t(channels), 1.0f), shift(size_t(channels), 0.0f);
      for (int64_t ch = 0; ch < channels; ++ch) {
        if (isa<MulOp>(op))
          scale[size_t(ch)] = per(ch);
        else if (isa<DivOp>(op))
          scale[size_t(ch)] = 1.0f / per(ch);
        else
          shift[size_t(ch)] = isa<AddOp>(op) ? per(ch) : -per(ch);
      }
      rewriter.setInsertionPoint(op);
      Value folded = rebuild(rewriter, conv, scale, shift);
      if (transpose)
        folded = fusion::create(rewriter, op->getLoc(), "llmc.transpose", {folded},
                                {rewriter.getNamedAttr("perm", transpose.getPermAttr())})
                     ->getResult(0);
      rewriter.replaceOp(op, folded);
      ++count;
      return success();
    }
    return failure();
  }
};

// matmul(x, W) * s with W [K, N] and s [N] constant  ->  matmul(x, W * s)
struct ScaleIntoMatMul : OpRewritePattern<MulOp> {
  RewriteCounter &count;
  ScaleIntoMatMul(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      auto mm = def<MatMulOp>(op->getOperand(side));
      auto s = floatValues(op->getOperand(1 - side));
      if (!mm || !mm.getResult().hasOneUse() || !s || fusion::tensorType(mm.getRhs()).getRank() != 2)
        continue;
      auto w = floatValues(mm.getRhs());
      auto sType = fusion::tensorType(op->getOperand(1 - side));
      const int64_t n = fusion::tensorType(mm.getRhs()).getDimSize(1);
      if (!w || sType.getRank() != 1 || sType.getDimSize(0) != n || op.getType() != mm.getType())
        continue;
      for (size_t i = 0; i < w->size(); ++i)
        (*w)[i] *= (*s)[i % size_t(n)];
      rewriter.setInsertionPoint(op);
      Value weight = fusion::floatConstant(rewriter, mm.getLoc(), fusion::tensorType(mm.getRhs()), *w);
      rewriter.replaceOp(op, fusion::create(rewriter, op.getLoc(), "llmc.matmul", {mm.getLhs(), weight})->getResults());
      ++count;
      return success();
    }
    return failure();
  }
};

struct FoldConvAffine : impl::LlmcFoldConvAffineBase<FoldConvAffine> {
  RewriteCounter batchNorms{"llmc-fold-conv-affine", "BatchNormalizations folded into convolutions"};
  RewriteCounter affines{"llmc-fold-conv-affine", "per-channel constant ops folded into convolutions"};
  RewriteCounter scales{"llmc-fold-conv-affine", "per-column scales folded into matmuls"};

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<BatchNormIntoConv>(&getContext(), batchNorms);
    patterns.add<AffineIntoConv>(&getContext(), affines);
    patterns.add<ScaleIntoMatMul>(&getContext(), scales);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
