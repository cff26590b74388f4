// The CPU kernel registry. A kernel reads its inputs and writes outputs whose dtype, shape
// and storage the caller has already set; it returns an empty string on success and an
// error message otherwise (it never aborts).
#pragma once

#include "Attrs.h"
#include "Tensor.h"

#include <string>
#include <string_view>
#include <vector>

namespace llmc::rt {

struct KernelArgs {
  const AttrList &attrs;
  const TensorRef *inputs;
  int numInputs;
  TensorRef *outputs;
  int numOutputs;

  const TensorRef &in(int i) const { return inputs[i]; }
  bool hasInput(int i) const { return i < numInputs && inputs[i].present(); }
  TensorRef &out(int i) const { return outputs[i]; }
};

using KernelFn = std::string (*)(const KernelArgs &args);

// Null when no kernel has that name. Names are the llmc dialect's op names without "llmc.".
KernelFn findKernel(std::string_view name);
std::vector<std::string> kernelNames();
// Elementwise kernels (the single ops and fused_elementwise): each input may have its own type.
bool isElementwiseKernel(std::string_view name);
// Kernels whose output holds the input's bytes unchanged (reshape, squeeze, ...).
bool isCopyKernel(std::string_view name);

// Sets the number of threads the GEMM may use (0: leave it). The setting is process-wide
// (OpenBLAS has one thread pool): contexts that ask for different counts take turns setting it.
void setGemmThreads(int threads);

} // namespace llmc::rt
