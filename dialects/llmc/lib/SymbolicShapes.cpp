// Symbolic shape analysis: the rules that give each op's result dimensions (and the contents of
// small integer results) as expressions over the input symbols.
#include "llmc/Dialect/SymbolicShapes.h"

#include "Einsum.h"

#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;

namespace llmc {

// ---------------------------------------------------------------------------------------------
// DimExpr

DimExpr DimExpr::constant(int64_t c) {
  DimExpr e;
  if (c != 0)
    e.terms_[{}] = c;
  return e;
}

DimExpr DimExpr::atom(int id) {
  DimExpr e;
  e.terms_[{id}] = 1;
  return e;
}

std::optional<int64_t> DimExpr::asConstant() const {
  if (terms_.empty())
    return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty())
    return terms_.begin()->second;
  return std::nullopt;
}

DimExpr DimExpr::operator+(const DimExpr &o) const {
  DimExpr r = *this;
  for (const auto &[m, c] : o.terms_)
    if ((r.terms_[m] += c) == 0)
      r.terms_.erase(m);
  return r;
}

DimExpr DimExpr::operator-(const DimExpr &o) const { return *this + o * constant(-1); }

DimExpr DimExpr::operator*(const DimExpr &o) const {
  DimExpr r;
  for (const auto &[m1, c1] : terms_)
    for (const auto &[m2, c2] : o.terms_) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      if ((r.terms_[m] += c1 * c2) == 0)
        r.terms_.erase(m);
    }
  return r;
}

