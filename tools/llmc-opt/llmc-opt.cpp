// llmc-opt: runs llmc passes on MLIR files, for lit tests and for custom pass plugins
// (--load-pass-plugin / --load-dialect-plugin come with MlirOptMain).
#include "Passes.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, ...
  llmc::registerAllPasses();
  mlir::DialectRegistry registry;
  registry.insert<llmc::LlmcDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "llmc optimizer driver\n", registry));
}
