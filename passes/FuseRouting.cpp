// llmc-fuse-routing: a mixture of experts' router, softmax then top-k (then the chosen weights
// divided by their sum), or top-k then a softmax of the chosen logits (GPT-OSS's), becomes one
// llmc.softmax_top_k; DeepSeek-V3's (sigmoid scores, experts chosen within the best groups) and
// ERNIE 4.5's (softmax scores, a correction that chooses) one llmc.grouped_top_k.
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

// top_k(softmax(logits), k) over the last axis, largest first  ->  softmax_top_k(logits, k). An
// unsorted top_k (DeepSeek-V2's, torch.topk(sorted=False)) leaves the order of its k to the
// implementation (ONNX), so softmax_top_k's sorted order is one of its results; the executors'
// top_k sorts anyway.
struct SoftmaxTopK : fusion::CountedPattern<TopKOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(TopKOp op, PatternRewriter &rewriter) const override {
    auto softmax = def<SoftmaxOp>(op.getInput());
    if (!softmax || !op.hasConstantK() || !softmax.getResult().hasOneUse() ||
        !fusion::isFusedFloat(softmax.getInput()) || !isLastAxis(int64_t(op.getAxis()), op.getInput()) ||
        !isLastAxis(int64_t(softmax.getAxis()), op.getInput()) || op.getLargest() != 1)
      return failure();
    Operation *fused = fusion::create(rewriter, op.getLoc(), "llmc.softmax_top_k", {softmax.getInput()},
                                      {rewriter.getNamedAttr("k", op.getKAttr())});
    if (failed(fusion::replaceByLastBuilt(rewriter, op, {fused})))
      return failure();
    ++count;
    return success();
  }
};

// softmax(top_k(logits, k).values) over the last axis, largest first and sorted, where nothing
// else reads the values  ->  softmax_top_k(logits, k, normalize = 1): GPT-OSS's router, the
// softmax of the chosen logits, which is the chosen probabilities divided by their sum.
struct SoftmaxOfTopK : fusion::CountedPattern<SoftmaxOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rewriter) const override {
    auto topK = def<TopKOp>(op.getInput());
    if (!topK || !topK.hasConstantK() || op.getInput() != topK.getValues() || !topK.getValues().hasOneUse() ||
        !fusion::isFusedFloat(topK.getInput()) || !isLastAxis(int64_t(op.getAxis()), op.getInput()) ||
        !isLastAxis(int64_t(topK.getAxis()), topK.getInput()) || topK.getLargest() != 1 || topK.getSorted() != 1)
      return failure();
    rewriter.setInsertionPoint(topK); // where the indices' readers, which may precede the softmax, find it
    Operation *before = topK->getPrevNode();
    Operation *fused = fusion::create(rewriter, op.getLoc(), "llmc.softmax_top_k", {topK.getInput()},
                                      {rewriter.getNamedAttr("k", topK.getKAttr()),
                                       rewriter.getNamedAttr("normalize", rewriter.getI64IntegerAttr(1))});
    if (!fused || fused->getResultTypes() != topK->getResultTypes())
      return fusion::abandonBuilt(rewriter, topK, before);
    rewriter.replaceAllUsesWith(topK.getIndices(), fused->getResult(1));
    rewriter.replaceOp(op, fused->getResult(0));
    rewriter.eraseOp(topK);
    ++count;
    return success();
  }
};

// values / reduce_sum(values, last axis, keepdims) of a softmax_top_k that nothing else reads
// ->  that softmax_top_k with normalize = 1 (Mixtral's and Qwen3-MoE's norm_topk_prob), its
// values read where the quotient was. Also by the sum of abs(values), their L1 norm (DBRX's
// moe_normalize_expert_weights 1): softmax probabilities are their own magnitudes.
struct NormalizedWeights : fusion::CountedPattern<DivOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rewriter) const override {
    auto routing = def<SoftmaxTopKOp>(op.getLhs());
    auto sum = def<ReduceSumOp>(op.getRhs());
    Value summed = sum ? sum.getInput() : Value();
    auto magnitude = def<AbsOp>(summed);
    if (magnitude && magnitude.getResult().hasOneUse())
      summed = magnitude.getInput();
    else
      magnitude = AbsOp();
    if (!routing || !sum || routing.getNormalize() || summed != routing.getValues() ||
        !sum.getResult().hasOneUse() || !fusion::reducesLastAxisKeepingIt(sum) ||
        !llvm::hasNItems(routing.getValues().getUses(), 2) || op.getType() != routing.getValues().getType())
      return failure();
    rewriter.replaceOp(op, routing.getValues());
    rewriter.eraseOp(sum);
    if (magnitude)
      rewriter.eraseOp(magnitude);
    rewriter.modifyOpInPlace(routing, [&] { routing->setAttr("normalize", rewriter.getI64IntegerAttr(1)); });
    ++count;
    return success();
  }
};

