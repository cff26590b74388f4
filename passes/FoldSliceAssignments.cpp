// llmc-fold-slice-assignments (see Passes.td): `x[..., a:b] = y` as torch exports it (the
// assigned axis transposed to the front, a scatter_nd of rows a..b-1, transposed back) becomes
// the concatenation it is.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFOLDSLICEASSIGNMENTS
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// The first of `m` contiguous rows [first, first + m) that constant indices [m, 1] name on an
// axis of `rows` (negative ones counted from the end), or none.
std::optional<int64_t> contiguousRows(Value indices, int64_t rows) {
  auto type = fusion::tensorType(indices);
  auto c = def<ConstantOp>(indices);
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!dense || type.getRank() != 2 || type.getDimSize(1) != 1 || type.getDimSize(0) <= 0 ||
      !type.getElementType().isInteger(64))
    return std::nullopt;
  int64_t first = 0, i = 0;
  for (int64_t v : dense.getValues<int64_t>()) {
    const int64_t row = v < 0 ? v + rows : v;
    if (row < 0 || row >= rows)
      return std::nullopt;
    if (i == 0)
      first = row;
    else if (row != first + i)
      return std::nullopt;
    ++i;
  }
  return first;
}

// x[from:to] on axis 0 (to a static size), or null.
Operation *rowsOf(PatternRewriter &rewriter, Location loc, Value x, int64_t from, int64_t to) {
  return fusion::create(rewriter, loc, "llmc.slice", {x},
                             {rewriter.getNamedAttr("starts", rewriter.getDenseI64ArrayAttr({from})),
                              rewriter.getNamedAttr("ends", rewriter.getDenseI64ArrayAttr({to})),
                              rewriter.getNamedAttr("axes", rewriter.getDenseI64ArrayAttr({0})),
                              rewriter.getNamedAttr("steps", rewriter.getDenseI64ArrayAttr({1}))});
}

// `op` replaced by `v`, a value the IR already has (the updates, a piece), where it has op's type.
LogicalResult replaceByExisting(PatternRewriter &rewriter, Operation *op, Value v) {
  if (v.getType() != op->getResult(0).getType())
    return failure();
  rewriter.replaceOp(op, v);
  return success();
}

// The concatenation of `pieces` on `axis`, built in front of the rewriter's op, or null.
Operation *concatOf(PatternRewriter &rewriter, Location loc, ValueRange pieces, int64_t axis) {
  return fusion::create(rewriter, loc, "llmc.concat", pieces,
                        {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(axis))});
}

// A rewrite's result, counted where it succeeded.
LogicalResult counted(LogicalResult result, RewriteCounter &count) {
  if (succeeded(result))
    ++count;
  return result;
}

// scatter_nd(data, rows [first, first + m) as [m, 1] constants, updates [m, ...])  ->
// concat(data[:first], updates, data[first + m:]) on axis 0 (the rows of data that stay around
// the written ones).
struct ScatterRowsToConcat : fusion::CountedPattern<ScatterNdOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(ScatterNdOp op, PatternRewriter &rewriter) const override {
    auto data = fusion::tensorType(op.getData()), updates = fusion::tensorType(op.getUpdates());
    if (op.getReduction() != "none" || data.getRank() < 1 || data.isDynamicDim(0) ||
        updates.getRank() != data.getRank() || updates.isDynamicDim(0) ||
        updates.getElementType() != data.getElementType())
      return failure();
    const int64_t rows = data.getDimSize(0), m = updates.getDimSize(0);
    std::optional<int64_t> first = contiguousRows(op.getIndices(), rows);
    if (!first || *first + m > rows || fusion::tensorType(op.getIndices()).getDimSize(0) != m)
      return failure();
    if (*first == 0 && m == rows) // (every row written)
      return counted(replaceByExisting(rewriter, op, op.getUpdates()), count);
    Location loc = op.getLoc();
    SmallVector<Operation *> made;
    SmallVector<Value> pieces;
    auto keepRows = [&](int64_t from, int64_t to) {
      made.push_back(rowsOf(rewriter, loc, op.getData(), from, to));
      pieces.push_back(made.back() ? made.back()->getResult(0) : Value());
    };
    if (*first > 0)
      keepRows(0, *first);
    pieces.push_back(op.getUpdates());
    if (*first + m < rows)
      keepRows(*first + m, rows);
    made.push_back(llvm::all_of(pieces, [](Value v) { return bool(v); }) ? concatOf(rewriter, loc, pieces, 0) : nullptr);
    return counted(fusion::replaceByLastBuilt(rewriter, op, made), count);
  }
};

