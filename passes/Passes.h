// llmc passes and the default pipeline.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace llmc {

#define GEN_PASS_DECL
#include "Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

// What the default pipeline does; `llmc` and `llmc-opt --llmc-pipeline` build it from here.
struct PipelineOptions {
  bool verifyStaticShapes = true;
  bool fusion = true;  // the raising and fusion passes (llmc --disable-fusion turns them off)
  bool merging = true; // the weight-merging passes (llmc --disable-merging turns them off)
  std::string mlaFactors = "auto"; // llmc-absorb-mla's factors option (llmc --mla-factors)
  std::vector<std::string> skipPasses; // passes left out by name (llmc --skip-pass), to measure each
  std::vector<std::string> lastPosition; // outputs cut to the last sequence position (llmc --last-position)
  bool linearWeightsByOutput = false; // llmc-transpose-linear-weights (llmc --target cuda)
};

// The passes --skip-pass may name: the optimizations (the rest is needed for a valid plan).
std::vector<std::string> optionalPassNames();

// fold shapes (canonicalization with the ops' kernel-backed folders plus type refinement, to a
// fixed point; removes dead code) -> drop identities -> fold slice assignments -> split einsums
// -> CSE -> canonicalize -> [fusion: raise norms, activations, attention -> fuse residual+norm ->
// fuse linear epilogues -> fuse routing -> fuse elementwise -> canonicalize] -> fold transposes
// -> [fusion: fuse query rotary] -> [CUDA targets: transpose linear weights] -> verify static
// shapes. docs/passes.md explains each.
void buildDefaultPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

// What llmc runs after the pipeline, on the way to a plan: annotations for the runtime (mark
// graph segments), which --emit=mlir leaves out.
void buildPlanPreparation(mlir::OpPassManager &pm);

// Registers every llmc pass and the `llmc-pipeline` pass pipeline.
void registerAllPasses();

} // namespace llmc
