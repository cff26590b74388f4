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
// docs/gpu-results.md.
#include "CudaBackend.h"
#include "CudaKernels.h"
#include "FusedElementwiseCuda.h"
#include "LengthFreeGraph.h"
#include "LtLinear.h"
#include "MemoryPlan.h"
#include "Nvrtc.h"

#include "plan_generated.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>

namespace llmc::rt::cuda {
namespace {

namespace fb = llmc::plan;

std::string cudaError(const std::string &what, cudaError_t e) { return what + ": " + cudaGetErrorString(e); }

constexpr size_t kAlign = 256;
constexpr size_t kMaxGraphs = 64; // input-shape buckets kept as graphs; a new one beyond replaces another
constexpr size_t kGemmWorkspace = 32u << 20;

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Executor;

// One op, prepared: `launch` runs it on the executor's stream for this run's shapes.
struct PreparedOp {
  std::string name;
  std::function<std::string(Executor &, const std::vector<TensorRef> &)> launch;
  // Ops that can read a length from the executor's length table (slot `lengthSlot`) instead of
  // their launch arguments (the cache rows before a concatenation's new ones, a decode step's
  // key count): this run's length, or -1 where this run's launch takes it as an argument after
  // all. Null for other ops. See LengthFreeGraph.h.
  std::function<int64_t(const std::vector<TensorRef> &)> length;
  int lengthSlot = -1;
};

// A run of consecutive ops: one graph segment of the plan (llmc-mark-graph-segments), captured
// as a CUDA graph per input-shape bucket, or ops launched one by one.
struct Segment {
  size_t first = 0, end = 0; // ops [first, end) of Executor::order
  bool capture = false;
  std::map<std::vector<int64_t>, cudaGraphExec_t> graphs; // by the inputs' shapes
  cudaGraphExec_t last = nullptr;                           // the one launched last
};

// A slice that launches nothing in the runs where it takes all of its input (steps of 1, the
// output's shape the input's: a decode step's last position of --last-position, [1, 1, D] of
// [1, 1, D]): its readers read the input there (pointSliceViews), and the arena keeps the input
// until the slice's last reader (planDeviceArena). `own`: the slice's output and the copies of
// it, with their own arena addresses, which the other runs use.
struct SliceView {
  int op = -1;
  std::vector<std::pair<int, void *>> own;
};

void destroyGraphs(Segment &segment) {
  for (auto &entry : segment.graphs)
    cudaGraphExecDestroy(entry.second);
  segment.graphs.clear();
  segment.last = nullptr;
}

struct Executor {
  const llmc_plan_t *plan = nullptr;
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *weights = nullptr, *arena = nullptr, *workspace = nullptr;
  void *attentionWorkspace = nullptr; // decode attention's partial results (as large as the GEMMs')
  void *staging = nullptr; // f32 inputs and outputs of values kept in 16 bits, on their way
  size_t stagingBytes = 0;
  int *errorFlag = nullptr; // device: set by kernels that meet bad data (an id out of range)
  int *hostFlag = nullptr;  // its pinned host copies, one per run slot, read after each run
  size_t weightBytes = 0, arenaBytes = 0, workspaceBytes = 0, scratchBytes = 0, cacheBytes = 0;
  std::vector<void *> device_; // per value: its device address (weights or arena slot)
  std::vector<PreparedOp> ops;
  std::vector<std::unique_ptr<LtLinear>> linears;
  std::vector<cudaLibrary_t> libraries;
  std::string arch; // "sm_90a"
  size_t sharedOptIn = 0; // shared memory a block may opt in to
  bool useGraphs = true;
  bool useSmallLinear = true; // linears of few rows with [N, K] weights on smallLinear (CudaOptions)
  // Programmatic dependent launch of a decode step's GEMVs, QKV split and attention (CudaOptions;
  // compute capability 9.0 and newer).
  bool overlapLaunches = false;
  // RMS norms that smallLinear computes in front of the linear right after them, in the runs
  // where that linear takes it (findNormsBeforeLinears): per op, the norm of a linear / the
  // linear of a norm, or -1.
  std::vector<int> normOfLinear, linearOfNorm;
  // Splits that smallLinear does in its epilogue (output pieces) in the runs where it takes the
  // linear before them (findSplitsAfterLinears): per op, the split of a linear / the linear of a
  // split, or -1.
  std::vector<int> splitOfLinear, linearOfSplit;
  // Per decode attention op: the linear after it whose weight its blocks ask the L2 cache to
  // fetch meanwhile (weightsAfterAttention; AttentionArgs::prefetchL2), or -1.
  std::vector<int> prefetchWeightOf;
  // Per op: nothing on the device reads what it computes (a target shape that only reshape ops
  // take, whose output shapes the host knows already: unneededOnDevice), so it is not launched.
  std::vector<bool> unneeded;
  std::vector<SliceView> sliceViews;
  std::vector<bool> viewThisRun; // per op: a slice of sliceViews that takes all its input in this run
  // Per value: for a concatenation of one value with itself along the last axis (a Hugging Face
  // export's rotation tables, cos(concat(a, a)) after llmc-fuse-elementwise), that value; else
  // -1. Attentions read their tables' first half there (AttentionArgs::halfTables).
  std::vector<int> halfOf;
  bool dry = false; // checking a plan without a device: prepare nothing that needs one
  std::vector<Segment> segments;
  std::vector<bool> resident;       // per value: a linked cache, never copied to or from the host
  bool arenaStale = false;          // caches were linked since the arena was laid out
  std::vector<void *> cacheBuffers; // their device memory (llmc_context_link_cache)
  std::vector<size_t> offsets;      // per value: its offset in the weights or the arena
  std::vector<int64_t> dimBounds;   // per dimension-expression node: its largest value
  // The length table: per slot (PreparedOp::lengthSlot) this run's length, written to the
  // device before any launch; `hostLengths` is its pinned staging copy (one per run slot).
  int lengthSlots = 0;
  int64_t *lengths = nullptr, *hostLengths = nullptr;
  std::vector<int64_t> runLengths; // per slot: this run's length, -1 where its launch takes it as an argument
  // The ops in the order they run: those that must run before a graph replayed for every cache
  // length first (LengthFreeGraph.h), or the plan's order when no such split holds.
  LengthFreeSplit split;
  std::vector<int> order;
  Segment lengthFreeGraph; // ops [split.before, end) of `order`, one graph for every cache length
  std::vector<int> graphLengthSlots; // the slots of that graph's ops with a length in their shapes (-1: none)
  // Per value: the linked cache's concatenation (op index) whose new rows it is, written there by
  // its producer directly (inPlaceOf), or -1.
  std::vector<int> cacheRows;
  // Key rotations done by the split that makes their keys (inPlaceOf): per split op, the
  // rotary op and the piece it turns; per rotary op, its split (-1 elsewhere).
  struct SplitRotary {
    int rotary = -1, piece = -1;
  };
  std::vector<SplitRotary> rotaryOfSplit;
  std::vector<int> splitOfRotary;
  size_t captures = 0;     // graphs captured so far (a replay captures nothing)
  size_t lastGraphNodes = 0;    // the nodes of the graph captured last
  size_t decodeGraphNodes = 0;  // those of the graph that every cache length replays (decode steps)
  std::set<void *> pinned; // host memory page-locked by pinHost
  // Greedy decoding (setArgmaxOutput): the output left on the device, and the last rows' argmax
  // (on the device, and its pinned host copy).
  int argmaxValue = -1;
  int32_t *argmaxDevice = nullptr, *argmaxHost = nullptr; // argmaxHost: one row of tokens per run slot
  int64_t argmaxRows = 0;                                  // the batch's bound
  // Runs started ahead (startRun): at most kRunSlots in flight, each with a slot of the host
  // buffers that the next run must not overwrite before this one's copies are done (its length
  // table, argmax and error flag copies, and with `ahead` its inputs, staged in `inputRing`),
  // and an event after its work. `finished`: the slot of the run finishRun waited for last.
  static constexpr int kRunSlots = 2;
  cudaEvent_t runDone[kRunSlots] = {};
  std::deque<int> inFlight;
  int nextSlot = 0, finished = 0;
  char *inputRing = nullptr;
  size_t inputSlotBytes = 0;
  void *argmaxWorkspace = nullptr; // argmaxLastRows' (zeroed once; each launch leaves it so)

  ~Executor() {
    if (stream) // runs started ahead and not waited for: done before their memory goes
      cudaStreamSynchronize(stream);
    for (void *p : pinned)
      cudaHostUnregister(p);
    dropGraphs();
    for (void *p : cacheBuffers)
      cudaFree(p);
    for (cudaLibrary_t l : libraries)
      cudaLibraryUnload(l);
    linears.clear();
    if (lt)
      cublasLtDestroy(lt);
    cudaFree(weights);
    cudaFree(arena);
    cudaFree(workspace);
    cudaFree(attentionWorkspace);
    cudaFree(staging);
    cudaFree(errorFlag);
    cudaFreeHost(hostFlag);
    cudaFree(lengths);
    cudaFreeHost(hostLengths);
    cudaFree(argmaxDevice);
    cudaFree(argmaxWorkspace);
    cudaFreeHost(argmaxHost);
    cudaFreeHost(inputRing);
    for (cudaEvent_t e : runDone)
      if (e)
        cudaEventDestroy(e);
    if (stream)
      cudaStreamDestroy(stream);
  }

  void *at(int value) const { return value >= 0 ? device_[size_t(value)] : nullptr; }