bool isLastAxisOf(ArrayRef<int64_t> axes, Value v) { return axes.size() == 1 && isLastAxis(axes[0], v); }

// The value every element of `v` holds where `v` is provably filled with one constant: a splat
// constant, constant_of_shape, or a scalar constant expanded.
std::optional<double> filledWith(Value v) {
  if (auto c = def<ConstantOfShapeOp>(v))
    return c.getValue().convertToDouble();
  if (auto e = def<ExpandOp>(v))
    v = e.getInput();
  return fusion::scalarValue(v);
}

// The top_k of `v`'s rows, largest first (sorted or not), whose indices `indices` are.
TopKOp topKOfRows(Value indices) {
  auto t = def<TopKOp>(indices);
  const bool rows = t && t.hasConstantK() && t.getIndices() == indices && t.getLargest() == 1 &&
                    isLastAxis(t.getAxis(), t.getInput());
  return rows ? t : TopKOp();
}

// DeepSeek-V3's router (transformers' DeepseekV3TopkRouter: sigmoid scores with a correction
// bias, experts chosen within the best groups) as the export writes it, from the weights that
// gather the chosen experts' sigmoid scores back:
//   s = sigmoid(logits); c = s + bias
//   groups = reduce_sum(top_k(reshape(c, [N, G, n / G]), top).values, last axis)
//   kept = scatter_elements(zeros [N, G], top_k(groups, kept_groups).indices, ones, axis 1)
//   mask = reshape(expand(unsqueeze(kept, -1), [N, G, n / G]), [N, n])
//   chosen = top_k(where(not(cast(mask to i1)), fill, c), k).indices
//   weights = gather_elements(s, chosen, axis 1) [/ (reduce_sum(., last axis) [+ epsilon])] [* scale]
// ->  grouped_top_k(logits, bias). ERNIE 4.5's (Ernie4_5_MoeTopKRouter) has no groups and softmax
// scores, its weights divided by max(sum, norm_min):
//   s = softmax(logits); chosen = top_k(s + bias, k).indices
//   weights = gather_elements(s, chosen, axis 1) / max(reduce_sum(., last axis), norm_min)
// ->  grouped_top_k(logits, bias) with one group, scores = "softmax", normalize = 2. Nothing is
// made unless the whole chain matches.
struct GroupedTopK : OpRewritePattern<GatherElementsOp> {
  RewriteCounter &grouped, &corrected;
  GroupedTopK(MLIRContext *ctx, RewriteCounter &grouped, RewriteCounter &corrected)
      : OpRewritePattern(ctx), grouped(grouped), corrected(corrected) {}

  struct Router {
    Value logits, bias, weights;
    TopKOp chosen;
    int64_t groups = 1, kept = 1, top = 1;
    double fill = 0, epsilon = 0, scale = 1;
    int64_t normalize = 0; // grouped_top_k's: 1 by sum + epsilon, 2 by max(sum, epsilon)
    bool softmax = false, masked = false;
  };

  // The mask [N, n] of the kept groups: sets G and, with the kept groups' top_k, its input (the
  // group scores) and k. One group's mask of ones (llmc-fold-shapes folds the scatter from a top-1
  // of that one group) keeps it, with no group scores.
  static bool keptGroupsOf(Value mask, int64_t n, Router &r, Value &groupScores) {
    auto flat = def<ReshapeOp>(mask);
    auto spread = flat ? def<ExpandOp>(flat.getInput()) : ExpandOp();
    auto column = spread ? def<UnsqueezeOp>(spread.getInput()) : UnsqueezeOp();
    if (!column || column.getAxes().size() != 1)
      return false;
    Value keptGroups = column.getInput();
    auto keptType = fusion::tensorType(keptGroups), spreadType = fusion::tensorType(spread.getResult());
    const int64_t axis = column.getAxes()[0];
    if (keptType.getRank() != 2 || (axis != -1 && axis != 2) || keptType.isDynamicDim(1) || spreadType.getRank() != 3 ||
        spreadType.getDimSize(1) != keptType.getDimSize(1) || keptType.getDimSize(1) <= 0 ||
        spreadType.getDimSize(2) * keptType.getDimSize(1) != n)
      return false;
    r.groups = keptType.getDimSize(1);
    auto kept = def<ScatterElementsOp>(keptGroups);
    if (!kept) {
      groupScores = Value();
      r.kept = 1;
      return r.groups == 1 && filledWith(keptGroups) == 1.0;
    }
    if (kept.getReduction() != "none" || !isLastAxis(kept.getAxis(), kept.getResult()) ||
        filledWith(kept.getData()) != 0.0 || filledWith(kept.getUpdates()) != 1.0)
      return false;
    TopKOp top = topKOfRows(kept.getIndices());
    if (!top)
      return false;
    groupScores = top.getInput();
    r.kept = top.getK();
    return true;
  }