// slice(concat(pieces) on axis a, [from, to) on a, step 1), where the range is whole pieces of
// static size  ->  those pieces (their concatenation, or the one piece).
struct SliceOfWholePieces : fusion::CountedPattern<SliceOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    auto concat = def<ConcatOp>(op.getInput());
    if (!concat || op.getAxes().size() != 1 || op.getSteps()[0] != 1)
      return failure();
    const int64_t rank = fusion::tensorType(op.getInput()).getRank();
    const int64_t axis = op.getAxes()[0] < 0 ? op.getAxes()[0] + rank : op.getAxes()[0];
    const int64_t concatAxis = fusion::axisFrom0(int64_t(concat.getAxis()), rank);
    if (axis != concatAxis)
      return failure();
    // The range, clamped as ONNX clamps it, and the pieces it holds whole.
    const int64_t size = fusion::tensorType(op.getInput()).getDimSize(axis);
    if (ShapedType::isDynamic(size))
      return failure();
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
    const int64_t from = clamp(op.getStarts()[0]), to = clamp(op.getEnds()[0]);
    SmallVector<Value> taken;
    int64_t at = 0, covered = 0;
    for (Value piece : concat.getInputs()) {
      const int64_t length = fusion::tensorType(piece).getDimSize(axis);
      if (ShapedType::isDynamic(length))
        return failure();
      if (at >= from && at + length <= to) {
        taken.push_back(piece);
        covered += length;
      }
      at += length;
    }
    if (taken.empty() || covered != to - from) // (a piece cut by the range)
      return failure();
    if (taken.size() == 1)
      return counted(replaceByExisting(rewriter, op, taken[0]), count);
    return counted(fusion::replaceByLastBuilt(rewriter, op, {concatOf(rewriter, op.getLoc(), taken, concatAxis)}), count);
  }
};

// transpose(concat(transpose(x_i, p) ...) on axis c, q)  ->  concat(x_i) on axis p[c], then the
// two transposes' composition r (r[j] = p[q[j]]) unless q undoes p. (HY V4's keys: a slice
// assignment of [B, H, S, D] pieces, exported with D to the front, then transposed back to Kᵀ.)
struct TransposedConcatOfTransposes : fusion::CountedPattern<TransposeOp, RewriteCounter> {
  using CountedPattern::CountedPattern;

  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto concat = def<ConcatOp>(op.getInput());
    ArrayRef<int64_t> q = op.getPerm();
    if (!concat || q.empty())
      return failure();
    SmallVector<Value> inner;
    ArrayRef<int64_t> p;
    for (Value piece : concat.getInputs()) {
      auto t = def<TransposeOp>(piece);
      if (!t || t.getPerm().empty() || (!p.empty() && t.getPerm() != p))
        return failure();
      p = t.getPerm();
      inner.push_back(t.getInput());
    }
    const int64_t rank = int64_t(q.size());
    if (int64_t(p.size()) != rank)
      return failure();
    SmallVector<int64_t> r;
    bool undone = true;
    for (int64_t j = 0; j < rank; ++j) {
      if (q[j] < 0 || q[j] >= rank || p[q[j]] < 0 || p[q[j]] >= rank)
        return failure();
      r.push_back(p[q[j]]);
      undone &= r.back() == j;
    }
    const int64_t c = fusion::axisFrom0(int64_t(concat.getAxis()), rank);
    Operation *joined = concatOf(rewriter, op.getLoc(), inner, p[c]);
    if (undone || !joined)
      return counted(fusion::replaceByLastBuilt(rewriter, op, {joined}), count);
    Operation *turned = fusion::create(rewriter, op.getLoc(), "llmc.transpose", joined->getResults(),
                                       {rewriter.getNamedAttr("perm", rewriter.getDenseI64ArrayAttr(r))});
    return counted(fusion::replaceByLastBuilt(rewriter, op, {joined, turned}), count);
  }
};

struct FoldSliceAssignments : impl::LlmcFoldSliceAssignmentsBase<FoldSliceAssignments> {
  RewriteCounter scatters{"llmc-fold-slice-assignments", "scatters of contiguous rows turned into concatenations"};
  RewriteCounter slices{"llmc-fold-slice-assignments", "slices of whole concatenated pieces dropped"};
  RewriteCounter transposes{"llmc-fold-slice-assignments", "transposes around concatenated transposes dropped"};
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ScatterRowsToConcat>(&getContext(), scatters);
    patterns.add<SliceOfWholePieces>(&getContext(), slices);
    patterns.add<TransposedConcatOfTransposes>(&getContext(), transposes);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
