// What a decode step pays from one kernel to the next, against what one persistent kernel would
// pay there instead: a grid-wide barrier. A small model's decode step (SmolLM2: 154 launches for
// 269 MB of weights) is bound by these steps rather than by its bytes; whether a kernel for the
// whole step, its blocks waiting for each other where the launches now end, would be faster turns
// on these two figures, which docs/cuda.md could only estimate until they were measured.
//
// - Launches: a CUDA graph of kSteps kernels that compute nothing but read, in each block, what
//   another block of the kernel ahead wrote (so each waits for the whole kernel ahead), launched
//   as the executor launches a decode step: with programmatic dependent launch and without.
// - Barriers: one cooperative kernel of as many blocks doing kSteps rounds of the same reads and
//   writes, a grid-wide barrier after each (an arrival count every block waits to see reach the
//   round's target).
// Each with one block of kThreads threads per multiprocessor, and with four.
#include "StepCostBench.h"

#include "DeviceUtil.cuh"

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <string>

namespace cu = llmc::rt::cuda;

namespace {

constexpr int kThreads = 128;
constexpr int kSteps = 1000;                                    // launches per graph, rounds per kernel
constexpr int kTimedRuns = 5;                                   // graph replays or kernels timed
constexpr unsigned long long kBarrierTimeoutNs = 1000000000ull; // a barrier waits at most 1 s

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

__device__ __forceinline__ unsigned long long nanoseconds() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every block's first thread adds one to `arrived` (release: what its block wrote goes first)
// and waits until the count reaches `target` (acquire: what every block wrote before arriving is
// then seen). A wait of more than kBarrierTimeoutNs (blocks that are not all resident) gives up
// and sets *timedOut, which ends every block's wait.
__device__ void gridBarrier(unsigned long long *arrived, unsigned long long target, int *timedOut) {
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> count(*arrived);
    count.fetch_add(1, cuda::memory_order_release);
    const unsigned long long start = nanoseconds();
    while (count.load(cuda::memory_order_acquire) < target && !*static_cast<volatile int *>(timedOut))
      if (nanoseconds() - start > kBarrierTimeoutNs)
        atomicExch(timedOut, 1);
  }
  __syncthreads();
}

// `steps` rounds of passOn between two buffers of gridDim.x, a barrier after each. `arrived`
// starts at 0.
__global__ void __launch_bounds__(kThreads)
    barrierKernel(unsigned *buffers, unsigned long long *arrived, int steps, int *timedOut) {
  for (int s = 0; s < steps && !*static_cast<volatile int *>(timedOut); ++s) {
    passOn(buffers + (s & 1) * gridDim.x, buffers + ((s + 1) & 1) * gridDim.x);
    gridBarrier(arrived, static_cast<unsigned long long>(s + 1) * gridDim.x, timedOut);
  }
}

// Microseconds per step of `runs` calls of `run` (each kSteps steps) after one to warm up, or a
// message.
std::string timeSteps(cudaStream_t stream, const std::function<cudaError_t()> &run, double &us) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start), cudaEventCreate(&stop);
  cudaError_t e = run();
  cudaEventRecord(start, stream);
  for (int i = 0; e == cudaSuccess && i < kTimedRuns; ++i)
    e = run();
  cudaEventRecord(stop, stream);
  if (e == cudaSuccess)
    e = cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  us = 1000.0 * ms / (kTimedRuns * kSteps);
  return e == cudaSuccess ? std::string() : cudaGetErrorString(e);
}

// A graph of kSteps stepKernel launches of `blocks` blocks, ping-ponging between two buffers.
std::string launchSteps(cudaStream_t stream, unsigned *buffers, int blocks, bool overlap, double &us) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  for (int s = 0; e == cudaSuccess && s < kSteps; ++s)
    cu::launchKernel(overlap, stepKernel, dim3(unsigned(blocks)), dim3(kThreads), 0, stream,
                     static_cast<const unsigned *>(buffers + (s & 1) * blocks), buffers + ((s + 1) & 1) * blocks);
  const cudaError_t captured = e == cudaSuccess ? cudaStreamEndCapture(stream, &graph) : e;
  e = cudaGetLastError();
  if (e == cudaSuccess)
    e = captured;
  if (e == cudaSuccess)
    e = cudaGraphInstantiate(&exec, graph, 0);
  std::string err = e == cudaSuccess ? timeSteps(
                                           stream, [&] { return cudaGraphLaunch(exec, stream); }, us)
                                     : cudaGetErrorString(e);
  if (exec)
    cudaGraphExecDestroy(exec);
  if (graph)
    cudaGraphDestroy(graph);
  return err;
}

// One cooperative barrierKernel of `blocks` blocks and kSteps rounds.
std::string barrierSteps(cudaStream_t stream, unsigned *buffers, unsigned long long *arrived, int *timedOut, int blocks,
                         double &us) {
  int steps = kSteps;
  void *args[] = {&buffers, &arrived, &steps, &timedOut};
  std::string err = timeSteps(
      stream,
      [&] {
        cudaMemsetAsync(arrived, 0, sizeof *arrived, stream);
        return cudaLaunchCooperativeKernel(reinterpret_cast<const void *>(barrierKernel), dim3(unsigned(blocks)),
                                           dim3(kThreads), args, 0, stream);
      },
      us);
  int late = 0;
  cudaMemcpy(&late, timedOut, sizeof late, cudaMemcpyDeviceToHost);
  return !err.empty() ? err : late ? "a barrier waited more than a second" : std::string();
}

} // namespace

int stepCostBench() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("from one kernel of a decode step to the next (%d steps, blocks of %d threads that compute nothing)\n",
              kSteps, kThreads);
  int resident = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, barrierKernel, kThreads, 0);
  unsigned *buffers = nullptr;
  unsigned long long *arrived = nullptr;
  int *timedOut = nullptr;
  const int most = 4 * prop.multiProcessorCount;
  cudaMalloc(&buffers, 2 * sizeof(unsigned) * size_t(most));
  cudaMalloc(&arrived, sizeof *arrived), cudaMalloc(&timedOut, sizeof *timedOut);
  cudaMemset(buffers, 0, 2 * sizeof(unsigned) * size_t(most)), cudaMemset(timedOut, 0, sizeof *timedOut);
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
    const int blocks = perSm * prop.multiProcessorCount;
    const std::string grid = std::to_string(blocks) + " blocks";
    double us = 0;
    for (bool overlap : {false, true}) {
      if (overlap && prop.major < 9)
        continue;
      const std::string err = launchSteps(stream, buffers, blocks, overlap, us);
      row("a launch per step (CUDA graph" + std::string(overlap ? ", overlapping" : "") + "), " + grid, err, us);
    }
    if (!prop.cooperativeLaunch || resident < perSm) {
      std::printf("  %-58s skipped: no cooperative launch of %d blocks per multiprocessor here\n",
                  ("a grid barrier per step, " + grid).c_str(), perSm);
      continue;
    }
    const std::string err = barrierSteps(stream, buffers, arrived, timedOut, blocks, us);
    row("a grid barrier per step (one cooperative kernel), " + grid, err, us);
  }
  cudaStreamDestroy(stream);
  cudaFree(buffers), cudaFree(arrived), cudaFree(timedOut);
  return failures;
}
