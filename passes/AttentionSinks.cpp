#include "AttentionSinks.h"

#include "PatternUtil.h"

#include "mlir/IR/Matchers.h"

namespace llmc {

using namespace mlir;
using fusion::def;

namespace {

// x where `v` is x less its row max (reduce_max over the last axis, kept), which a softmax of v
// takes anyway, and nothing else reads x; else v.
Value unshifted(Value v) {
  auto sub = def<SubOp>(v);
  auto max = sub ? def<ReduceMaxOp>(sub.getRhs()) : ReduceMaxOp();
  if (!max || max.getInput() != sub.getLhs() || !fusion::reducesLastAxisKeepingIt(max) ||
      !llvm::all_of(sub.getLhs().getUsers(), [&](Operation *u) { return u == sub || u == max; }))
    return v;
  return sub.getLhs();
}

} // namespace

std::optional<SinkColumn> sinkColumn(SoftmaxOp softmax) {
  auto concat = def<ConcatOp>(unshifted(softmax.getInput()));
  // (The scores may also be read for their shape: the sink column's, as llmc-raise-attention's
  // sinksOfScaledOutputs builds it.)
  if (!concat || concat.getInputs().size() != 2 || !fusion::isAxis(concat.getAxis(), 3, 4) ||
      !llvm::all_of(concat.getInputs()[0].getUsers(), [&](Operation *u) { return u == concat || isa<ShapeOp>(u); }) ||
      !softmax.getResult().hasOneUse())
    return std::nullopt;
  auto column = fusion::tensorType(concat.getInputs()[1]), scores = fusion::tensorType(concat.getInputs()[0]);
  auto keys = dyn_cast<SliceOp>(*softmax.getResult().getUsers().begin());
  if (column.getRank() != 4 || column.getDimSize(3) != 1 || !keys || keys.getAxes().size() != 1 ||
      !fusion::isAxis(keys.getAxes()[0], 3, 4) || keys.getStarts()[0] != 0 || keys.getSteps()[0] != 1 ||
      keys.getResult().getType() != scores ||
      !(keys.getEnds()[0] == -1 || (!scores.isDynamicDim(3) && keys.getEnds()[0] == scores.getDimSize(3))))
    return std::nullopt;
  return SinkColumn{concat.getInputs()[0], concat.getInputs()[1], keys};
}

SoftmaxOp softmaxWithSinksOf(Value scores) {
  ConcatOp concat;
  for (Operation *user : scores.getUsers()) {
    if (isa<ShapeOp>(user))
      continue;
    if (concat || !isa<ConcatOp>(user))
      return {};
    concat = cast<ConcatOp>(user);
  }
  if (!concat)
    return {};
  // The softmax reads the concatenation, or it less its row max (sinkColumn checks the rest).
  Operation *reader = nullptr;
  for (Operation *user : concat.getResult().getUsers())
    if (isa<SoftmaxOp, SubOp>(user))
      reader = user;
  if (auto sub = dyn_cast_or_null<SubOp>(reader))
    reader = sub.getResult().hasOneUse() ? *sub.getResult().getUsers().begin() : nullptr;
  auto softmax = dyn_cast_or_null<SoftmaxOp>(reader);
  auto sinks = softmax ? sinkColumn(softmax) : std::nullopt;
  return sinks && sinks->scores == scores ? softmax : SoftmaxOp();
}

Value sinksPerHead(OpBuilder &b, Location loc, Value column, int64_t heads, bool build) {
  if (auto expand = def<ExpandOp>(column))
    column = expand.getInput();
  auto type = fusion::tensorType(column);
  if (!type.hasStaticShape() || type.getRank() != 4 || type.getDimSize(1) != heads || type.getDimSize(3) != 1)
    return {};
  if (type.getDimSize(0) == 1 && type.getDimSize(2) == 1)
    return build ? fusion::createValue(b, loc, "llmc.reshape", {column, fusion::i64Constant(b, loc, {heads})}) : column;
  DenseElementsAttr attr;
  if (!matchPattern(column, m_Constant(&attr)) || !isa<FloatType>(attr.getElementType()))
    return {};
  // [B, H, Sq, 1]: element (b, h, i) at (b * H + h) * Sq + i must equal (0, h, 0)'s.
  const int64_t rows = type.getDimSize(2);
  auto values = attr.getValues<APFloat>();
  SmallVector<APFloat> perHead;
  for (int64_t h = 0; h < heads; ++h)
    perHead.push_back(values[h * rows]);
  for (int64_t e = 0; e < type.getNumElements(); ++e)
    if (!values[e].bitwiseIsEqual(perHead[(e / rows) % heads]))
      return {};
  if (!build)
    return column;
  auto result = RankedTensorType::get({heads}, attr.getElementType());
  return ConstantOp::create(b, loc, result, DenseElementsAttr::get(result, perHead));
}

} // namespace llmc