  void dropGraphs() {
    for (Segment &segment : segments)
      destroyGraphs(segment);
    destroyGraphs(lengthFreeGraph);
  }
};

void findNormsBeforeLinears(Executor &ex, const std::vector<int> &order);
std::vector<bool> unneededOnDevice(const llmc_plan_t &plan, const std::vector<int> &halfOf);
std::vector<int> repeatedHalves(const llmc_plan_t &plan);
bool readsHalfTables(const PlanOp &op, const std::vector<int> &halfOf);

// Starts an executor for `plan`, before its ops are prepared: the bounds of the plan's
// dimensions (checked when the plan was loaded; left at 0, which no kernel takes as a bound, if
// not), and the norms that linears may compute.
void attachPlan(Executor &ex, const llmc_plan_t &plan) {
  ex.plan = &plan;
  ex.halfOf = repeatedHalves(plan);
  ex.unneeded = unneededOnDevice(plan, ex.halfOf);
  findNormsBeforeLinears(ex, {});
  std::vector<int64_t> minima, maxima;
  for (const PlanSymbol &symbol : plan.symbols)
    minima.push_back(symbol.min), maxima.push_back(symbol.max);
  if (!fb::boundDimExprs(plan.dimNodes, minima.data(), maxima.data(), ex.dimBounds).empty())
    ex.dimBounds.assign(plan.dimNodes.size(), 0);
}

// The element type a value has on the device: its 16-bit type in a reduced-precision plan.
DType onDevice(const PlanValue &v) { return v.deviceDType != DType::None ? v.deviceDType : v.dtype; }

bool isFloat(const PlanValue &v) { return v.dtype == DType::F32 || v.dtype == DType::F16; }

Storage storageOf(DType d) { return d == DType::F16 ? Storage::F16 : d == DType::BF16 ? Storage::BF16 : Storage::F32; }

// The one storage type of an op's float operands (the compiler gives every float operand of a
// non-elementwise op the same one, DevicePrecision.h); an error when they differ.
std::string floatStorage(const Executor &ex, const PlanOp &op, Storage &out) {
  DType found = DType::None;
  auto visit = [&](int v) {
    if (v < 0 || !isFloat(ex.plan->values[size_t(v)]))
      return true;
    const DType d = onDevice(ex.plan->values[size_t(v)]);
    if (found != DType::None && d != found)
      return false;
    found = d;
    return true;
  };
  for (int i : op.inputs)
    if (!visit(i))
      return "float operands in different storage types (" + std::string(dtypeName(found)) + " and " +
             dtypeName(onDevice(ex.plan->values[size_t(i)])) + ")";
  for (int o : op.outputs)
    if (!visit(o))
      return "float operands in different storage types";
  out = storageOf(found);
  return {};
}

// Bytes of a value at its bound on the device (capacity is counted in the plan's element type).
size_t deviceCapacity(const PlanValue &v) { return v.capacity / dtypeSize(v.dtype) * dtypeSize(onDevice(v)); }

// Bytes of a value of this run's shape on the device.
size_t deviceBytesOf(const Executor &ex, int value, const Shape &shape) {
  return size_t(shape.numel()) * dtypeSize(onDevice(ex.plan->values[size_t(value)]));
}

int64_t lastDim(const Shape &s) { return s.rank ? s.dims[s.rank - 1] : 1; }

int64_t rowsBefore(const Shape &s, int axis) {
  int64_t n = 1;
  for (int d = 0; d < axis; ++d)
    n *= s.dims[d];
  return n;
}

// --- the ops ----------------------------------------------------------------------------------

// Who writes and who reads each value of a plan (plan outputs count as a reader).
struct ValueUses {
  std::vector<int> producer, readers;
};

ValueUses usesOf(const llmc_plan_t &plan) {
  ValueUses u{std::vector<int>(plan.values.size(), -1), std::vector<int>(plan.values.size(), 0)};
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    for (int v : plan.ops[k].inputs)
      if (v >= 0)
        ++u.readers[size_t(v)];
    for (int v : plan.ops[k].outputs)
      u.producer[size_t(v)] = int(k);
  }
  for (int v : plan.outputs)
    ++u.readers[size_t(v)];
  return u;
}

// Per op, its position in `order` (empty: the plan's order).
std::vector<int> positionsIn(const std::vector<int> &order, size_t ops) {
  std::vector<int> position(ops);
  for (size_t k = 0; k < ops; ++k)
    position[order.empty() ? k : size_t(order[k])] = int(k);
  return position;
}

// Norms that the linear after them can compute (smallLinear's normScale): an rms_norm or
// add_rms_norm over the last axis whose result only the next op reads, a linear with an [N, K]
// weight in the same storage, with a scale per element. The two are next to each other in the
// plan and in the run order (`order`, empty: the plan's), so that nothing between them could read
// the norm's sum before the linear writes it.
// Where a norm op's scale is among its inputs: after the residual of an add_ norm.
size_t normScaleInput(const PlanOp &norm) { return norm.kernel.rfind("add_", 0) == 0 ? 2 : 1; }

void findNormsBeforeLinears(Executor &ex, const std::vector<int> &order) {
  const llmc_plan_t &plan = *ex.plan;
  ex.normOfLinear.assign(plan.ops.size(), -1);
  ex.linearOfNorm.assign(plan.ops.size(), -1);
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  const std::vector<int> readers = usesOf(plan).readers;
  for (size_t k = 0; k + 1 < plan.ops.size(); ++k) {
    const PlanOp &norm = plan.ops[k], &linear = plan.ops[k + 1];
    const bool add = norm.kernel == "add_rms_norm";
    if ((norm.kernel != "rms_norm" && !add) || position[k + 1] != position[k] + 1 || linear.kernel != "linear" ||
        linear.attrs.getInt("transB", 0) == 0 ||
        linear.inputs.empty() || norm.outputs.empty() || linear.inputs[0] != norm.outputs[0] ||
        readers[size_t(norm.outputs[0])] != 1)
      continue;
    const PlanValue &x = plan.values[size_t(norm.inputs[0])], &y = plan.values[size_t(norm.outputs[0])];
    const PlanValue &scale = plan.values[size_t(norm.inputs[normScaleInput(norm)])];
    const int64_t axis = norm.attrs.getInt("axis", -1);
    if (!isFloat(x) || onDevice(x) != onDevice(y) || x.shape.rank < 1 || (axis != -1 && axis != x.shape.rank - 1) ||
        scale.shape.numel() != lastDim(x.shape) || onDevice(scale) != onDevice(x))
      continue;
    // The residual sum is written by one warp while the others run: the linear must not read it.
    if (add && norm.outputs.size() > 1 &&
        std::find(linear.inputs.begin() + 1, linear.inputs.end(), norm.outputs[1]) != linear.inputs.end())
      continue;
    ex.linearOfNorm[k] = int(k + 1);
    ex.normOfLinear[k + 1] = int(k);
  }
}

int axisOf(const PlanOp &op, int rank);
ShiftedOutput destinationOf(const Executor &e, int v, const std::vector<TensorRef> &t);
std::string rotaryArgsOf(const Executor &e, const PlanOp &op, const std::vector<TensorRef> &t, RotaryArgs &a);

int backThroughCopies(const llmc_plan_t &plan, const ValueUses &uses, int v, std::vector<int> &way);

// Splits that the linear before them can do (smallLinear's output pieces), for ops that run in
// `order` (empty: the plan's): a split of the last axis into at most kMaxLinearPieces pieces in
// the linear's storage, the one reader of the output of a linear with an [N, K] weight and no
// activation, gate or residual (through copy ops, each value read once, the last axis kept),
// with nothing between the two in the run order but those copies and ops that launch nothing
// (`unneeded`: a reshape's target shape), so that writing the pieces at the linear's turn skips
// no op; the arena keeps the linear's inputs until the split (planDeviceArena). A merged QKV
// projection's split, with the key rotation and the cache appends that the split does
// (inPlaceOf). Per op: the split after a linear, or -1.
std::vector<int> splitsAfterLinears(const llmc_plan_t &plan, const std::vector<int> &order,
                                    const std::vector<bool> &unneeded) {
  std::vector<int> splitOfLinear(plan.ops.size(), -1);
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  const ValueUses uses = usesOf(plan);
  std::vector<int> way;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &split = plan.ops[k];
    if (split.kernel != "split" || split.inputs.empty() || split.outputs.size() > size_t(kMaxLinearPieces))
      continue;
    const int l = backThroughCopies(plan, uses, split.inputs[0], way);
    if (l < 0 || plan.ops[size_t(l)].kernel != "linear" || position[k] <= position[size_t(l)])
      continue;
    const PlanOp &linear = plan.ops[size_t(l)];
    const std::string_view activation = linear.attrs.getString("activation");
    auto absent = [&](size_t i) {
      return linear.inputs.size() <= i || linear.inputs[i] < 0 || plan.values[size_t(linear.inputs[i])].shape.numel() == 0;
    };
    const PlanValue &in = plan.values[size_t(split.inputs[0])], &out = plan.values[size_t(way.back())];
    if (linear.attrs.getInt("transB", 0) == 0 || !(activation.empty() || activation == "none") || !absent(3) ||
        !absent(4) || !isFloat(out) || in.shape.rank < 1 || axisOf(split, in.shape.rank) != in.shape.rank - 1 ||
        lastDim(in.shape) <= 0 || lastDim(in.shape) != lastDim(out.shape) ||
        onDevice(plan.values[size_t(linear.inputs[0])]) != onDevice(out))
      continue;
    bool fits = true;
    for (int o : split.outputs)
      fits &= o >= 0 && onDevice(plan.values[size_t(o)]) == onDevice(out);
    for (int pos = position[size_t(l)] + 1; fits && pos < position[k]; ++pos) {
      const int between = order.empty() ? pos : order[size_t(pos)];
      fits = unneeded[size_t(between)] || std::any_of(way.begin(), way.end() - 1, [&](int v) {
               return uses.producer[size_t(v)] == between;
             });
    }
    if (fits)
      splitOfLinear[size_t(l)] = int(k);
  }
  return splitOfLinear;
}

void findSplitsAfterLinears(Executor &ex, const std::vector<int> &order) {
  ex.splitOfLinear = splitsAfterLinears(*ex.plan, order, ex.unneeded);
  ex.linearOfSplit.assign(ex.plan->ops.size(), -1);
  for (size_t k = 0; k < ex.splitOfLinear.size(); ++k)
    if (ex.splitOfLinear[k] >= 0)
      ex.linearOfSplit[size_t(ex.splitOfLinear[k])] = int(k);
}

// Per op: for a fused_attention whose output (through copy ops, read once each) only a linear
// reads, that linear (its weight, at most 64 MiB, fits the L2 cache beside the rest), else -1.
// A decode step's attention leaves the memory mostly idle; its output projection's weight
// comes in meanwhile.
std::vector<int> weightsAfterAttention(const llmc_plan_t &plan) {
  std::vector<int> linearOf(plan.ops.size(), -1);
  const ValueUses uses = usesOf(plan);
  std::vector<int> way;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &linear = plan.ops[k];
    if (linear.kernel != "linear" || linear.inputs.size() < 2 || linear.inputs[1] < 0)
      continue;
    const int attention = backThroughCopies(plan, uses, linear.inputs[0], way);
    const PlanValue &w = plan.values[size_t(linear.inputs[1])];
    if (attention >= 0 && plan.ops[size_t(attention)].kernel == "fused_attention" &&
        w.kind == fb::ValueKind_Weight && size_t(w.shape.numel()) * dtypeSize(onDevice(w)) <= (size_t(64) << 20))
      linearOf[size_t(attention)] = int(k);
  }
  return linearOf;
}

// The split after linear op `k` as smallLinear's output pieces, added to `a` where the kernel
// takes them (else `a` stays as it is, and the split launches itself).
void addOutputPieces(const Executor &e, int k, const std::vector<TensorRef> &t, Storage st, SmallLinearArgs &a) {
  const int index = e.splitOfLinear.empty() ? -1 : e.splitOfLinear[size_t(k)];
  if (index < 0)
    return;
  const PlanOp &split = e.plan->ops[size_t(index)];
  const Executor::SplitRotary fused = e.rotaryOfSplit.empty() ? Executor::SplitRotary() : e.rotaryOfSplit[size_t(index)];
  SmallLinearArgs with = a;
  for (int o : split.outputs) {
    LinearPiece &piece = with.piece[with.pieces++];
    piece.columns = lastDim(t[size_t(o)].shape);
    if (o != fused.piece) {
      piece.to = destinationOf(e, o, t);
    } else if (rotaryArgsOf(e, e.plan->ops[size_t(fused.rotary)], t, piece.rotary).empty()) {
      piece.to = piece.rotary.y;
    } else {
      return; // the split's own launch reports it
    }
  }
  if (smallLinearTakes(st, with))
    a = with;
}

// The smallLinear call of linear op `k` in this run, with the norm before it folded in where
// findNormsBeforeLinears paired them, and the split after it where findSplitsAfterLinears did;
// false when this run's linear does not take smallLinear (then cuBLASLt runs it, and the norm
// and the split their own kernels). The linear's, the norm's and the split's launches all ask,
// so that they agree.
bool smallLinearCall(const Executor &e, int k, const std::vector<TensorRef> &t, Storage st, SmallLinearArgs &a) {
  const PlanOp &op = e.plan->ops[size_t(k)];
  if (!e.useSmallLinear || op.attrs.getInt("transB", 0) == 0)
    return false;
  auto given = [&](size_t i) { return op.inputs.size() > i && op.inputs[i] >= 0 && t[size_t(op.inputs[i])].numel() > 0; };
  const Shape &w = t[size_t(op.inputs[1])].shape;
  const std::string activation(op.attrs.getString("activation"));
  a = SmallLinearArgs();
  a.K = w.dims[1], a.N = w.dims[0], a.M = t[size_t(op.inputs[0])].numel() / a.K, a.swiglu = activation == "swiglu";
  a.x = e.at(op.inputs[0]), a.w = e.at(op.inputs[1]), a.bias = given(2) ? e.at(op.inputs[2]) : nullptr;
  a.gate = given(3) ? e.at(op.inputs[3]) : nullptr, a.residual = given(4) ? e.at(op.inputs[4]) : nullptr;
  a.out = e.at(op.outputs[0]);
  a.overlapPrevious = e.overlapLaunches;
  if (const int n = e.normOfLinear.empty() ? -1 : e.normOfLinear[size_t(k)]; n >= 0) {
    const PlanOp &norm = e.plan->ops[size_t(n)];
    const bool add = norm.kernel == "add_rms_norm";
    a.x = e.at(norm.inputs[0]);
    a.normResidual = add ? e.at(norm.inputs[1]) : nullptr;
    a.normScale = e.at(norm.inputs[normScaleInput(norm)]);
    a.normSum = add && norm.outputs.size() > 1 ? e.at(norm.outputs[1]) : nullptr;
    a.normEpsilon = float(norm.attrs.getFloat("epsilon", 1e-5));
  }
  if (!smallLinearTakes(st, a))
    return false;
  addOutputPieces(e, k, t, st, a);
  return true;
}

std::string prepareNorm(Executor &ex, const PlanOp &op, int k, PreparedOp &out) {
  const bool fused = op.kernel == "add_rms_norm" || op.kernel == "add_layer_norm";
  const bool layer = op.kernel == "layer_norm" || op.kernel == "add_layer_norm";
  const int scaleAt = int(normScaleInput(op)), biasAt = scaleAt + 1;
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
  const int rank = x.shape.rank;
  const int64_t axis = op.attrs.getInt("axis", -1);
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (!isFloat(x) || (axis != -1 && axis != rank - 1))
    return "needs a float input and normalization over the last axis";
  const int64_t n = lastDim(x.shape);
  const PlanValue &scale = ex.plan->values[size_t(op.inputs[size_t(scaleAt)])];
  if (scale.shape.numel() != n)
    return "needs one scale per element of the last axis";
  const bool hasBias = layer && int(op.inputs.size()) > biasAt && op.inputs[size_t(biasAt)] >= 0;
  if (hasBias && ex.plan->values[size_t(op.inputs[size_t(biasAt)])].shape.numel() != n)
    return "needs one bias per element of the last axis";
  const float eps = float(op.attrs.getFloat("epsilon", 1e-5));
  out.launch = [=, &op](Executor &e, const std::vector<TensorRef> &t) {
    SmallLinearArgs a;
    if (const int linear = e.linearOfNorm[size_t(k)]; linear >= 0 && smallLinearCall(e, linear, t, st, a))
      return std::string(); // the linear computes it (smallLinear's normScale)
    const Shape &s = t[size_t(op.inputs[0])].shape;
    return addNorm(st, layer, e.at(op.inputs[0]), fused ? e.at(op.inputs[1]) : nullptr,
                   e.at(op.inputs[size_t(scaleAt)]), hasBias ? e.at(op.inputs[size_t(biasAt)]) : nullptr,
                   e.at(op.outputs[0]), fused ? e.at(op.outputs[1]) : nullptr, rowsBefore(s, s.rank - 1), lastDim(s), eps,
                   e.stream);
  };
  return {};
}

std::string prepareSoftmax(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
  const int64_t axis = op.attrs.getInt("axis", -1);
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (!isFloat(x) || (axis != -1 && axis != x.shape.rank - 1))
    return "needs a float input and the last axis";
  out.launch = [&op, st](Executor &e, const std::vector<TensorRef> &t) {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    return softmax(st, e.at(op.inputs[0]), e.at(op.outputs[0]), rowsBefore(s, s.rank - 1), lastDim(s), e.stream);
  };
  return {};
}

