#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

#include "llmc/Dialect/LlmcDialect.cpp.inc"

#define GET_OP_CLASSES
#include "llmc/Dialect/LlmcOps.cpp.inc"

namespace llmc {

void LlmcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "llmc/Dialect/LlmcOps.cpp.inc"
      >();
}

Operation *LlmcDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

// The region computes one element: one 0-d block argument per input with its element type, one
// 0-d yielded value per result with the result's element type; the results have the inputs'
// broadcast shape.
LogicalResult FusedElementwiseOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("region has ") << body.getNumArguments() << " arguments for " << getInputs().size() << " inputs";
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs())) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 0 ||
        type.getElementType() != cast<RankedTensorType>(input.getType()).getElementType())
      return emitOpError("region arguments must be 0-d tensors of the inputs' element types");
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield.getValues().size() != getResults().size())
    return emitOpError("region must yield one value per result");
  for (auto [value, result] : llvm::zip(yield.getValues(), getResults())) {
    auto type = cast<RankedTensorType>(value.getType());
    auto resultType = cast<RankedTensorType>(result.getType());
    if (type.getRank() != 0 || type.getElementType() != resultType.getElementType())
      return emitOpError("yielded values must be 0-d tensors of the results' element types");
    for (Value input : getInputs()) {
      auto in = cast<RankedTensorType>(input.getType());
      if (in.getRank() > resultType.getRank())
        return emitOpError("an input has a higher rank than the results");
      for (int64_t d = 0; d < in.getRank(); ++d) {
        const int64_t a = in.getDimSize(d), b = resultType.getDimSize(resultType.getRank() - in.getRank() + d);
        if (a != 1 && a != ShapedType::kDynamic && b != ShapedType::kDynamic && a != b)
          return emitOpError("input ") << in << " does not broadcast to the result " << resultType;
      }
    }
  }
  return success();
}

} // namespace llmc
