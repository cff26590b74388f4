// llmc-fuse-residual-norm: norm(a + b) becomes one add_layer_norm / add_rms_norm op that also
// yields a + b for the next residual connection.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFUSERESIDUALNORM
#include "Passes.h.inc"

namespace {

using namespace mlir;

template <typename NormOp> struct ResidualNormPattern : OpRewritePattern<NormOp> {
  RewriteCounter &count;
  ResidualNormPattern(MLIRContext *ctx, RewriteCounter &count) : OpRewritePattern<NormOp>(ctx), count(count) {}

  LogicalResult matchAndRewrite(NormOp op, PatternRewriter &rewriter) const override {
    auto add = fusion::def<AddOp>(op.getInput());
    if (!add || !fusion::isFusedFloat(add.getResult()))
      return failure();
    auto type = fusion::tensorType(add.getResult());
    const int64_t axis = op.getAxis();
    if (fusion::tensorType(add.getLhs()) != type || fusion::tensorType(add.getRhs()) != type ||
        (axis != -1 && axis != type.getRank() - 1))
      return failure();
    // The sum comes out of the fused op, at the norm's place: every other user must follow it.
    for (Operation *user : add.getResult().getUsers())
      if (user != op && (user->getBlock() != op->getBlock() || user->isBeforeInBlock(op)))
        return failure();
    constexpr bool rms = std::is_same_v<NormOp, RmsNormOp>;
    SmallVector<Value> operands = {add.getLhs(), add.getRhs(), op.getScale()};
    if constexpr (!rms)
      operands.push_back(op.getBias() ? op.getBias() : fusion::emptyTensor(rewriter, op.getLoc(), type.getElementType()));
    Operation *fused = fusion::create(rewriter, op.getLoc(), rms ? "llmc.add_rms_norm" : "llmc.add_layer_norm",
                                      operands,
                                      {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1)),
                                       rewriter.getNamedAttr("epsilon", op.getEpsilonAttr())});
    if (!fused)
      return failure();
    rewriter.replaceAllUsesWith(add.getResult(), fused->getResult(1));
    rewriter.replaceOp(op, fused->getResult(0));
    ++count;
    return success();
  }
};

struct FuseResidualNorm : impl::LlmcFuseResidualNormBase<FuseResidualNorm> {
  RewriteCounter fused{"llmc-fuse-residual-norm", "residual adds fused into norms"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ResidualNormPattern<RmsNormOp>, ResidualNormPattern<LayerNormOp>>(&getContext(), fused);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
