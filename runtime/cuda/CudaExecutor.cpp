// The CUDA executor (libllmc_cuda.so; see CudaBackend.h): the plan's ops on the current CUDA
// device, every one by a CUDA kernel or cuBLASLt — a plan with an op that has none is refused
// when the context is created, never run half on the CPU. Weights are uploaded once; every other
// value gets a fixed slot in one device arena sized from the plan's bounds, so a run allocates
// nothing. A reduced-precision plan (llmc --precision f16|bf16) keeps the values its compiler
// chose in 16 bits (PlanValue::deviceDType); every kernel accumulates in f32, and the inputs and
// outputs cross the API as f32, converted on the device.
//
// With graphs on (the default), each graph segment the compiler marked (llmc-mark-graph-segments;
// every plan llmc writes today is one) is captured once per input-shape bucket (the input shapes
// determine every other shape and every kernel argument) and replayed after: a decode step is
// one graph launch between the input and output copies. A KV cache linked with
// llmc_context_link_cache stays on the device and is not copied at all, and then a decode step
// launches the ops with a cache length in their shapes that cannot read it on the device (a mask
// llmc-raise-attention-mask could not replace) and replays one graph captured once for every
// cache length (LengthFreeGraph.h: the cache append and the attention read their lengths from a
// table in device memory). A Hugging Face decoder's mask is the attention_mask input itself
// (llmc-raise-attention-mask), so its decode step is one graph launch.
//
// A run comes in two halves (startRun, finishRun: at most two in flight), so that a generator's
// host work between decode steps overlaps the device's (docs/cuda.md, "Decoding ahead"). Issue 7
// is still open: what ran on an H200 and what did not yet is in docs/cuda.md and
#include "DeviceArena.h"
#include "PlanReport.h"
#include "PlanShortcuts.h"
#include "PrepareOps.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace llmc::rt::cuda::exec {

