// Symbolic shapes: every dimension of every value in an llmc function as an expression over the
// symbols of the graph inputs (batch, seq), and the contents of the small integer tensors that
// shape computations produce (Shape -> Gather -> Concat -> Reshape). With them one plan serves
// every input size up to the bounds given at compile time (`llmc --max-shape seq=512`).
//
// Symbols come from the function: argument attribute `llmc.dim_symbols` (an array with the symbol
// name of each dynamic dimension, "" for static ones) and function attribute `llmc.symbol_bounds`
// (a dictionary from symbol name to its upper bound).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

// How an opaque term combines its two operands (the same operations the plan's dimension
// expressions have).
enum class DimTermOp : uint8_t { FloorDiv, CeilDiv, Mod, Min, Max, Broadcast };

// A dimension: a polynomial with integer coefficients over atoms, where an atom is a symbol or an
// opaque term (a floor division, min, ... that does not simplify). Polynomials have one canonical
// form, so equal expressions compare equal.
class DimExpr {
public:
  using Monomial = std::vector<int>; // sorted atom ids, repeated for powers
  DimExpr() = default;
  static DimExpr constant(int64_t c);
  static DimExpr atom(int id);

  std::optional<int64_t> asConstant() const;
  bool operator==(const DimExpr &o) const { return terms_ == o.terms_; }
  bool operator!=(const DimExpr &o) const { return !(*this == o); }
  const std::map<Monomial, int64_t> &terms() const { return terms_; }

  DimExpr operator+(const DimExpr &o) const;
  DimExpr operator-(const DimExpr &o) const;
  DimExpr operator*(const DimExpr &o) const;
  // The quotient when `o` divides exactly: `o` a constant or a single term dividing every term,
  // or `o` of several terms times a quotient of one term; else none.
  std::optional<DimExpr> divideExactly(const DimExpr &o) const;

private:
  std::map<Monomial, int64_t> terms_; // no zero coefficients; the empty monomial is the constant
};

// Owns the atoms that DimExprs refer to.
class DimAtoms {
public:
  struct Atom {
    bool isSymbol;
    int symbol;     // symbols only
    DimTermOp op;   // opaque terms only
    DimExpr lhs, rhs;
  };
  struct Range {
    int64_t lo, hi;
  };
  // Symbols range over [min, max]; the analysis sets the bounds before making expressions.
  void setSymbolBounds(std::vector<int64_t> minima, std::vector<int64_t> maxima) {
    symbolMin_ = std::move(minima);
    symbolMax_ = std::move(maxima);
  }
  Range range(const DimExpr &e) const;
  DimExpr symbol(int index);
  DimExpr term(DimTermOp op, const DimExpr &lhs, const DimExpr &rhs); // simplifies where it can
  const Atom &atom(int id) const { return atoms_[size_t(id)]; }
  std::string str(const DimExpr &e, const std::vector<std::string> &symbolNames) const;

private:
  Range atomRange(int id) const;
  std::vector<Atom> atoms_;
  std::map<std::string, int> byKey_;
  std::vector<int64_t> symbolMin_, symbolMax_;
};

struct SymbolInfo {
  std::string name;
  int64_t max;
  int64_t min = 1;
};

struct ValueShape {
  std::vector<DimExpr> dims;
  std::optional<std::vector<DimExpr>> contents; // small integer tensors whose elements are known
};

class SymbolicShapes {
public:
  // Fails (with a message naming the op) when a dynamic dimension cannot be expressed in the
  // symbols, for instance when it depends on tensor data.
  static mlir::FailureOr<SymbolicShapes> analyze(mlir::func::FuncOp func, std::string &error);

  const std::vector<SymbolInfo> &symbols() const { return symbols_; }
  const ValueShape &shape(mlir::Value v) const { return shapes_.at(v); }
  // The shape of `v`, or null for a value the analysis did not see (made after it).
  const ValueShape *find(mlir::Value v) const {
    auto it = shapes_.find(v);
    return it == shapes_.end() ? nullptr : &it->second;
  }
  const DimAtoms &atoms() const { return atoms_; }
  std::string str(const DimExpr &e) const;

private:
  friend struct ShapeRules;
  std::vector<SymbolInfo> symbols_;
  DimAtoms atoms_;
  llvm::DenseMap<mlir::Value, ValueShape> shapes_;
};

// Whether dimension i of a equals dimension j of b: by their static sizes, or by `shapes` where one
// is dynamic (no analysis, or a value it did not see: not known equal).
bool sameDim(const SymbolicShapes *shapes, mlir::Value a, int64_t i, mlir::Value b, int64_t j);
// Whether a and b have the same rank and every dimension the same, as sameDim proves it.
bool sameDims(const SymbolicShapes *shapes, mlir::Value a, mlir::Value b);

// Attribute names (see the top of this file).
inline constexpr const char *kDimSymbolsAttr = "llmc.dim_symbols";
inline constexpr const char *kSymbolBoundsAttr = "llmc.symbol_bounds";
inline constexpr const char *kSymbolMinimaAttr = "llmc.symbol_minima"; // only where not 1

} // namespace llmc
