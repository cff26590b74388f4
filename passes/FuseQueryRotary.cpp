// llmc-fuse-query-rotary: a query that turns by an llmc.rotary of its own on its way into a
// fused_attention that turns nothing itself moves inside the attention (rotary_dim); a query
// multiplied by a scalar constant moves into the attention's scale.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

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

// fused_attention(q * c, ...) with c a scalar constant and the product read nowhere else  ->
// fused_attention(q, ...) {scale = c times its scale}: OPT's and XGLM's queries, scaled on their
// rows before the heads split (q_proj(x) * head ** -0.5), a kernel per layer. The scale multiplies
// Q·Kᵀ before anything else the attention does (softcap, mask, softmax), and the rotation inside
// it is linear, so a factor on Q moves there.
struct QueryScale : fusion::CountedPattern<FusedAttentionOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(FusedAttentionOp op, PatternRewriter &rewriter) const override {
    double c = 0.0;
    Value x = fusion::byScalar<MulOp>(op.getQ(), c);
    const int64_t heads = int64_t(op.getQNumHeads());
    auto qType = fusion::tensorType(op.getQ());
    if (!x || x.getType() != op.getQ().getType() || !std::isfinite(c) || c == 0.0 || op.getPackedQkv() ||
        !op.getQ().hasOneUse() || heads <= 0 || qType.getRank() != 3 || qType.isDynamicDim(2) ||
        qType.getDimSize(2) % heads)
      return failure();
    Operation *mul = op.getQ().getDefiningOp();
    const double head = double(qType.getDimSize(2) / heads);
    const double scale = op.getScale().convertToDouble() != 0.0 ? op.getScale().convertToDouble() : 1.0 / std::sqrt(head);
    rewriter.modifyOpInPlace(op, [&] {
      op.getQMutable().assign(x);
      op.setScaleAttr(rewriter.getF32FloatAttr(float(scale * c)));
    });
    rewriter.eraseOp(mul);
    ++count;
    return success();
  }
};

struct FuseQueryRotary : impl::LlmcFuseQueryRotaryBase<FuseQueryRotary> {
  RewriteCounter moved{"llmc-fuse-query-rotary", "query rotations moved into fused_attention"};
  RewriteCounter scaled{"llmc-fuse-query-rotary", "query scalings moved into fused_attention's scale"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<QueryRotary>(&getContext(), moved);
    patterns.add<QueryScale>(&getContext(), scaled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