namespace {

// The switches read from the environment to compare variants (docs/cuda.md): a mistyped value is
// an error rather than the default, so that a benchmark row measures what its name says.
bool parseCount(const char *value, int64_t &count) { // a whole number, 0 or more
  char *end = nullptr;
  const long long n = std::strtoll(value, &end, 10);
  if (!*value || *end || n < 0)
    return false;
  count = n;
  return true;
}

std::string blocksFromEnv(const char *name, int64_t &blocks) {
  const char *value = std::getenv(name);
  if (!value)
    return {};
  if (std::string(value) == "resident")
    blocks = -1;
  else if (!parseCount(value, blocks))
    return std::string(name) + "=" + value + ": must be 'resident' or a number of blocks";
  return {};
}

std::string rowsFromEnv(const char *name, int64_t &rows) {
  const char *value = std::getenv(name);
  if (value && !parseCount(value, rows))
    return std::string(name) + "=" + value + ": must be a number of rows";
  return {};
}

std::string switchFromEnv(const char *name, bool &on) {
  const char *value = std::getenv(name);
  if (!value)
    return {};
  if (std::string(value) != "0" && std::string(value) != "1")
    return std::string(name) + "=" + value + ": must be 0 or 1";
  on = *value == '1';
  return {};
}

std::string linkCache(void *state, int input, int output) {
  Executor &ex = *static_cast<Executor *>(state);
  const PlanValue &past = ex.plan->values[size_t(input)], &present = ex.plan->values[size_t(output)];
  const size_t bytes = std::max(deviceCapacity(past), deviceCapacity(present));
  void *buffer = nullptr;
  if (cudaError_t e = cudaMalloc(&buffer, std::max<size_t>(bytes, 1)); e != cudaSuccess)
    return cudaError("allocating the " + std::to_string(bytes) + "-byte cache '" + present.name + "'", e);
  ex.cacheBuffers.push_back(buffer);
  ex.cacheBytes += bytes;
  ex.device_[size_t(input)] = ex.device_[size_t(output)] = buffer;
  ex.resident[size_t(input)] = ex.resident[size_t(output)] = true;
  ex.dropGraphs();       // they hold the old addresses
  ex.arenaStale = true;  // one new layout at the next run, however many pairs are linked
  return {};
}

std::string create(const llmc_plan_t &plan, const CudaOptions &options, void **state) {
  // A CUDA plan says which architectures it was built for; every refusal names them.
  const std::string builtFor = plan.cudaArchs.empty() ? std::string() : "; the plan was built for CUDA " + plan.cudaArchList;
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0)
    return std::string("no CUDA device on this machine (") + (e != cudaSuccess ? cudaGetErrorString(e) : "none found") +
           ")" + builtFor;
  auto ex = std::make_unique<Executor>();
  attachPlan(*ex, plan);
  ex->useGraphs = options.graphs;
  ex->useSmallLinear = options.smallLinear;
  cudaGetDevice(&ex->device);
  cudaDeviceProp props{};
  cudaGetDeviceProperties(&props, ex->device);
  if (props.major < 8)
    return "the CUDA executor needs compute capability 8.0 or newer; device " + std::to_string(ex->device) + " (" +
           props.name + ") has " + std::to_string(props.major) + "." + std::to_string(props.minor);
  ex->arch = "sm_" + std::to_string(props.major * 10 + props.minor) + (props.major == 9 ? "a" : "");
  ex->overlapLaunches = options.overlap && props.major >= 9;
  // LLMC_CUDA_PREFETCH=0: no L2 prefetch of the weights after a decode attention (to compare).
  bool prefetch = true;
  // LLMC_CUDA_GEMV_BLOCKS=resident: the GEMV launches at most the blocks the GPU holds at once,
  // each taking several groups of columns (SmallLinearArgs::blocks; to compare); =N: at most N
  // (tests, to make every block loop; 0: as many as it has groups, the default).
  // LLMC_CUDA_GEMV_CHAIN=resident: a decode step's consecutive GEMVs of one row in one cooperative
  // launch, as many blocks as the GPU holds (Executor::gemvChain; to compare); =N: at most N blocks
  // (tests; 0: no chains, the default).
  // LLMC_CUDA_CHAIN_ATTENTION=1 (with LLMC_CUDA_GEMV_CHAIN): each layer's decode attention starts
  // its chain, a layer one launch (to compare).
  // LLMC_CUDA_SPLIT_PROMPT_ATTENTION=0: a prompt's attention never shares a block of query rows'
  // keys among blocks (Executor::splitPromptAttention; to compare).
  // LLMC_CUDA_CONV_GEMM=0: every convolution on the direct kernel (Executor::convGemm; to
  // compare). LLMC_CUDA_CONV_ROWS=N: a convolution's GEMM takes at most N rows per launch
  // (Executor::convRows; tests, so that a batch goes in chunks of images).
  // LLMC_CUDA_GROUPED_EXPERTS=0: every expert_linear on its warp per output (Executor::
  // groupedExperts; to compare).
  for (std::string err : {switchFromEnv("LLMC_CUDA_PREFETCH", prefetch),
                          blocksFromEnv("LLMC_CUDA_GEMV_BLOCKS", ex->gemvBlocks),
                          blocksFromEnv("LLMC_CUDA_GEMV_CHAIN", ex->gemvChain),
                          switchFromEnv("LLMC_CUDA_CHAIN_ATTENTION", ex->chainAttention),
                          switchFromEnv("LLMC_CUDA_SPLIT_PROMPT_ATTENTION", ex->splitPromptAttention),
                          switchFromEnv("LLMC_CUDA_CONV_GEMM", ex->convGemm),
                          rowsFromEnv("LLMC_CUDA_CONV_ROWS", ex->convRows),
                          switchFromEnv("LLMC_CUDA_GROUPED_EXPERTS", ex->groupedExperts)})
    if (!err.empty())
      return err;
  if (props.major >= 9 && prefetch)
    ex->prefetchWeightOf = weightsAfterAttention(plan);
  if (ex->gemvChain && !props.cooperativeLaunch)
    return std::string("LLMC_CUDA_GEMV_CHAIN: device ") + props.name + " has no cooperative launches";
  ex->sharedOptIn = props.sharedMemPerBlockOptin;
  ex->multiprocessors = props.multiProcessorCount;
  flashAttentionSetup(ex->sharedOptIn); // not while a graph is being captured
  latentAttentionSetup();
  if (!plan.cudaArchs.empty()) {
    // A CUBIN for sm_XY runs on compute capability X.Z with Z >= Y; an "a" one only on X.Y.
    std::string usable;
    for (const std::string &arch : plan.cudaArchs) {
      const int cc = std::atoi(arch.c_str() + 3);
      const bool exact = arch.back() == 'a';
      if (cc / 10 == props.major && (exact ? cc % 10 == props.minor : cc % 10 <= props.minor)) {
        usable = arch;
        break;
      }
    }
    if (usable.empty())
      return "device " + std::to_string(ex->device) + " (" + props.name + ") has compute capability " +
             std::to_string(props.major) + "." + std::to_string(props.minor) + builtFor +
             " (rebuild with llmc --target cuda --cuda-arch " + ex->arch + ")";
    ex->arch = usable;
  }
  if (cudaError_t e = cudaStreamCreateWithFlags(&ex->stream, cudaStreamNonBlocking); e != cudaSuccess)
    return cudaError("creating a stream", e);
  if (cublasLtCreate(&ex->lt) != CUBLAS_STATUS_SUCCESS)
    return "cuBLASLt could not be initialized";
  ex->workspaceBytes = kGemmWorkspace;
  if (cudaError_t e = cudaMalloc(&ex->workspace, ex->workspaceBytes); e != cudaSuccess)
    return cudaError("allocating the GEMM workspace", e);
  if (cudaError_t e = cudaMalloc(&ex->attentionWorkspace, ex->workspaceBytes); e != cudaSuccess)
    return cudaError("allocating the attention workspace", e);
  cudaMemset(ex->attentionWorkspace, 0, ex->workspaceBytes); // decodeAttention's counters start at 0
  if (cudaError_t e = cudaMalloc(&ex->errorFlag, sizeof(int)); e != cudaSuccess)
    return cudaError("allocating the error flag", e);
  cudaMemset(ex->errorFlag, 0, sizeof(int));
  if (ex->gemvChain) {
    decodeChainSetup(); // not while a graph is being captured
    if (cudaError_t e = cudaMalloc(&ex->chainBarrier, decodeChainBarrierBytes()); e != cudaSuccess)
      return cudaError("allocating the chained launches' barrier", e);
    cudaMemset(ex->chainBarrier, 0, decodeChainBarrierBytes()); // each launch leaves it so
  }
  for (cudaEvent_t &done : ex->runDone)
    if (cudaError_t e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming); e != cudaSuccess)
      return cudaError("creating an event", e);
  if (cudaError_t e = cudaMallocHost(&ex->hostFlag, Executor::kRunSlots * sizeof(int)); e != cudaSuccess)
    return cudaError("allocating the error flag's host copy", e);

  // Every op gets its kernel first: a plan with an op the executor cannot run is refused here.
  size_t scratch = 0;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    PreparedOp p;
    if (std::string err = prepareOp(*ex, int(k), p, scratch); !err.empty())
      return err;
    ex->ops.push_back(std::move(p));
  }
  if (ex->lengthSlots) {
    const size_t bytes = size_t(ex->lengthSlots) * sizeof(int64_t);
    if (cudaError_t e = cudaMalloc(&ex->lengths, bytes); e != cudaSuccess)
      return cudaError("allocating the length table", e);
    if (cudaError_t e = cudaMallocHost(&ex->hostLengths, Executor::kRunSlots * bytes); e != cudaSuccess)
      return cudaError("allocating the length table's staging copy", e);
  }

  ex->scratchBytes = scratch;
  ex->device_.assign(plan.values.size(), nullptr);
  ex->offsets.assign(plan.values.size(), 0);
  ex->resident.assign(plan.values.size(), false);
  for (size_t i = 0; i < plan.values.size(); ++i)
    if (plan.values[i].kind == fb::ValueKind_Weight) {
      ex->offsets[i] = ex->weightBytes;
      ex->weightBytes += weightSlot(plan.values[i]);
    }
  ex->stagingBytes = stagingBytesOf(plan);
  if (cudaError_t e = cudaMalloc(&ex->weights, std::max<size_t>(ex->weightBytes, 1)); e != cudaSuccess)
    return cudaError("allocating " + std::to_string(ex->weightBytes) + " bytes of weights", e);
  if (ex->stagingBytes)
    if (cudaError_t e = cudaMalloc(&ex->staging, ex->stagingBytes); e != cudaSuccess)
      return cudaError("allocating the staging buffer", e);
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const PlanValue &v = plan.values[i];
    if (v.kind != fb::ValueKind_Weight)
      continue;
    ex->device_[i] = static_cast<char *>(ex->weights) + ex->offsets[i];
    if (cudaError_t e = cudaMemcpy(ex->device_[i], v.narrow ? v.narrow : v.weight,
                                   size_t(v.shape.numel()) * dtypeSize(onDevice(v)), cudaMemcpyHostToDevice);
        e != cudaSuccess)
      return cudaError("uploading the weights", e);
  }
  if (std::string err = layoutArena(*ex); !err.empty())
    return err;
  *state = ex.release();
  return {};
}