// An embedding lookup: gather along axis 0 of a 2-D table.
std::string prepareGather(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const PlanValue &table = ex.plan->values[size_t(op.inputs[0])], &ids = ex.plan->values[size_t(op.inputs[1])];
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (op.attrs.getInt("axis", 0) != 0 || table.shape.rank != 2 || !isFloat(table) || ids.dtype != DType::I64)
    return "supports float tables [rows, width] gathered along axis 0 by int64 ids";
  out.launch = [&op, st](Executor &e, const std::vector<TensorRef> &t) {
    const TensorRef &tab = t[size_t(op.inputs[0])];
    return gatherRows(st, e.at(op.inputs[0]), tab.shape.dims[0], tab.shape.dims[1],
                      static_cast<const int64_t *>(e.at(op.inputs[1])), t[size_t(op.inputs[1])].numel(),
                      e.at(op.outputs[0]), e.errorFlag, e.stream);
  };
  return {};
}

// linear: cuBLASLt (bias in its epilogue), then our epilogue kernel for what cuBLASLt has no
// exact form of (SiLU, erf GELU, SwiGLU, gate, residual), through a scratch slot of the arena.
// A call of at most kSmallLinearMaxM rows (a decode step) with an [N, K] weight runs on
// smallLinear instead, epilogue included (and the RMS norm before it, smallLinearCall), unless
// the context turned it off.
std::string prepareLinear(Executor &ex, const PlanOp &op, int k, PreparedOp &out, size_t &scratchBytes) {
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])], &w = ex.plan->values[size_t(op.inputs[1])];
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (!isFloat(x) || !isFloat(w) || w.kind != fb::ValueKind_Weight || w.shape.rank != 2)
    return "needs a float input and a constant 2-D float weight";
  auto present = [&](size_t i) { return op.inputs.size() > i && op.inputs[i] >= 0 && ex.plan->values[size_t(op.inputs[i])].shape.numel() > 0; };
  const std::string activation(op.attrs.getString("activation").empty() ? "none" : op.attrs.getString("activation"));
  const bool transB = op.attrs.getInt("transB", 0) != 0, swiglu = activation == "swiglu";
  const bool bias = present(2), gate = present(3), residual = present(4);
  LinearSpec spec;
  spec.K = w.shape.dims[transB ? 1 : 0];
  spec.N = w.shape.dims[transB ? 0 : 1];
  spec.transB = transB, spec.bias = bias, spec.storage = st, spec.tf32 = ex.plan->tf32;
  // The bound of M: the input's capacity (in elements) over its row width.
  spec.maxM = std::max<int64_t>(1, int64_t(x.capacity / dtypeSize(x.dtype)) / spec.K);
  // ReLU and tanh-GELU alone are cuBLASLt epilogues; the rest takes our epilogue kernel.
  const bool ltActivation = (activation == "relu" || activation == "gelu_tanh") && !gate && !residual;
  if (ltActivation)
    spec.activation = activation;
  const bool epilogue = (activation != "none" && !ltActivation) || gate || residual;
  if (epilogue)
    scratchBytes = std::max(scratchBytes, aligned(size_t(spec.maxM * spec.N) * storageBytes(st)));
  if (ex.dry)
    return spec.N > 0 && spec.K > 0 ? std::string() : "an empty weight";
  std::unique_ptr<LtLinear> linear;
  if (std::string err = LtLinear::create(ex.lt, spec, ex.workspaceBytes, linear); !err.empty())
    return err;
  const LtLinear *l = linear.get();
  ex.linears.push_back(std::move(linear));
  const int64_t N = spec.N, K = spec.K;
  out.launch = [=, &op](Executor &e, const std::vector<TensorRef> &t) {
    const int64_t M = t[size_t(op.inputs[0])].numel() / K;
    if (SmallLinearArgs a; smallLinearCall(e, k, t, st, a))
      return smallLinear(st, a, activation, e.stream);
    void *y = epilogue ? e.arena : e.at(op.outputs[0]); // the scratch slot opens the arena
    if (std::string err = l->run(e.at(op.inputs[0]), e.at(op.inputs[1]), bias ? e.at(op.inputs[2]) : nullptr, y, M,
                                 e.workspace, e.stream);
        !err.empty())
      return err;
    if (!epilogue)
      return std::string();
    return linearEpilogue(st, y, e.at(op.outputs[0]), gate ? e.at(op.inputs[3]) : nullptr,
                          residual ? e.at(op.inputs[4]) : nullptr, M, swiglu ? N / 2 : N, activation, swiglu, e.stream);
  };
  return {};
}

// Where an op writes value `v`: its own bytes, or, for a linked cache's new rows (inPlaceOf),
// the cache itself after the rows already there (their count read from the length table), so
// that the concatenation has nothing left to copy.
ShiftedOutput destinationOf(const Executor &e, int v, const std::vector<TensorRef> &t) {
  const int concat = e.cacheRows.empty() ? -1 : e.cacheRows[size_t(v)];
  if (concat < 0)
    return {e.at(v)};
  const int present = e.plan->ops[size_t(concat)].outputs[0];
  const Shape &rows = t[size_t(present)].shape;
  int64_t row = 1;
  for (int d = 1; d < rows.rank; ++d)
    row *= rows.dims[d];
  return {e.at(present), e.lengths + e.ops[size_t(concat)].lengthSlot, row};
}

// A rotary op's kernel arguments for this run's shapes (its input where the plan has it).
std::string rotaryArgsOf(const Executor &e, const PlanOp &op, const std::vector<TensorRef> &t, RotaryArgs &a) {
  const Shape &x = t[size_t(op.inputs[0])].shape, &table = t[size_t(op.inputs[1])].shape;
  const bool byPosition = op.inputs.size() > 3 && op.inputs[3] >= 0 && t[size_t(op.inputs[3])].numel() > 0;
  a.flat = x.rank == 3;
  a.H = a.flat ? op.attrs.getInt("num_heads", 0) : x.dims[1];
  if (a.H <= 0 || (a.flat && x.dims[2] % a.H))
    return "3-D input needs num_heads dividing the hidden size";
  a.B = x.dims[0], a.S = a.flat ? x.dims[1] : x.dims[2], a.D = a.flat ? x.dims[2] / a.H : x.dims[3];
  a.rotaryDim = op.attrs.getInt("rotary_embedding_dim", 0) ? op.attrs.getInt("rotary_embedding_dim", 0) : a.D;
  if (table.dims[table.rank - 1] * 2 != a.rotaryDim || (!byPosition && (table.dims[0] != a.B || table.dims[1] != a.S)))
    return "cos/sin tables must have rotary_dim / 2 columns (and be [batch, seq, .] without ids)";
  a.x = e.at(op.inputs[0]), a.y = destinationOf(e, op.outputs[0], t);
  a.cos = e.at(op.inputs[1]), a.sin = e.at(op.inputs[2]);
  a.tableRows = byPosition ? table.dims[0] : table.dims[0] * table.dims[1];
  a.positions = byPosition ? static_cast<const int64_t *>(e.at(op.inputs[3])) : nullptr;
  a.interleaved = op.attrs.getInt("interleaved", 0) != 0;
  a.error = e.errorFlag;
  return {};
}

// rotary (ONNX RotaryEmbedding; llmc-raise-attention's key rotations): int64 position ids into
// 2-D cos/sin tables, or no ids and tables [B, S, rot / 2]. A key rotation of a merged QKV
// projection's piece may be done by its split instead (inPlaceOf).
std::string prepareRotary(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])], &cosT = ex.plan->values[size_t(op.inputs[1])];
  const bool byPosition = op.inputs.size() > 3 && op.inputs[3] >= 0 && ex.plan->values[size_t(op.inputs[3])].shape.numel();
  if ((byPosition && (ex.plan->values[size_t(op.inputs[3])].dtype != DType::I64 || cosT.shape.rank != 2)) ||
      (!byPosition && cosT.shape.rank != 3) || (x.shape.rank != 3 && x.shape.rank != 4))
    return "supports int64 position ids into 2-D cos/sin tables, or 3-D tables by row, on 3-D or 4-D input";
  out.launch = [&op, st, index](Executor &e, const std::vector<TensorRef> &t) {
    if (!e.splitOfRotary.empty() && e.splitOfRotary[size_t(index)] >= 0) // its split did it
      return std::string();
    RotaryArgs a;
    if (std::string err = rotaryArgsOf(e, op, t, a); !err.empty())
      return err;
    return rotary(st, a, e.stream);
  };
  return {};
}

// Strides of s, right-aligned to 4 dimensions: 0 where a dimension is 1 (it broadcasts, or its
// only index is 0), so that a mask [1, 1, 1, Sk] has the same strides for every Sk.
void broadcastStrides4(const Shape &s, int64_t out[4]) {
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    const int sd = s.rank - (4 - d);
    const int64_t dim = sd >= 0 ? s.dims[sd] : 1;
    out[d] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
}

// An attention's mask `m` against its scores [B, H, Sq, Sk]: its strides and how it is read, or
// why it cannot be. Read where it is: an attention_mask input (llmc-raise-attention-mask) is as
// long as the keys only if the caller made it so.
std::string maskLayout(const TensorRef &m, const int64_t scores[4], int64_t strides[4], AttentionArgs::Mask &type) {
  if (m.shape.rank > 4 || (m.dtype != DType::F32 && m.dtype != DType::F16 && m.dtype != DType::Bool && m.dtype != DType::I64))
    return "the mask must be float, bool or i64 of rank at most 4";
  for (int d = 0; d < m.shape.rank; ++d)
    if (const int64_t dim = m.shape.dims[d], full = scores[d + 4 - m.shape.rank]; dim != 1 && dim != full)
      return "the mask " + m.shape.str() + " does not broadcast to [" + std::to_string(scores[0]) + ", " +
             std::to_string(scores[1]) + ", " + std::to_string(scores[2]) + ", " + std::to_string(scores[3]) + "]";
  broadcastStrides4(m.shape, strides);
  type = m.dtype == DType::Bool  ? AttentionArgs::Mask::Bool
         : m.dtype == DType::I64 ? AttentionArgs::Mask::Int64
                                 : AttentionArgs::Mask::Additive;
  return {};
}

// The largest value of dimension `d` of value `v`.
int64_t dimBound(const Executor &ex, int v, int d) {
  const PlanValue &pv = ex.plan->values[size_t(v)];
  return pv.dimNode[d] >= 0 ? ex.dimBounds[size_t(pv.dimNode[d])] : pv.shape.dims[d];
}

// Whether the mask operand `input` of an attention op, if present, varies along its Sk keys alone
// (every other dimension 1), or is a row of Sk keys per sequence ([B, 1, 1, Sk]: a batch's
// attention_mask, see llmc-raise-attention-mask): then the kernels can work out its strides from
// the key count (maskRowPerBatch).
// The shape of an attention op's mask operand `input` in this run, or null when it has none.
const Shape *maskShape(const PlanOp &op, const std::vector<TensorRef> &t, size_t input) {
  if (op.inputs.size() <= input || op.inputs[input] < 0 || t[size_t(op.inputs[input])].numel() == 0)
    return nullptr;
  return &t[size_t(op.inputs[input])].shape;
}

bool maskFollowsKeys(const PlanOp &op, const std::vector<TensorRef> &t, size_t input, int64_t Sk) {
  const Shape *m = maskShape(op, t, input);
  if (!m)
    return true;
  for (int d = m->rank == 4 ? 1 : 0; d + 1 < m->rank; ++d)
    if (m->dims[d] != 1)
      return false;
  return m->rank > 0 && m->dims[m->rank - 1] == Sk;
}

// A mask of one row of keys per sequence ([B > 1, 1, 1, Sk]), whose batch stride is the key count.
bool maskRowPerBatch(const PlanOp &op, const std::vector<TensorRef> &t, size_t input) {
  const Shape *m = maskShape(op, t, input);
  return m && m->rank == 4 && m->dims[0] > 1;
}

// The key count of a fused_attention run that the decode kernel can read from the length table
// (one query; keys and values in the cache layout [Sk, B, Hkv * D], whose strides do not
// involve Sk; a mask, if any, along the keys alone or a row per sequence; the kernel's limits at the
// largest Sk, `skBound`, the partial results within the attention workspace), or -1.
int64_t decodeKeyCount(const PlanOp &op, const std::vector<TensorRef> &t, int64_t skBound) {
  const TensorRef &q = t[size_t(op.inputs[0])];
  const int64_t Hq = op.attrs.getInt("q_num_heads", 0), Hkv = op.attrs.getInt("kv_num_heads", 0);
  if (op.attrs.getInt("packed_qkv", 0) || !op.attrs.getInt("kv_time_major", 0) || q.shape.rank != 3 ||
      q.shape.dims[1] != 1 || Hq <= 0 || Hkv <= 0 || op.inputs.size() < 3)
    return -1;
  const TensorRef &k = t[size_t(op.inputs[1])], &v = t[size_t(op.inputs[2])];
  const int64_t D = q.shape.dims[2] / Hq, Sk = k.shape.dims[0];
  const bool rotary = op.inputs.size() > 4 && op.inputs[4] >= 0 && t[size_t(op.inputs[4])].numel() > 0;
  if (k.shape.rank != 3 || v.shape.rank != 3 || Hq % Hkv || D > kMaxDecodeHeadDim || (rotary && D % 2) || Sk > skBound ||
      decodeAttentionWorkspaceBytes(q.shape.dims[0], Hq, v.shape.dims[2] / Hkv, decodeAttentionSplits(skBound)) >
          kGemmWorkspace)
    return -1;
  return maskFollowsKeys(op, t, 3, Sk) ? Sk : -1;
}

