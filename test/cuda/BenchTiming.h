// Timing for the CUDA benchmarks (llmc-cuda-kernel-bench): kernels launched back to back, and
// replayed as a decode step replays them; and the device memory they run on.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>

// Device memory that frees itself, filled with 0x3c bytes (bf16 about 0.0115, f16 about 1.06).
struct BenchBuffer {
  void *p = nullptr;
  explicit BenchBuffer(size_t bytes) {
    if (cudaMalloc(&p, std::max<size_t>(bytes, 1)) == cudaSuccess)
      cudaMemset(p, 0x3c, bytes);
  }
  ~BenchBuffer() { cudaFree(p); }
  BenchBuffer(const BenchBuffer &) = delete;
};

// Microseconds per call of `launch(i)` (call i) on `stream` as a decode step runs its kernels:
// `reps` calls captured in one CUDA graph, replayed once to warm up and `replays` times timed;
// negative when a call or the graph fails (its message printed).
double timeGraph(cudaStream_t stream, const std::function<std::string(int)> &launch, int reps, int replays = 1);

// Microseconds per call of `launch(i)` (call i) launched back to back on the default stream, over
// `reps` calls after a few to warm up; negative when a call fails (its message printed).
double timeCalls(const std::function<std::string(int)> &launch, int reps);
