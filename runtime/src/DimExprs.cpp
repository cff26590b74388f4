#include "DimExprs.h"

#include <algorithm>

namespace llmc::plan {
namespace {

constexpr int64_t kLimit = int64_t(1) << 40; // no dimension or intermediate may exceed this

struct Interval {
  int64_t lo, hi;
};

int64_t clampMag(__int128 v) { return int64_t(std::clamp<__int128>(v, -(__int128(kLimit) << 8), __int128(kLimit) << 8)); }

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t apply(DimOp op, int64_t a, int64_t b) {
  switch (op) {
  case DimOp::Add: return clampMag(__int128(a) + b);
  case DimOp::Mul: return clampMag(__int128(a) * b);
  case DimOp::FloorDiv: return floorDiv(a, b);
  case DimOp::CeilDiv: return -floorDiv(-a, b);
  case DimOp::Mod: return a - floorDiv(a, b) * b;
  case DimOp::Min: return std::min(a, b);
  case DimOp::Max: return std::max(a, b);
  case DimOp::Broadcast: return a == 1 ? b : a;
  default: return 0;
  }
}

bool divides(DimOp op) { return op == DimOp::FloorDiv || op == DimOp::CeilDiv || op == DimOp::Mod; }

} // namespace

std::string checkDimExprs(const std::vector<DimExprNode> &nodes, size_t numSymbols) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const DimExprNode &n = nodes[i];
    if (uint8_t(n.op) > kLastDimOp)
      return "dimension expression " + std::to_string(i) + " has an unknown operation";
    if (n.op == DimOp::Symbol && (n.value < 0 || uint64_t(n.value) >= numSymbols))
      return "dimension expression " + std::to_string(i) + " names a symbol that does not exist";
    if (n.op == DimOp::Const && (n.value < -kLimit || n.value > kLimit))
      return "dimension expression " + std::to_string(i) + " has an impossibly large constant";
    if (n.op != DimOp::Const && n.op != DimOp::Symbol &&
        (n.a < 0 || n.b < 0 || size_t(n.a) >= i || size_t(n.b) >= i))
      return "dimension expression " + std::to_string(i) + " refers to a later or missing node";
  }
  return {};
}

std::string evaluateDimExprs(const std::vector<DimExprNode> &nodes, const int64_t *symbols, std::vector<int64_t> &out) {
  out.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const DimExprNode &n = nodes[i];
    if (n.op == DimOp::Const) {
      out[i] = n.value;
    } else if (n.op == DimOp::Symbol) {
      out[i] = symbols[n.value];
    } else {
      const int64_t a = out[size_t(n.a)], b = out[size_t(n.b)];
      if (divides(n.op) && b == 0)
        return "a dimension expression divides by zero";
      out[i] = apply(n.op, a, b);
    }
  }
  return {};
}

std::string boundDimExprs(const std::vector<DimExprNode> &nodes, const int64_t *symbolMin, const int64_t *symbolMax,
                          std::vector<int64_t> &upper) {
  std::vector<Interval> iv(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const DimExprNode &n = nodes[i];
    Interval &r = iv[i];
    if (n.op == DimOp::Const) {
      r = {n.value, n.value};
      continue;
    }
    if (n.op == DimOp::Symbol) {
      r = {symbolMin[n.value], symbolMax[n.value]};
      continue;
    }
    const Interval a = iv[size_t(n.a)], b = iv[size_t(n.b)];
    switch (n.op) {
    case DimOp::Add: r = {apply(DimOp::Add, a.lo, b.lo), apply(DimOp::Add, a.hi, b.hi)}; break;
    case DimOp::Mul: {
      const int64_t c[4] = {apply(DimOp::Mul, a.lo, b.lo), apply(DimOp::Mul, a.lo, b.hi), apply(DimOp::Mul, a.hi, b.lo),
                            apply(DimOp::Mul, a.hi, b.hi)};
      r = {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
      break;
    }
    case DimOp::FloorDiv:
    case DimOp::CeilDiv: {
      if (b.lo <= 0 && b.hi >= 0)
        return "dimension expression " + std::to_string(i) + " may divide by zero";
      const int64_t c[4] = {apply(n.op, a.lo, b.lo), apply(n.op, a.lo, b.hi), apply(n.op, a.hi, b.lo),
                            apply(n.op, a.hi, b.hi)};
      r = {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
      break;
    }
    case DimOp::Mod: {
      if (b.lo <= 0)
        return "dimension expression " + std::to_string(i) + " may take a remainder by zero";
      r = {0, b.hi - 1};
      break;
    }
    case DimOp::Min: r = {std::min(a.lo, b.lo), std::min(a.hi, b.hi)}; break;
    case DimOp::Max: r = {std::max(a.lo, b.lo), std::max(a.hi, b.hi)}; break;
    case DimOp::Broadcast: r = {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; break;
    default: return "dimension expression " + std::to_string(i) + " has an unknown operation";
    }
  }
  upper.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    upper[i] = iv[i].hi;
  return {};
}

} // namespace llmc::plan
