#include "MaskElements.h"
#include "PatternUtil.h"

#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

namespace llmc::mask {

using namespace mlir;

namespace {

DimExpr times(int64_t c, const DimExpr &e) { return DimExpr::constant(c) * e; }

Affine plus(const Affine &a, const Affine &b, int64_t sign) {
  Affine out = a;
  for (size_t d = 0; d < out.coef.size(); ++d)
    out.coef[d] += sign * b.coef[d];
  out.offset = out.offset + times(sign, b.offset);
  return out;
}

bool isBool(Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isInteger(1); }

bool isInteger(Value v) {
  Type t = cast<RankedTensorType>(v.getType()).getElementType();
  return t.isInteger() && !t.isInteger(1);
}

// The integer or bool value of every element of a splat constant.
std::optional<int64_t> splatInteger(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.getElementType().isInteger() || attr.getNumElements() < 1 ||
      (!attr.isSplat() && attr.getNumElements() != 1))
    return std::nullopt;
  return attr.getSplatValue<APInt>().getSExtValue();
}

// m where the bool `b` is its negation: not(m), or where(m, 0, c) with c non-zero cast to a bool
// (an additive mask turned back into the scores it hides, as MPT's masked_fill takes it).
Value negated(Value b) {
  Operation *op = b.getDefiningOp();
  if (auto n = dyn_cast_or_null<NotOp>(op))
    return n.getInput();
  auto c = dyn_cast_or_null<CastOp>(op);
  auto where = c && isBool(b) ? c.getInput().getDefiningOp<WhereOp>() : WhereOp();
  if (!where || !isBool(where.getCondition()) || !fusion::isScalar(where.getX(), 0.0))
    return {};
  auto hidden = fusion::scalarValue(where.getY());
  return hidden && *hidden != 0.0 ? where.getCondition() : Value();
}

// `lhs <op> rhs` as `diff <= 0`, integers compared.
std::optional<Affine> comparison(Operation *op, const Affine &lhs, const Affine &rhs) {
  Affine one = Affine::constant(lhs.coef.size(), DimExpr::constant(1));
  if (isa<LessEqualOp>(op))
    return plus(lhs, rhs, -1);
  if (isa<LessOp>(op))
    return plus(plus(lhs, rhs, -1), one, 1);
  if (isa<GreaterEqualOp>(op))
    return plus(rhs, lhs, -1);
  if (isa<GreaterOp>(op))
    return plus(plus(rhs, lhs, -1), one, 1);
  return std::nullopt;
}

bool isComparison(Operation *op) { return isa<LessEqualOp, LessOp, GreaterEqualOp, GreaterOp>(op); }

// A constant bool tensor [1, ..., 1, N, M] that keeps element (i, j) exactly where
// lo <= j - i <= hi (a band about the diagonal: GPT-Neo's causal buffer, tril(ones), and its
// local one, a band of `window` keys): those bounds as atoms over its index, j - i - hi <= 0 and
// i - j + lo <= 0, each left out where no element of the constant reaches it. None where the
// constant is not such a band, or keeps nothing.
std::optional<Conjunction> bandOf(Value v) {
  auto constant = fusion::def<ConstantOp>(v);
  auto type = cast<RankedTensorType>(v.getType());
  const int64_t rank = type.getRank();
  if (!constant || rank < 2 || !type.hasStaticShape() ||
      llvm::any_of(type.getShape().drop_back(2), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  std::vector<char> storage;
  auto bytes = elementsBytes(constant.getValue(), storage);
  const int64_t n = type.getDimSize(rank - 2), m = type.getDimSize(rank - 1);
  if (failed(bytes) || int64_t(bytes->size()) != n * m)
    return std::nullopt;
  int64_t lo = m, hi = -n;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      if ((*bytes)[size_t(i * m + j)]) {
        lo = std::min(lo, j - i);
        hi = std::max(hi, j - i);
      }
  if (lo > hi)
    return std::nullopt;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      if (bool((*bytes)[size_t(i * m + j)]) != (lo <= j - i && j - i <= hi))
        return std::nullopt;
  const size_t r = size_t(rank);
  const Affine diagonal = plus(Affine::index(r, r - 1), Affine::index(r, r - 2), -1); // j - i
  Conjunction band;
  if (hi < m - 1) // j - i - hi <= 0
    band.atoms.push_back({plus(diagonal, Affine::constant(r, DimExpr::constant(hi)), -1), {}, {}});
  if (lo > -(n - 1)) // lo - (j - i) <= 0
    band.atoms.push_back({plus(Affine::constant(r, DimExpr::constant(lo)), diagonal, -1), {}, {}});
  return band;
}

void append(Conjunction &to, const Conjunction &from) { to.atoms.insert(to.atoms.end(), from.atoms.begin(), from.atoms.end()); }

} // namespace

Affine compose(const Affine &f, const IndexMap &map, size_t outerRank) {
  Affine out = Affine::constant(outerRank, f.offset);
  for (size_t d = 0; d < f.coef.size(); ++d) {
    if (!f.coef[d])
      continue;
    out.offset = out.offset + times(f.coef[d], map[d].offset);
    for (size_t e = 0; e < outerRank; ++e)
      out.coef[e] += f.coef[d] * map[d].coef[e];
  }
  return out;
}

Conjunction compose(const Conjunction &c, const IndexMap &map, size_t outerRank) {
  Conjunction out;
  for (const Atom &atom : c.atoms) {
    Atom next;
    next.source = atom.source;
    if (atom.source)
      for (const Affine &i : atom.index)
        next.index.push_back(compose(i, map, outerRank));
    else
      next.diff = compose(atom.diff, map, outerRank);
    out.atoms.push_back(std::move(next));
  }
  return out;
}

std::optional<IndexMap> MaskElements::broadcastMap(Value inner, Value outer) const {
  const auto &in = dims(inner), &out = dims(outer);
  if (in.size() > out.size())
    return std::nullopt;
  IndexMap map;
  for (size_t d = 0; d < in.size(); ++d) {
    const size_t e = d + out.size() - in.size();
    if (in[d].asConstant() == 1)
      map.push_back(Affine::constant(out.size(), DimExpr::constant(0)));
    else if (in[d] == out[e])
      map.push_back(Affine::index(out.size(), e));
    else
      return std::nullopt;
  }
  return map;
}

// A reshape that only inserts or removes dimensions of 1 (unsqueeze, squeeze, or a reshape that
// does no more): the other dimensions keep their order.
std::optional<IndexMap> MaskElements::unitReshapeMap(Value inner, Value outer) const {
  const auto &in = dims(inner), &out = dims(outer);
  std::vector<size_t> kept; // the dimensions of `outer` that are not 1
  for (size_t e = 0; e < out.size(); ++e)
    if (out[e].asConstant() != 1)
      kept.push_back(e);
  IndexMap map;
  size_t next = 0;
  for (const DimExpr &dim : in) {
    if (dim.asConstant() == 1) {
      map.push_back(Affine::constant(out.size(), DimExpr::constant(0)));
      continue;
    }
    if (next == kept.size() || out[kept[next]] != dim)
      return std::nullopt;
    map.push_back(Affine::index(out.size(), kept[next++]));
  }
  if (next != kept.size())
    return std::nullopt;
  return map;
}

// Ops that move elements without changing them, result `v`: where each element of their input
// is read from (a cast between integer types, or to bool, keeps the index too).
std::optional<IndexMap> MaskElements::movementMap(Operation *op, Value v) const {
  if (isa<ExpandOp>(op))
    return broadcastMap(op->getOperand(0), v);
  if (isa<UnsqueezeOp, SqueezeOp, ReshapeOp, CastOp>(op))
    return unitReshapeMap(op->getOperand(0), v);
  if (isa<SliceOp, DynamicSliceOp>(op))
    return sliceMap(op, v);
  return std::nullopt;
}

// A slice with positive steps whose starts are known (constants, or a dynamic_slice's starts
// from shapes): element x of the result is element start + step * x of the input along each
// sliced axis. The start must lie within the input for every size up to the bounds (then it
// is the start ONNX's clamping gives).
std::optional<IndexMap> MaskElements::sliceMap(Operation *op, Value v) const {
  const auto &in = dims(op->getOperand(0));
  const size_t rank = in.size();
  std::vector<DimExpr> starts;
  if (auto slice = dyn_cast<SliceOp>(op)) {
    for (int64_t s : slice.getStarts())
      starts.push_back(DimExpr::constant(s));
  } else {
    const auto &known = shapes_.shape(op->getOperand(1)).contents;
    if (!known)
      return std::nullopt;
    starts = *known;
  }
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes"), steps = op->getAttrOfType<DenseI64ArrayAttr>("steps");
  if (!axes || !steps || axes.size() != int64_t(starts.size()) || steps.size() != axes.size() || dims(v).size() != rank)
    return std::nullopt;
  IndexMap map;
  for (size_t d = 0; d < rank; ++d)
    map.push_back(Affine::index(rank, d));
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + int64_t(rank) : axes[i];
    if (axis < 0 || axis >= int64_t(rank) || steps[i] <= 0)
      return std::nullopt;
    const DimExpr &dim = in[size_t(axis)];
    auto c = starts[i].asConstant();
    const DimExpr start = c && *c < 0 ? dim + starts[i] : starts[i];
    if (shapes_.atoms().range(start).lo < 0 || shapes_.atoms().range(dim - start).lo < 0)
      return std::nullopt;
    map[size_t(axis)].coef[size_t(axis)] = steps[i];
    map[size_t(axis)].offset = start;
  }
  return map;
}

// A concatenation of affine pieces that are one affine function of the result's index: each
// piece's values, read at its offset along the axis, agree with it (a piece one element long
// only at that element: transformers' "previous position", x - 1, starts with a lone -1).
std::optional<Affine> MaskElements::concatOf(Operation *op, Value v) const {
  auto concat = cast<ConcatOp>(op);
  const size_t rank = dims(v).size();
  const int64_t given = int64_t(concat.getAxis()); // (an I64Attr's getter is unsigned)
  const int64_t axis = given < 0 ? given + int64_t(rank) : given;
  if (axis < 0 || axis >= int64_t(rank))
    return std::nullopt;
  // Each piece in the result's index: piece p holds result index x at x - offset_p on the axis.
  std::vector<Affine> pieces;
  std::vector<bool> single;
  DimExpr offset = DimExpr::constant(0);
  for (Value input : concat.getInputs()) {
    auto a = affineOf(input);
    if (!a || dims(input).size() != rank)
      return std::nullopt;
    IndexMap shift;
    for (size_t d = 0; d < rank; ++d)
      shift.push_back(Affine::index(rank, d));
    shift[size_t(axis)].offset = DimExpr::constant(0) - offset;
    pieces.push_back(compose(*a, shift, rank));
    single.push_back(dims(input)[size_t(axis)].asConstant() == 1);
    offset = offset + dims(input)[size_t(axis)];
  }
  // The function: that of a piece longer than one element, all of them the same.
  std::optional<Affine> f;
  for (size_t p = 0; p < pieces.size(); ++p)
    if (!single[p]) {
      if (f && !(*f == pieces[p]))
        return std::nullopt;
      f = pieces[p];
    }
  if (!f)
    return std::nullopt;
  // A piece of one element agrees at its element: the coefficients off the axis the same, the
  // values at its offset equal.
  offset = DimExpr::constant(0);
  for (size_t p = 0; p < pieces.size(); ++p) {
    if (single[p]) {
      Affine diff = plus(*f, pieces[p], -1);
      const int64_t along = diff.coef[size_t(axis)];
      diff.coef[size_t(axis)] = 0;
      diff.offset = diff.offset + times(along, offset);
      if (!(diff == Affine::constant(rank, DimExpr::constant(0))))
        return std::nullopt;
    }
    offset = offset + dims(concat.getInputs()[p])[size_t(axis)];
  }
  return f;
}

// The cumulative sum of a constant c along an axis of length n: c * (x + 1) forward, c * x
// exclusive, c * (n - x) and c * (n - 1 - x) in reverse.
std::optional<Affine> MaskElements::cumSumOf(Operation *op, Value v) const {
  auto cumsum = cast<CumSumOp>(op);
  auto in = affineOf(cumsum.getInput());
  auto axisValue = affineOf(cumsum.getAxis());
  const size_t rank = dims(v).size();
  if (!in || !axisValue || llvm::any_of(in->coef, [](int64_t c) { return c != 0; }))
    return std::nullopt;
  auto axisConstant = axisValue->offset.asConstant();
  auto c = in->offset.asConstant();
  if (!axisConstant || !c)
    return std::nullopt;
  const int64_t axis = *axisConstant < 0 ? *axisConstant + int64_t(rank) : *axisConstant;
  if (axis < 0 || axis >= int64_t(rank))
    return std::nullopt;
  const DimExpr n = dims(v)[size_t(axis)];
  const bool exclusive = cumsum.getExclusive() != 0, reverse = cumsum.getReverse() != 0;
  Affine out = Affine::constant(rank, DimExpr::constant(0));
  out.coef[size_t(axis)] = reverse ? -*c : *c;
  const DimExpr count = reverse ? n - DimExpr::constant(exclusive ? 1 : 0) : DimExpr::constant(exclusive ? 0 : 1);
  out.offset = times(*c, count);
  return out;
}

// The index map of a gather_nd (batch_dims 0) whose index tuples are known: every tuple names
// one element of the data, and the result has the tuples' dimensions.
std::optional<IndexMap> MaskElements::gatherMap(Operation *op) const {
  auto gather = cast<GatherNdOp>(op);
  auto tuple = tupleOf(gather.getIndices());
  if (gather.getBatchDims() != 0 || !tuple || tuple->size() != dims(gather.getData()).size() ||
      dims(gather.getIndices()).size() != dims(gather.getResult()).size() + 1)
    return std::nullopt;
  return tuple;
}

// a - b for `equal(a, b)` of affine integers, in the index of its result v.
std::optional<Affine> MaskElements::differenceOf(Operation *op, Value v) const {
  if (!isa<EqualOp>(op) || !isInteger(op->getOperand(0)))
    return std::nullopt;
  auto a = affineOf(op->getOperand(0)), b = affineOf(op->getOperand(1));
  auto amap = broadcastMap(op->getOperand(0), v), bmap = broadcastMap(op->getOperand(1), v);
  if (!a || !b || !amap || !bmap)
    return std::nullopt;
  const size_t rank = dims(v).size();
  return plus(compose(*a, *amap, rank), compose(*b, *bmap, rank), -1);
}

std::optional<bool> MaskElements::constantTruth(Value v) const {
  if (!isBool(v))
    return std::nullopt;
  if (auto c = splatInteger(v))
    return *c != 0;
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto filled = dyn_cast<ConstantOfShapeOp>(op))
    return filled.getValue().convertToDouble() != 0.0;
  if (auto neg = dyn_cast<NotOp>(op)) {
    auto t = constantTruth(neg.getInput());
    return t ? std::optional<bool>(!*t) : std::nullopt;
  }
  if (auto diff = differenceOf(op, v)) {
    auto c = diff->offset.asConstant();
    if (!c || llvm::any_of(diff->coef, [](int64_t k) { return k != 0; }))
      return std::nullopt;
    return *c == 0;
  }
  if (auto map = movementMap(op, v); map && isBool(op->getOperand(0)))
    return constantTruth(op->getOperand(0));
  return std::nullopt;
}

