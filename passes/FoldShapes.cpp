#include "Passes.h"

#include "llmc/Dialect/LlmcDialect.h"
#include "llmc/Dialect/SymbolicShapes.h"

#include "PatternUtil.h"

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

// top_k whose count has folded to a constant takes it as its `k` attribute.
bool lowerConstantCounts(mlir::func::FuncOp func) {
  llvm::SmallVector<TopKOp> counted;
  func.walk([&](TopKOp op) {
    if (op.getCount())
      counted.push_back(op);
  });
  bool changed = false;
  for (TopKOp op : counted) {
    auto count = constantInts(op.getCount());
    if (!count || count->size() != 1 || (*count)[0] < 0)
      continue;
    mlir::OpBuilder b(op);
    auto constant = TopKOp::create(b, op.getLoc(), op.getResultTypes(), op.getInput(), mlir::Value(), (*count)[0],
                                   op.getAxis(), op.getLargest(), op.getSorted());
    op->replaceAllUsesWith(constant->getResults());
    op.erase();
    changed = true;
  }
  return changed;
}

// Dimension equality (llmc::sameDim, sameDims) from the symbolic shapes of a function with
// bounds, while folds add values: those made after the analysis (`made`, whose storage may be an
// erased value's) are known only by their static sizes.
class SameDims {
public:
  explicit SameDims(mlir::func::FuncOp func) {
    if (func->hasAttr(kSymbolBoundsAttr))
      shapes_ = SymbolicShapes::analyze(func, error_);
  }
  bool operator()(mlir::Value a, int64_t i, mlir::Value b, int64_t j) const { return sameDim(of(a, b), a, i, b, j); }
  bool shape(mlir::Value a, mlir::Value b) const { return sameDims(of(a, b), a, b); }
  void made(mlir::Value v) { made_.insert(v); }

private:
  const SymbolicShapes *of(mlir::Value a, mlir::Value b) const {
    return mlir::succeeded(shapes_) && !made_.contains(a) && !made_.contains(b) ? &*shapes_ : nullptr;
  }
  std::string error_;
  mlir::FailureOr<SymbolicShapes> shapes_ = mlir::failure();
  llvm::DenseSet<mlir::Value> made_;
};

// The top_k whose indices `indices` are (through integer casts), where they hold every index of
// its axis once per row: k is the whole axis (DeepSeek-V3.2's K = min(2048, keys) with at most
// 2048 keys). `sameDim` compares two dimensions.
TopKOp permutationOf(mlir::Value indices, const SameDims &sameDim) {
  while (auto cast = fusion::def<CastOp>(indices)) {
    auto from = fusion::tensorType(cast.getInput()).getElementType();
    if (!from.isInteger(64) && !from.isInteger(32))
      return {};
    indices = cast.getInput();
  }
  auto topK = fusion::def<TopKOp>(indices);
  if (!topK || topK.getIndices() != indices)
    return {};
  const int64_t rank = fusion::tensorType(indices).getRank(), axis = fusion::axisFrom0(int64_t(topK.getAxis()), rank);
  return axis >= 0 && axis < rank && sameDim(topK.getInput(), axis, indices, axis) ? topK : TopKOp();
}

// scatter_elements(data, indices, updates) whose indices are a top_k's of the whole axis (each
// position written once) and whose updates hold one value  ->  that value in data's shape. What
// the top_k read then goes unused: DeepSeek-V3.2's index mask (`ones.scatter(-1, topk, False)`)
// over at most index_topk keys masks nothing, and its indexer is dead code.
bool foldCoveringScatters(mlir::func::FuncOp func) {
  llvm::SmallVector<ScatterElementsOp> scatters;
  func.walk([&](ScatterElementsOp op) { scatters.push_back(op); });
  if (scatters.empty())
    return false;
  SameDims sameDim(func);
  bool changed = false;
  for (ScatterElementsOp op : scatters) {
    auto data = fusion::tensorType(op.getData()), indices = fusion::tensorType(op.getIndices());
    const int64_t rank = data.getRank(), axis = fusion::axisFrom0(int64_t(op.getAxis()), rank);
    if (op.getReduction() != "none" || indices.getRank() != rank || axis < 0 || axis >= rank)
      continue;
    TopKOp topK = sameDim.shape(op.getData(), op.getIndices()) ? permutationOf(op.getIndices(), sameDim) : TopKOp();
    if (!topK || fusion::axisFrom0(int64_t(topK.getAxis()), rank) != axis)
      continue;
    // The one value of the updates, in data's shape.
    mlir::OpBuilder b(op);
    mlir::Value filled;
    if (auto fill = fusion::def<ConstantOfShapeOp>(op.getUpdates())) {
      auto shape = ShapeOp::create(b, op.getLoc(), op.getData(), 0, nullptr);
      filled = ConstantOfShapeOp::create(b, op.getLoc(), op.getType(), shape, fill.getDtypeAttr(), fill.getValueAttr());
    } else if (auto e = fusion::def<ExpandOp>(op.getUpdates());
               e && fusion::scalarValue(e.getInput()) && fusion::tensorType(e.getInput()).getNumElements() == 1) {
      auto shape = ShapeOp::create(b, op.getLoc(), op.getData(), 0, nullptr);
      filled = ExpandOp::create(b, op.getLoc(), op.getType(), e.getInput(), shape);
    } else if (fusion::scalarValue(op.getUpdates()) && op.getUpdates().getType() == op.getType()) {
      filled = op.getUpdates(); // a splat constant of the static shape
    }
    if (!filled)
      continue;
    sameDim.made(filled);
    op.getResult().replaceAllUsesWith(filled);
    op.erase();
    changed = true;
  }
  return changed;
}

// The one value every element of `v` holds, through views that only move or repeat elements
// (unsqueeze, squeeze, reshape, expand) down to a constant_of_shape or a splat constant.
std::optional<double> uniformValue(mlir::Value v) {
  while (mlir::Operation *op = v.getDefiningOp()) {
    if (!mlir::isa<UnsqueezeOp, SqueezeOp, ReshapeOp, ExpandOp>(op))
      break;
    v = op->getOperand(0);
  }
  if (auto fill = fusion::def<ConstantOfShapeOp>(v))
    return fill.getValue().convertToDouble();
  return fusion::scalarValue(v);
}

// where(c, x, y) whose condition holds one value  ->  the operand it selects, where that has the
// result's shape. (HY V4's masked_fill of its additive mask by the index mask that llmc-fold-shapes
// proved false, foldCoveringScatters: the mask itself.)
bool foldUniformSelections(mlir::func::FuncOp func) {
  llvm::SmallVector<std::pair<WhereOp, mlir::Value>> selections;
  func.walk([&](WhereOp op) {
    if (auto c = uniformValue(op.getCondition()))
      selections.push_back({op, *c != 0.0 ? op.getX() : op.getY()});
  });
  if (selections.empty())
    return false;
  const SameDims sameDim(func);
  bool changed = false;
  for (auto [op, chosen] : selections) {
    if (chosen.getType() != op.getType() || !sameDim.shape(chosen, op.getResult()))
      continue;
    op.getResult().replaceAllUsesWith(chosen);
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
      const bool lowered = lowerConstantSlices(func) | lowerConstantCounts(func) | applySymbolicFacts(func) |
                           foldCoveringScatters(func) | foldUniformSelections(func);
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