// The key count of a latent_attention run that its kernel can read from the length table (a
// mask, if any, along the keys alone or a row per sequence; the scores of the longest cache, `skBound`, within
// the kernel's shared memory), or -1.
int64_t latentKeyCount(const PlanOp &op, const std::vector<TensorRef> &t, int64_t skBound) {
  const Shape &cache = t[size_t(op.inputs[1])].shape;
  if (cache.rank != 3 || cache.dims[0] > skBound ||
      latentAttentionSharedBytes(cache.dims[2] - op.attrs.getInt("rope_dim", 0), op.attrs.getInt("rope_dim", 0), skBound) >
          kMaxLatentAttentionShared)
    return -1;
  return maskFollowsKeys(op, t, 4, cache.dims[0]) ? cache.dims[0] : -1;
}

std::string prepareAttention(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  for (int i : {0, 1, 2, 4, 5})
    if (op.inputs.size() > size_t(i) && op.inputs[size_t(i)] >= 0 && ex.plan->values[size_t(op.inputs[size_t(i)])].shape.numel() &&
        !isFloat(ex.plan->values[size_t(op.inputs[size_t(i)])]))
      return "needs float q, k, v and rotary tables";
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const size_t elem = storageBytes(st);
  const PlanValue &q = ex.plan->values[size_t(op.inputs[0])];
  // Prompts of a 16-bit plan run on tensor cores when the head sizes allow (checked per run: the
  // sizes follow from the shapes); everything else on the plain kernel.
  const bool flash = !ex.dry && st != Storage::F32 && q.shape.rank == 3;
  // A decode step over a cache reads its key count from the length table (LengthFreeGraph.h).
  const int64_t skBound = op.inputs.size() > 1 && op.inputs[1] >= 0 ? dimBound(ex, op.inputs[1], 0) : 0;
  out.lengthSlot = ex.lengthSlots++;
  out.length = [&op, skBound](const std::vector<TensorRef> &t) { return decodeKeyCount(op, t, skBound); };
  out.launch = [&op, st, elem, flash, skBound, index,
                slot = out.lengthSlot](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    auto has = [&](size_t i) { return op.inputs.size() > i && op.inputs[i] >= 0 && t[size_t(op.inputs[i])].numel() > 0; };
    const bool packed = op.attrs.getInt("packed_qkv", 0) != 0, timeMajor = op.attrs.getInt("kv_time_major", 0) != 0;
    const TensorRef &q = t[size_t(op.inputs[0])];
    AttentionArgs a;
    a.Hq = op.attrs.getInt("q_num_heads", 0), a.Hkv = op.attrs.getInt("kv_num_heads", 0);
    if (q.shape.rank != 3 || a.Hq <= 0 || a.Hkv <= 0)
      return std::string("q must be [batch, seq, heads * head]");
    a.B = q.shape.dims[0], a.Sq = q.shape.dims[1];
    const char *base = static_cast<const char *>(e.at(op.inputs[0]));
    if (packed) {
      const int64_t width = q.shape.dims[2];
      a.D = a.Dv = width / (a.Hq + 2 * a.Hkv);
      a.Sk = a.Sq;
      a.qs = a.ks = a.vs = {a.Sq * width, width, a.D};
      a.q = base;
      a.k = base + a.Hq * a.D * elem;
      a.v = base + (a.Hq + a.Hkv) * a.D * elem;
    } else {
      const TensorRef &k = t[size_t(op.inputs[1])], &v = t[size_t(op.inputs[2])];
      a.D = q.shape.dims[2] / a.Hq;
      a.qs = {a.Sq * a.Hq * a.D, a.Hq * a.D, a.D};
      a.q = base, a.k = e.at(op.inputs[1]), a.v = e.at(op.inputs[2]);
      if (k.shape.rank == 4) { // [B, Hkv, Sk, D]
        a.Sk = k.shape.dims[2], a.Dv = v.shape.dims[3];
        a.ks = {a.Hkv * a.Sk * a.D, a.D, a.Sk * a.D}, a.vs = {a.Hkv * a.Sk * a.Dv, a.Dv, a.Sk * a.Dv};
      } else if (timeMajor) { // [Sk, B, Hkv * D]
        a.Sk = k.shape.dims[0], a.Dv = v.shape.dims[2] / a.Hkv;
        a.ks = {a.Hkv * a.D, a.B * a.Hkv * a.D, a.D}, a.vs = {a.Hkv * a.Dv, a.B * a.Hkv * a.Dv, a.Dv};
      } else { // [B, Sk, Hkv * D]
        a.Sk = k.shape.dims[1], a.Dv = v.shape.dims[2] / a.Hkv;
        a.ks = {a.Sk * a.Hkv * a.D, a.Hkv * a.D, a.D}, a.vs = {a.Sk * a.Hkv * a.Dv, a.Hkv * a.Dv, a.Dv};
      }
    }
    const double scale = op.attrs.getFloat("scale", 0.0);
    a.scale = float(scale != 0.0 ? scale : 1.0 / std::sqrt(double(a.D)));
    a.causal = op.attrs.getInt("is_causal", 0) != 0;
    if (has(3)) {
      const int64_t scores[4] = {a.B, a.Hq, a.Sq, a.Sk};
      if (std::string err = maskLayout(t[size_t(op.inputs[3])], scores, a.maskStrides, a.maskType); !err.empty())
        return err;
      a.mask = e.at(op.inputs[3]);
    }
    if (has(4)) {
      // Tables that concatenate one table with itself: that one (their concatenation is not
      // launched: unneededOnDevice).
      a.halfTables = readsHalfTables(op, e.halfOf);
      const int cosV = a.halfTables ? e.halfOf[size_t(op.inputs[4])] : op.inputs[4];
      const int sinV = a.halfTables ? e.halfOf[size_t(op.inputs[5])] : op.inputs[5];
      const TensorRef &c = t[size_t(cosV)];
      a.cos = e.at(cosV), a.sin = e.at(sinV);
      a.tablesPerBatch = a.B > 1 && c.numel() == a.B * a.Sq * (a.halfTables ? a.D / 2 : a.D);
      const bool cacheLayout = !packed && t[size_t(op.inputs[1])].shape.rank == 4;
      a.rotateKeys = !cacheLayout && !timeMajor && op.attrs.getInt("rotate_keys", 1) != 0;
    }
    a.out = e.at(op.outputs[0]);
    // A decode step: the key length split across blocks (the one-block-per-query kernel would
    // read the whole cache from B * Hq blocks); over a cache, as many blocks as the longest
    // cache needs, each taking its share of the key count that the length table holds.
    if (decodeKeyCount(op, t, skBound) >= 0) {
      a.Sk = skBound, a.skOnDevice = e.lengths + slot;
      a.maskRowPerBatch = maskRowPerBatch(op, t, 3);
      a.overlapPrevious = e.overlapLaunches;
      if (const int linear = e.prefetchWeightOf.empty() ? -1 : e.prefetchWeightOf[size_t(index)]; linear >= 0) {
        const int w = e.plan->ops[size_t(linear)].inputs[1];
        a.prefetchL2 = e.at(w), a.prefetchL2Bytes = deviceBytesOf(e, w, e.plan->values[size_t(w)].shape);
      }
      return decodeAttention(st, a, decodeAttentionSplits(skBound), e.attentionWorkspace, e.stream);
    }
    if (a.Sq == 1 && !packed && !a.rotateKeys && a.D <= kMaxDecodeHeadDim) {
      const int splits = decodeAttentionSplits(a.Sk);
      if (decodeAttentionWorkspaceBytes(a.B, a.Hq, a.Dv, splits) <= e.workspaceBytes)
        return decodeAttention(st, a, splits, e.attentionWorkspace, e.stream);
    }
    if (flash && a.Sq > 1 && flashAttentionFits(st, a.D, a.Dv, e.sharedOptIn))
      return flashAttention(st, a, e.stream);
    return attention(st, a, e.stream);
  };
  return {};
}

// fused_elementwise: the region's CUDA C, compiled by NVRTC for this device when the context is
// created (the plan does not carry CUBINs yet), launched with this run's broadcast strides.
std::string prepareFusedElementwise(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  std::vector<fused::Instruction> program;
  std::vector<int> results;
  if (std::string err = fused::parseProgram(op.attrs, int(op.inputs.size()), int(op.outputs.size()), program, results);
      !err.empty())
    return err;
  std::vector<DType> ins, outs;
  for (int i : op.inputs)
    ins.push_back(onDevice(ex.plan->values[size_t(i)]));
  for (int o : op.outputs)
    outs.push_back(onDevice(ex.plan->values[size_t(o)]));
  std::string name = "llmc_fused_" + std::to_string(index);
  std::vector<char> compiled;
  const void *code = nullptr;
#ifndef LLMC_CUDA_EMULATION // the tests' CPU emulation runs no CUBIN: it compiles every region
  for (const PlanCudaKernel &k : ex.plan->cudaKernels) // the plan's own CUBIN for this device
    if (k.op == index && k.arch == ex.arch)
      code = k.cubin, name = k.name;
#endif
  if (!code) { // a CPU plan: compile the region for this device now
    std::string error;
    const std::string source = fusedElementwiseSource(program, results, ins, outs, name, error);
    if (!error.empty() || ex.dry)
      return error;
    if (std::string err = compileToCubin(source, name, ex.arch, compiled); !err.empty())
      return err;
    code = compiled.data();
  }
  if (ex.dry)
    return {};
  cudaLibrary_t library;
  if (cudaError_t e = cudaLibraryLoadData(&library, code, nullptr, nullptr, 0, nullptr, nullptr, 0); e != cudaSuccess)
    return cudaError("loading a generated kernel", e);
  ex.libraries.push_back(library);
  cudaKernel_t kernel;
  if (cudaError_t e = cudaLibraryGetKernel(&kernel, library, name.c_str()); e != cudaSuccess)
    return cudaError("finding a generated kernel", e);
  out.launch = [kernel, &op](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &shape = t[size_t(op.outputs[0])].shape;
    FusedShape fs{};
    fs.count = shape.numel(), fs.rank = shape.rank;
    for (int d = 0; d < shape.rank; ++d)
      fs.dims[d] = shape.dims[d];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Shape &in = t[size_t(op.inputs[i])].shape;
      int64_t stride = 1;
      for (int d = shape.rank - 1; d >= 0; --d) {
        const int id = in.rank - (shape.rank - d);
        const int64_t dim = id >= 0 ? in.dims[id] : 1;
        fs.strides[i][d] = dim == 1 ? 0 : stride;
        stride *= dim;
      }
    }
    if (fs.count == 0)
      return std::string();
    std::vector<void *> pointers;
    for (int i : op.inputs)
      pointers.push_back(e.at(i));
    for (int o : op.outputs)
      pointers.push_back(e.at(o));
    std::vector<void *> args;
    for (void *&p : pointers)
      args.push_back(&p);
    args.push_back(&fs);
    const unsigned blocks = unsigned(std::min<int64_t>((fs.count + 255) / 256, 65535 * 4));
    if (cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(blocks), dim3(256), args.data(), 0,
                                           e.stream);
        err != cudaSuccess)
      return cudaError("fused_elementwise launch", err);
    return std::string();
  };
  return {};
}

// --- data movement and small ops ------------------------------------------------------------

void contiguousStrides(const Shape &s, int64_t *out) {
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    out[d] = stride;
    stride *= s.dims[d];
  }
}

// Strides of `in` read at the indices of `out` (numpy broadcasting, right-aligned): 0 where it broadcasts.
void broadcastStridesTo(const Shape &in, const Shape &out, int64_t *strides) {
  int64_t inStrides[kMaxRank];
  contiguousStrides(in, inStrides);
  for (int d = 0; d < out.rank; ++d) {
    const int id = in.rank - (out.rank - d);
    strides[d] = id < 0 || in.dims[id] == 1 ? 0 : inStrides[id];
  }
}

StridedCopy copyOf(const Shape &dims, int elemBytes) {
  StridedCopy c;
  c.rank = dims.rank, c.elemBytes = elemBytes;
  for (int d = 0; d < dims.rank; ++d)
    c.dims[d] = dims.dims[d];
  contiguousStrides(dims, c.dst);
  contiguousStrides(dims, c.src);
  return c;
}

// The pieces of a split or a concat, launched together (kMaxCopies at a time): one launch where
// a piece each took one.
class CopyBatch {
public:
  CopyBatch(void *stream, bool overlap) : stream_(stream), overlap_(overlap) {}
  std::string add(const void *src, void *dst, const StridedCopy &c) {
    if (batch_.count == kMaxCopies)
      if (std::string err = flush(); !err.empty())
        return err;
    batch_.src[batch_.count] = src, batch_.dst[batch_.count] = dst, batch_.copy[batch_.count] = c;
    ++batch_.count;
    return {};
  }
  std::string flush() {
    std::string err = batch_.count ? stridedCopies(batch_, stream_) : std::string();
    batch_.count = 0;
    return err;
  }
  // The pieces left and a rotated one, in one launch.
  std::string flushWithRotary(Storage st, const RotaryArgs &rotary) {
    std::string err = stridedCopiesAndRotary(st, batch_, rotary, stream_, overlap_);
    batch_.count = 0;
    return err;
  }

private:
  StridedCopies batch_;
  void *stream_;
  bool overlap_; // the rotary launch's programmatic dependent launch (Executor::overlapLaunches)
};