std::optional<Affine> MaskElements::affineOf(Value v) const {
  if (!isInteger(v))
    return std::nullopt;
  const size_t rank = dims(v).size();
  const ValueShape &shape = shapes_.shape(v);
  if (shape.contents && !shape.contents->empty()) {
    bool equal = true;
    for (const DimExpr &e : *shape.contents)
      equal &= e == shape.contents->front();
    if (equal)
      return Affine::constant(rank, shape.contents->front());
  }
  if (auto c = splatInteger(v))
    return Affine::constant(rank, DimExpr::constant(*c));
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto range = dyn_cast<RangeOp>(op)) {
    auto start = affineOf(range.getStart());
    auto delta = affineOf(range.getDelta());
    if (!start || !delta || rank != 1)
      return std::nullopt;
    auto step = delta->offset.asConstant();
    for (int64_t c : start->coef)
      if (c)
        return std::nullopt;
    for (int64_t c : delta->coef)
      if (c)
        return std::nullopt;
    if (!step)
      return std::nullopt;
    Affine out = Affine::constant(1, start->offset);
    out.coef[0] = *step;
    return out;
  }
  if (isa<AddOp, SubOp>(op)) {
    auto lhs = affineOf(op->getOperand(0)), rhs = affineOf(op->getOperand(1));
    auto lmap = broadcastMap(op->getOperand(0), v), rmap = broadcastMap(op->getOperand(1), v);
    if (!lhs || !rhs || !lmap || !rmap)
      return std::nullopt;
    return plus(compose(*lhs, *lmap, rank), compose(*rhs, *rmap, rank), isa<AddOp>(op) ? 1 : -1);
  }
  if (auto c = dyn_cast<CastOp>(op); c && isBool(c.getInput())) { // a bool the same everywhere: 0 or 1
    auto t = constantTruth(c.getInput());
    return t ? std::optional<Affine>(Affine::constant(rank, DimExpr::constant(*t ? 1 : 0))) : std::nullopt;
  }
  if (isa<CastOp>(op) && cast<RankedTensorType>(v.getType()).getElementType().getIntOrFloatBitWidth() < 32)
    return std::nullopt; // positions may not fit: the cast is no longer the identity
  if (isa<ConcatOp>(op))
    return concatOf(op, v);
  if (isa<CumSumOp>(op))
    return cumSumOf(op, v);
  if (auto gather = dyn_cast<GatherNdOp>(op)) {
    auto data = affineOf(gather.getData());
    auto tuple = gatherMap(gather);
    return data && tuple ? std::optional<Affine>(compose(*data, *tuple, rank)) : std::nullopt;
  }
  if (auto map = movementMap(op, v)) {
    auto inner = affineOf(op->getOperand(0));
    return inner ? std::optional<Affine>(compose(*inner, *map, rank)) : std::nullopt;
  }
  return std::nullopt;
}

