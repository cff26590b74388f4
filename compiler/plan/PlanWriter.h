// Lowers func.func @main (llmc graph ops with static shapes) into a plan file.
#pragma once

#include "TokenizerImport.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "Attrs.h"
#include "Tensor.h"

namespace llmc {

struct PlanStats {
  int64_t kernels = 0;
  int64_t weights = 0;
  uint64_t weightBytes = 0;
  uint64_t fileBytes = 0;
  int64_t cudaKernels = 0; // CUBINs of a CUDA plan (fused regions times architectures)
  int64_t reducedValues = 0; // values a reduced-precision plan keeps in 16 bits
};

// A CUDA plan (llmc --target cuda): its architectures, and how to compile one fused elementwise
// region for one of them (the tool supplies NVRTC; the writer itself needs no CUDA).
struct CudaTarget {
  std::vector<std::string> archs; // "sm_90a", "sm_80"; the first is preferred
  std::function<std::string(const rt::AttrList &attrs, const std::vector<rt::DType> &inputs,
                            const std::vector<rt::DType> &outputs, const std::string &name, const std::string &arch,
                            std::vector<char> &cubin)>
      compileFused;
};

// A plan without its large float weights, which the runtime fills with random values from `seed`
// at load: benchmarks of big models without carrying their weights (llmc --random-weights).
struct RandomWeights {
  uint64_t seed = 0;
  int64_t minElements = 1024; // smaller weights and integer constants (shapes, ids) stay stored
};

struct PlanOptions {
  const TokenizerData *tokenizer = nullptr; // goes into the plan
  const CudaTarget *cuda = nullptr;         // a CUDA plan
  const RandomWeights *random = nullptr;    // a plan without its large weights
  // f32 (default), or F16 / BF16: the GPU keeps activations and weights in 16 bits (the file
  // stores those weights so too), accumulating in f32; see DevicePrecision.h for which values.
  rt::DType precision = rt::DType::F32;
  bool tf32 = false; // with f32: the GPU's GEMMs on TF32 tensor cores
};

// Writes the plan for `module` to `path`. The file appears complete or not at all: it is
// written to a temporary file in the same folder and renamed. Returns "" or an error message.
std::string writePlan(mlir::ModuleOp module, const std::string &path, const PlanOptions &options = {},
                      PlanStats *stats = nullptr);

} // namespace llmc