// The ops at positions [first, end) of the run order, launched one by one (but those whose
// results nothing reads, and ops that are their input's view in this run: RunView).
std::string launchOps(Executor &ex, const std::vector<TensorRef> &tensors, size_t first, size_t end) {
  const llmc_plan_t &plan = *ex.plan;
  for (size_t pos = first; pos < end; ++pos) {
    const size_t k = size_t(ex.order[pos]);
    if (ex.unneeded[k] || ex.viewThisRun[k])
      continue;
    std::string err = ex.ops[k].chainable ? std::string() : flushChainedLinears(ex); // GEMVs queued before it
    if (err.empty())
      err = ex.ops[k].launch(ex, tensors);
    if (!err.empty()) {
      ex.chained.clear(); // not the next run's
      return "op '" + plan.ops[k].kernel + "'" + (plan.ops[k].location.empty() ? "" : " (" + plan.ops[k].location + ")") +
             ": " + err;
    }
  }
  return flushChainedLinears(ex);
}

// Launches the argmax of each batch's last row of the greedy-decoding output (this run's shape
// `t`, [batch, rows, vocab]) into ex.argmaxDevice.
std::string launchArgmax(Executor &ex, const TensorRef &t) {
  if (t.shape.rank < 2 || t.numel() == 0)
    return "greedy decoding needs a [batch, rows, vocab] output";
  const int64_t B = t.shape.dims[0], V = t.shape.dims[t.shape.rank - 1], rows = t.numel() / (B * V);
  return argmaxLastRows(storageOf(onDevice(ex.plan->values[size_t(ex.argmaxValue)])), ex.at(ex.argmaxValue), B, rows, V,
                        ex.argmaxDevice, ex.argmaxWorkspace, ex.stream);
}

