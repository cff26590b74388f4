// llmc-mark-graph-segments: which runs of ops a CUDA graph can capture (see Passes.td).
#include "Passes.h"

#include "llmc/Dialect/LlmcDialect.h"
#include "llmc/Dialect/SymbolicShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace llmc {
#define GEN_PASS_DEF_LLMCMARKGRAPHSEGMENTS
#include "Passes.h.inc"

namespace {

constexpr const char *kSegmentAttr = "llmc.graph_segment";

struct MarkGraphSegments : impl::LlmcMarkGraphSegmentsBase<MarkGraphSegments> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    // With symbol bounds, dynamic dimensions are fixed within a bucket where the analysis
    // expresses them in the input symbols; it fails as a whole when one depends on tensor data.
    std::optional<SymbolicShapes> shapes;
    if (func->hasAttr(kSymbolBoundsAttr)) {
      std::string error;
      if (auto analyzed = SymbolicShapes::analyze(func, error); succeeded(analyzed))
        shapes.emplace(std::move(*analyzed));
    }
    auto fixedWithinBucket = [&](mlir::Operation *op) {
      for (mlir::Type t : op->getResultTypes()) {
        auto type = mlir::dyn_cast<mlir::RankedTensorType>(t);
        if (!type || (!type.hasStaticShape() && !shapes))
          return false;
      }
      return true;
    };
    mlir::Builder b(func.getContext());
    int64_t segment = 0;
    bool open = false; // the current segment has ops
    for (mlir::Operation &op : func.getBody().front()) {
      if (!mlir::isa<LlmcDialect>(op.getDialect()) || mlir::isa<ConstantOp>(op))
        continue; // weights and the return: no launches
      if (fixedWithinBucket(&op)) {
        op.setAttr(kSegmentAttr, b.getI64IntegerAttr(segment));
        open = true;
      } else {
        op.removeAttr(kSegmentAttr);
        segment += open;
        open = false;
      }
    }
  }
};

} // namespace
} // namespace llmc
