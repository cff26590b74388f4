// A linear layer through cuBLASLt: y[M, N] = act(x[M, K] · W + bias), W [K, N] (or [N, K] with
// transB), all row-major in one storage type, f32 accumulation (TF32 tensor cores optional for
// f32). Descriptors and an algorithm per size class of M are chosen once, when the plan loads;
// running only builds the matrix layouts of the call's M and launches on the caller's stream
// with the caller's workspace (no allocation), so it can be captured in a CUDA graph.
#pragma once

#include "CudaKernels.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::rt::cuda {

struct LinearSpec {
  Storage storage = Storage::F32;
  int64_t maxM = 1, N = 0, K = 0;
  bool transB = false;
  bool bias = false;
  std::string activation = "none"; // "none", "relu", "gelu_tanh" (cuBLASLt's GELU is the tanh form)
  bool tf32 = false;               // f32 storage: TF32 tensor cores
};

class LtLinear {
public:
  ~LtLinear();
  // `handle` is a cublasLtHandle_t; `workspaceBytes` the workspace every run will get.
  static std::string create(void *handle, const LinearSpec &spec, size_t workspaceBytes, std::unique_ptr<LtLinear> &out);
  // 1 <= M <= spec.maxM. `bias` [N] when the spec has one.
  std::string run(const void *x, const void *w, const void *bias, void *y, int64_t M, void *workspace, void *stream) const;
  const LinearSpec &spec() const { return spec_; }

private:
  struct Impl;
  LinearSpec spec_;
  std::unique_ptr<Impl> impl_;
};

} // namespace llmc::rt::cuda