  // Whether `scores` [N, G] are the sums of the `top` largest of c's groups of n / G, setting top.
  static bool groupSumsOf(Value scores, Value c, int64_t groups, int64_t &top) {
    auto sum = def<ReduceSumOp>(scores);
    auto best = sum ? def<TopKOp>(sum.getInput()) : TopKOp();
    auto grouped = best ? def<ReshapeOp>(best.getInput()) : ReshapeOp();
    if (!grouped || !best.hasConstantK() || sum.getInput() != best.getValues() || grouped.getInput() != c ||
        best.getLargest() != 1 || !isLastAxis(best.getAxis(), best.getInput()) ||
        !isLastAxisOf(sum.getAxes(), sum.getInput()) || sum.getKeepdims() != 0)
      return false;
    auto type = fusion::tensorType(grouped.getResult());
    if (type.getRank() != 3 || type.getDimSize(1) != groups || type.isDynamicDim(2) ||
        type.getDimSize(2) * groups != fusion::tensorType(c).getShape().back())
      return false;
    top = best.getK();
    return true;
  }

  // c's masked copy: where(not(cast(mask, i1)), fill, c) or where(cast(mask, i1), c, fill); the
  // mask and fill.
  static Value maskedScores(Value v, Value &c, double &fill) {
    auto where = def<WhereOp>(v);
    if (!where)
      return {};
    Value condition = where.getCondition();
    bool negated = false;
    if (auto n = def<NotOp>(condition)) {
      negated = true;
      condition = n.getInput();
    }
    auto cast = def<CastOp>(condition);
    Value filler = negated ? where.getX() : where.getY();
    c = negated ? where.getY() : where.getX();
    std::optional<double> value = filledWith(filler);
    if (!cast || !cast.getTo().isInteger(1) || !value || fusion::tensorType(filler).getNumElements() != 1)
      return {};
    fill = *value;
    return cast.getInput();
  }

  // The sum inside a denominator: sum + epsilon (normalize 1), max(sum, epsilon) (2) or the sum
  // alone (1, epsilon 0), epsilon a one-element constant; null where it is none of those.
  static Value sumOfDenominator(Value denominator, Router &r) {
    Operation *op = denominator.getDefiningOp();
    r.normalize = isa_and_nonnull<MaxOp>(op) ? 2 : 1;
    if (!isa_and_nonnull<AddOp, MaxOp>(op))
      return denominator;
    for (int i = 0; i < 2; ++i) {
      Value sum = op->getOperand(i), eps = op->getOperand(1 - i);
      std::optional<double> epsilon = filledWith(eps);
      if (def<ReduceSumOp>(sum) && epsilon && fusion::tensorType(eps).getNumElements() == 1) {
        r.epsilon = *epsilon;
        return sum;
      }
    }
    return {};
  }

  static bool match(GatherElementsOp gather, Router &r) {
    Operation *scores = gather.getData().getDefiningOp();
    auto softmax = dyn_cast_or_null<SoftmaxOp>(scores);
    r.chosen = topKOfRows(gather.getIndices());
    if (!isa_and_nonnull<SigmoidOp, SoftmaxOp>(scores) ||
        (softmax && !isLastAxis(softmax.getAxis(), softmax.getInput())) || !r.chosen || !isLastAxis(gather.getAxis(), gather.getData()) || !r.chosen.getValues().use_empty())
      return false;
    r.softmax = bool(softmax);
    r.logits = scores->getOperand(0);
    const Value s = gather.getData();
    auto type = fusion::tensorType(r.logits);
    if (!fusion::isFusedFloat(r.logits) || type.getRank() != 2 || type.isDynamicDim(1))
      return false;
    const int64_t n = type.getDimSize(1);
    // The chosen experts' top_k of c, masked to the kept groups; or of c itself (no groups).
    Value c, mask = maskedScores(r.chosen.getInput(), c, r.fill);
    r.masked = bool(mask);
    if (!mask)
      c = r.chosen.getInput();
    if (auto add = def<AddOp>(c)) { // (without a correction, c is s itself)
      r.bias = add.getLhs() == s ? add.getRhs() : add.getLhs();
      auto biasType = fusion::tensorType(r.bias);
      if (fusion::other(add, r.bias) != s || biasType.getRank() != 1 || biasType.getDimSize(0) != n ||
          biasType.getElementType() != type.getElementType())
        return false;
    } else if (c != s) {
      return false;
    }
    if (mask) {
      Value groupScores;
      if (!keptGroupsOf(mask, n, r, groupScores) ||
          (groupScores && (!groupSumsOf(groupScores, c, r.groups, r.top) || r.top > n / r.groups)))
        return false;
    }
    // The weights: the gathered scores, normalized (divided by their sum, plus epsilon, or at
    // least epsilon, or as it is), scaled. A division of another form leaves the chain alone.
    r.weights = gather.getResult();
    DivOp div;
    for (Operation *user : r.weights.getUsers())
      if (auto d = dyn_cast<DivOp>(user); d && d.getLhs() == r.weights)
        div = d;
    if (div) {
      auto sum = def<ReduceSumOp>(sumOfDenominator(div.getRhs(), r));
      if (!sum || sum.getInput() != r.weights || !fusion::reducesLastAxisKeepingIt(sum) ||
          !llvm::hasNItems(r.weights.getUses(), 2) || div.getType() != r.weights.getType())
        return false;
      r.weights = div.getResult();
    }
    if (auto mul = r.weights.hasOneUse() ? dyn_cast<MulOp>(*r.weights.getUsers().begin()) : MulOp()) {
      Value factor = fusion::other(mul, r.weights);
      std::optional<double> scale = factor ? filledWith(factor) : std::nullopt;
      if (scale && fusion::tensorType(factor).getNumElements() == 1 && mul.getType() == r.weights.getType()) {
        r.scale = *scale;
        r.weights = mul.getResult();
      }
    }
    return true;
  }

