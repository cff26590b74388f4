// llmc-fuse-linear's pattern for a mixture of experts computed densely, as transformers computes
// Llama 4's: every expert on every token, each token's row scaled first by the router's score,
// which is zero for the experts the token did not choose. Only the chosen (token, expert) pairs
// are computed instead: a real Llama 4 (16 or 128 experts, one chosen) did 16 or 128 times the
// work, and read every expert's weights at every decode step.
#include "ExpertWeights.h"
#include "PatternUtil.h"

#include <limits>

namespace llmc {
namespace {

using namespace mlir;
using fusion::def;

// v's input where v is an identity: a reshape to its own type with at most one dynamic
// dimension (the element count fixes it), or an expand by ones to its own type; v otherwise.
Value throughIdentity(Value v) {
  auto type = fusion::tensorType(v);
  if (auto r = def<ReshapeOp>(v); r && fusion::isIdentityReshape(r))
    return r.getInput();
  if (auto e = def<ExpandOp>(v); e && e.getInput().getType() == type && fusion::isScalar(e.getShape(), 1.0, 0.0) &&
                                 fusion::tensorType(e.getShape()).getRank() == 1 &&
                                 fusion::tensorType(e.getShape()).getDimSize(0) <= type.getRank())
    return e.getInput();
  return v;
}

bool isAxis1Of2(int64_t axis) { return fusion::isAxis(axis, 1, 2); }

// The router's scores [T, E] as `sigmoid(scatter_elements(fill, idx, v, axis 1))` with
// (_, idx) = top_k(_, axis 1) and sigmoid(fill) = 0: the top-k's indices and the scores'
// pre-sigmoid values v [T, k] of the chosen experts; false otherwise.
bool chosenScores(Value scores, Value &indices, Value &values) {
  auto sigmoid = def<SigmoidOp>(scores);
  auto scatter = sigmoid ? def<ScatterElementsOp>(sigmoid.getInput()) : ScatterElementsOp();
  if (!scatter || scatter.getReduction() != "none" || fusion::tensorType(scores).getRank() != 2 ||
      !isAxis1Of2(scatter.getAxis()))
    return false;
  Value fill = scatter.getData();
  if (auto e = def<ExpandOp>(fill))
    fill = e.getInput();
  // sigmoid(fill) is exactly 0: -inf, or a float's lowest (exp(-fill) overflows).
  auto c = fusion::scalarValue(fill);
  if (!c || *c > -double(std::numeric_limits<float>::max()))
    return false;
  auto topK = def<TopKOp>(scatter.getIndices());
  if (!topK || !topK.hasConstantK() || topK.getIndices() != scatter.getIndices() ||
      fusion::tensorType(topK.getInput()).getRank() != 2 || !isAxis1Of2(topK.getAxis()) ||
      fusion::tensorType(scatter.getIndices()).isDynamicDim(1))
    return false;
  indices = scatter.getIndices();
  values = scatter.getUpdates();
  return fusion::isFusedFloat(values) &&
         fusion::tensorType(values).getShape() == fusion::tensorType(indices).getShape();
}

// The rows x [T, H] and scores S [T, E] of X = reshape(tile(x, [E, 1]) * reshape(transpose(S),
// [E * T, 1]), [E, T, H]): expert e's copy of the tokens, token t's row scaled by S[t, e].
bool scaledCopies(Value X, Value &x, Value &scores) {
  auto reshape = def<ReshapeOp>(X);
  auto mul = reshape ? def<MulOp>(reshape.getInput()) : MulOp();
  auto type = fusion::tensorType(X);
  if (!mul || type.getRank() != 3 || type.isDynamicDim(0) || type.isDynamicDim(2))
    return false;
  const int64_t experts = type.getDimSize(0);
  for (int i = 0; i < 2; ++i) {
    auto tile = def<TileOp>(mul->getOperand(i));
    auto column = def<ReshapeOp>(mul->getOperand(1 - i));
    auto transpose = column ? def<TransposeOp>(column.getInput()) : TransposeOp();
    if (!tile || !transpose || tile.getRepeats() != ArrayRef<int64_t>{experts, 1} ||
        transpose.getPerm() != ArrayRef<int64_t>{1, 0} || fusion::tensorType(column).getRank() != 2 ||
        fusion::tensorType(column).getDimSize(1) != 1)
      continue;
    x = throughIdentity(tile.getInput());
    scores = transpose.getInput();
    auto xType = fusion::tensorType(x), sType = fusion::tensorType(scores);
    // E >= 2 copies: the product's broadcast then needs E * T rows on both sides, the same T.
    if (xType.getRank() == 2 && xType.getDimSize(1) == type.getDimSize(2) && sType.getRank() == 2 &&
        sType.getDimSize(1) == experts && experts >= 2)
      return true;
  }
  return false;
}

// h = silu(a) * b of the two halves [a | b] along the last axis of a [E, T, 2I] value read by
// nothing else: that value; null otherwise.
Value swigluOf(Value h) {
  auto mul = def<MulOp>(h);
  for (int i = 0; mul && i < 2; ++i) {
    auto silu = def<SiluOp>(mul->getOperand(i));
    auto split = silu ? def<SplitOp>(silu.getInput()) : SplitOp();
    if (!split || split->getNumResults() != 2 || silu.getInput() != split->getResult(0) ||
        mul->getOperand(1 - i) != split->getResult(1) ||
        split->getResult(0).getType() != split->getResult(1).getType() || !fusion::isAxis(split.getAxis(), 2, 3) ||
        !silu.getResult().hasOneUse() || !split->getResult(0).hasOneUse() || !split->getResult(1).hasOneUse())
      continue;
    return split.getInput();
  }
  return {};
}

// reduce_sum(matmul(swiglu(matmul(X, Wgu)), Wd), axes [0]) with X the scaled copies above, Wgu
// [E, H, 2I] and Wd [E, I, H] constants  ->  the chosen experts' expert_linears:
//   rows = reshape(x[:, None] * sigmoid(v)[:, :, None], [T * k, H]), ids = reshape(idx, [T * k, 1])
//   sum over k of expert_linear(expert_linear(rows, Wgu', ids, swiglu), Wd', ids)
// An expert given a zero row gives a zero row (no bias; silu(0) * 0 = 0), so the experts a token
// did not choose add nothing.
struct DenseExpertsToExpertLinear : fusion::CountedPattern<ReduceSumOp, RewriteCounter> {
  TransposedWeights &transposed;
  DenseExpertsToExpertLinear(MLIRContext *ctx, RewriteCounter &count, TransposedWeights &transposed)
      : CountedPattern(ctx, count), transposed(transposed) {}

