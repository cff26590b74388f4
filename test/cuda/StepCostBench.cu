// What a decode step pays from one kernel to the next, against what one persistent kernel would
// pay there instead: a grid-wide barrier. A small model's decode step (SmolLM2: 154 launches for
// 269 MB of weights) is bound by these steps rather than by its bytes; whether a kernel for the
// whole step, its blocks waiting for each other where the launches now end, would be faster turns
// on these two figures, which docs/cuda.md could only estimate until they were measured.
//
// - Launches: a CUDA graph of 1000 kernels that compute nothing but read, in each block, what
//   another block of the kernel ahead wrote (so each waits for the whole kernel ahead), launched
//   as the executor launches a decode step: with programmatic dependent launch and without.
// - Barriers: one cooperative kernel of as many blocks doing 1000 rounds of the same reads and
//   writes, a grid-wide barrier after each (gridSync, DeviceUtil.cuh: the one the chained GEMV
//   takes between its linears, SmallLinear.cu).
// Each with one block of kThreads threads per multiprocessor, and with four.
#include "StepCostBench.h"

#include "BenchTiming.h"
#include "DeviceUtil.cuh"

#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <string>

namespace cu = llmc::rt::cuda;

namespace {

constexpr int kThreads = 128;

// Launches per graph and rounds per kernel; graph replays or kernels timed.
struct Steps {
  int steps, timedRuns;
};

// Block b writes out[b] from in[b + 1] (modulo the blocks): it waits for the whole kernel ahead.
__device__ __forceinline__ void passOn(const unsigned *in, unsigned *out) {
  if (threadIdx.x == 0)
    out[blockIdx.x] = __ldcg(in + (blockIdx.x + 1) % gridDim.x) + 1;
}

__global__ void __launch_bounds__(kThreads) stepKernel(const unsigned *in, unsigned *out) {
  cu::allowNextLaunch();
  cu::waitForPrevious();
  passOn(in, out);
}

// `steps` rounds of passOn between two buffers of gridDim.x, a barrier after each.
__global__ void __launch_bounds__(kThreads) barrierKernel(unsigned *buffers, cu::GridBarrier *barrier, int steps) {
  for (int s = 0; s < steps; ++s) {
    passOn(buffers + (s & 1) * gridDim.x, buffers + ((s + 1) & 1) * gridDim.x);
    cu::gridSync(barrier);
  }
}

// Microseconds per step of n.timedRuns calls of `run` (each n.steps steps) after one to warm up, or
// a message.
std::string timeSteps(cudaStream_t stream, const std::function<cudaError_t()> &run, Steps n, double &us) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start), cudaEventCreate(&stop);
  cudaError_t e = run();
  cudaEventRecord(start, stream);
  for (int i = 0; e == cudaSuccess && i < n.timedRuns; ++i)
    e = run();
  cudaEventRecord(stop, stream);
  if (e == cudaSuccess)
    e = cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  us = 1000.0 * ms / (n.timedRuns * n.steps);
  return e == cudaSuccess ? std::string() : cudaGetErrorString(e);
}

// Microseconds per step of a graph of n.steps stepKernel launches of `blocks` blocks, ping-ponging
// between two buffers; negative when it fails (its message printed).
double launchSteps(cudaStream_t stream, unsigned *buffers, int blocks, bool overlap, Steps n) {
  return timeGraph(
      stream,
      [&](int s) -> std::string {
        cu::launchKernel(overlap, stepKernel, dim3(unsigned(blocks)), dim3(kThreads), 0, stream,
                         static_cast<const unsigned *>(buffers + (s & 1) * blocks), buffers + ((s + 1) & 1) * blocks);
        const cudaError_t e = cudaGetLastError();
        return e == cudaSuccess ? std::string() : cudaGetErrorString(e);
      },
      n.steps, n.timedRuns);
}

// One cooperative barrierKernel of `blocks` blocks and n.steps rounds.
std::string barrierSteps(cudaStream_t stream, unsigned *buffers, cu::GridBarrier *barrier, int blocks, Steps n,
                         double &us) {
  return timeSteps(
      stream,
      [&] {
        cu::launchCooperative(barrierKernel, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, buffers, barrier,
                              n.steps);
        return cudaGetLastError();
      },
      n, us);
}

} // namespace

int stepCostBench(bool smoke) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const Steps n = smoke ? Steps{3, 1} : Steps{1000, 5};
  const int multiprocessors = smoke ? 2 : prop.multiProcessorCount;
  std::printf("from one kernel of a decode step to the next (%d steps, blocks of %d threads that compute nothing)\n",
              n.steps, kThreads);
  int resident = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, barrierKernel, kThreads, 0);
  unsigned *buffers = nullptr;
  cu::GridBarrier *barrier = nullptr;
  const int most = 4 * multiprocessors;
  cudaMalloc(&buffers, 2 * sizeof(unsigned) * size_t(most)), cudaMalloc(&barrier, sizeof *barrier);
  cudaMemset(buffers, 0, 2 * sizeof(unsigned) * size_t(most)), cudaMemset(barrier, 0, sizeof *barrier);
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  int failures = 0;
  auto row = [&](const std::string &what, const std::string &err, double us) {
    if (err.empty())
      std::printf("  %-58s %6.2f us per step\n", what.c_str(), us);
    else
      std::printf("  %-58s failed: %s\n", what.c_str(), err.c_str());
    failures += !err.empty();
  };
  for (int perSm : {1, 4}) {
    const int blocks = perSm * multiprocessors;
    const std::string grid = std::to_string(blocks) + " blocks";
    double us = 0;
    for (bool overlap : {false, true}) {
      if (overlap && prop.major < 9)
        continue;
      us = launchSteps(stream, buffers, blocks, overlap, n);
      row("a launch per step (CUDA graph" + std::string(overlap ? ", overlapping" : "") + "), " + grid,
          us < 0 ? "see above" : "", us);
    }
    if (!prop.cooperativeLaunch || resident < perSm) {
      std::printf("  %-58s skipped: no cooperative launch of %d blocks per multiprocessor here\n",
                  ("a grid barrier per step, " + grid).c_str(), perSm);
      continue;
    }
    const std::string err = barrierSteps(stream, buffers, barrier, blocks, n, us);
    row("a grid barrier per step (one cooperative kernel), " + grid, err, us);
  }
  cudaStreamDestroy(stream);
  cudaFree(buffers), cudaFree(barrier);
  return failures;
}