int axisOf(const PlanOp &op, int rank) {
  const int64_t a = op.attrs.getInt("axis", 0);
  return int(a < 0 ? a + rank : a);
}

// The values of an integer constant of the plan (a weight with host data), or false.
bool constantInts(const llmc_plan_t &plan, int value, std::vector<int64_t> &out) {
  if (value < 0)
    return false;
  const PlanValue &v = plan.values[size_t(value)];
  if (v.kind != fb::ValueKind_Weight || !v.weight || (v.dtype != DType::I64 && v.dtype != DType::I32))
    return false;
  out.resize(size_t(v.shape.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.dtype == DType::I64 ? static_cast<const int64_t *>(v.weight)[i] : static_cast<const int32_t *>(v.weight)[i];
  return true;
}

// Ops whose output holds the input's bytes unchanged.
bool isCopyOp(const std::string &kernel) {
  return kernel == "reshape" || kernel == "unsqueeze" || kernel == "squeeze" || kernel == "flatten" ||
         kernel == "identity";
}

// Whether attention op `op` reads the first halves of its rotation tables (inputs 4 and 5), each a
// concatenation of one table with itself (halfOf).
bool readsHalfTables(const PlanOp &op, const std::vector<int> &halfOf) {
  return op.kernel == "fused_attention" && op.inputs.size() > 5 && op.inputs[4] >= 0 && op.inputs[5] >= 0 &&
         halfOf[size_t(op.inputs[4])] >= 0 && halfOf[size_t(op.inputs[5])] >= 0;
}

// (Through copy ops that keep the last axis too: a table's rows stay where they were.)
std::vector<int> repeatedHalves(const llmc_plan_t &plan) {
  std::vector<int> halfOf(plan.values.size(), -1);
  for (const PlanOp &op : plan.ops) {
    if (isCopyOp(op.kernel) && !op.inputs.empty() && op.inputs[0] >= 0 && op.outputs.size() == 1 &&
        halfOf[size_t(op.inputs[0])] >= 0) {
      const PlanValue &in = plan.values[size_t(op.inputs[0])], &out = plan.values[size_t(op.outputs[0])];
      if (onDevice(in) == onDevice(out) && out.shape.rank >= 1 && lastDim(out.shape) == lastDim(in.shape))
        halfOf[size_t(op.outputs[0])] = halfOf[size_t(op.inputs[0])];
      continue;
    }
    if (op.kernel != "concat" || op.inputs.size() != 2 || op.inputs[0] < 0 || op.inputs[0] != op.inputs[1] ||
        op.outputs.size() != 1)
      continue;
    const PlanValue &in = plan.values[size_t(op.inputs[0])], &out = plan.values[size_t(op.outputs[0])];
    if (isFloat(in) && onDevice(in) == onDevice(out) && in.shape.rank >= 1 &&
        axisOf(op, in.shape.rank) == in.shape.rank - 1)
      halfOf[size_t(op.outputs[0])] = op.inputs[0];
  }
  return halfOf;
}

// Per op, whether the device needs nothing it computes: none of its outputs is a plan output or
// read by a needed op, other than as the target shape of a reshape (the executor takes every
// shape from the plan's dimension expressions on the host; the shape op and concatenation that
// build a reshape's target at run time would only launch for nothing) or as an attention's
// rotation table that is a concatenation of one table with itself (the attention reads that one:
// halfOf).
std::vector<bool> unneededOnDevice(const llmc_plan_t &plan, const std::vector<int> &halfOf) {
  std::vector<bool> unneeded(plan.ops.size(), false), read(plan.values.size(), false);
  for (int v : plan.outputs)
    read[size_t(v)] = true;
  for (size_t k = plan.ops.size(); k-- > 0;) { // readers come after the ops they read from
    const PlanOp &op = plan.ops[k];
    unneeded[k] = !op.outputs.empty() &&
                  std::none_of(op.outputs.begin(), op.outputs.end(), [&](int v) { return v >= 0 && read[size_t(v)]; });
    if (unneeded[k])
      continue;
    const bool halves = readsHalfTables(op, halfOf);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int v = op.inputs[i];
      if (v >= 0 && !(op.kernel == "reshape" && i == 1))
        read[size_t(halves && (i == 4 || i == 5) ? halfOf[size_t(v)] : v)] = true;
    }
  }
  return unneeded;
}

// (The arena gives the output the input's bytes, so this launches nothing; see layoutArena.)
std::string prepareCopy(Executor &ex, const PlanOp &op, PreparedOp &out) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  out.launch = [&op](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const size_t bytes = deviceBytesOf(e, op.outputs[0], t[size_t(op.outputs[0])].shape);
    if (bytes != deviceBytesOf(e, op.inputs[0], t[size_t(op.inputs[0])].shape))
      return "the output's size differs from the input's";
    if (bytes && e.at(op.outputs[0]) != e.at(op.inputs[0]))
      if (cudaError_t err = cudaMemcpyAsync(e.at(op.outputs[0]), e.at(op.inputs[0]), bytes, cudaMemcpyDeviceToDevice, e.stream);
          err != cudaSuccess)
        return cudaError("copy", err);
    return std::string();
  };
  return {};
}