// One segment's launches as one graph launch. A graph is kept per input-shape bucket (the input
// shapes fix every other shape and kernel argument) and replayed. Shapes not seen before are
// captured (recording the launches, not running them) and, where the new graph has the same
// kernels as the segment's last one (a decode step one token longer), that executable graph's
// arguments are updated in place instead of instantiating another. `withArgmax`: greedy decoding's
// argmax is the graph's last kernel.
std::string launchSegment(Executor &ex, Segment &seg, const std::vector<int64_t> &key,
                          const std::vector<TensorRef> &tensors, bool withArgmax) {
  auto found = seg.graphs.find(key);
  if (found == seg.graphs.end()) {
    if (cudaError_t e = cudaStreamBeginCapture(ex.stream, cudaStreamCaptureModeThreadLocal); e != cudaSuccess)
      return cudaError("starting a graph capture", e);
    ++ex.captures;
    std::string err = launchOps(ex, tensors, seg.first, seg.end);
    if (err.empty() && withArgmax)
      err = launchArgmax(ex, tensors[size_t(ex.argmaxValue)]);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(ex.stream, &graph);
    if (!err.empty() || ended != cudaSuccess) {
      if (graph)
        cudaGraphDestroy(graph);
      return !err.empty() ? err : cudaError("capturing the run as a graph", ended);
    }
    if (cudaGraphGetNodes(graph, nullptr, &ex.lastGraphNodes) != cudaSuccess)
      ex.lastGraphNodes = 0;
    cudaGraphExec_t exec = nullptr;
    cudaGraphExecUpdateResultInfo info{};
    if (seg.last && cudaGraphExecUpdate(seg.last, graph, &info) == cudaSuccess) {
      exec = seg.last; // now runs the new shapes: move it to their key
      for (auto it = seg.graphs.begin(); it != seg.graphs.end(); ++it)
        if (it->second == exec) {
          seg.graphs.erase(it);
          break;
        }
    } else {
      cudaGetLastError(); // a failed update is not an error: instantiate instead
      const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
      if (made != cudaSuccess) {
        cudaGraphDestroy(graph);
        return cudaError("instantiating the run's graph", made);
      }
      if (seg.graphs.size() >= kMaxGraphs) { // keep the newest: drop one other bucket
        auto victim = seg.graphs.begin();
        if (victim->second == seg.last && seg.graphs.size() > 1)
          ++victim;
        if (victim->second == seg.last)
          seg.last = nullptr;
        cudaGraphExecDestroy(victim->second);
        seg.graphs.erase(victim);
      }
    }
    cudaGraphDestroy(graph);
    found = seg.graphs.emplace(key, exec).first;
  }
  seg.last = found->second;
  if (cudaError_t e = cudaGraphLaunch(found->second, ex.stream); e != cudaSuccess)
    return cudaError("launching the run's graph", e);
  return {};
}