// The index tuples of a gather_nd: components concatenated along the last axis, each over the
// dimensions before it.
std::optional<std::vector<Affine>> MaskElements::tupleOf(Value indices) const {
  auto concat = indices.getDefiningOp<ConcatOp>();
  const size_t rank = dims(indices).size();
  if (!concat || rank == 0 || (concat.getAxis() != -1 && concat.getAxis() != int64_t(rank) - 1))
    return std::nullopt;
  std::vector<Affine> components;
  for (Value piece : concat.getInputs()) {
    auto a = affineOf(piece);
    if (!a || dims(piece).back().asConstant() != 1)
      return std::nullopt;
    IndexMap map;
    for (size_t d = 0; d + 1 < rank; ++d)
      map.push_back(Affine::index(rank - 1, d));
    map.push_back(Affine::constant(rank - 1, DimExpr::constant(0)));
    components.push_back(compose(*a, map, rank - 1));
  }
  return components;
}

// A graph input read at each index, through reshapes that only add or drop dimensions of 1.
std::optional<Conjunction> MaskElements::readOf(Value v) const {
  if (auto arg = dyn_cast<BlockArgument>(v); arg && isa<func::FuncOp>(arg.getOwner()->getParentOp())) {
    Atom atom;
    atom.source = v;
    for (size_t d = 0; d < dims(v).size(); ++d)
      atom.index.push_back(Affine::index(dims(v).size(), d));
    return Conjunction{{atom}};
  }
  Operation *op = v.getDefiningOp();
  auto map = op && !isa<ExpandOp, CastOp>(op) ? movementMap(op, v) : std::nullopt;
  if (!map)
    return std::nullopt;
  auto inner = readOf(op->getOperand(0));
  return inner ? std::optional<Conjunction>(compose(*inner, *map, dims(v).size())) : std::nullopt;
}

