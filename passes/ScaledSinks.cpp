// Attention sinks applied as a scale of the attention's output (transformers' Granite SWA:
// eager_attention_forward of modeling_granite_swa), rewritten into GPT-OSS's form, which
// llmc-raise-attention raises with the fused attention's `sinks`:
//   lse = log(reduce_sum(exp(S - reduce_max(S, kept)))) + reduce_max(S)     (torch.logsumexp)
//   out = matmul(softmax(S), V) * unsqueeze(sigmoid(lse - sinks), -1)
// Since sigmoid(lse - sink) = Σexp(S) / (Σexp(S) + exp(sink)), out is
//   matmul(slice(softmax(concat(S, sink column)), keys), V)
// with the sink column one logit per head broadcast to [B, H, Sq, 1].
#include "ScaledSinks.h"

#include "PatternUtil.h"

namespace llmc {

using namespace mlir;
using fusion::def;

namespace {

// Whether `lse` is torch.logsumexp of S over its last axis as the export writes it:
// log(reduce_sum(exp(S - reduce_max(S, kept)))) + reduce_max(S), the sums and the added max
// without the axis. The ops of the chain are appended to `chain`.
bool isLogSumExp(Value lse, Value s, SmallVectorImpl<Operation *> &chain) {
  auto add = def<AddOp>(lse);
  if (!add)
    return false;
  for (int i = 0; i < 2; ++i) {
    auto log = def<LogOp>(add->getOperand(i));
    auto max = def<ReduceMaxOp>(add->getOperand(1 - i));
    auto sum = log ? def<ReduceSumOp>(log.getInput()) : ReduceSumOp();
    auto exp = sum ? def<ExpOp>(sum.getInput()) : ExpOp();
    auto shifted = exp ? def<SubOp>(exp.getInput()) : SubOp();
    auto rowMax = shifted ? def<ReduceMaxOp>(shifted.getRhs()) : ReduceMaxOp();
    if (!max || !rowMax || max.getInput() != s || shifted.getLhs() != s || rowMax.getInput() != s ||
        !fusion::reducesLastAxis(max, false) || !fusion::reducesLastAxis(sum, false) ||
        !fusion::reducesLastAxisKeepingIt(rowMax))
      continue;
    chain.append({add, log, sum, exp, shifted, rowMax, max});
    return true;
  }
  return false;
}

// The sinks [1, H, 1] (or [H, 1]) of `lse - sinks`, H static and the scores' heads; null otherwise.
Value sinksOf(SubOp sub, int64_t heads) {
  auto type = fusion::tensorType(sub.getRhs());
  ArrayRef<int64_t> dims = type.getShape();
  const bool perHead = (dims.size() == 3 && dims[0] == 1 && dims[1] == heads && dims[2] == 1) ||
                       (dims.size() == 2 && dims[0] == heads && dims[1] == 1);
  return perHead && heads > 0 ? sub.getRhs() : Value();
}

// Rewrites one scaled output `mul` where it is of the form above; returns whether it did.
bool rewriteScaledOutput(MulOp mul) {
  for (int i = 0; i < 2; ++i) {
    auto pv = def<MatMulOp>(mul->getOperand(i));
    auto column = def<UnsqueezeOp>(mul->getOperand(1 - i));
    auto softmax = pv ? def<SoftmaxOp>(pv.getLhs()) : SoftmaxOp();
    auto sigmoid = column ? def<SigmoidOp>(column.getInput()) : SigmoidOp();
    auto sub = sigmoid ? def<SubOp>(sigmoid.getInput()) : SubOp();
    if (!softmax || !sub || !pv.getResult().hasOneUse() || !softmax.getResult().hasOneUse() ||
        !column.getResult().hasOneUse() || !sigmoid.getResult().hasOneUse() || !sub.getResult().hasOneUse() ||
        column.getAxes().size() != 1 || !fusion::isAxis(column.getAxes()[0], 3, 4))
      continue;
    Value s = softmax.getInput();
    auto scores = fusion::tensorType(s);
    SmallVector<Operation *> chain;
    if (scores.getRank() != 4 || !fusion::isAxis(softmax.getAxis(), 3, 4) || scores.isDynamicDim(1) ||
        !fusion::isFusedFloat(s) || !isLogSumExp(sub.getLhs(), s, chain) || !sub.getLhs().hasOneUse())
      continue;
    Value sinks = sinksOf(sub, scores.getDimSize(1));
    if (!sinks || fusion::tensorType(sinks).getElementType() != scores.getElementType())
      continue;
    // The sink column [B, H, Sq, 1]: the sinks as [1, H, 1, 1] expanded to the scores' first
    // three dimensions.
    OpBuilder b(mul);
    Location loc = mul.getLoc();
    const int64_t heads = scores.getDimSize(1);
    Value perHead = fusion::createValue(b, loc, "llmc.reshape", {sinks, fusion::i64Constant(b, loc, {1, heads, 1, 1})});
    Value rows = fusion::createValue(
        b, loc, "llmc.shape", {s},
        {b.getNamedAttr("start", b.getI64IntegerAttr(0)), b.getNamedAttr("end", b.getI64IntegerAttr(3))});
    Value target = rows ? fusion::createValue(b, loc, "llmc.concat", {rows, fusion::i64Constant(b, loc, {1})},
                                              {b.getNamedAttr("axis", b.getI64IntegerAttr(0))})
                        : Value();
    // (Typed here: inference cannot read the target's contents.)
    auto columnType =
        RankedTensorType::get({scores.getDimSize(0), heads, scores.getDimSize(2), 1}, scores.getElementType());
    Value sinkColumn = perHead && target ? ExpandOp::create(b, loc, columnType, perHead, target).getResult() : Value();
    Value withSinks = sinkColumn ? fusion::createValue(b, loc, "llmc.concat", {s, sinkColumn},
                                                       {b.getNamedAttr("axis", b.getI64IntegerAttr(3))})
                                 : Value();
    Value probs = withSinks ? fusion::createValue(b, loc, "llmc.softmax", {withSinks},
                                                  {b.getNamedAttr("axis", b.getI64IntegerAttr(-1))})
                            : Value();
    Value keys = probs ? fusion::createValue(b, loc, "llmc.slice", {probs},
                                             {b.getNamedAttr("starts", b.getDenseI64ArrayAttr({0})),
                                              b.getNamedAttr("ends", b.getDenseI64ArrayAttr({-1})),
                                              b.getNamedAttr("axes", b.getDenseI64ArrayAttr({3})),
                                              b.getNamedAttr("steps", b.getDenseI64ArrayAttr({1}))})
                       : Value();
    Value out = keys ? fusion::createValue(b, loc, "llmc.matmul", {keys, pv.getRhs()}) : Value();
    if (!out || out.getType() != mul.getType() || keys.getType() != softmax.getType())
      return false; // (what was built is unused; canonicalization removes it)
    mul.getResult().replaceAllUsesWith(out);
    // The old output and the scale, then the log-sum-exp chain, each once nothing reads it.
    SmallVector<Operation *> dead = {mul, pv, softmax, column, sigmoid, sub};
    dead.append(chain);
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
    return true;
  }
  return false;
}

} // namespace

void sinksOfScaledOutputs(func::FuncOp func) {
  SmallVector<MulOp> muls;
  func.walk([&](MulOp mul) { muls.push_back(mul); });
  for (MulOp mul : muls)
    rewriteScaledOutput(mul);
}

} // namespace llmc
