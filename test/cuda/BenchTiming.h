// Timing for the CUDA benchmarks (llmc-cuda-kernel-bench): kernels replayed as a decode step
// replays them.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>

// Microseconds per call of `launch(i)` (call i) on `stream` as a decode step runs its kernels:
// `reps` calls captured in one CUDA graph, replayed once to warm up and `replays` times timed;
// negative when a call or the graph fails (its message printed).
double timeGraph(cudaStream_t stream, const std::function<std::string(int)> &launch, int reps, int replays = 1);
