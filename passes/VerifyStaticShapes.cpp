#include "Passes.h"

#include "llmc/Dialect/SymbolicShapes.h"

#include "mlir/IR/BuiltinTypes.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCVERIFYSTATICSHAPES
#include "Passes.h.inc"

namespace {

// Names of the function arguments that have a dynamic dimension, for the error message.
std::string dynamicInputs(mlir::func::FuncOp func) {
  std::string names;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(func.getArgument(i).getType());
    if (type && !type.hasStaticShape()) {
      auto name = func.getArgAttrOfType<mlir::StringAttr>(i, "llmc.name");
      names += (names.empty() ? "" : ", ") + (name ? name.str() : "#" + std::to_string(i));
    }
  }
  return names;
}

struct VerifyStaticShapes : impl::LlmcVerifyStaticShapesBase<VerifyStaticShapes> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    if (func->hasAttr(kSymbolBoundsAttr)) {
      // Dynamic dimensions are fine where they follow from the bounded input symbols.
      std::string error;
      if (failed(SymbolicShapes::analyze(func, error))) {
        func.emitError() << error;
        signalPassFailure();
      }
      return;
    }
    auto result = func.walk([&](mlir::Operation *op) {
      for (mlir::Type t : op->getResultTypes()) {
        auto type = mlir::dyn_cast<mlir::RankedTensorType>(t);
        if (type && type.hasStaticShape())
          continue;
        std::string inputs = dynamicInputs(func);
        auto diag = op->emitError() << "result type " << t << " is not static; ";
        if (!inputs.empty())
          diag << "give the shapes of inputs with dynamic dimensions (" << inputs
               << ") with --input-shape NAME=DIMS, e.g. --input-shape input_ids=1x16";
        else
          diag << "a shape depends on run-time values, which this version does not support";
        return mlir::WalkResult::interrupt();
      }
      return mlir::WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
