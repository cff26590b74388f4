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
  func.addPass(createLlmcKvCacheLayout());
  if (options.merging)
    func.addPass(createLlmcFoldConvAffine());
  func.addPass(mlir::createCanonicalizerPass());
  if (options.fusion) {
    func.addPass(createLlmcRaiseNorms());
    func.addPass(createLlmcRaiseActivations());
    func.addPass(createLlmcRaiseAttention());
    func.addPass(createLlmcFuseResidualNorm());
    func.addPass(createLlmcFuseLinear());
    if (options.merging)
      func.addPass(createLlmcMergeParallelLinears());
    func.addPass(createLlmcFuseElementwise());
    func.addPass(mlir::createCSEPass());
    func.addPass(mlir::createCanonicalizerPass());
  }
  if (options.verifyStaticShapes)
    func.addPass(createLlmcVerifyStaticShapes());
}

namespace {
struct PipelineCLOptions : mlir::PassPipelineOptions<PipelineCLOptions> {
  Option<bool> verifyStaticShapes{*this, "verify-static-shapes",
                                  llvm::cl::desc("Fail when a shape is still dynamic after folding"),
                                  llvm::cl::init(true)};
  Option<bool> fusion{*this, "fusion", llvm::cl::desc("Run the raising and fusion passes"), llvm::cl::init(true)};
  Option<bool> merging{*this, "merging", llvm::cl::desc("Run the weight-merging passes"), llvm::cl::init(true)};
};
} // namespace

void registerAllPasses() {
  registerLlmcPasses();
  mlir::PassPipelineRegistration<PipelineCLOptions>(
      "llmc-pipeline", "The default llmc compilation pipeline (see docs/passes.md)",
      [](mlir::OpPassManager &pm, const PipelineCLOptions &cl) {
        PipelineOptions options;
        options.verifyStaticShapes = cl.verifyStaticShapes;
        options.fusion = cl.fusion;
        options.merging = cl.merging;
        buildDefaultPipeline(pm, options);
      });
}

} // namespace llmc