// Whether this run can replay the graph for every cache length: the split holds, and each of the
// graph's ops with a length in its shapes reads it from the length table in this run (a decode
// step's attention does; a prompt's does not).
bool lengthFreeRun(const Executor &ex) {
  if (!ex.split.whyNot.empty() || ex.split.order.empty())
    return false;
  for (int slot : ex.graphLengthSlots)
    if (slot < 0 || ex.runLengths[size_t(slot)] < 0)
      return false;
  return true;
}

// Every op of the plan: each marked segment as a graph launch (with graphs on), the rest one by
// one. A run that allows it (lengthFreeRun) launches the ops that build its mask, then replays
// the graph for every cache length, keyed by the input shapes without their length dimensions.
// Launches the plan's ops; with greedy decoding (setArgmaxOutput) also the argmax kernel, inside
// the last graph when the run ends with one (`argmaxLaunched` says whether it was launched).
std::string launchAll(Executor &ex, const std::vector<TensorRef> &tensors, bool &argmaxLaunched) {
  pointRunViews(ex, tensors);
  const bool lengthFree = ex.useGraphs && lengthFreeRun(ex);
  std::vector<int64_t> key;
  for (int vi : ex.plan->inputs) {
    const Shape &s = tensors[size_t(vi)].shape;
    const PlanValue &v = ex.plan->values[size_t(vi)];
    for (int d = 0; d < s.rank; ++d)
      key.push_back(lengthFree && v.dimNode[d] >= 0 && ex.split.lengthNode[size_t(v.dimNode[d])] ? -2 : s.dims[d]);
    key.push_back(-1);
  }
  const bool argmax = ex.argmaxValue >= 0;
  key.push_back(argmax); // graphs with the argmax kernel and without are different buckets
  argmaxLaunched = false;
  if (lengthFree) {
    if (std::string err = launchOps(ex, tensors, 0, ex.split.before); !err.empty())
      return err;
    argmaxLaunched = argmax;
    const size_t captures = ex.captures;
    std::string err = launchSegment(ex, ex.lengthFreeGraph, key, tensors, argmax);
    if (ex.captures != captures)
      ex.decodeGraphNodes = ex.lastGraphNodes;
    return err;
  }
  for (size_t i = 0; i < ex.segments.size(); ++i) {
    Segment &seg = ex.segments[i];
    const bool graph = ex.useGraphs && seg.capture, last = i + 1 == ex.segments.size();
    argmaxLaunched = argmax && graph && last;
    if (std::string err = graph ? launchSegment(ex, seg, key, tensors, argmaxLaunched)
                                : launchOps(ex, tensors, seg.first, seg.end);
        !err.empty())
      return err;
  }
  return {};
}

// Queues the copy of output `vi` to `host` (f32 from a 16-bit value through the staging buffer).
std::string copyOut(Executor &ex, int vi, const TensorRef &host) {
  const DType narrow = ex.plan->values[size_t(vi)].deviceDType;
  if (narrow != DType::None)
    if (std::string err = convertFloats(storageOf(narrow), ex.at(vi), Storage::F32, ex.staging, host.numel(), ex.stream);
        !err.empty())
      return err;
  if (host.bytes())
    if (cudaError_t e = cudaMemcpyAsync(host.data, narrow != DType::None ? ex.staging : ex.at(vi), host.bytes(),
                                        cudaMemcpyDeviceToHost, ex.stream);
        e != cudaSuccess)
      return cudaError("copying an output from the device", e);
  return {};
}

