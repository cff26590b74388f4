#include "Passes.h"

#include "llmc/Dialect/LlmcDialect.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCDROPIDENTITIES
#include "Passes.h.inc"

namespace {

struct DropIdentities : impl::LlmcDropIdentitiesBase<DropIdentities> {
  void runOnOperation() override {
    getOperation().walk([](mlir::Operation *op) {
      bool drop = mlir::isa<IdentityOp>(op);
      if (auto cast = mlir::dyn_cast<CastOp>(op))
        drop = cast.getInput().getType() == cast.getType();
      if (drop && op->getOperand(0).getType() == op->getResult(0).getType()) {
        op->getResult(0).replaceAllUsesWith(op->getOperand(0));
        op->erase();
      }
    });
  }
};

} // namespace
} // namespace llmc
