// llmc-fuse-routing: a mixture of experts' router, softmax then top-k (then the chosen weights
// divided by their sum), becomes one llmc.softmax_top_k.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFUSEROUTING
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

bool isLastAxis(int64_t axis, Value v) { return axis == -1 || axis == fusion::tensorType(v).getRank() - 1; }

// top_k(softmax(logits), k) over the last axis, largest first and sorted  ->  softmax_top_k(logits, k)
struct SoftmaxTopK : fusion::CountedPattern<TopKOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(TopKOp op, PatternRewriter &rewriter) const override {
    auto softmax = def<SoftmaxOp>(op.getInput());
    if (!softmax || !softmax.getResult().hasOneUse() || !fusion::isFusedFloat(softmax.getInput()) ||
        !isLastAxis(int64_t(op.getAxis()), op.getInput()) || !isLastAxis(int64_t(softmax.getAxis()), op.getInput()) ||
        op.getLargest() != 1 || op.getSorted() != 1)
      return failure();
    Operation *fused = fusion::create(rewriter, op.getLoc(), "llmc.softmax_top_k", {softmax.getInput()},
                                      {rewriter.getNamedAttr("k", op.getKAttr())});
    if (failed(fusion::replaceByLastBuilt(rewriter, op, {fused})))
      return failure();
    ++count;
    return success();
  }
};

// values / reduce_sum(values, last axis, keepdims) of a softmax_top_k that nothing else reads
// ->  that softmax_top_k with normalize = 1 (Mixtral's and Qwen3-MoE's norm_topk_prob), its
// values read where the quotient was.
struct NormalizedWeights : fusion::CountedPattern<DivOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rewriter) const override {
    auto routing = def<SoftmaxTopKOp>(op.getLhs());
    auto sum = def<ReduceSumOp>(op.getRhs());
    if (!routing || !sum || routing.getNormalize() || sum.getInput() != routing.getValues() ||
        !sum.getResult().hasOneUse() || !fusion::reducesLastAxisKeepingIt(sum) ||
        !llvm::hasNItems(routing.getValues().getUses(), 2) || op.getType() != routing.getValues().getType())
      return failure();
    rewriter.replaceOp(op, routing.getValues());
    rewriter.eraseOp(sum);
    rewriter.modifyOpInPlace(routing, [&] { routing->setAttr("normalize", rewriter.getI64IntegerAttr(1)); });
    ++count;
    return success();
  }
};

struct FuseRouting : impl::LlmcFuseRoutingBase<FuseRouting> {
  RewriteCounter routers{"llmc-fuse-routing", "softmaxes and their top-k turned into softmax_top_k"};
  RewriteCounter normalized{"llmc-fuse-routing", "routing weights' normalizations fused into softmax_top_k"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SoftmaxTopK>(&getContext(), routers);
    patterns.add<NormalizedWeights>(&getContext(), normalized);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
