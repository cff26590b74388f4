#include "Passes.h"

#include "llmc/Dialect/LlmcDialect.h"
#include "llmc/Dialect/SymbolicShapes.h"

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

// With symbolic input dimensions: dimensions that the symbolic analysis proves constant refine
// the types, and small integer results whose contents it proves constant (a static dimension read
// through Shape/Gather, say) become constants. Returns whether anything changed. An op the
// analysis cannot handle stops nothing here; the verify pass reports it.
bool applySymbolicFacts(mlir::func::FuncOp func) {
  if (!func->hasAttr(kSymbolBoundsAttr))
    return false;
  std::string error;
  auto shapes = SymbolicShapes::analyze(func, error);
  if (mlir::failed(shapes))
    return false;
  bool changed = false;
  llvm::SmallVector<mlir::Operation *> ops;
  for (mlir::Operation &op : func.getBody().front())
    if (!mlir::isa<ConstantOp>(op) && mlir::isa<LlmcDialect>(op.getDialect()))
      ops.push_back(&op);
  for (mlir::Operation *op : ops) {
    for (mlir::Value result : op->getResults()) {
      auto type = mlir::cast<mlir::RankedTensorType>(result.getType());
      const ValueShape &facts = shapes->shape(result);
      llvm::SmallVector<int64_t> dims(type.getShape());
      for (size_t d = 0; d < dims.size(); ++d)
        if (auto c = facts.dims[d].asConstant(); c && mlir::ShapedType::isDynamic(dims[d]))
          dims[d] = *c;
      if (llvm::ArrayRef<int64_t>(dims) != type.getShape()) {
        result.setType(mlir::RankedTensorType::get(dims, type.getElementType()));
        changed = true;
      }
    }
    if (op->getNumResults() != 1 || !shapes->shape(op->getResult(0)).contents)
      continue;
    llvm::SmallVector<int64_t> values;
    for (const DimExpr &e : *shapes->shape(op->getResult(0)).contents)
      if (auto c = e.asConstant())
        values.push_back(*c);
    auto type = mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    if (values.size() != size_t(type.getNumElements()) || !type.getElementType().isInteger())
      continue;
    llvm::SmallVector<mlir::APInt> bits;
    for (int64_t v : values)
      bits.push_back(mlir::APInt(type.getElementType().getIntOrFloatBitWidth(), uint64_t(v), /*isSigned=*/true));
    mlir::OpBuilder b(op);
    auto constant = ConstantOp::create(b, op->getLoc(), type, mlir::DenseElementsAttr::get(type, bits));
    op->getResult(0).replaceAllUsesWith(constant.getResult());
    op->erase();
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
      const bool lowered = lowerConstantSlices(func) | applySymbolicFacts(func);
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
