#include "Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace llmc {

void buildDefaultPipeline(mlir::OpPassManager &pm, const PipelineOptions &options) {
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  func.addPass(createLlmcFoldShapes());
  func.addPass(createLlmcDropIdentities());
  func.addPass(mlir::createCSEPass());
  func.addPass(mlir::createCanonicalizerPass());
  if (options.verifyStaticShapes)
    func.addPass(createLlmcVerifyStaticShapes());
}

namespace {
struct PipelineCLOptions : mlir::PassPipelineOptions<PipelineCLOptions> {
  Option<bool> verifyStaticShapes{*this, "verify-static-shapes",
                                  llvm::cl::desc("Fail when a shape is still dynamic after folding"),
                                  llvm::cl::init(true)};
};
} // namespace

void registerAllPasses() {
  registerLlmcPasses();
  mlir::PassPipelineRegistration<PipelineCLOptions>(
      "llmc-pipeline", "The default llmc compilation pipeline (see docs/passes.md)",
      [](mlir::OpPassManager &pm, const PipelineCLOptions &cl) {
        PipelineOptions options;
        options.verifyStaticShapes = cl.verifyStaticShapes;
        buildDefaultPipeline(pm, options);
      });
}

} // namespace llmc
