// What a boolean tensor built from index arithmetic computes, element by element: exporters
// build an attention mask from ranges, comparisons, broadcasts and a gather of the
// `attention_mask` input (Hugging Face's causal-and-padding mask is ~20 such ops). This analysis
// writes each element as a conjunction of atoms over the element's index (and integer tensors,
// positions, as affine functions of it), so that
// llmc-raise-attention-mask can prove what the mask is and replace it by `is_causal` and the
// input itself. Anything it does not understand makes it answer "unknown" (no value).
#pragma once

#include "llmc/Dialect/SymbolicShapes.h"

#include "mlir/IR/Value.h"

#include <optional>
#include <vector>

namespace llmc::mask {

// An integer tensor whose element at index x is offset + sum_d coef[d] * x[d].
struct Affine {
  std::vector<int64_t> coef;
  DimExpr offset;

  static Affine constant(size_t rank, DimExpr offset) { return {std::vector<int64_t>(rank, 0), std::move(offset)}; }
  static Affine index(size_t rank, size_t d) {
    Affine a = constant(rank, DimExpr::constant(0));
    a.coef[d] = 1;
    return a;
  }
  bool operator==(const Affine &o) const { return coef == o.coef && offset == o.offset; }
};

// Where each dimension of an inner value is indexed, as Affines over an outer value's index.
using IndexMap = std::vector<Affine>;

// One factor of a conjunction: `diff <= 0` (a comparison of index expressions) when `source` is
// null, else `source[index...] != 0` (a graph input read at index expressions).
struct Atom {
  Affine diff;
  mlir::Value source;
  IndexMap index;
};

// Every element true where all atoms hold; no atoms: all true.
struct Conjunction {
  std::vector<Atom> atoms;
};

// `f` read through `map`: f's index expressed in the outer index.
Affine compose(const Affine &f, const IndexMap &map, size_t outerRank);
Conjunction compose(const Conjunction &c, const IndexMap &map, size_t outerRank);

class MaskElements {
public:
  explicit MaskElements(const SymbolicShapes &shapes) : shapes_(shapes) {}

  // Over v's dimensions; none where some op on the way is not understood.
  std::optional<Conjunction> conjunctionOf(mlir::Value v) const;
  std::optional<Affine> affineOf(mlir::Value v) const;

  // Indexing `inner` from `outer` by numpy broadcasting (right-aligned; dimensions of `inner`
  // that are 1 read index 0), or none when a dimension neither is 1 nor matches.
  std::optional<IndexMap> broadcastMap(mlir::Value inner, mlir::Value outer) const;

  // Whether every element of a bool tensor is the same, and which: true or false (an equality
  // of affine values that differ by a constant, its negation, ...); none where it may vary.
  std::optional<bool> constantTruth(mlir::Value v) const;

private:
  std::optional<IndexMap> unitReshapeMap(mlir::Value inner, mlir::Value outer) const;
  std::optional<IndexMap> sliceMap(mlir::Operation *op, mlir::Value v) const;
  std::optional<Affine> concatOf(mlir::Operation *op, mlir::Value v) const;
  std::optional<Affine> cumSumOf(mlir::Operation *op, mlir::Value v) const;
  std::optional<IndexMap> gatherMap(mlir::Operation *gather) const;
  std::optional<Affine> differenceOf(mlir::Operation *op, mlir::Value v) const;
  std::optional<IndexMap> movementMap(mlir::Operation *op, mlir::Value v) const;
  std::optional<std::vector<Affine>> tupleOf(mlir::Value indices) const;
  std::optional<Conjunction> readOf(mlir::Value v) const;
  std::optional<Conjunction> regionResult(mlir::Operation *fused) const;
  const std::vector<DimExpr> &dims(mlir::Value v) const { return shapes_.shape(v).dims; }

  const SymbolicShapes &shapes_;
};

} // namespace llmc::mask