  LogicalResult matchAndRewrite(ReduceSumOp op, PatternRewriter &rewriter) const override {
    if (op.getAxes() != ArrayRef<int64_t>{0} || op.getKeepdims() != 0)
      return failure();
    auto down = def<MatMulOp>(throughIdentity(op.getInput()));
    Value upOut = down ? swigluOf(down.getLhs()) : Value();
    auto up = def<MatMulOp>(upOut);
    Value x, scores, indices, values;
    if (!up || !down.getResult().hasOneUse() || !down.getLhs().hasOneUse() || !up.getResult().hasOneUse() ||
        !scaledCopies(up.getLhs(), x, scores) || !chosenScores(scores, indices, values) ||
        !fusion::isFloatConstant(up.getRhs()) || !fusion::isFloatConstant(down.getRhs()) || !fusion::isFusedFloat(x))
      return failure();
    auto xType = fusion::tensorType(x), wUp = fusion::tensorType(up.getRhs()),
         wDown = fusion::tensorType(down.getRhs());
    const int64_t experts = fusion::tensorType(scores).getDimSize(1), hidden = xType.getDimSize(1);
    if (!wUp.hasStaticShape() || !wDown.hasStaticShape() || wUp.getRank() != 3 || wDown.getRank() != 3 ||
        wUp.getDimSize(0) != experts || wDown.getDimSize(0) != experts || wUp.getDimSize(1) != hidden ||
        wDown.getDimSize(2) != hidden || wUp.getDimSize(2) != 2 * wDown.getDimSize(1))
      return failure();

    Location loc = op.getLoc();
    Operation *before = op->getPrevNode();
    auto axes = [&](int64_t axis) { return rewriter.getNamedAttr("axes", rewriter.getDenseI64ArrayAttr({axis})); };
    auto turned = [&](Value w) {
      ElementsAttr values = turnedExperts(w, transposed);
      return ConstantOp::create(rewriter, loc, cast<RankedTensorType>(values.getType()), values).getResult();
    };
    const int64_t k = fusion::tensorType(indices).getDimSize(1);
    Value scale = fusion::createValue(rewriter, loc, "llmc.sigmoid", {values});
    Value column = scale ? fusion::createValue(rewriter, loc, "llmc.unsqueeze", {scale}, {axes(2)}) : Value();
    Value row = fusion::createValue(rewriter, loc, "llmc.unsqueeze", {x}, {axes(1)});
    Value scaled = column && row ? fusion::createValue(rewriter, loc, "llmc.mul", {row, column}) : Value();
    Value rows = scaled ? fusion::createValue(rewriter, loc, "llmc.reshape",
                                              {scaled, fusion::i64Constant(rewriter, loc, {-1, hidden})})
                        : Value();
    Value ids =
        fusion::createValue(rewriter, loc, "llmc.reshape", {indices, fusion::i64Constant(rewriter, loc, {-1, 1})});
    Value gated = rows && ids
                      ? fusion::createValue(rewriter, loc, "llmc.expert_linear", {rows, turned(up.getRhs()), ids},
                                            {rewriter.getNamedAttr("activation", rewriter.getStringAttr("swiglu"))})
                      : Value();
    Value result =
        gated ? fusion::createValue(rewriter, loc, "llmc.expert_linear", {gated, turned(down.getRhs()), ids}) : Value();
    if (result && k > 1) { // each token's k rows summed
      Value perToken = fusion::createValue(rewriter, loc, "llmc.reshape",
                                           {result, fusion::i64Constant(rewriter, loc, {-1, k, hidden})});
      result = perToken
                   ? fusion::createValue(rewriter, loc, "llmc.reduce_sum", {perToken},
                                         {axes(1), rewriter.getNamedAttr("keepdims", rewriter.getI64IntegerAttr(0))})
                   : Value();
    }
    if (!result || result.getType() != op.getType())
      return fusion::abandonBuilt(rewriter, op, before);
    rewriter.replaceOp(op, result);
    ++count;
    return success();
  }
};

} // namespace

void addDenseExpertPatterns(RewritePatternSet &patterns, RewriteCounter &count, TransposedWeights &transposed) {
  patterns.add<DenseExpertsToExpertLinear>(patterns.getContext(), count, transposed);
}

} // namespace llmc