std::string prepareDataMovement(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const int elem = int(dtypeSize(onDevice(ex.plan->values[size_t(op.inputs[0])])));
  const std::string &k = op.kernel;
  if (k == "transpose") {
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &in = t[size_t(op.inputs[0])].shape, &o = t[size_t(op.outputs[0])].shape;
      std::vector<int64_t> perm = op.attrs.getInts("perm");
      if (perm.empty())
        for (int d = in.rank - 1; d >= 0; --d)
          perm.push_back(d);
      StridedCopy c = copyOf(o, elem);
      int64_t inStrides[kMaxRank];
      contiguousStrides(in, inStrides);
      for (int d = 0; d < o.rank; ++d)
        c.src[d] = inStrides[perm[size_t(d)]];
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else if (k == "slice" || k == "dynamic_slice") {
    // A dynamic_slice's starts must be constants of the plan (its ends only decide the output
    // shape, which the plan's dimension expressions give): no kernel reads device data on the host.
    std::vector<int64_t> starts = op.attrs.getInts("starts");
    if (k == "dynamic_slice" && !constantInts(*ex.plan, op.inputs[1], starts))
      return "supports starts that are constants of the plan";
    out.launch = [&op, elem, starts](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &in = t[size_t(op.inputs[0])].shape, &o = t[size_t(op.outputs[0])].shape;
      const std::vector<int64_t> axes = op.attrs.getInts("axes"), steps = op.attrs.getInts("steps");
      if (!axes.empty() && axes.size() != starts.size())
        return std::string("starts and axes differ in length");
      StridedCopy c = copyOf(o, elem);
      int64_t inStrides[kMaxRank];
      contiguousStrides(in, inStrides);
      for (int d = 0; d < in.rank; ++d)
        c.src[d] = inStrides[d];
      for (size_t i = 0; i < starts.size(); ++i) {
        const int d = int(axes.empty() ? int64_t(i) : (axes[i] < 0 ? axes[i] + in.rank : axes[i]));
        const int64_t step = steps.empty() ? 1 : steps[i], dim = in.dims[d];
        int64_t begin = starts[i] < 0 ? starts[i] + dim : starts[i];
        begin = step > 0 ? std::clamp<int64_t>(begin, 0, dim) : std::clamp<int64_t>(begin, 0, dim - 1);
        c.srcBase += begin * inStrides[d];
        c.src[d] = inStrides[d] * step;
      }
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else if (k == "concat") {
    // Two pieces along the leading axis (a cache and its new rows): the second piece's place,
    // the first's row count, comes from the length table (LengthFreeGraph.h).
    const PlanValue &first = ex.plan->values[size_t(op.inputs[0])];
    if (op.inputs.size() == 2 && first.shape.rank > 0 && axisOf(op, first.shape.rank) == 0) {
      out.lengthSlot = ex.lengthSlots++;
      out.length = [&op](const std::vector<TensorRef> &t) { return t[size_t(op.inputs[0])].shape.dims[0]; };
    }
    out.launch = [&op, elem, slot = out.lengthSlot](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &o = t[size_t(op.outputs[0])].shape;
      const int axis = axisOf(op, o.rank);
      int64_t outStrides[kMaxRank], at = 0;
      contiguousStrides(o, outStrides);
      CopyBatch batch(e.stream, e.overlapLaunches);
      for (size_t piece = 0; piece < op.inputs.size(); ++piece) {
        const int i = op.inputs[piece];
        const Shape &in = t[size_t(i)].shape;
        StridedCopy c = copyOf(in, elem);
        for (int d = 0; d < o.rank; ++d)
          c.dst[d] = outStrides[d];
        if (slot >= 0 && piece == 1) // after as many rows as the first piece has
          c.dstShift = e.lengths + slot, c.dstShiftStride = outStrides[0];
        else
          c.dstBase = at * outStrides[axis];
        at += in.dims[axis];
        // A cache kept on the device: the past rows already lie where the present puts them, and
        // the new ones where their producer wrote them (inPlaceOf).
        if (e.at(i) == e.at(op.outputs[0]) && c.dstBase == 0 && !c.dstShift && std::equal(c.src, c.src + c.rank, c.dst))
          continue;
        if (piece == 1 && !e.cacheRows.empty() && e.cacheRows[size_t(i)] >= 0)
          continue;
        if (std::string err = batch.add(e.at(i), e.at(op.outputs[0]), c); !err.empty())
          return err;
      }
      return batch.flush();
    };
  } else if (k == "split") {
    out.launch = [&op, elem, st, index](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      if (const int linear = e.linearOfSplit.empty() ? -1 : e.linearOfSplit[size_t(index)]; linear >= 0)
        if (SmallLinearArgs a; smallLinearCall(e, linear, t, st, a) && a.pieces > 0)
          return std::string(); // the linear wrote the pieces (addOutputPieces)
      const Shape &in = t[size_t(op.inputs[0])].shape;
      const int axis = axisOf(op, in.rank);
      int64_t inStrides[kMaxRank], at = 0;
      contiguousStrides(in, inStrides);
      // A piece that a rotary op turns (inPlaceOf): rotated here, from the input's rows.
      const Executor::SplitRotary fused = e.rotaryOfSplit.empty() ? Executor::SplitRotary() : e.rotaryOfSplit[size_t(index)];
      RotaryArgs rotaryPiece;
      CopyBatch batch(e.stream, e.overlapLaunches);
      for (int o : op.outputs) {
        const Shape &part = t[size_t(o)].shape;
        if (o == fused.piece) {
          if (std::string err = rotaryArgsOf(e, e.plan->ops[size_t(fused.rotary)], t, rotaryPiece); !err.empty())
            return err;
          rotaryPiece.x = static_cast<const char *>(e.at(op.inputs[0])) + at * elem;
          rotaryPiece.xRowStride = in.dims[in.rank - 1];
          at += part.dims[axis];
          continue;
        }
        StridedCopy c = copyOf(part, elem);
        for (int d = 0; d < in.rank; ++d)
          c.src[d] = inStrides[d];
        c.srcBase = at * inStrides[axis];
        at += part.dims[axis];
        const ShiftedOutput d = destinationOf(e, o, t);
        c.dstShift = d.shift, c.dstShiftStride = d.shiftStride;
        if (std::string err = batch.add(e.at(op.inputs[0]), d.base, c); !err.empty())
          return err;
      }
      return fused.rotary >= 0 ? batch.flushWithRotary(st, rotaryPiece) : batch.flush();
    };
  } else if (k == "expand") {
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &o = t[size_t(op.outputs[0])].shape;
      StridedCopy c = copyOf(o, elem);
      broadcastStridesTo(t[size_t(op.inputs[0])].shape, o, c.src);
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else {
    return "not a data-movement op";
  }
  return {};
}

std::string prepareElementwise(Executor &, const PlanOp &op, PreparedOp &out, int code) {
  if (op.kernel == "gelu" && op.attrs.getString("approximate") == "tanh")
    code = elementwiseOp("gelu_tanh");
  if (int(op.inputs.size()) != elementwiseArity(code) || op.outputs.size() != 1)
    return "expects " + std::to_string(elementwiseArity(code)) + " inputs and one output";
  for (int i : op.inputs)
    if (i < 0)
      return "an absent input";
  out.launch = [&op, code](Executor &e, const std::vector<TensorRef> &t) {
    const TensorRef &o = t[size_t(op.outputs[0])];
    ElementwiseArgs a;
    a.op = code, a.numInputs = int(op.inputs.size()), a.out = e.at(op.outputs[0]);
    a.outType = int(onDevice(e.plan->values[size_t(op.outputs[0])]));
    a.rank = o.shape.rank;
    for (int d = 0; d < o.shape.rank; ++d)
      a.dims[d] = o.shape.dims[d];
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      const TensorRef &in = t[size_t(op.inputs[j])];
      a.in[j] = e.at(op.inputs[j]), a.inType[j] = int(onDevice(e.plan->values[size_t(op.inputs[j])]));
      broadcastStridesTo(in.shape, o.shape, a.inStrides[j]);
    }
    return elementwise(a, e.stream);
  };
  return {};
}

std::string prepareSmallOp(Executor &ex, const PlanOp &op, PreparedOp &out) {
  if (op.kernel == "shape") {
    out.launch = [&op](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &s = t[size_t(op.inputs[0])].shape;
      int64_t start = op.attrs.getInt("start", 0), end = op.attrs.getInt("end", s.rank);
      start = std::clamp<int64_t>(start < 0 ? start + s.rank : start, 0, s.rank);
      end = std::clamp<int64_t>(end < 0 ? end + s.rank : end, 0, s.rank);
      return writeInt64s(e.at(op.outputs[0]), s.dims + start, int(std::max<int64_t>(0, end - start)), e.stream);
    };
  } else if (op.kernel == "range") {
    Storage st;
    if (std::string err = floatStorage(ex, op, st); !err.empty())
      return err;
    out.launch = [&op](Executor &e, const std::vector<TensorRef> &t) {
      const TensorRef &o = t[size_t(op.outputs[0])];
      return range(int(onDevice(e.plan->values[size_t(op.outputs[0])])), e.at(op.inputs[0]), e.at(op.inputs[2]), e.at(op.outputs[0]), o.numel(), e.stream);
    };
  } else if (op.kernel == "gather_nd") {
    if (op.attrs.getInt("batch_dims", 0) != 0 || ex.plan->values[size_t(op.inputs[1])].dtype != DType::I64)
      return "supports batch_dims 0 and int64 indices";
    const int elem = int(dtypeSize(onDevice(ex.plan->values[size_t(op.inputs[0])])));
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &data = t[size_t(op.inputs[0])].shape, &idx = t[size_t(op.inputs[1])].shape;
      const int k = int(idx.dims[idx.rank - 1]);
      int64_t strides[kMaxRank];
      contiguousStrides(data, strides);
      int64_t slice = 1;
      for (int d = k; d < data.rank; ++d)
        slice *= data.dims[d];
      const int64_t tuples = t[size_t(op.inputs[1])].numel() / std::max(k, 1);
      return gatherNd(e.at(op.inputs[0]), static_cast<const int64_t *>(e.at(op.inputs[1])), e.at(op.outputs[0]), tuples, k,
                      data.dims, strides, slice, elem, e.errorFlag, e.stream);
    };
  } else if (op.kernel == "gather_elements") {
    if (ex.plan->values[size_t(op.inputs[1])].dtype != DType::I64)
      return "supports int64 indices";
    const int elem = int(dtypeSize(onDevice(ex.plan->values[size_t(op.inputs[0])])));
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &data = t[size_t(op.inputs[0])].shape, &idx = t[size_t(op.inputs[1])].shape;
      const int64_t a = op.attrs.getInt("axis", 0);
      const int axis = int(a < 0 ? a + data.rank : a);
      if (idx.rank != data.rank)
        return std::string("indices and data differ in rank");
      for (int d = 0; d < data.rank; ++d)
        if (d != axis && idx.dims[d] > data.dims[d])
          return std::string("indices reach outside the data");
      return gatherElements(e.at(op.inputs[0]), static_cast<const int64_t *>(e.at(op.inputs[1])), e.at(op.outputs[0]),
                            data.rank, axis, idx.dims, data.dims, elem, e.errorFlag, e.stream);
    };
  } else if (op.kernel == "cumsum") {
    std::vector<int64_t> axis;
    if (!constantInts(*ex.plan, op.inputs[1], axis) || axis.size() != 1)
      return "supports an axis that is a constant of the plan";
    const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
    const int a = int(axis[0] < 0 ? axis[0] + x.shape.rank : axis[0]);
    if (a < 0 || a >= x.shape.rank)
      return "axis out of range";
    out.launch = [&op, a](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &s = t[size_t(op.inputs[0])].shape;
      int64_t inner = 1;
      for (int d = a + 1; d < s.rank; ++d)
        inner *= s.dims[d];
      const int64_t outer = rowsBefore(s, a);
      return cumsum(int(onDevice(e.plan->values[size_t(op.inputs[0])])), e.at(op.inputs[0]), e.at(op.outputs[0]), outer,
                    s.dims[a], inner, op.attrs.getInt("exclusive", 0) != 0, op.attrs.getInt("reverse", 0) != 0,
                    e.stream);
    };
  } else {
    return "not a small op";
  }
  return {};
}

// --- reductions, convolution, pooling, padding ------------------------------------------------

std::string prepareReduce(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
  const std::string kind = op.kernel.substr(strlen("reduce_"));
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (!isFloat(x) || (kind != "sum" && kind != "mean" && kind != "max" && kind != "min" && kind != "l2" &&
                    kind != "sum_square"))
    return "supports float sum, mean, max, min, l2 and sum_square";
  if (op.inputs.size() > 1 && op.inputs[1] >= 0)
    return "axes given as a tensor";
  out.launch = [&op, kind, st](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    const std::vector<int64_t> axes = op.attrs.getInts("axes");
    if (axes.empty() && op.attrs.getInt("noop_with_empty_axes", 0)) {
      const size_t bytes = deviceBytesOf(e, op.inputs[0], s);
      return bytes ? (cudaMemcpyAsync(e.at(op.outputs[0]), e.at(op.inputs[0]), bytes, cudaMemcpyDeviceToDevice, e.stream) ==
                              cudaSuccess
                          ? std::string()
                          : std::string("copy failed"))
                   : std::string();
    }
    bool reduced[kMaxRank] = {};
    for (int d = 0; d < s.rank; ++d)
      reduced[d] = axes.empty();
    for (int64_t a : axes)
      reduced[a < 0 ? a + s.rank : a] = true;
    return reduce(st, kind, e.at(op.inputs[0]), e.at(op.outputs[0]), s.rank, s.dims, reduced, e.stream);
  };
  return {};
}

// The window of a conv or pool op for this run's shapes.
std::string windowOf(const PlanOp &op, const Shape &x, const Shape &y, const int64_t *kernel, Window &w) {
  w.spatial = x.rank - 2;
  if (w.spatial < 1 || w.spatial > 3 || y.rank != x.rank)
    return "needs 1 to 3 spatial dimensions";
  const std::vector<int64_t> pads = op.attrs.getInts("pads"), strides = op.attrs.getInts("strides"),
                             dilations = op.attrs.getInts("dilations");
  for (int d = 0; d < w.spatial; ++d) {
    w.in[d] = x.dims[d + 2], w.out[d] = y.dims[d + 2], w.kernel[d] = kernel[d];
    w.padBegin[d] = pads.size() == size_t(2 * w.spatial) ? pads[size_t(d)] : 0;
    w.stride[d] = strides.size() == size_t(w.spatial) ? strides[size_t(d)] : 1;
    w.dilation[d] = dilations.size() == size_t(w.spatial) ? dilations[size_t(d)] : 1;
  }
  return {};
}

std::string prepareConvPoolPad(Executor &ex, const PlanOp &op, PreparedOp &out) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (!isFloat(ex.plan->values[size_t(op.inputs[0])]))
    return "supports float inputs";
  if (op.kernel == "conv") {
    const PlanValue &w = ex.plan->values[size_t(op.inputs[1])];
    if (!isFloat(w) || (op.attrs.find("auto_pad") && op.attrs.getString("auto_pad") != "NOTSET"))
      return "supports float weights and explicit pads";
    const bool bias = op.inputs.size() > 2 && op.inputs[2] >= 0;
    out.launch = [&op, bias, st](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &x = t[size_t(op.inputs[0])].shape, &w = t[size_t(op.inputs[1])].shape, &y = t[size_t(op.outputs[0])].shape;
      Window win;
      if (std::string err = windowOf(op, x, y, w.dims + 2, win); !err.empty())
        return err;
      return conv(st, e.at(op.inputs[0]), e.at(op.inputs[1]), bias ? e.at(op.inputs[2]) : nullptr, e.at(op.outputs[0]),
                  x.dims[0], x.dims[1], w.dims[0], op.attrs.getInt("group", 1), win, e.stream);
    };
  } else if (op.kernel == "max_pool" || op.kernel == "average_pool") {
    if (op.outputs.size() != 1)
      return "no indices output";
    out.launch = [&op, st](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &x = t[size_t(op.inputs[0])].shape, &y = t[size_t(op.outputs[0])].shape;
      const std::vector<int64_t> kernel = op.attrs.getInts("kernel_shape");
      if (int(kernel.size()) != x.rank - 2)
        return "kernel_shape does not match the spatial rank";
      Window win;
      if (std::string err = windowOf(op, x, y, kernel.data(), win); !err.empty())
        return err;
      return pool(st, op.kernel == "max_pool", e.at(op.inputs[0]), e.at(op.outputs[0]), x.dims[0] * x.dims[1], win,
                  op.attrs.getInt("count_include_pad", 0) != 0, e.stream);
    };
  } else { // pad
    const std::string mode(op.attrs.getString("mode"));
    if (!mode.empty() && mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
      return "unknown mode '" + mode + "'";
    const bool hasValue = op.inputs.size() > 1 && op.inputs[1] >= 0;
    if (hasValue && ex.plan->values[size_t(op.inputs[1])].kind != fb::ValueKind_Weight)
      return "needs a constant padding value";
    float value = 0.0f;
    if (hasValue) {
      const PlanValue &v = ex.plan->values[size_t(op.inputs[1])];
      if (v.dtype != DType::F32 && v.dtype != DType::F16)
        return "needs a float padding value";
      value = v.narrow           ? widenFloat(*static_cast<const uint16_t *>(v.narrow), v.deviceDType)
              : v.dtype == DType::F16 ? widenFloat(*static_cast<const uint16_t *>(v.weight), DType::F16)
                                      : *static_cast<const float *>(v.weight);
    }
    out.launch = [&op, value, mode, st](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &x = t[size_t(op.inputs[0])].shape, &y = t[size_t(op.outputs[0])].shape;
      const std::vector<int64_t> pads = op.attrs.getInts("pads");
      if (pads.size() != size_t(2 * x.rank))
        return "pads must hold a begin and an end per dimension";
      for (int d = 0; d < x.rank; ++d)
        if (pads[size_t(d)] < 0 || pads[size_t(d + x.rank)] < 0)
          return "negative pads (cropping) are not supported";
      return pad(st, mode, e.at(op.inputs[0]), e.at(op.outputs[0]), x.rank, x.dims, y.dims, pads.data(), value, e.stream);
    };
  }
  return {};
}

std::string prepareLatentAttention(Executor &ex, const PlanOp &op, PreparedOp &out) {
  for (int i = 0; i < 4; ++i)
    if (!isFloat(ex.plan->values[size_t(op.inputs[size_t(i)])]))
      return "supports float operands";
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  // Over a cache, the key count from the length table (LengthFreeGraph.h).
  const int64_t skBound = dimBound(ex, op.inputs[1], 0);
  out.lengthSlot = ex.lengthSlots++;
  out.length = [&op, skBound](const std::vector<TensorRef> &t) { return latentKeyCount(op, t, skBound); };
  out.launch = [&op, st, skBound, slot = out.lengthSlot](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const TensorRef &q = t[size_t(op.inputs[0])], &cache = t[size_t(op.inputs[1])], &uk = t[size_t(op.inputs[2])],
                    &uv = t[size_t(op.inputs[3])];
    const bool hasUk = uk.numel() > 0, hasUv = uv.numel() > 0;
    const bool hasMask = op.inputs.size() > 4 && op.inputs[4] >= 0 && t[size_t(op.inputs[4])].numel() > 0;
    const int64_t rope = op.attrs.getInt("rope_dim", 0), latent = cache.shape.dims[2] - rope;
    const int64_t B = q.shape.dims[0], H = q.shape.dims[1], Sq = q.shape.dims[2], Sk = cache.shape.dims[0];
    LatentMask mask;
    mask.causal = op.attrs.getInt("is_causal", 0) != 0;
    if (hasMask) {
      const int64_t scores[4] = {B, H, Sq, Sk};
      if (std::string err = maskLayout(t[size_t(op.inputs[4])], scores, mask.strides, mask.type); !err.empty())
        return err;
      mask.data = e.at(op.inputs[4]);
    }
    const bool fromTable = latentKeyCount(op, t, skBound) >= 0;
    mask.rowPerBatch = fromTable && maskRowPerBatch(op, t, 4);
    return latentAttention(st, e.at(op.inputs[0]), e.at(op.inputs[1]), hasUk ? e.at(op.inputs[2]) : nullptr,
                           hasUv ? e.at(op.inputs[3]) : nullptr, mask, e.at(op.outputs[0]), B, H, Sq, fromTable ? skBound : Sk, hasUk ? uk.shape.dims[1] : 0, rope,
                           latent, hasUv ? uv.shape.dims[2] : latent, float(op.attrs.getFloat("scale", 1.0)),
                           fromTable ? e.lengths + slot : nullptr, e.stream);
  };
  return {};
}

// The op's CUDA kernel, prepared; or why it has none. An error names the op and its node.
std::string prepareOp(Executor &ex, int k, PreparedOp &p, size_t &scratch) {
  const PlanOp &op = ex.plan->ops[size_t(k)];
  p.name = op.kernel;
  std::string err;
  if (op.kernel == "rms_norm" || op.kernel == "layer_norm" || op.kernel == "add_rms_norm" || op.kernel == "add_layer_norm")
    err = prepareNorm(ex, op, k, p);
  else if (op.kernel == "softmax")
    err = prepareSoftmax(ex, op, p);
  else if (op.kernel == "gather")
    err = prepareGather(ex, op, p);
  else if (op.kernel == "linear")
    err = prepareLinear(ex, op, k, p, scratch);
  else if (op.kernel == "fused_attention")
    err = prepareAttention(ex, op, p, k);
  else if (op.kernel == "rotary")
    err = prepareRotary(ex, op, p, k);
  else if (op.kernel == "fused_elementwise")
    err = prepareFusedElementwise(ex, op, p, k);
  else if (isCopyOp(op.kernel))
    err = prepareCopy(ex, op, p);
  else if (op.kernel == "transpose" || op.kernel == "slice" || op.kernel == "dynamic_slice" || op.kernel == "concat" ||
           op.kernel == "split" || op.kernel == "expand")
    err = prepareDataMovement(ex, op, p, k);
  else if (op.kernel == "shape" || op.kernel == "range" || op.kernel == "gather_nd" || op.kernel == "cumsum" ||
           op.kernel == "gather_elements")
    err = prepareSmallOp(ex, op, p);
  else if (op.kernel == "latent_attention")
    err = prepareLatentAttention(ex, op, p);
  else if (op.kernel.rfind("reduce_", 0) == 0)
    err = prepareReduce(ex, op, p);
  else if (op.kernel == "conv" || op.kernel == "max_pool" || op.kernel == "average_pool" || op.kernel == "pad")
    err = prepareConvPoolPad(ex, op, p);
  else if (int code = elementwiseOp(op.kernel); code >= 0 && op.kernel != "gelu_tanh")
    err = prepareElementwise(ex, op, p, code);
  else
    err = "no CUDA kernel for this op yet";
  return err.empty() ? err : "op '" + op.kernel + "'" + (op.location.empty() ? "" : " (" + op.location + ")") + ": " + err;
}

// Without a device: `ex` for `plan` with every op prepared (as for sm_90a), the linears' scratch
// bytes in `scratch`; `missing(k, why)` hears of each op the executor has no kernel for.
void prepareWithoutDevice(Executor &ex, const llmc_plan_t &plan, size_t &scratch,
                          const std::function<void(size_t, const std::string &)> &missing) {
  attachPlan(ex, plan);
  ex.dry = true, ex.arch = "sm_90a";
  scratch = 0;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    PreparedOp p;
    if (std::string err = prepareOp(ex, int(k), p, scratch); !err.empty())
      missing(k, err);
    ex.ops.push_back(std::move(p));
  }
}

