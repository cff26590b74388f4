#include "Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace llmc {

void buildDefaultPipeline(mlir::OpPassManager &pm, const PipelineOptions &options) {
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  auto add = [&](std::unique_ptr<mlir::Pass> pass) {
    if (!llvm::is_contained(options.skipPasses, pass->getArgument().str()))
      func.addPass(std::move(pass));
  };
  add(createLlmcFoldShapes());
  add(createLlmcDropIdentities());
  add(createLlmcFoldSliceAssignments());
  add(createLlmcSplitEinsum()); // einsums the CUDA kernel takes whole: five operands at most
  add(mlir::createCSEPass());
  add(mlir::createCanonicalizerPass());
  if (options.merging) // before the cache layout, which moves the parts' keys and values
    add(createLlmcDeinterleaveQkv());
  add(createLlmcKvCacheLayout());
  if (options.merging) {
    add(createLlmcAbsorbMla(LlmcAbsorbMlaOptions{options.mlaFactors}));
    add(createLlmcFoldConvAffine());
  }
  add(mlir::createCanonicalizerPass());
  if (options.fusion) {
    add(createLlmcRaiseNorms());
    add(createLlmcRaiseActivations());
    add(createLlmcRaiseAttention());
    add(createLlmcRaiseAttentionMask());
    add(createLlmcFuseResidualNorm());
    add(createLlmcFuseLinear());
    add(createLlmcFuseRouting()); // before llmc-fuse-elementwise takes the weights' division
    if (options.merging)
      add(createLlmcMergeParallelLinears());
    add(createLlmcFuseElementwise());
    add(mlir::createCSEPass());
    add(mlir::createCanonicalizerPass());
  }
  // After the norms and linears are raised: the cut moves above them.
  if (!options.lastPosition.empty())
    add(createLlmcLastPosition(
        LlmcLastPositionOptions{llvm::SmallVector<std::string>(options.lastPosition.begin(), options.lastPosition.end())}));
  // After attention raising, which looks for the transposes of the head split and of K.
  add(createLlmcFoldTransposes());
  if (options.fusion) // after the transposes fold: the query's rotary then turns its rows
    add(createLlmcFuseQueryRotary());
  // Last: the merged and absorbed weights are final.
  if (options.linearWeightsByOutput)
    add(createLlmcTransposeLinearWeights());
  if (options.verifyStaticShapes)
    add(createLlmcVerifyStaticShapes());
}

void buildPlanPreparation(mlir::OpPassManager &pm) {
  pm.nest<mlir::func::FuncOp>().addPass(createLlmcMarkGraphSegments());
}

std::vector<std::string> optionalPassNames() {
  return {"llmc-fold-slice-assignments",   "llmc-deinterleave-qkv",       "llmc-kv-cache-layout",
          "llmc-absorb-mla",               "llmc-fold-conv-affine",       "llmc-raise-norms",
          "llmc-raise-activations",
          "llmc-raise-attention",          "llmc-raise-attention-mask",   "llmc-fuse-residual-norm",
          "llmc-fuse-linear",              "llmc-fuse-routing",           "llmc-merge-parallel-linears",
          "llmc-fuse-elementwise",         "llmc-fold-transposes",        "llmc-fuse-query-rotary",
          "llmc-transpose-linear-weights"};
}

namespace {
struct PipelineCLOptions : mlir::PassPipelineOptions<PipelineCLOptions> {
  Option<bool> verifyStaticShapes{*this, "verify-static-shapes",
                                  llvm::cl::desc("Fail when a shape is still dynamic after folding"),
                                  llvm::cl::init(true)};
  Option<bool> fusion{*this, "fusion", llvm::cl::desc("Run the raising and fusion passes"), llvm::cl::init(true)};
  Option<bool> merging{*this, "merging", llvm::cl::desc("Run the weight-merging passes"), llvm::cl::init(true)};
  Option<std::string> mlaFactors{*this, "mla-factors",
                                 llvm::cl::desc("llmc-absorb-mla's W_UK/W_UV: auto, separate or multiplied"),
                                 llvm::cl::init("auto")};
  Option<bool> linearWeightsByOutput{*this, "linear-weights-by-output",
                                     llvm::cl::desc("Store linear weights [N, K] (llmc --target cuda does)"),
                                     llvm::cl::init(false)};
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
        options.mlaFactors = cl.mlaFactors;
        options.linearWeightsByOutput = cl.linearWeightsByOutput;
        buildDefaultPipeline(pm, options);
      });
}

} // namespace llmc