// Queues the copy of the greedy-decoding output's argmax (this run's shape `t`) to the host, into
// run slot `slot`.
std::string copyArgmax(Executor &ex, const TensorRef &t, int slot) {
  if (cudaError_t e = cudaMemcpyAsync(ex.argmaxHost + slot * ex.argmaxRows, ex.argmaxDevice,
                                      size_t(t.shape.dims[0]) * sizeof(int32_t), cudaMemcpyDeviceToHost, ex.stream);
      e != cudaSuccess)
    return cudaError("copying the argmax from the device", e);
  return {};
}

// The host bytes of the inputs that a run started ahead stages (inputRing): every input but the
// linked caches, at its bound.
size_t inputStagingBytes(const Executor &ex) {
  size_t bytes = 0;
  for (int vi : ex.plan->inputs)
    if (!ex.resident[size_t(vi)])
      bytes += aligned(ex.plan->values[size_t(vi)].capacity);
  return bytes;
}

// Queues input `vi` of this run: from the host (through the run slot's staging with `staged`,
// so that the caller may overwrite its buffer before the copy is done), or, as the input
// `fed` (int64 [batch, 1]), from the tokens of the previous run's argmax on the device.
std::string copyIn(Executor &ex, int vi, const TensorRef &t, char *staged, bool fed) {
  const DType narrow = ex.plan->values[size_t(vi)].deviceDType;
  void *to = narrow != DType::None ? ex.staging : ex.at(vi);
  if (fed) { // int32 tokens into the low halves of int64 ids (both little-endian, ids >= 0)
    if (t.dtype != DType::I64 || narrow != DType::None || !ex.argmaxDevice || t.numel() > ex.argmaxRows)
      return "an input fed by the argmax must be int64 ids, one per sequence of a greedy run";
    cudaMemsetAsync(to, 0, t.bytes(), ex.stream);
    if (cudaError_t e = cudaMemcpy2DAsync(to, sizeof(int64_t), ex.argmaxDevice, sizeof(int32_t), sizeof(int32_t),
                                          size_t(t.numel()), cudaMemcpyDeviceToDevice, ex.stream);
        e != cudaSuccess)
      return cudaError("feeding the argmax to an input", e);
    return {};
  }
  const void *from = t.data;
  if (staged && t.bytes()) {
    std::memcpy(staged, t.data, t.bytes());
    from = staged;
  }
  if (t.bytes())
    if (cudaError_t e = cudaMemcpyAsync(to, from, t.bytes(), cudaMemcpyHostToDevice, ex.stream); e != cudaSuccess)
      return cudaError("copying an input to the device", e);
  if (narrow != DType::None)
    if (std::string err = convertFloats(Storage::F32, ex.staging, storageOf(narrow), ex.at(vi), t.numel(), ex.stream);
        !err.empty())
      return err;
  return {};
}