// Which ops of `plan` the executor cannot run, without a device: one line per kind of op.
std::string check(const llmc_plan_t &plan) {
  Executor ex;
  std::map<std::string, std::pair<int, std::string>> missing; // per kernel: count, first reason
  size_t scratch = 0;
  prepareWithoutDevice(ex, plan, scratch, [&](size_t k, const std::string &err) {
    auto &m = missing[plan.ops[k].kernel];
    if (m.first++ == 0)
      m.second = err;
  });
  std::string report;
  for (const auto &[kernel, m] : missing)
    report += std::to_string(m.first) + " x " + m.second + "\n";
  return report;
}

// --- the backend ------------------------------------------------------------------------------

// Every value but the weights and the linked caches (`resident`) gets a slot of one arena;
// values whose lifetimes do not overlap share bytes, and the output of a copy op (reshape,
// squeeze, ...) shares its input's, so that the copy launches nothing (MemoryPlan.h). `owner`:
// per value the value whose bytes it uses.
struct ArenaLayout {
  ArenaPlan arena;
  std::vector<int> owner;
  std::vector<int> sliceViews; // the slices that are views of their input where they take all of it (SliceView)
};

// The slices (op indices, in the order they run) that may be views of their input (SliceView):
// steps of 1, the same device type, an output that is not the plan's, and an input and output
// with bytes of their own in the arena (`owner`: per value the value whose bytes it uses).
std::vector<int> sliceViewsOf(const llmc_plan_t &plan, const std::vector<int> &order, const std::vector<int> &owner,
                              const std::vector<Lifetime> &lifetimes) {
  std::vector<int> views;
  for (size_t pos = 0; pos < plan.ops.size(); ++pos) {
    const int k = order.empty() ? int(pos) : order[pos];
    const PlanOp &op = plan.ops[size_t(k)];
    if (op.kernel != "slice" || op.inputs.empty() || op.inputs[0] < 0 || op.outputs.size() != 1)
      continue;
    const std::vector<int64_t> steps = op.attrs.getInts("steps");
    const int in = op.inputs[0], out = op.outputs[0];
    const bool owned = lifetimes[size_t(owner[size_t(in)])].bytes > 0 && owner[size_t(out)] == out &&
                       lifetimes[size_t(out)].bytes > 0;
    if (owned && std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; }) &&
        onDevice(plan.values[size_t(in)]) == onDevice(plan.values[size_t(out)]) &&
        std::find(plan.outputs.begin(), plan.outputs.end(), out) == plan.outputs.end())
      views.push_back(k);
  }
  return views;
}

// `elsewhere` (may be empty): values with no bytes of their own (written into a linked cache, or
// by no launch at all: InPlace). `normOfLinear` (findNormsBeforeLinears): a linear that computes
// the norm before it reads that norm's inputs and writes its sum, so they live until it has run;
// `splitOfLinear` (findSplitsAfterLinears): one that writes the split's pieces after it, earlier
// than the plan says, so what it reads (and its norm's values) live until the split's turn.
ArenaLayout planDeviceArena(const llmc_plan_t &plan, const std::vector<bool> &resident, const std::vector<int> &order,
                            const std::vector<bool> &elsewhere, const std::vector<int> &normOfLinear,
                            const std::vector<int> &splitOfLinear) {
  std::vector<Lifetime> lifetimes = planLifetimes(plan, order);
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  auto keepUntil = [&](const std::vector<int> &values, int until) {
    for (int v : values)
      if (v >= 0)
        lifetimes[size_t(v)].last = std::max(lifetimes[size_t(v)].last, until);
  };
  for (size_t linear = 0; linear < normOfLinear.size(); ++linear) {
    const int split = splitOfLinear.empty() ? -1 : splitOfLinear[linear];
    const int until = split >= 0 ? position[size_t(split)] : position[linear];
    if (split >= 0)
      keepUntil(plan.ops[linear].inputs, until);
    if (normOfLinear[linear] < 0)
      continue;
    const PlanOp &norm = plan.ops[size_t(normOfLinear[linear])];
    keepUntil(norm.inputs, until);
    keepUntil(norm.outputs, until);
  }
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const PlanValue &v = plan.values[i];
    if (resident[i])
      lifetimes[i].bytes = 0;
    else if (v.kind != fb::ValueKind_Weight && v.deviceDType != DType::None)
      lifetimes[i].bytes = std::max<size_t>(deviceCapacity(v), 1);
  }
  std::vector<std::pair<int, int>> copies;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &op = plan.ops[order.empty() ? k : size_t(order[k])];
    if (isCopyOp(op.kernel) && !op.inputs.empty() && op.outputs.size() == 1 &&
        onDevice(plan.values[size_t(op.inputs[0])]) == onDevice(plan.values[size_t(op.outputs[0])]))
      copies.emplace_back(op.inputs[0], op.outputs[0]);
  }
  ArenaLayout layout;
  layout.owner = aliasCopies(copies, resident, lifetimes);
  for (size_t v = 0; v < elsewhere.size(); ++v)
    if (elsewhere[v] && layout.owner[v] == int(v))
      lifetimes[v].bytes = 0;
  layout.sliceViews = sliceViewsOf(plan, order, layout.owner, lifetimes);
  // Last readers first: a view's input lives as long as its output, which may be another's input.
  for (auto k = layout.sliceViews.rbegin(); k != layout.sliceViews.rend(); ++k) {
    const PlanOp &slice = plan.ops[size_t(*k)];
    Lifetime &in = lifetimes[size_t(layout.owner[size_t(slice.inputs[0])])];
    in.last = std::max(in.last, lifetimes[size_t(slice.outputs[0])].last);
  }
  layout.arena = planArena(lifetimes, kAlign);
  return layout;
}

// A weight's device bytes, aligned.
size_t weightSlot(const PlanValue &v) { return aligned(std::max<size_t>(size_t(v.shape.numel()) * dtypeSize(onDevice(v)), 1)); }

// The staging buffer: the largest f32 input or output of a value kept in 16 bits.
size_t stagingBytesOf(const llmc_plan_t &plan) {
  size_t staging = 0;
  for (const PlanValue &v : plan.values)
    if (v.deviceDType != DType::None && (v.kind == fb::ValueKind_Input || v.kind == fb::ValueKind_Output))
      staging = std::max(staging, aligned(v.capacity));
  return staging;
}

// Whether `past` and `present` are a cache linked with llmc_context_link_cache (one buffer).
bool linkedInPlace(const Executor &ex, int past, int present) {
  return ex.resident[size_t(past)] && ex.resident[size_t(present)] && ex.device_[size_t(past)] == ex.device_[size_t(present)];
}

// The split of the plan around one graph for every cache length (LengthFreeGraph.h), with the
// caches linked so far: a concatenation reads its length on the device where its first piece is
// a linked cache already in place (only the new rows are copied); an attention always (each run
// says whether its launch does: decodeKeyCount).
LengthFreeSplit splitOf(const Executor &ex) {
  const llmc_plan_t &plan = *ex.plan;
  return splitForLengths(plan, [&](int k) {
    const PlanOp &op = plan.ops[size_t(k)];
    if (ex.ops[size_t(k)].lengthSlot < 0)
      return false;
    return op.kernel != "concat" || linkedInPlace(ex, op.inputs[0], op.outputs[0]);
  });
}

// From value `v` back through copy ops (reshape, squeeze, ...: the same bytes), each value read
// by the next op alone, to the first op that is not a copy: its index, with `way` the values
// from `v` back to that op's output; -1 where a value has other readers or no producer.
int backThroughCopies(const llmc_plan_t &plan, const ValueUses &uses, int v, std::vector<int> &way) {
  way.clear();
  while (v >= 0 && uses.readers[size_t(v)] == 1 && uses.producer[size_t(v)] >= 0) {
    way.push_back(v);
    const PlanOp &made = plan.ops[size_t(uses.producer[size_t(v)])];
    if (!isCopyOp(made.kernel))
      return uses.producer[size_t(v)];
    const bool aliased = !made.inputs.empty() && onDevice(plan.values[size_t(made.inputs[0])]) == onDevice(plan.values[size_t(v)]);
    v = aliased ? made.inputs[0] : -1;
  }
  return -1;
}

// What the launches of a plan with linked caches write in place of their own outputs:
// - cacheRows (per value: a concatenation op, else -1): a linked cache's new rows, where the op
//   that makes them is a split (a piece) or a rotary, which write at the cache's end themselves,
//   with only copy ops between; the concatenation then copies nothing;
// - rotaryOfSplit / splitOfRotary: a key rotation on rows [B, S, H * D] whose input is a piece of
//   a split along the last axis (through copy ops), whose tables are made before the split, and
//   whose output goes into a linked cache (so writing it at the split's turn frees no arena slot
//   early): the split rotates that piece in its own launch (stridedCopiesAndRotary);
// - elsewhere: the values those leave without bytes of their own.
struct InPlace {
  std::vector<int> cacheRows;
  std::vector<Executor::SplitRotary> rotaryOfSplit;
  std::vector<int> splitOfRotary;
  std::vector<bool> elsewhere;
};

