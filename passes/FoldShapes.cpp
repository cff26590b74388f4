#include "Passes.h"

#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFOLDSHAPES
#include "Passes.h.inc"

namespace {

// `refined` keeps every static dimension of `current` and adds those `inferred` knows.
mlir::Type refine(mlir::Type current, mlir::Type inferred) {
  auto a = mlir::dyn_cast<mlir::RankedTensorType>(current);
  auto b = mlir::dyn_cast<mlir::RankedTensorType>(inferred);
  if (!a || !b || a.getRank() != b.getRank() || a.getElementType() != b.getElementType())
    return current;
  llvm::SmallVector<int64_t> dims(a.getShape());
  for (size_t i = 0; i < dims.size(); ++i)
    if (mlir::ShapedType::isDynamic(dims[i]))
      dims[i] = b.getDimSize(i);
  return mlir::RankedTensorType::get(dims, a.getElementType());
}

// Re-infers the result types of every llmc op in order; returns whether any type changed.
bool refineTypes(mlir::func::FuncOp func) {
  bool changed = false;
  func.walk([&](mlir::Operation *op) {
    auto infer = mlir::dyn_cast<mlir::InferTypeOpInterface>(op);
    if (!infer)
      return;
    llvm::SmallVector<mlir::Type> inferred;
    if (mlir::failed(infer.inferReturnTypes(op->getContext(), std::nullopt, op->getOperands(),
                                            op->getAttrDictionary(), op->getPropertiesStorage(),
                                            op->getRegions(), inferred)) ||
        inferred.size() != op->getNumResults())
      return;
    for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
      mlir::Type next = refine(result.getType(), type);
      if (next != result.getType()) {
        result.setType(next);
        changed = true;
      }
    }
  });
  return changed;
}

// Dynamic slices whose starts and ends have folded to constants become plain slices.
bool lowerConstantSlices(mlir::func::FuncOp func) {
  llvm::SmallVector<DynamicSliceOp> slices;
  func.walk([&](DynamicSliceOp op) { slices.push_back(op); });
  bool changed = false;
  for (DynamicSliceOp op : slices) {
    auto starts = constantInts(op.getStarts()), ends = constantInts(op.getEnds());
    if (!starts || !ends)
      continue;
    mlir::OpBuilder b(op);
    auto slice = SliceOp::create(b, op.getLoc(), op.getInput(), b.getDenseI64ArrayAttr(*starts),
                                 b.getDenseI64ArrayAttr(*ends), op.getAxesAttr(), op.getStepsAttr());
    op.getResult().replaceAllUsesWith(slice.getResult());
    op.erase();
    changed = true;
  }
  return changed;
}

struct FoldShapes : impl::LlmcFoldShapesBase<FoldShapes> {
  using Base::Base;

  mlir::LogicalResult initialize(mlir::MLIRContext *context) override {
    mlir::RewritePatternSet set(context);
    for (mlir::Dialect *dialect : context->getLoadedDialects())
      dialect->getCanonicalizationPatterns(set);
    for (mlir::RegisteredOperationName op : context->getRegisteredOperations())
      op.getCanonicalizationPatterns(set, context);
    patterns = mlir::FrozenRewritePatternSet(std::move(set));
    return mlir::success();
  }

  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    for (unsigned i = 0; i < maxIterations; ++i) {
      bool folded = false;
      if (mlir::failed(mlir::applyPatternsGreedily(func, patterns, mlir::GreedyRewriteConfig(), &folded)))
        return signalPassFailure();
      const bool lowered = lowerConstantSlices(func);
      if (!refineTypes(func) && !folded && !lowered)
        break;
    }
    // The function returns what its body now computes.
    auto ret = llvm::cast<mlir::func::ReturnOp>(func.getBody().front().getTerminator());
    func.setFunctionType(
        mlir::FunctionType::get(func.getContext(), func.getArgumentTypes(), ret.getOperandTypes()));
  }

  mlir::FrozenRewritePatternSet patterns;
};

} // namespace
} // namespace llmc