  LogicalResult matchAndRewrite(GatherElementsOp op, PatternRewriter &rewriter) const override {
    Router r;
    if (!match(op, r))
      return failure();
    // Where the chosen experts' top_k was: its indices may be read before the weights are made.
    // A failure erases what was built (abandonBuilt).
    rewriter.setInsertionPoint(r.chosen);
    Operation *before = r.chosen->getPrevNode();
    Location loc = op.getLoc();
    auto element = fusion::tensorType(r.logits).getElementType();
    if (!r.bias) {
      auto type = RankedTensorType::get({fusion::tensorType(r.logits).getDimSize(1)}, element);
      r.bias = fusion::floatConstant(rewriter, loc, type, std::vector<float>(size_t(type.getNumElements()), 0.0f));
    }
    auto f32 = [&](double x) { return rewriter.getF32FloatAttr(float(x)); };
    SmallVector<NamedAttribute> attrs{
        rewriter.getNamedAttr("k", r.chosen.getKAttr()),
        rewriter.getNamedAttr("groups", rewriter.getI64IntegerAttr(r.groups)),
        rewriter.getNamedAttr("kept_groups", rewriter.getI64IntegerAttr(r.kept)),
        rewriter.getNamedAttr("group_top", rewriter.getI64IntegerAttr(r.top)),
        rewriter.getNamedAttr("fill", f32(r.fill)),
        rewriter.getNamedAttr("normalize", rewriter.getI64IntegerAttr(r.normalize)),
        rewriter.getNamedAttr("epsilon", f32(r.epsilon)), rewriter.getNamedAttr("scale", f32(r.scale))};
    if (r.softmax)
      attrs.push_back(rewriter.getNamedAttr("scores", rewriter.getStringAttr("softmax")));
    Operation *fused = fusion::create(rewriter, loc, "llmc.grouped_top_k", {r.logits, r.bias}, attrs);
    if (!fused || fused->getResult(0).getType() != r.weights.getType() ||
        fused->getResult(1).getType() != r.chosen.getIndices().getType())
      return fusion::abandonBuilt(rewriter, r.chosen, before);
    rewriter.replaceAllUsesWith(r.weights, fused->getResult(0));
    rewriter.replaceAllUsesWith(r.chosen.getIndices(), fused->getResult(1));
    ++(r.masked ? grouped : corrected);
    return success();
  }
};

struct FuseRouting : impl::LlmcFuseRoutingBase<FuseRouting> {
  RewriteCounter routers{"llmc-fuse-routing", "softmaxes and their top-k turned into softmax_top_k"};
  RewriteCounter normalized{"llmc-fuse-routing", "routing weights' normalizations fused into softmax_top_k"};
  RewriteCounter grouped{"llmc-fuse-routing", "routers choosing experts by groups turned into grouped_top_k"};
  RewriteCounter corrected{"llmc-fuse-routing",
                           "routers choosing experts by corrected scores turned into grouped_top_k"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GroupedTopK>(&getContext(), grouped, corrected);
    patterns.add<SoftmaxTopK, SoftmaxOfTopK>(&getContext(), routers);
    patterns.add<NormalizedWeights>(&getContext(), normalized);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