InPlace inPlaceOf(const Executor &ex, const std::vector<int> &order) {
  const llmc_plan_t &plan = *ex.plan;
  const ValueUses uses = usesOf(plan);
  InPlace p{std::vector<int>(plan.values.size(), -1), std::vector<Executor::SplitRotary>(plan.ops.size()),
            std::vector<int>(plan.ops.size(), -1), std::vector<bool>(plan.values.size(), false)};
  std::vector<int> way;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &concat = plan.ops[k];
    if (concat.kernel != "concat" || ex.ops[k].lengthSlot < 0 || !linkedInPlace(ex, concat.inputs[0], concat.outputs[0]))
      continue;
    const int maker = backThroughCopies(plan, uses, concat.inputs[1], way);
    if (maker >= 0 && (plan.ops[size_t(maker)].kernel == "split" || plan.ops[size_t(maker)].kernel == "rotary") &&
        onDevice(plan.values[size_t(way.back())]) == onDevice(plan.values[size_t(concat.outputs[0])]))
      for (int w : way)
        p.cacheRows[size_t(w)] = int(k), p.elsewhere[size_t(w)] = true;
  }
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  for (size_t r = 0; r < plan.ops.size(); ++r) {
    const PlanOp &rotary = plan.ops[r];
    if (rotary.kernel != "rotary" || plan.values[size_t(rotary.inputs[0])].shape.rank != 3 ||
        rotary.attrs.getInt("num_heads", 0) <= 0 || p.cacheRows[size_t(rotary.outputs[0])] < 0)
      continue;
    const int split = backThroughCopies(plan, uses, rotary.inputs[0], way);
    if (split < 0 || plan.ops[size_t(split)].kernel != "split" || p.rotaryOfSplit[size_t(split)].rotary >= 0)
      continue;
    const PlanOp &pieces = plan.ops[size_t(split)];
    const PlanValue &whole = plan.values[size_t(pieces.inputs[0])];
    bool tablesReady = true;
    for (size_t i = 1; i < rotary.inputs.size(); ++i) {
      const int v = rotary.inputs[i];
      tablesReady &= v < 0 || uses.producer[size_t(v)] < 0 || position[size_t(uses.producer[size_t(v)])] < position[size_t(split)];
    }
    const PlanValue &keys = plan.values[size_t(rotary.inputs[0])], &piece = plan.values[size_t(way.back())];
    if (!tablesReady || whole.shape.rank != 3 || axisOf(pieces, 3) != 2 || pieces.outputs.size() > size_t(kMaxCopies) + 1 ||
        !isFloat(whole) || onDevice(whole) != onDevice(plan.values[size_t(rotary.outputs[0])]) ||
        piece.shape.rank != 3 || keys.shape.dims[2] != piece.shape.dims[2] || keys.shape.dims[2] < 0)
      continue;
    p.rotaryOfSplit[size_t(split)] = {int(r), way.back()};
    p.splitOfRotary[r] = split;
    for (int w : way)
      p.elsewhere[size_t(w)] = true;
  }
  return p;
}
// The order the ops run in: the split's, where it holds; else the plan's.
std::vector<int> runOrder(const llmc_plan_t &plan, const LengthFreeSplit &split) {
  if (split.whyNot.empty() && !split.order.empty())
    return split.order;
  std::vector<int> order(plan.ops.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// The plan's graph segments, over the ops in the order they run: consecutive ops with one mark
// are captured together; unmarked ops (which a graph cannot hold) are launched one by one. And
// the ops after the split's prologue, as the graph for every cache length, with the length slots
// each run checks before replaying it (lengthFreeRun).
void buildSegments(Executor &ex) {
  const std::vector<PlanOp> &ops = ex.plan->ops;
  ex.segments.clear();
  for (size_t k = 0; k < ex.order.size(); ++k) {
    const int mark = ops[size_t(ex.order[k])].segment;
    const bool capture = mark >= 0;
    if (!ex.segments.empty() && ex.segments.back().capture == capture &&
        (!capture || ops[size_t(ex.order[k - 1])].segment == mark)) {
      ex.segments.back().end = k + 1;
      continue;
    }
    Segment s;
    s.first = k, s.end = k + 1, s.capture = capture;
    ex.segments.push_back(std::move(s));
  }
  ex.lengthFreeGraph.first = ex.split.before, ex.lengthFreeGraph.end = ex.order.size();
  ex.lengthFreeGraph.capture = true;
  ex.graphLengthSlots.clear();
  if (ex.split.whyNot.empty())
    for (size_t pos = ex.split.before; pos < ex.order.size(); ++pos)
      if (hasLength(ex.split, ops[size_t(ex.order[pos])]))
        ex.graphLengthSlots.push_back(ex.ops[size_t(ex.order[pos])].lengthSlot);
}

// Lays the arena out (after the linears' scratch slot) and allocates it, for the ops in the
// order they run, and builds the segments. Laid out again, once, at the first run after caches
// were linked, so that they keep no slot (and the split can move the mask's ops first).
std::string layoutArena(Executor &ex) {
  const llmc_plan_t &plan = *ex.plan;
  ex.dropGraphs();
  ex.split = splitOf(ex);
  ex.order = runOrder(plan, ex.split);
  findNormsBeforeLinears(ex, ex.order);
  buildSegments(ex);
  InPlace inPlace = inPlaceOf(ex, ex.order);
  ex.cacheRows = std::move(inPlace.cacheRows);
  ex.rotaryOfSplit = std::move(inPlace.rotaryOfSplit);
  ex.splitOfRotary = std::move(inPlace.splitOfRotary);
  findSplitsAfterLinears(ex, ex.order);
  const ArenaLayout layout =
      planDeviceArena(plan, ex.resident, ex.order, inPlace.elsewhere, ex.normOfLinear, ex.splitOfLinear);
  const ArenaPlan &arena = layout.arena;
  const std::vector<int> &owner = layout.owner;
  cudaFree(ex.arena);
  ex.arena = nullptr;
  ex.arenaBytes = ex.scratchBytes + arena.total;
  if (cudaError_t e = cudaMalloc(&ex.arena, std::max<size_t>(ex.arenaBytes, 1)); e != cudaSuccess)
    return cudaError("allocating the " + std::to_string(ex.arenaBytes) + "-byte arena", e);
  for (size_t i = 0; i < plan.values.size(); ++i)
    if (plan.values[i].kind != fb::ValueKind_Weight && !ex.resident[i] && owner[i] == int(i)) {
      ex.offsets[i] = ex.scratchBytes + arena.offsets[i];
      ex.device_[i] = static_cast<char *>(ex.arena) + ex.offsets[i];
    }
  for (size_t i = 0; i < plan.values.size(); ++i) // copies: their input's bytes (or weight)
    if (owner[i] != int(i))
      ex.device_[i] = ex.device_[size_t(owner[i])];
  ex.sliceViews.clear();
  ex.viewThisRun.assign(plan.ops.size(), false);
  for (int k : layout.sliceViews) {
    SliceView view{k, {}};
    const int out = plan.ops[size_t(k)].outputs[0];
    for (size_t i = 0; i < plan.values.size(); ++i)
      if (owner[i] == out)
        view.own.emplace_back(int(i), ex.device_[i]);
    ex.sliceViews.push_back(std::move(view));
  }
  return {};
}

// Points the readers of each SliceView at its input in this run (shapes `t`) where it takes all
// of it, and at its own bytes where it does not; in the order they run, so that a view of a view
// reads the first one's input.
void pointSliceViews(Executor &ex, const std::vector<TensorRef> &t) {
  for (const SliceView &view : ex.sliceViews) {
    const PlanOp &op = ex.plan->ops[size_t(view.op)];
    const bool whole = t[size_t(op.inputs[0])].shape == t[size_t(op.outputs[0])].shape;
    ex.viewThisRun[size_t(view.op)] = whole;
    for (const auto &[v, own] : view.own)
      ex.device_[size_t(v)] = whole ? ex.device_[size_t(op.inputs[0])] : own;
  }
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
  const char *prefetch = std::getenv("LLMC_CUDA_PREFETCH");
  if (props.major >= 9 && !(prefetch && std::string(prefetch) == "0"))
    ex->prefetchWeightOf = weightsAfterAttention(plan);
  ex->sharedOptIn = props.sharedMemPerBlockOptin;
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
// results nothing reads, and slices that are their input's view in this run).
std::string launchOps(Executor &ex, const std::vector<TensorRef> &tensors, size_t first, size_t end) {
  const llmc_plan_t &plan = *ex.plan;
  for (size_t pos = first; pos < end; ++pos) {
    const size_t k = size_t(ex.order[pos]);
    if (ex.unneeded[k] || ex.viewThisRun[k])
      continue;
    if (std::string err = ex.ops[k].launch(ex, tensors); !err.empty())
      return "op '" + plan.ops[k].kernel + "'" + (plan.ops[k].location.empty() ? "" : " (" + plan.ops[k].location + ")") +
             ": " + err;
  }
  return {};
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
  pointSliceViews(ex, tensors);
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
    return "an index was out of range (a token id outside the vocabulary, or a position outside the rotary tables)";
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

// The device memory a context of `plan` holds, computed without a device (no linked caches):
// weights, the activation arena (with the linears' scratch slot) and the rest (workspaces, the
// staging buffer). False when some op has no kernel.
bool plannedMemory(const llmc_plan_t &plan, size_t *weights, size_t *activations, size_t *other) {
  Executor ex;
  size_t scratch = 0;
  bool complete = true;
  prepareWithoutDevice(ex, plan, scratch, [&](size_t, const std::string &) { complete = false; });
  if (!complete)
    return false;
  *weights = 0;
  for (const PlanValue &v : plan.values)
    *weights += v.kind == fb::ValueKind_Weight ? weightSlot(v) : 0;
  findSplitsAfterLinears(ex, {});
  *activations = scratch + planDeviceArena(plan, std::vector<bool>(plan.values.size(), false), {}, {}, ex.normOfLinear,
                                           ex.splitOfLinear)
                               .arena.total;
  *other = stagingBytesOf(plan) + 2 * kGemmWorkspace + sizeof(int);
  return true;
}

std::string describeDecodeGraphs(const llmc_plan_t &plan) {
  Executor ex;
  size_t scratch = 0;
  bool complete = true;
  prepareWithoutDevice(ex, plan, scratch, [&](size_t, const std::string &) { complete = false; });
  if (!complete)
    return "the CUDA executor cannot run every op";
  // Linked as a generator links them (each cache input to the output it is concatenated into),
  // without memory: one stand-in address per pair.
  auto isIn = [](const std::vector<int> &list, int v) { return std::find(list.begin(), list.end(), v) != list.end(); };
  ex.resident.assign(plan.values.size(), false);
  ex.device_.assign(plan.values.size(), nullptr);
  uintptr_t pairs = 0;
  for (const PlanOp &op : plan.ops)
    if (op.kernel == "concat" && op.inputs.size() == 2 && isIn(plan.inputs, op.inputs[0]) &&
        isIn(plan.outputs, op.outputs[0]) && plan.values[size_t(op.inputs[0])].shape.rank == 3) {
      ex.resident[size_t(op.inputs[0])] = ex.resident[size_t(op.outputs[0])] = true;
      ex.device_[size_t(op.inputs[0])] = ex.device_[size_t(op.outputs[0])] = reinterpret_cast<void *>(++pairs * kAlign);
    }
  const LengthFreeSplit split = splitOf(ex);
  const std::vector<int> order = runOrder(plan, split);
  const InPlace inPlace = inPlaceOf(ex, order);
  const std::set<int> appendsInPlace(inPlace.cacheRows.begin(), inPlace.cacheRows.end());
  const size_t rotations = size_t(std::count_if(inPlace.splitOfRotary.begin(), inPlace.splitOfRotary.end(),
                                                [](int k) { return k >= 0; }));
  const size_t unneeded = size_t(std::count(ex.unneeded.begin(), ex.unneeded.end(), true));
  const std::string appends = "cache appends written in place by the op that makes the rows: " +
                              std::to_string(appendsInPlace.size() - appendsInPlace.count(-1)) + " of " +
                              std::to_string(pairs) + "; key rotations done by their QKV split: " + std::to_string(rotations) +
                              "; ops not launched (results only reshapes' target shapes or attentions' tables read by "
                              "half): " +
                              std::to_string(unneeded);
  // The linears a decode step (one row per sequence) runs on smallLinear: [N, K] weights whose
  // rows are whole 16-byte loads; and those of them that compute the RMS norm before them.
  findNormsBeforeLinears(ex, order);
  ex.rotaryOfSplit = inPlace.rotaryOfSplit;
  findSplitsAfterLinears(ex, order);
  const size_t views =
      planDeviceArena(plan, ex.resident, order, inPlace.elsewhere, ex.normOfLinear, ex.splitOfLinear).sliceViews.size();
  size_t linears = 0, gemv = 0, norms = 0, splits = 0;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &op = plan.ops[k];
    if (op.kernel != "linear")
      continue;
    ++linears;
    const PlanValue &w = plan.values[size_t(op.inputs[1])];
    if (op.attrs.getInt("transB", 0) != 0 && w.shape.rank == 2 && w.shape.dims[1] * dtypeSize(onDevice(w)) % 16 == 0) {
      ++gemv;
      norms += ex.normOfLinear[k] >= 0;
      splits += ex.splitOfLinear[k] >= 0;
    }
  }
  const std::string linearLine = "\nlinears a decode step runs on llmc's GEMV kernel ([N, K] weights): " +
                                 std::to_string(gemv) + " of " + std::to_string(linears) + ", " +
                                 std::to_string(norms) + " of them computing the RMS norm before them, " +
                                 std::to_string(splits) + " the split after them" +
                                 "\nslices that launch nothing where they take all of their input (a decode step's "
                                 "last position): " +
                                 std::to_string(views);
  if (split.lengthSymbol.empty())
    return "no attention over a cache that grows: each input-shape bucket is one graph, captured once" + linearLine;
  if (!split.whyNot.empty())
    return "decode steps are captured as a graph again for each cache length: " + split.whyNot + "; " + appends +
           linearLine;
  // Before the graph, the copy ops are views (the arena gives them their input's bytes).
  size_t launching = 0;
  for (size_t pos = 0; pos < split.before; ++pos) {
    const PlanOp &op = plan.ops[size_t(order[pos])];
    const bool view =
        isCopyOp(op.kernel) && onDevice(plan.values[size_t(op.inputs[0])]) == onDevice(plan.values[size_t(op.outputs[0])]);
    launching += !view;
  }
  return "decode steps replay one graph for every cache length: " + std::to_string(plan.ops.size() - split.before) +
         " ops in it, " + std::to_string(split.before) + " run before it (those with the length in their shapes), " +
         std::to_string(launching) + " of which launch a kernel; " + appends + linearLine;
}

const CudaBackend kBackend{kCudaBackendAbi, create,    run,           destroy,              deviceBytes, graphCount,
                           check,           linkCache, plannedMemory, describeDecodeGraphs, pinHost,     unpinHost,
                           setArgmaxOutput, argmaxResult, fetchOutput, graphNodes, startRun, finishRun};

} // namespace
} // namespace llmc::rt::cuda

extern "C" __attribute__((visibility("default"))) const llmc::rt::CudaBackend *llmc_cuda_backend() {
  return &llmc::rt::cuda::kBackend;
}
