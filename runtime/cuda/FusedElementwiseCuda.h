// CUDA C for a fused_elementwise program (FusedProgram.h): one thread per output element, the
// inputs broadcast through strides, every register a float as on the CPU. The CUDA executor
// compiles it with NVRTC (Nvrtc.h) for the plan's target architectures.
#pragma once

#include "FusedProgram.h"
#include "Tensor.h"

#include <string>
#include <vector>

namespace llmc::rt::cuda {

// The most inputs a generated kernel takes (they share one parameter struct of strides).
constexpr int kMaxFusedInputs = 16;

// Kernel parameters after the input and output pointers: the output's shape and each input's
// strides over it (0 where it broadcasts), row-major, up to kMaxRank dimensions.
struct FusedShape {
  long long count;
  int rank;
  long long dims[kMaxRank];
  long long strides[kMaxFusedInputs][kMaxRank];
};

// The source of `extern "C" __global__ void <name>(const T0 *in0, ..., U0 *out0, ..., FusedShape)`
// for inputs and outputs of the given dtypes (f32, f16, bf16 or bool; 16-bit results saturate). Fails (empty source, `error`
// set) for other dtypes or more than kMaxFusedInputs inputs.
std::string fusedElementwiseSource(const std::vector<fused::Instruction> &program, const std::vector<int> &results,
                                   const std::vector<DType> &inputs, const std::vector<DType> &outputs,
                                   const std::string &name, std::string &error);

} // namespace llmc::rt::cuda