// Queues one run and returns without waiting for it (finishRun waits). With `ahead`, the host
// inputs are staged in the run's slot, so that the caller can set the next run's inputs at once;
// `fed` (-1: none) is an input that the previous run's argmax feeds on the device. At most
// kRunSlots runs are in flight.
std::string startRun(void *state, const std::vector<TensorRef> &tensors, bool ahead, int fed) {
  Executor &ex = *static_cast<Executor *>(state);
  const llmc_plan_t &plan = *ex.plan;
  if (ex.inFlight.size() >= size_t(Executor::kRunSlots))
    return "two runs are in flight already: wait for one first";
  if (ex.arenaStale) {
    if (!ex.inFlight.empty()) // the arena moves: the runs that use it finish first
      cudaStreamSynchronize(ex.stream);
    if (std::string err = layoutArena(ex); !err.empty())
      return err;
    ex.arenaStale = false;
  }
  const int slot = ex.nextSlot;
  if (ahead && !ex.inputRing) {
    ex.inputSlotBytes = inputStagingBytes(ex);
    if (cudaError_t e = cudaMallocHost(&ex.inputRing, std::max<size_t>(Executor::kRunSlots * ex.inputSlotBytes, 1));
        e != cudaSuccess)
      return cudaError("allocating the inputs' staging", e);
  }
  char *staged = ahead ? ex.inputRing + size_t(slot) * ex.inputSlotBytes : nullptr;
  for (int vi : plan.inputs) {
    if (ex.resident[size_t(vi)]) // a linked cache: already on the device
      continue;
    const TensorRef &t = tensors[size_t(vi)];
    if (std::string err = copyIn(ex, vi, t, staged, vi == fed); !err.empty())
      return err;
    if (staged)
      staged += aligned(plan.values[size_t(vi)].capacity);
  }
  if (ex.lengthSlots) { // the slot's last run is done: its copy too
    int64_t *host = ex.hostLengths + size_t(slot) * size_t(ex.lengthSlots);
    ex.runLengths.resize(size_t(ex.lengthSlots));
    for (const PreparedOp &op : ex.ops)
      if (op.lengthSlot >= 0) {
        ex.runLengths[size_t(op.lengthSlot)] = op.length(tensors);
        host[op.lengthSlot] = std::max<int64_t>(ex.runLengths[size_t(op.lengthSlot)], 0);
      }
    if (cudaError_t e = cudaMemcpyAsync(ex.lengths, host, size_t(ex.lengthSlots) * sizeof(int64_t),
                                        cudaMemcpyHostToDevice, ex.stream);
        e != cudaSuccess)
      return cudaError("copying the length table to the device", e);
  }
  bool argmaxLaunched = false;
  if (std::string err = launchAll(ex, tensors, argmaxLaunched); !err.empty())
    return err;
  for (int vi : plan.outputs) {
    if (ex.resident[size_t(vi)])
      continue;
    if (vi != ex.argmaxValue) {
      if (std::string err = copyOut(ex, vi, tensors[size_t(vi)]); !err.empty())
        return err;
      continue;
    }
    if (!argmaxLaunched) // the run did not end with a graph that launched it
      if (std::string err = launchArgmax(ex, tensors[size_t(vi)]); !err.empty())
        return err;
    if (std::string err = copyArgmax(ex, tensors[size_t(vi)], slot); !err.empty())
      return err;
  }
  // Into pinned memory: a copy to pageable memory would wait for the stream by itself.
  cudaMemcpyAsync(ex.hostFlag + slot, ex.errorFlag, sizeof(int), cudaMemcpyDeviceToHost, ex.stream);
  if (cudaError_t e = cudaEventRecord(ex.runDone[slot], ex.stream); e != cudaSuccess)
    return cudaError("recording a run's end", e);
  ex.inFlight.push_back(slot);
  ex.nextSlot = (slot + 1) % Executor::kRunSlots;
  return {};
}

// Waits for the oldest run in flight and checks the kernels' error flag as it left it; its
// argmax is then argmaxResult's.
std::string finishRun(void *state) {
  Executor &ex = *static_cast<Executor *>(state);
  if (ex.inFlight.empty())
    return "no run in flight";
  const int slot = ex.inFlight.front();
  ex.inFlight.pop_front();
  ex.finished = slot;
  if (cudaError_t e = cudaEventSynchronize(ex.runDone[slot]); e != cudaSuccess)
    return cudaError("running the plan", e);
  if (ex.hostFlag[slot]) {
    cudaMemsetAsync(ex.errorFlag, 0, sizeof(int), ex.stream);
    return "an index was out of range (a token id outside the vocabulary, a position outside the rotary tables, a "
           "gather's or scatter's index outside its data, or a slice whose start the device computed reading past "
           "its input)";
  }
  return {};
}

std::string run(void *state, const std::vector<TensorRef> &tensors) {
  Executor &ex = *static_cast<Executor *>(state);
  if (!ex.inFlight.empty())
    return "runs started ahead are in flight: wait for them first";
  if (std::string err = startRun(state, tensors, false, -1); !err.empty()) {
    cudaStreamSynchronize(ex.stream); // what it queued before failing
    return err;
  }
  return finishRun(state);
}

void destroy(void *state) { delete static_cast<Executor *>(state); }