std::optional<Conjunction> MaskElements::conjunctionOf(Value v) const {
  if (!isBool(v))
    return std::nullopt;
  const size_t rank = dims(v).size();
  if (auto c = splatInteger(v))
    return *c ? std::optional<Conjunction>(Conjunction{}) : std::nullopt;
  if (isa<BlockArgument>(v))
    return readOf(v);
  Operation *op = v.getDefiningOp();
  if (auto n = dyn_cast<NotOp>(op)) { // (a negated conjunction is not one, but a double negation is)
    if (Value m = negated(n.getInput()))
      return conjunctionOf(m);
    return constantTruth(v) == true ? std::optional<Conjunction>(Conjunction{}) : std::nullopt;
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return isBool(cast.getInput()) ? conjunctionOf(cast.getInput()) : readOf(cast.getInput());
  if (isa<AndOp>(op) || isComparison(op)) {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    auto lmap = broadcastMap(lhs, v), rmap = broadcastMap(rhs, v);
    if (!lmap || !rmap)
      return std::nullopt;
    if (isa<AndOp>(op)) {
      auto a = conjunctionOf(lhs), b = conjunctionOf(rhs);
      if (!a || !b)
        return std::nullopt;
      Conjunction out = compose(*a, *lmap, rank);
      append(out, compose(*b, *rmap, rank));
      return out;
    }
    auto a = affineOf(lhs), b = affineOf(rhs);
    if (!a || !b)
      return std::nullopt;
    Atom atom;
    atom.diff = *comparison(op, compose(*a, *lmap, rank), compose(*b, *rmap, rank));
    return Conjunction{{atom}};
  }
  if (auto map = movementMap(op, v)) {
    auto inner = conjunctionOf(op->getOperand(0));
    return inner ? std::optional<Conjunction>(compose(*inner, *map, rank)) : std::nullopt;
  }
  if (auto gather = dyn_cast<GatherNdOp>(op)) {
    auto data = conjunctionOf(gather.getData());
    auto tuple = gatherMap(gather);
    return data && tuple ? std::optional<Conjunction>(compose(*data, *tuple, rank)) : std::nullopt;
  }
  if (auto diff = differenceOf(op, v)) { // a == b: a - b <= 0 and b - a <= 0
    Atom below, above;
    below.diff = *diff;
    above.diff = plus(Affine::constant(rank, DimExpr::constant(0)), *diff, -1);
    return Conjunction{{below, above}};
  }
  if (isa<FusedElementwiseOp>(op))
    return regionResult(op);
  if (auto band = bandOf(v))
    return band;
  if (constantTruth(v) == true)
    return Conjunction{};
  return std::nullopt;
}

// A fused_elementwise's result: its region's `and`s, comparisons and constants over the
// operands, each broadcast to the result.
std::optional<Conjunction> MaskElements::regionResult(Operation *fused) const {
  if (fused->getNumResults() != 1)
    return std::nullopt;
  Value result = fused->getResult(0);
  const size_t rank = dims(result).size();
  Block &body = fused->getRegion(0).front();
  llvm::DenseMap<Value, Conjunction> bools;
  llvm::DenseMap<Value, Affine> integers;
  for (auto [arg, operand] : llvm::zip(body.getArguments(), fused->getOperands())) {
    auto map = broadcastMap(operand, result);
    if (!map)
      return std::nullopt;
    if (isBool(operand)) {
      if (auto c = conjunctionOf(operand))
        bools[arg] = compose(*c, *map, rank);
    } else if (auto a = affineOf(operand)) {
      integers[arg] = compose(*a, *map, rank);
    }
  }
  for (Operation &op : body) {
    if (auto yield = dyn_cast<YieldOp>(op)) {
      auto it = bools.find(yield.getValues()[0]);
      return it == bools.end() ? std::nullopt : std::optional<Conjunction>(it->second);
    }
    Value out = op.getResult(0);
    if (auto c = splatInteger(out)) {
      if (isBool(out) && *c)
        bools[out] = Conjunction{};
      else if (!isBool(out))
        integers[out] = Affine::constant(rank, DimExpr::constant(*c));
      continue;
    }
    if (isa<AndOp>(op) && bools.count(op.getOperand(0)) && bools.count(op.getOperand(1))) {
      Conjunction c = bools[op.getOperand(0)];
      append(c, bools[op.getOperand(1)]);
      bools[out] = c;
      continue;
    }
    if (isComparison(&op) && integers.count(op.getOperand(0)) && integers.count(op.getOperand(1))) {
      Atom atom;
      atom.diff = *comparison(&op, integers.find(op.getOperand(0))->second, integers.find(op.getOperand(1))->second);
      bools[out] = Conjunction{{atom}};
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace llmc::mask
