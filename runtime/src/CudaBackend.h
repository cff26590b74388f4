// The CUDA executor lives in libllmc_cuda.so, which libllmc loads when a context asks for the
// CUDA device: libllmc itself never depends on CUDA, so it loads on machines without it. Both
// libraries come from one build (the interface passes C++ types); `abi` guards against mixing.
#pragma once

#include "Plan.h"

#include <string>
#include <vector>

namespace llmc::rt {

constexpr int kCudaBackendAbi = 11;

struct CudaOptions {
  bool graphs = true;      // capture each input-shape bucket's launches once and replay them
  bool smallLinear = true; // linears of 1 to 8 rows with [N, K] weights on llmc's kernel, not cuBLASLt
  bool overlap = true;     // decode kernels start as the kernel before them ends (compute capability 9.0+)
};

struct CudaBackend {
  int abi;
  // Prepares `plan` on the current CUDA device: uploads the weights, allocates one arena for
  // every other value, and checks that every op has a CUDA kernel (no CPU fallback). Sets
  // *state, or returns why not (no device, an op without a kernel, out of memory).
  std::string (*create)(const llmc_plan_t &plan, const CudaOptions &options, void **state);
  // One run: `tensors` (one per plan value) hold this run's shapes; inputs' data is read from
  // the host pointers there, outputs' data written to them.
  std::string (*run)(void *state, const std::vector<TensorRef> &tensors);
  void (*destroy)(void *state);
  // Device bytes the context holds: weights, arena and workspaces (nothing is allocated per run).
  size_t (*deviceBytes)(void *state);
  // CUDA graphs captured so far: one per input-shape bucket run, one for all the decode steps of
  // a plan that LengthFreeGraph.h splits (a replay captures nothing).
  size_t (*graphCount)(void *state);
  // Without a device: which ops of `plan` have no CUDA kernel (or one that cannot take them), one
  // line per kind of op; empty when the executor can run every op.
  std::string (*check)(const llmc_plan_t &plan);
  // Keeps value `output` in device memory and makes value `input` read its leading rows: a KV
  // cache that stays on the device (llmc_context_link_cache). Neither crosses the bus after.
  std::string (*linkCache)(void *state, int input, int output);
  // Without a device: the bytes a context of `plan` would hold (weights; activations: the arena;
  // other: workspaces and staging). False when some op has no kernel.
  bool (*plannedMemory)(const llmc_plan_t &plan, size_t *weights, size_t *activations, size_t *other);
  // Without a device: how a generator's decode steps (caches linked) use CUDA graphs, one line:
  // one graph replayed for every cache length (LengthFreeGraph.h), or why each length is captured.
  std::string (*describeDecodeGraphs)(const llmc_plan_t &plan);
  // Page-locks host memory that runs copy to or from (a context's own input and output buffers),
  // so that those copies are DMA transfers at the bus's speed instead of staged through the
  // driver; best effort (memory that cannot be locked stays as it is). Until unpinHost or
  // destroy, which must come before the memory is freed.
  void (*pinHost)(void *state, void *data, size_t bytes);
  void (*unpinHost)(void *state, void *data);
  // Greedy decoding: runs leave output `value` ([batch, rows, vocab], or -1: none) on the device
  // and copy back only the index of the largest score of each batch's last row, which
  // argmaxResult holds after the run; fetchOutput copies this run's `value` to `host` after all
  // (the caller wants the scores this time).
  std::string (*setArgmaxOutput)(void *state, int value);
  const int32_t *(*argmaxResult)(void *state);
  std::string (*fetchOutput)(void *state, int value, const TensorRef &host);
  // The nodes of the graph captured last (0: none yet).
  size_t (*graphNodes)(void *state);
  // A run in two halves, so that the host prepares the next run while the device computes this
  // one (a generator's decode steps): startRun queues it (at most two in flight; `run` refuses
  // while any is) and returns; with `ahead` its host inputs are staged first, so that their
  // buffers may change at once; input value `fed` (-1: none; int64 ids [batch, 1]) takes the
  // previous run's argmax tokens on the device instead of its host data. finishRun waits for the
  // oldest run in flight, after which argmaxResult holds its tokens.
  std::string (*startRun)(void *state, const std::vector<TensorRef> &tensors, bool ahead, int fed);
  std::string (*finishRun)(void *state);
};

} // namespace llmc::rt

// Exported by libllmc_cuda.so.
extern "C" const llmc::rt::CudaBackend *llmc_cuda_backend();
