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

} // namespace llmc