void pinHost(void *state, void *data, size_t bytes) {
  Executor &ex = *static_cast<Executor *>(state);
  if (!data || !bytes || ex.pinned.count(data))
    return;
  if (cudaHostRegister(data, bytes, cudaHostRegisterDefault) == cudaSuccess)
    ex.pinned.insert(data);
  else
    cudaGetLastError(); // not locked: copies stay staged, and the error is not this run's
}

std::string setArgmaxOutput(void *state, int value) {
  Executor &ex = *static_cast<Executor *>(state);
  if (value >= 0 && !ex.argmaxDevice) { // at most the batch's bound of rows
    ex.argmaxRows = std::max<int64_t>(dimBound(ex, value, 0), 1);
    const size_t bytes = size_t(ex.argmaxRows) * sizeof(int32_t);
    if (cudaError_t e = cudaMalloc(&ex.argmaxDevice, bytes); e != cudaSuccess)
      return cudaError("allocating the argmax", e);
    if (cudaError_t e = cudaMallocHost(&ex.argmaxHost, Executor::kRunSlots * bytes); e != cudaSuccess)
      return cudaError("allocating the argmax's host copy", e);
    const size_t workspace = argmaxWorkspaceBytes(ex.argmaxRows);
    if (cudaError_t e = cudaMalloc(&ex.argmaxWorkspace, workspace); e != cudaSuccess)
      return cudaError("allocating the argmax's workspace", e);
    if (cudaError_t e = cudaMemset(ex.argmaxWorkspace, 0, workspace); e != cudaSuccess)
      return cudaError("clearing the argmax's workspace", e);
  }
  if (value >= 0 && !isFloat(ex.plan->values[size_t(value)]))
    return "greedy decoding needs float scores";
  ex.argmaxValue = value;
  return {};
}

const int32_t *argmaxResult(void *state) {
  const Executor &ex = *static_cast<Executor *>(state);
  return ex.argmaxHost + ex.finished * ex.argmaxRows;
}

std::string fetchOutput(void *state, int value, const TensorRef &host) {
  Executor &ex = *static_cast<Executor *>(state);
  if (!ex.inFlight.empty())
    return "runs started ahead are in flight: wait for them first";
  if (std::string err = copyOut(ex, value, host); !err.empty())
    return err;
  if (cudaError_t e = cudaStreamSynchronize(ex.stream); e != cudaSuccess)
    return cudaError("copying an output from the device", e);
  return {};
}

void unpinHost(void *state, void *data) {
  Executor &ex = *static_cast<Executor *>(state);
  if (ex.pinned.erase(data))
    cudaHostUnregister(data);
}

size_t deviceBytes(void *state) {
  const Executor &ex = *static_cast<Executor *>(state);
  size_t arena = ex.arenaBytes;
  if (ex.arenaStale) { // as the next run will lay it out
    const std::vector<int> order = runOrder(*ex.plan, splitOf(ex));
    arena = ex.scratchBytes +
            planDeviceArena(*ex.plan, ex.resident, order, inPlaceOf(ex, order).elsewhere, ex.normOfLinear,
                            splitsAfterLinears(*ex.plan, order, ex.unneeded))
                .arena.total;
  }
  return ex.weightBytes + arena + ex.stagingBytes + ex.cacheBytes + 2 * ex.workspaceBytes + sizeof(int);
}

size_t graphCount(void *state) { return static_cast<Executor *>(state)->captures; }

size_t graphNodes(void *state) {
  const Executor &ex = *static_cast<Executor *>(state);
  return ex.decodeGraphNodes ? ex.decodeGraphNodes : ex.lastGraphNodes;
}

const CudaBackend kBackend{kCudaBackendAbi, create,    run,           destroy,              deviceBytes, graphCount,
                           check,           linkCache, plannedMemory, describeDecodeGraphs, pinHost,     unpinHost,
                           setArgmaxOutput, argmaxResult, fetchOutput, graphNodes, startRun, finishRun};

} // namespace

} // namespace llmc::rt::cuda::exec

extern "C" __attribute__((visibility("default"))) const llmc::rt::CudaBackend *llmc_cuda_backend() {
  return &llmc::rt::cuda::exec::kBackend;
}
