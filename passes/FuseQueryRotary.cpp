// llmc-fuse-query-rotary: a query that turns by an llmc.rotary of its own on its way into a
// fused_attention that turns nothing itself moves inside the attention (rotary_dim).
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFUSEQUERYROTARY
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// fused_attention(reshape*(rotary(x)), k, v, ...) with no tables of its own, x [B, S, Hq * D] of
// q's type, no position ids, each value on the way read once  ->  fused_attention(x, k, v, ...,
// the rotary's tables) {rotary_dim, rotary_interleaved, rotate_keys = 0}: the partial or
// neighbour-paired rotations that llmc-raise-attention leaves to an llmc.rotary (GPT-J, CodeGen,
// Cohere, Phi, StableLM), and which the attention then turns as it loads the query.
struct QueryRotary : fusion::CountedPattern<FusedAttentionOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(FusedAttentionOp op, PatternRewriter &rewriter) const override {
    if (!fusion::isEmpty(op.getCos()) || op.getPackedQkv() || !op.getQ().hasOneUse())
      return failure();
    Value q = op.getQ();
    while (auto reshape = def<ReshapeOp>(q)) {
      if (!reshape.getInput().hasOneUse())
        return failure();
      q = reshape.getInput();
    }
    auto rotary = def<RotaryOp>(q);
    if (!rotary || !fusion::isEmpty(rotary.getPositionIds()))
      return failure();
    Value x = rotary.getInput();
    auto type = fusion::tensorType(x);
    const int64_t heads = int64_t(op.getQNumHeads());
    if (x.getType() != op.getQ().getType() || type.getRank() != 3 || type.isDynamicDim(2) ||
        int64_t(rotary.getNumHeads()) != heads || heads <= 0 || type.getDimSize(2) % heads ||
        fusion::tensorType(rotary.getCos()).getRank() != 3)
      return failure();
    const int64_t head = type.getDimSize(2) / heads, dim = int64_t(rotary.getRotaryEmbeddingDim());
    NamedAttrList attrs(op->getAttrs());
    attrs.set("rotary_dim", rewriter.getI64IntegerAttr(dim ? dim : head));
    attrs.set("rotary_interleaved", rewriter.getI64IntegerAttr(int64_t(rotary.getInterleaved())));
    attrs.set("rotate_keys", rewriter.getI64IntegerAttr(0));
    Operation *fused = fusion::create(rewriter, op.getLoc(), "llmc.fused_attention",
                                      fusion::attentionOperands(op, x, op.getK(), op.getV(), op.getMask(), rotary.getCos(),
                                                                rotary.getSin()),
                                      attrs.getAttrs());
    if (failed(fusion::replaceByLastBuilt(rewriter, op, {fused})))
      return failure();
    ++count;
    return success();
  }
};

struct FuseQueryRotary : impl::LlmcFuseQueryRotaryBase<FuseQueryRotary> {
  RewriteCounter moved{"llmc-fuse-query-rotary", "query rotations moved into fused_attention"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<QueryRotary>(&getContext(), moved);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