std::optional<DimExpr> DimExpr::divideExactly(const DimExpr &o) const {
  if (o.terms_.size() > 1 && !terms_.empty()) {
    // A divisor of several terms, such as the `past + seq` of a reshape to [B, past + seq, -1,
    // 64] from [B, 1, past + seq, 512]: a quotient of one term, found by dividing the first
    // term by each of the divisor's and checked by multiplying back.
    DimExpr lead;
    lead.terms_.insert(*terms_.begin());
    for (const auto &term : o.terms_) {
      DimExpr single;
      single.terms_.insert(term);
      if (auto q = lead.divideExactly(single); q && *q * o == *this)
        return q;
    }
    return std::nullopt;
  }
  if (o.terms_.size() != 1)
    return std::nullopt;
  const auto &[dm, dc] = *o.terms_.begin();
  DimExpr r;
  for (const auto &[m, c] : terms_) {
    if (c % dc != 0)
      return std::nullopt;
    // Remove the divisor's atoms (a multiset difference) from the term's.
    Monomial rest;
    size_t j = 0;
    for (int a : m) {
      if (j < dm.size() && dm[j] == a)
        ++j;
      else
        rest.push_back(a);
    }
    if (j != dm.size())
      return std::nullopt;
    r.terms_[rest] = c / dc;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// DimAtoms

namespace {
std::string key(const DimExpr &e) {
  std::string s;
  for (const auto &[m, c] : e.terms()) {
    s += std::to_string(c) + "*";
    for (int a : m)
      s += std::to_string(a) + ".";
    s += "+";
  }
  return s;
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
} // namespace

DimAtoms::Range DimAtoms::range(const DimExpr &e) const {
  auto mul = [](Range a, Range b) {
    const __int128 c[4] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo,
                           __int128(a.hi) * b.hi};
    const __int128 lim = __int128(1) << 62;
    return Range{int64_t(std::clamp(*std::min_element(c, c + 4), -lim, lim)),
                 int64_t(std::clamp(*std::max_element(c, c + 4), -lim, lim))};
  };
  Range sum{0, 0};
  for (const auto &[m, c] : e.terms()) {
    Range t{c, c};
    for (int id : m)
      t = mul(t, atomRange(id));
    sum = {sum.lo + t.lo, sum.hi + t.hi};
  }
  return sum;
}

DimAtoms::Range DimAtoms::atomRange(int id) const {
  const Atom &a = atoms_[size_t(id)];
  constexpr int64_t kUnknown = int64_t(1) << 40;
  if (a.isSymbol)
    return {size_t(a.symbol) < symbolMin_.size() ? symbolMin_[size_t(a.symbol)] : 1,
            size_t(a.symbol) < symbolMax_.size() ? symbolMax_[size_t(a.symbol)] : kUnknown};
  const Range x = range(a.lhs), y = range(a.rhs);
  switch (a.op) {
  case DimTermOp::Min: return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
  case DimTermOp::Max: return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
  case DimTermOp::Broadcast: return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
  case DimTermOp::Mod: return {0, std::max<int64_t>(y.hi - 1, 0)};
  default: // divisions: only their sign is used, and that loosely
    return {x.lo >= 0 && y.lo > 0 ? 0 : -kUnknown, kUnknown};
  }
}

DimExpr DimAtoms::symbol(int index) {
  const std::string k = "s" + std::to_string(index);
  auto it = byKey_.find(k);
  if (it != byKey_.end())
    return DimExpr::atom(it->second);
  atoms_.push_back({true, index, DimTermOp::Min, {}, {}});
  byKey_[k] = int(atoms_.size() - 1);
  return DimExpr::atom(int(atoms_.size() - 1));
}

DimExpr DimAtoms::term(DimTermOp op, const DimExpr &lhs, const DimExpr &rhs) {
  auto a = lhs.asConstant(), b = rhs.asConstant();
  if (a && b && (*b != 0 || op == DimTermOp::Min || op == DimTermOp::Max || op == DimTermOp::Broadcast)) {
    switch (op) {
    case DimTermOp::FloorDiv: return DimExpr::constant(floorDiv(*a, *b));
    case DimTermOp::CeilDiv: return DimExpr::constant(-floorDiv(-*a, *b));
    case DimTermOp::Mod: return DimExpr::constant(*a - floorDiv(*a, *b) * *b);
    case DimTermOp::Min: return DimExpr::constant(std::min(*a, *b));
    case DimTermOp::Max: return DimExpr::constant(std::max(*a, *b));
    case DimTermOp::Broadcast: return DimExpr::constant(*a == 1 ? *b : *a);
    }
  }
  switch (op) {
  case DimTermOp::FloorDiv:
  case DimTermOp::CeilDiv:
    if (auto q = lhs.divideExactly(rhs))
      return *q;
    break;
  case DimTermOp::Mod:
    if (lhs.divideExactly(rhs))
      return DimExpr::constant(0);
    break;
  case DimTermOp::Min:
  case DimTermOp::Max: {
    if (lhs == rhs)
      return lhs;
    // Decide by the range of the difference that the symbols' bounds give (terms common to both
    // sides cancel first: min(seq, seq + 1) is seq).
    const Range d = range(lhs - rhs);
    if (d.hi <= 0)
      return op == DimTermOp::Min ? lhs : rhs;
    if (d.lo >= 0)
      return op == DimTermOp::Min ? rhs : lhs;
    break;
  }
  case DimTermOp::Broadcast:
    if (a == 1 || lhs == rhs)
      return rhs;
    if (b == 1)
      return lhs;
    break;
  }
  const std::string k = std::to_string(int(op)) + "(" + key(lhs) + "," + key(rhs) + ")";
  auto it = byKey_.find(k);
  if (it != byKey_.end())
    return DimExpr::atom(it->second);
  atoms_.push_back({false, -1, op, lhs, rhs});
  byKey_[k] = int(atoms_.size() - 1);
  return DimExpr::atom(int(atoms_.size() - 1));
}

std::string DimAtoms::str(const DimExpr &e, const std::vector<std::string> &symbolNames) const {
  if (e.terms().empty())
    return "0";
  static const char *names[] = {"floordiv", "ceildiv", "mod", "min", "max", "broadcast"};
  std::string s;
  for (const auto &[m, c] : e.terms()) {
    std::string t;
    if (m.empty() || (c != 1 && c != -1))
      t = std::to_string(c < 0 && !m.empty() ? -c : c);
    for (int id : m) {
      const Atom &a = atoms_[size_t(id)];
      std::string f = a.isSymbol ? symbolNames[size_t(a.symbol)]
                                 : std::string(names[int(a.op)]) + "(" + str(a.lhs, symbolNames) + ", " +
                                       str(a.rhs, symbolNames) + ")";
      t += (t.empty() ? "" : "*") + f;
    }
    if (s.empty())
      s = (c < 0 && !m.empty() ? "-" : "") + t;
    else
      s += (c < 0 ? " - " : " + ") + (m.empty() && c < 0 ? std::to_string(-c) : t);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// The rules

struct ShapeRules {
  SymbolicShapes &shapes;
  std::string &error;

  DimAtoms &atoms() { return shapes.atoms_; }
  const ValueShape &of(Value v) { return shapes.shapes_[v]; }
  const std::vector<DimExpr> &dims(Value v) { return shapes.shapes_[v].dims; }
  const std::optional<std::vector<DimExpr>> &contents(Value v) { return shapes.shapes_[v].contents; }

  LogicalResult fail(Operation *op, const std::string &message) {
    std::string where;
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      where = "node '" + name.getName().str() + "': ";
    error = where + op->getName().getStringRef().str() + ": " + message;
    return failure();
  }

  static int64_t intAttr(Operation *op, StringRef name, int64_t fallback) {
    if (auto a = op->getAttrOfType<IntegerAttr>(name))
      return a.getInt();
    return fallback;
  }
  static SmallVector<int64_t> arrayAttr(Operation *op, StringRef name) {
    if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
      return SmallVector<int64_t>(a.asArrayRef());
    return {};
  }

  std::vector<DimExpr> broadcast(std::vector<DimExpr> a, const std::vector<DimExpr> &b) {
    const size_t rank = std::max(a.size(), b.size());
    a.insert(a.begin(), rank - a.size(), DimExpr::constant(1));
    for (size_t i = 0; i < b.size(); ++i) {
      DimExpr &x = a[rank - b.size() + i];
      x = atoms().term(DimTermOp::Broadcast, x, b[i]);
    }
    return a;
  }

  DimExpr product(const std::vector<DimExpr> &d, size_t from = 0, size_t to = SIZE_MAX) {
    DimExpr p = DimExpr::constant(1);
    for (size_t i = from; i < std::min(to, d.size()); ++i)
      p = p * d[i];
    return p;
  }

  // Result dimensions of ops whose result shapes need a rule; `out` gets one entry per result.
  LogicalResult resultDims(Operation *op, StringRef name, std::vector<std::vector<DimExpr>> &out);
  // Contents of a small integer result, where the rule knows them.
  std::optional<std::vector<DimExpr>> resultContents(Operation *op, StringRef name);
  LogicalResult reshapeDims(Operation *op, std::vector<DimExpr> &out);
  LogicalResult sliceDims(Operation *op, std::vector<DimExpr> &out);
};

static bool isBroadcastOp(StringRef n) {
  return llvm::is_contained({"add", "sub", "mul", "div", "pow", "max", "min", "mod", "and", "or", "xor", "equal",
                             "less", "less_equal", "greater", "greater_equal", "where"},
                            n);
}

static bool isSameShapeOp(StringRef n) {
  return llvm::is_contained({"neg", "abs", "sqrt", "reciprocal", "exp", "log", "tanh", "erf", "sigmoid", "relu",
                             "cos", "sin", "floor", "ceil", "not", "gelu", "identity", "cumsum", "trilu", "sign",
                             "softplus", "hard_swish", "round", "rotary", "elu", "leaky_relu", "hard_sigmoid",
                             "batch_norm", "instance_norm", "group_norm", "is_nan", "cast", "softmax", "log_softmax",
                             "layer_norm", "rms_norm", "dequantize_linear", "quantize_linear", "scatter_elements",
                             "scatter_nd", "silu", "add_layer_norm", "add_rms_norm"},
                            n);
}

LogicalResult ShapeRules::reshapeDims(Operation *op, std::vector<DimExpr> &out) {
  const auto &target = contents(op->getOperand(1));
  if (!target)
    return fail(op, "the target shape depends on tensor data, not only on input shapes");
  const std::vector<DimExpr> &in = dims(op->getOperand(0));
  const bool allowZero = intAttr(op, "allowzero", 0);
  int inferAt = -1;
  DimExpr known = DimExpr::constant(1);
  for (size_t i = 0; i < target->size(); ++i) {
    DimExpr d = (*target)[i];
    if (d.asConstant() == 0 && !allowZero) {
      if (i >= in.size())
        return fail(op, "copies a dimension the input does not have");
      d = in[i];
    } else if (d.asConstant() == -1) {
      inferAt = int(i);
    }
    out.push_back(d);
    if (int(i) != inferAt)
      known = known * d;
  }
  if (inferAt >= 0) {
    auto q = product(in).divideExactly(known);
    out[size_t(inferAt)] = q ? *q : atoms().term(DimTermOp::FloorDiv, product(in), known);
  }
  return success();
}

LogicalResult ShapeRules::sliceDims(Operation *op, std::vector<DimExpr> &out) {
  out = dims(op->getOperand(0));
  std::vector<DimExpr> starts, ends;
  if (op->getNumOperands() == 3) { // dynamic_slice
    const auto &s = contents(op->getOperand(1)), &e = contents(op->getOperand(2));
    if (!s || !e)
      return fail(op, "the slice bounds depend on tensor data, not only on input shapes");
    starts = *s;
    ends = *e;
  } else {
    for (int64_t v : arrayAttr(op, "starts"))
      starts.push_back(DimExpr::constant(v));
    for (int64_t v : arrayAttr(op, "ends"))
      ends.push_back(DimExpr::constant(v));
  }
  SmallVector<int64_t> axes = arrayAttr(op, "axes"), steps = arrayAttr(op, "steps");
  const int64_t rank = int64_t(out.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    const DimExpr dim = out[size_t(axis)];
    if (steps[i] <= 0)
      return fail(op, "a negative step with dynamic sizes is not supported");
    // ONNX: a negative index counts from the end; then clamp to [0, dim]. Symbolic bounds come
    // from shapes and are not negative.
    auto clampIndex = [&](const DimExpr &v) {
      auto c = v.asConstant();
      if (c && *c >= (int64_t(1) << 31))
        return dim;
      DimExpr e = c && *c < 0 ? dim + v : v;
      return atoms().term(DimTermOp::Min, atoms().term(DimTermOp::Max, e, DimExpr::constant(0)), dim);
    };
    DimExpr len = atoms().term(DimTermOp::CeilDiv, clampIndex(ends[i]) - clampIndex(starts[i]),
                               DimExpr::constant(steps[i]));
    out[size_t(axis)] = atoms().term(DimTermOp::Max, len, DimExpr::constant(0));
  }
  return success();
}

LogicalResult ShapeRules::resultDims(Operation *op, StringRef name, std::vector<std::vector<DimExpr>> &out) {
  auto operandDims = [&](unsigned i) { return dims(op->getOperand(i)); };
  std::vector<DimExpr> r;
  if (isBroadcastOp(name) || name == "fused_elementwise") {
    r = operandDims(0);
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      r = broadcast(r, operandDims(i));
  } else if (isSameShapeOp(name)) {
    r = operandDims(0);
  } else if (name == "matmul") {
    std::vector<DimExpr> a = operandDims(0), b = operandDims(1);
    const bool vecA = a.size() == 1, vecB = b.size() == 1;
    if (vecA)
      a.insert(a.begin(), DimExpr::constant(1));
    if (vecB)
      b.push_back(DimExpr::constant(1));
    r = broadcast(std::vector<DimExpr>(a.begin(), a.end() - 2), std::vector<DimExpr>(b.begin(), b.end() - 2));
    if (!vecA)
      r.push_back(a[a.size() - 2]);
    if (!vecB)
      r.push_back(b.back());
  } else if (name == "linear") {
    r = operandDims(0);
    r.back() = DimExpr::constant(cast<RankedTensorType>(op->getResult(0).getType()).getShape().back());
  } else if (name == "expert_linear") { // a row per id (per combine row), of M or M / 2 features
    auto combine = cast<ExpertLinearOp>(op).getCombine(); // (null where empty, before a bias)
    r = {operandDims(combine ? 3 : 2)[0],
         DimExpr::constant(cast<RankedTensorType>(op->getResult(0).getType()).getShape().back())};
  } else if (name == "fused_attention") {
    const auto &q = operandDims(0);
    r = {q[0], q[1], DimExpr::constant(cast<RankedTensorType>(op->getResult(0).getType()).getShape().back())};
  } else if (name == "attention") { // y, present keys and values, scores (as TypeInference's rule)
    const auto &q = operandDims(0), &k = operandDims(1), &past = operandDims(4);
    const bool flat = q.size() == 3;
    auto staticDim = [&](unsigned result, size_t d) {
      return cast<RankedTensorType>(op->getResult(result).getType()).getShape()[d];
    };
    const int64_t d = staticDim(1, 3), dv = staticDim(2, 3), y = staticDim(0, flat ? 2 : 3);
    if (d == ShapedType::kDynamic || dv == ShapedType::kDynamic || y == ShapedType::kDynamic ||
        (flat && (intAttr(op, "q_num_heads", 0) <= 0 || intAttr(op, "kv_num_heads", 0) <= 0)))
      return fail(op, "an attention whose head sizes are not static");
    auto pastType = cast<RankedTensorType>(op->getOperand(4).getType());
    const bool noPast = pastType.hasStaticShape() && pastType.getNumElements() == 0;
    const DimExpr batch = q[0], sq = flat ? q[1] : q[2], skv = flat ? k[1] : k[2];
    const DimExpr total = noPast ? skv : past[2] + skv;
    const DimExpr hq = flat ? DimExpr::constant(intAttr(op, "q_num_heads", 0)) : q[1];
    const DimExpr hkv = flat ? DimExpr::constant(intAttr(op, "kv_num_heads", 0)) : k[1];
    out = {flat ? std::vector<DimExpr>{batch, sq, DimExpr::constant(y)}
                : std::vector<DimExpr>{batch, hq, sq, DimExpr::constant(y)},
           {batch, hkv, total, DimExpr::constant(d)},
           {batch, hkv, total, DimExpr::constant(dv)},
           {batch, hq, sq, total}};
    return success();
  } else if (name == "latent_attention") {
    const auto &q = operandDims(0);
    r = {q[0], q[1], q[2], DimExpr::constant(cast<RankedTensorType>(op->getResult(0).getType()).getShape().back())};
  } else if (name == "gemm") {
    const auto &a = operandDims(0), &b = operandDims(1);
    r = {a[intAttr(op, "transA", 0) ? 1 : 0], b[intAttr(op, "transB", 0) ? 0 : 1]};
  } else if (name.starts_with("reduce_") || name == "arg_max" || name == "arg_min") {
    const auto &s = operandDims(0);
    const int64_t rank = int64_t(s.size());
    SmallVector<int64_t> axes = arrayAttr(op, "axes");
    if (name.starts_with("arg_"))
      axes = {intAttr(op, "axis", 0)};
    if (axes.empty() && intAttr(op, "noop_with_empty_axes", 0)) {
      r = s;
    } else {
      std::vector<bool> reduced(size_t(rank), axes.empty());
      for (int64_t a : axes)
        reduced[size_t(a < 0 ? a + rank : a)] = true;
      const bool keep = intAttr(op, "keepdims", 1);
      for (int64_t d = 0; d < rank; ++d)
        if (!reduced[size_t(d)])
          r.push_back(s[size_t(d)]);
        else if (keep)
          r.push_back(DimExpr::constant(1));
    }
  } else if (name == "einsum") { // each output label's dim from an operand that does not broadcast it
    std::vector<int> ranks;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      ranks.push_back(int(operandDims(i).size()));
    auto equation = op->getAttrOfType<StringAttr>("equation");
    rt::EinsumSpec spec;
    if (!equation || !rt::parseEinsum(equation.str(), ranks, spec).empty())
      return fail(op, "an einsum whose equation does not parse");
    for (char c : spec.output) {
      DimExpr dim = DimExpr::constant(1);
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        for (size_t d = 0; d < spec.inputs[i].size(); ++d)
          if (spec.inputs[i][d] == c && operandDims(i)[d] != DimExpr::constant(1))
            dim = operandDims(i)[d];
      r.push_back(dim);
    }
  } else if (name == "grouped_top_k") { // [rows, k], both results
    r = operandDims(0);
    if (r.size() != 2)
      return fail(op, "the logits must be [rows, n]");
    r[1] = DimExpr::constant(intAttr(op, "k", 0));
    out.assign(op->getNumResults(), r);
    return success();
  } else if (name == "top_k" || name == "softmax_top_k") { // values and indices: the input's dims with k along the axis
    r = operandDims(0);
    const int64_t rank = int64_t(r.size()), axis = intAttr(op, "axis", -1) + (intAttr(op, "axis", -1) < 0 ? rank : 0);
    if (axis < 0 || axis >= rank)
      return fail(op, "the axis is out of range");
    if (op->getNumOperands() > 1) { // top_k's count
      const auto &count = contents(op->getOperand(1));
      if (!count || count->size() != 1)
        return fail(op, "k depends on tensor data, not only on input shapes");
      r[size_t(axis)] = (*count)[0];
    } else {
      r[size_t(axis)] = DimExpr::constant(intAttr(op, "k", 0));
    }
    out.assign(op->getNumResults(), r);
    return success();
  } else if (name == "layer_norm_stats") {
    r = operandDims(0);
    const int64_t rank = int64_t(r.size());
    int64_t axis = intAttr(op, "axis", -1);
    for (int64_t d = axis < 0 ? axis + rank : axis; d < rank; ++d)
      r[size_t(d)] = DimExpr::constant(1);
    out.assign(op->getNumResults(), r);
    return success();
  } else if (name == "transpose") {
    const auto &s = operandDims(0);
    SmallVector<int64_t> perm = arrayAttr(op, "perm");
    if (perm.empty())
      for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d)
        perm.push_back(d);
    for (int64_t p : perm)
      r.push_back(s[size_t(p)]);
  } else if (name == "reshape") {
    if (failed(reshapeDims(op, r)))
      return failure();
  } else if (name == "unsqueeze") {
    const auto &s = operandDims(0);
    const int64_t rank = int64_t(s.size() + arrayAttr(op, "axes").size());
    std::vector<bool> inserted(size_t(rank), false);
    for (int64_t a : arrayAttr(op, "axes"))
      inserted[size_t(a < 0 ? a + rank : a)] = true;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      r.push_back(inserted[size_t(d)] ? DimExpr::constant(1) : s[next++]);
  } else if (name == "squeeze") {
    const auto &s = operandDims(0);
    const int64_t rank = int64_t(s.size());
    std::vector<bool> removed(size_t(rank), false);
    SmallVector<int64_t> axes = arrayAttr(op, "axes");
    if (axes.empty())
      return fail(op, "squeeze without axes on a dynamic shape is not supported");
    for (int64_t a : axes)
      removed[size_t(a < 0 ? a + rank : a)] = true;
    for (int64_t d = 0; d < rank; ++d)
      if (!removed[size_t(d)])
        r.push_back(s[size_t(d)]);
  } else if (name == "flatten") {
    const auto &s = operandDims(0);
    int64_t axis = intAttr(op, "axis", 1);
    if (axis < 0)
      axis += int64_t(s.size());
    r = {product(s, 0, size_t(axis)), product(s, size_t(axis))};
  } else if (name == "concat") {
    r = operandDims(0);
    const int64_t rank = int64_t(r.size());
    int64_t axis = intAttr(op, "axis", 0);
    if (axis < 0)
      axis += rank;
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      r[size_t(axis)] = r[size_t(axis)] + operandDims(i)[size_t(axis)];
  } else if (name == "split") {
    const auto &s = operandDims(0);
    int64_t axis = intAttr(op, "axis", 0);
    if (axis < 0)
      axis += int64_t(s.size());
    SmallVector<int64_t> sizes = arrayAttr(op, "split");
    if (sizes.empty()) { // num_outputs equal parts of a dynamic size: ceil(d / n), the last what is left
      const int64_t parts = intAttr(op, "num_outputs", 1);
      const DimExpr dim = s[size_t(axis)];
      const DimExpr chunk = atoms().term(DimTermOp::CeilDiv, dim, DimExpr::constant(parts));
      for (int64_t i = 0; i < parts; ++i) {
        std::vector<DimExpr> d = s;
        d[size_t(axis)] = i + 1 < parts ? chunk : dim - chunk * DimExpr::constant(parts - 1);
        out.push_back(d);
      }
      return success();
    }
    for (int64_t part : sizes) {
      std::vector<DimExpr> d = s;
      d[size_t(axis)] = DimExpr::constant(part);
      out.push_back(d);
    }
    return success();
  } else if (name == "slice" || name == "dynamic_slice") {
    if (failed(sliceDims(op, r)))
      return failure();
  } else if (name == "gather") {
    const auto &s = operandDims(0), &idx = operandDims(1);
    int64_t axis = intAttr(op, "axis", 0);
    if (axis < 0)
      axis += int64_t(s.size());
    r.assign(s.begin(), s.begin() + axis);
    r.insert(r.end(), idx.begin(), idx.end());
    r.insert(r.end(), s.begin() + axis + 1, s.end());
  } else if (name == "gather_nd") {
    const auto &data = operandDims(0), &idx = operandDims(1);
    auto k = idx.back().asConstant();
    if (!k)
      return fail(op, "the index depth (last dimension of the indices) must be static");
    r.assign(idx.begin(), idx.end() - 1);
    r.insert(r.end(), data.begin() + intAttr(op, "batch_dims", 0) + *k, data.end());
  } else if (name == "gather_elements") {
    r = operandDims(1);
  } else if (name == "expand") {
    const auto &target = contents(op->getOperand(1));
    if (!target)
      return fail(op, "the target shape depends on tensor data, not only on input shapes");
    r = broadcast(operandDims(0), *target);
  } else if (name == "constant_of_shape") {
    const auto &target = contents(op->getOperand(0));
    if (!target)
      return fail(op, "the shape depends on tensor data, not only on input shapes");
    r = *target;
  } else if (name == "tile") { // (its repeats an attribute: the op has one operand)
    const SmallVector<int64_t> repeats = arrayAttr(op, "repeats");
    r = operandDims(0);
    if (repeats.size() != r.size())
      return fail(op, "needs a repeat count per axis");
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = r[i] * DimExpr::constant(repeats[i]);
  } else if (name == "range") {
    const auto &start = contents(op->getOperand(0)), &limit = contents(op->getOperand(1)),
               &delta = contents(op->getOperand(2));
    if (!start || !limit || !delta || !cast<RankedTensorType>(op->getResult(0).getType()).getElementType().isInteger())
      return fail(op, "an integer range whose bounds follow from input shapes is needed for a dynamic length");
    DimExpr n = atoms().term(DimTermOp::CeilDiv, (*limit)[0] - (*start)[0], (*delta)[0]);
    r = {atoms().term(DimTermOp::Max, n, DimExpr::constant(0))};
  } else if (llvm::is_contained({"conv", "max_pool", "average_pool", "max_pool_with_indices"}, name)) {
    // The batch dimension passes through; spatial dimensions must be static.
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d == 0)
        r.push_back(operandDims(0)[0]);
      else if (type.isDynamicDim(d))
        return fail(op, "dynamic spatial dimensions are not supported");
      else
        r.push_back(DimExpr::constant(type.getDimSize(d)));
    }
    out.assign(op->getNumResults(), r);
    return success();
  } else {
    return fail(op, "this op cannot have dynamic dimensions yet; fix the input shapes with --input-shape");
  }
  out.assign(op->getNumResults(), r);
  return success();
}

std::optional<std::vector<DimExpr>> ShapeRules::resultContents(Operation *op, StringRef name) {
  using Contents = std::vector<DimExpr>;
  auto in = [&](unsigned i) -> const std::optional<Contents> & { return contents(op->getOperand(i)); };
  if (name == "constant") {
    auto ints = constantInts(op->getResult(0));
    if (!ints)
      return std::nullopt;
    Contents c;
    for (int64_t v : *ints)
      c.push_back(DimExpr::constant(v));
    return c;
  }
  if (name == "shape") {
    const auto &s = dims(op->getOperand(0));
    const int64_t rank = int64_t(s.size());
    int64_t start = intAttr(op, "start", 0), end = intAttr(op, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    return end > start ? Contents(s.begin() + start, s.begin() + end) : Contents();
  }
  if (llvm::is_contained({"identity", "reshape", "unsqueeze", "squeeze", "flatten"}, name))
    return in(0);
  if (name == "cast") {
    auto from = cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
    return from.isInteger() ? in(0) : std::nullopt;
  }
  if (name == "gather") {
    const auto &data = in(0), &idx = in(1);
    if (!data || !idx || dims(op->getOperand(0)).size() != 1)
      return std::nullopt;
    Contents c;
    for (const DimExpr &i : *idx) {
      auto k = i.asConstant();
      if (!k)
        return std::nullopt;
      int64_t j = *k < 0 ? *k + int64_t(data->size()) : *k;
      if (j < 0 || j >= int64_t(data->size()))
        return std::nullopt;
      c.push_back((*data)[size_t(j)]);
    }
    return c;
  }
  if (name == "slice") {
    const auto &data = in(0);
    SmallVector<int64_t> starts = arrayAttr(op, "starts"), ends = arrayAttr(op, "ends"), steps = arrayAttr(op, "steps");
    if (!data || dims(op->getOperand(0)).size() != 1 || starts.size() != 1 || steps[0] <= 0)
      return std::nullopt;
    const int64_t n = int64_t(data->size());
    int64_t b = starts[0] < 0 ? starts[0] + n : starts[0], e = ends[0] < 0 ? ends[0] + n : ends[0];
    b = std::clamp<int64_t>(b, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
    Contents c;
    for (int64_t i = b; i < e; i += steps[0])
      c.push_back((*data)[size_t(i)]);
    return c;
  }
  if (name == "concat") {
    Contents c;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      if (!in(i) || dims(op->getOperand(i)).size() != 1)
        return std::nullopt;
      c.insert(c.end(), in(i)->begin(), in(i)->end());
    }
    return c;
  }
  if (llvm::is_contained({"add", "sub", "mul", "div", "max", "min", "mod", "equal", "where"}, name)) {
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (!in(i) || dims(op->getOperand(i)).size() > 1)
        return std::nullopt;
    size_t n = 1;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      n = std::max(n, in(i)->size());
    auto at = [&](unsigned i, size_t k) { return in(i)->size() == 1 ? (*in(i))[0] : (*in(i))[k]; };
    Contents c;
    for (size_t k = 0; k < n; ++k) {
      const DimExpr a = at(0, k), b = at(1, k);
      if (name == "add")
        c.push_back(a + b);
      else if (name == "sub")
        c.push_back(a - b);
      else if (name == "mul")
        c.push_back(a * b);
      else if (name == "div") // integer shapes are not negative, where truncation is floor division
        c.push_back(atoms().term(DimTermOp::FloorDiv, a, b));
      else if (name == "mod")
        c.push_back(atoms().term(DimTermOp::Mod, a, b));
      else if (name == "max")
        c.push_back(atoms().term(DimTermOp::Max, a, b));
      else if (name == "min")
        c.push_back(atoms().term(DimTermOp::Min, a, b));
      else if (name == "equal") {
        if (a == b)
          c.push_back(DimExpr::constant(1));
        else if (a.asConstant() && b.asConstant())
          c.push_back(DimExpr::constant(0));
        else
          return std::nullopt;
      } else { // where
        auto cond = a.asConstant();
        if (!cond)
          return std::nullopt;
        c.push_back(*cond ? b : at(2, k));
      }
    }
    return c;
  }
  if (name == "expand") {
    const auto &data = in(0), &target = in(1);
    if (!data || !target || data->size() != 1 || target->size() != 1)
      return std::nullopt;
    auto n = (*target)[0].asConstant();
    if (!n || *n < 0 || *n > 64)
      return std::nullopt;
    return Contents(size_t(*n), (*data)[0]);
  }
  if (name == "reduce_prod" || name == "reduce_sum") {
    const auto &data = in(0);
    if (!data || dims(op->getOperand(0)).size() != 1)
      return std::nullopt;
    DimExpr r = DimExpr::constant(name == "reduce_prod" ? 1 : 0);
    for (const DimExpr &e : *data)
      r = name == "reduce_prod" ? r * e : r + e;
    return Contents{r};
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The analysis

std::string SymbolicShapes::str(const DimExpr &e) const {
  std::vector<std::string> names;
  for (const SymbolInfo &s : symbols_)
    names.push_back(s.name);
  return atoms_.str(e, names);
}

FailureOr<SymbolicShapes> SymbolicShapes::analyze(func::FuncOp func, std::string &error) {
  SymbolicShapes result;
  std::map<std::string, int> symbolIndex;
  if (auto bounds = func->getAttrOfType<DictionaryAttr>(kSymbolBoundsAttr))
    for (NamedAttribute b : bounds) {
      symbolIndex[b.getName().str()] = int(result.symbols_.size());
      result.symbols_.push_back({b.getName().str(), cast<IntegerAttr>(b.getValue()).getInt()});
    }
  if (auto minima = func->getAttrOfType<DictionaryAttr>(kSymbolMinimaAttr))
    for (NamedAttribute m : minima)
      if (auto it = symbolIndex.find(m.getName().str()); it != symbolIndex.end())
        result.symbols_[size_t(it->second)].min = cast<IntegerAttr>(m.getValue()).getInt();
  std::vector<int64_t> minima, maxima;
  for (const SymbolInfo &s : result.symbols_) {
    minima.push_back(s.min);
    maxima.push_back(s.max);
  }
  result.atoms_.setSymbolBounds(std::move(minima), std::move(maxima));
  ShapeRules rules{result, error};
  constexpr int64_t kMaxContents = 64;

  auto staticDims = [](RankedTensorType t) {
    std::vector<DimExpr> d;
    for (int64_t s : t.getShape())
      d.push_back(DimExpr::constant(s));
    return d;
  };

  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    Value arg = func.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type) {
      error = "input #" + std::to_string(i) + " is not a ranked tensor";
      return failure();
    }
    auto names = func.getArgAttrOfType<ArrayAttr>(i, kDimSymbolsAttr);
    auto inputName = func.getArgAttrOfType<StringAttr>(i, "llmc.name");
    ValueShape &shape = result.shapes_[arg];
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        shape.dims.push_back(DimExpr::constant(type.getDimSize(d)));
        continue;
      }
      std::string symbol = names && size_t(d) < names.size() ? cast<StringAttr>(names[d]).str() : "";
      auto it = symbolIndex.find(symbol);
      if (symbol.empty() || it == symbolIndex.end()) {
        error = "input '" + (inputName ? inputName.str() : std::to_string(i)) + "' dimension " + std::to_string(d) +
                (symbol.empty() ? " is dynamic and unnamed" : " ('" + symbol + "') has no bound") +
                ": give its size with --input-shape, or a bound with --max-shape " +
                (symbol.empty() ? "SYMBOL" : symbol) + "=N";
        return failure();
      }
      shape.dims.push_back(result.atoms_.symbol(it->second));
    }
  }

  for (Operation &op : func.getBody().front()) {
    if (op.getNumResults() == 0)
      continue;
    StringRef name = op.getName().stripDialect();
    bool dynamic = false;
    for (Type t : op.getResultTypes())
      dynamic |= !cast<RankedTensorType>(t).hasStaticShape();
    std::vector<std::vector<DimExpr>> dims;
    if (dynamic) {
      if (failed(rules.resultDims(&op, name, dims)))
        return failure();
    }
    for (unsigned r = 0; r < op.getNumResults(); ++r) {
      auto type = cast<RankedTensorType>(op.getResult(r).getType());
      std::vector<DimExpr> d = dynamic ? dims[r] : staticDims(type);
      if (int64_t(d.size()) != type.getRank())
        return rules.fail(&op, "internal error: the symbolic rank differs from the type's");
      for (int64_t i = 0; i < type.getRank(); ++i) {
        if (type.isDynamicDim(i))
          continue;
        auto c = d[size_t(i)].asConstant();
        if (c && *c != type.getDimSize(i))
          return rules.fail(&op, "internal error: dimension " + std::to_string(i) + " is " + std::to_string(*c) +
                                     " symbolically but " + std::to_string(type.getDimSize(i)) + " in its type");
        d[size_t(i)] = DimExpr::constant(type.getDimSize(i)); // the type may know more
      }
      result.shapes_[op.getResult(r)].dims = std::move(d);
    }
    if (op.getNumResults() == 1) {
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      if (type.hasStaticShape() && type.getNumElements() <= kMaxContents && type.getElementType().isInteger())
        result.shapes_[op.getResult(0)].contents = rules.resultContents(&op, name);
    }
  }
  return result;
}

bool sameDim(const SymbolicShapes *shapes, Value a, int64_t i, Value b, int64_t j) {
  auto ta = cast<RankedTensorType>(a.getType()), tb = cast<RankedTensorType>(b.getType());
  if (!ta.isDynamicDim(i) && !tb.isDynamicDim(j))
    return ta.getDimSize(i) == tb.getDimSize(j);
  const ValueShape *sa = shapes ? shapes->find(a) : nullptr, *sb = shapes ? shapes->find(b) : nullptr;
  return sa && sb && sa->dims[size_t(i)] == sb->dims[size_t(j)];
}

bool sameDims(const SymbolicShapes *shapes, Value a, Value b) {
  const int64_t rank = cast<RankedTensorType>(a.getType()).getRank();
  if (rank != cast<RankedTensorType>(b.getType()).getRank())
    return false;
  for (int64_t d = 0; d < rank; ++d)
    if (!sameDim(shapes, a, d, b, d))
      return false;
  return true;
}

} // namespace llmc
