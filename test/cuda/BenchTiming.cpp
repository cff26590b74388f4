// BenchTiming.h's timing of launches and of graph replays.
#include "BenchTiming.h"

#include <cstdio>

double timeGraph(cudaStream_t stream, const std::function<std::string(int)> &launch, int reps, int replays) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::string err;
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; e == cudaSuccess && err.empty() && i < reps; ++i)
    err = launch(i);
  const cudaError_t ended = e == cudaSuccess ? cudaStreamEndCapture(stream, &graph) : e;
  if (err.empty() && ended == cudaSuccess)
    e = cudaGraphInstantiate(&exec, graph, 0);
  float ms = -1;
  if (err.empty() && ended == cudaSuccess && e == cudaSuccess) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start), cudaEventCreate(&stop);
    cudaGraphLaunch(exec, stream);
    cudaEventRecord(start, stream);
    for (int r = 0; r < replays; ++r)
      cudaGraphLaunch(exec, stream);
    cudaEventRecord(stop, stream);
    e = cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start), cudaEventDestroy(stop);
  }
  if (exec)
    cudaGraphExecDestroy(exec);
  if (graph)
    cudaGraphDestroy(graph);
  if (err.empty() && (ended != cudaSuccess || e != cudaSuccess))
    err = cudaGetErrorString(ended != cudaSuccess ? ended : e);
  if (!err.empty()) {
    std::printf("    failed: %s\n", err.c_str());
    cudaGetLastError();
    return -1;
  }
  return 1000.0 * ms / (double(reps) * replays);
}

double timeCalls(const std::function<std::string(int)> &launch, int reps) {
  for (int i = 0; i < 3; ++i)
    if (std::string err = launch(i); !err.empty()) {
      std::printf("    failed: %s\n", err.c_str());
      return -1;
    }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < reps; ++i)
    launch(i);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::printf("    failed: %s\n", cudaGetErrorString(e));
    return -1;
  }
  return 1000.0 * ms / reps;
}
