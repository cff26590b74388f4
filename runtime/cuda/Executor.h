// The CUDA executor's state (libllmc_cuda.so; CudaExecutor.cpp has the backend's entry points),
// shared by its parts: Executor.cpp (the small questions every part asks about a plan's values),
// PlanShortcuts.cpp (what the plan lets a launch do for a neighbour, or skip), DeviceArena.cpp
// (where each value lives on the device), PrepareCompute.cpp and PrepareDataOps.cpp (each op's
// kernel, prepared), PlanReport.cpp (what a plan would do, without a device). Internal to the
// plugin; never included by libllmc.
#pragma once

#include "CudaBackend.h"
#include "CudaKernels.h"
#include "Kernels.h" // isCopyKernel
#include "LengthFreeGraph.h"
#include "LtLinear.h"

#include "plan_generated.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace llmc::rt::cuda::exec {

namespace fb = llmc::plan;

inline std::string cudaError(const std::string &what, cudaError_t e) { return what + ": " + cudaGetErrorString(e); }

constexpr size_t kAlign = 256;
constexpr size_t kMaxGraphs = 64; // input-shape buckets kept as graphs; a new one beyond replaces another
constexpr size_t kGemmWorkspace = 32u << 20;

inline size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

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
  // Its launch either launches nothing but a linear queued for a chained launch (a linear, or the
  // norm or split a GEMV takes), or launches the queued ones first (flushChainedLinears): the
  // executor need not launch them before it. Other ops' launches come after the queued linears'.
  bool chainable = false;
};

// A run of consecutive ops: one graph segment of the plan (llmc-mark-graph-segments), captured
// as a CUDA graph per input-shape bucket, or ops launched one by one.
struct Segment {
  size_t first = 0, end = 0; // ops [first, end) of Executor::order
  bool capture = false;
  std::map<std::vector<int64_t>, cudaGraphExec_t> graphs; // by the inputs' shapes
  cudaGraphExec_t last = nullptr;                           // the one launched last
};

// A slice or transpose that launches nothing in the runs where it moves no data: a slice that
// takes all of its input (steps of 1, the output's shape the input's: a decode step's last
// position of --last-position, [1, 1, D] of [1, 1, D]), a transpose whose axes of more than one
// element keep their order (a batch's decode rows [B, 1, ...] to [1, B, ...]). Its readers read
// the input there (pointRunViews), and the arena keeps the input until the op's last reader
// (planDeviceArena). `own`: the op's output and the copies of it, with their own arena
// addresses, which the other runs use.
struct RunView {
  int op = -1;
  std::vector<std::pair<int, void *>> own;
};

// Destroys the segment's executable graphs.
void destroyGraphs(Segment &segment);

// The values from a linked cache's new rows (the concatenation's second input) back through
// copy ops and transposes to the output of the op that makes them (backThroughCopies' way), and
// the op that makes each.
struct AppendWay {
  std::vector<int> values, producers;
};
// Where rows (b, s) of a maker's output [B, S, W] go in a cache (ShiftedOutput): 0, one after
// another.
struct RowStrides {
  int64_t batch = 0, token = 0;
};

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
  int multiprocessors = 0;
  // A prompt's tensor-core attention shares each block of query rows' keys out among several
  // blocks where it has too few blocks to fill the GPU (flashAttentionSplits; off with
  // LLMC_CUDA_SPLIT_PROMPT_ATTENTION=0, to compare until measured on a GPU).
  bool splitPromptAttention = true;
  // Convolutions of one group as im2col and a cuBLASLt GEMM (PrepareConv.cpp; off with
  // LLMC_CUDA_CONV_GEMM=0: every one on the direct kernel, to compare until measured on a GPU);
  // the most rows its GEMM takes per launch, 0 as the scratch cap allows (LLMC_CUDA_CONV_ROWS=N:
  // tests, so that a batch goes in chunks of images).
  bool convGemm = true;
  int64_t convRows = 0;
  // expert_linear with many ids (a prompt's) on the grouped kernel: the ids grouped by expert, each
  // expert's rows times its matrix on tensor cores (groupedExpertLinear; off with
  // LLMC_CUDA_GROUPED_EXPERTS=0: every id on a warp per output, to compare until measured on a GPU).
  bool groupedExperts = true;
  bool useGraphs = true;
  bool useSmallLinear = true; // linears of few rows with [N, K] weights on smallLinear (CudaOptions)
  // Programmatic dependent launch of a decode step's GEMVs, QKV split and attention (CudaOptions;
  // compute capability 9.0 and newer).
  bool overlapLaunches = false;
  // SmallLinearArgs::blocks of every GEMV launch: 0, a block per group of columns; -1, a
  // persistent launch (LLMC_CUDA_GEMV_BLOCKS=resident, for comparison until measured on a GPU).
  int64_t gemvBlocks = 0;
  // Consecutive GEMVs of one row, and the decode attention before them, chained into one
  // cooperative launch, a grid barrier between two (decodeChain; a decode layer's attention,
  // output projection, gate/up, down and the next QKV projection): 0 off, -1 as many blocks as the
  // GPU holds, N at most N (LLMC_CUDA_GEMV_CHAIN=resident or N; off by default until measured on a
  // GPU). `chainBarrier`: its counters.
  int64_t gemvChain = 0;
  bool chainAttention = false; // the attention too (LLMC_CUDA_CHAIN_ATTENTION=1)
  void *chainBarrier = nullptr;
  // The steps queued for the next chained launch (launchOrChain, attentionOrChain), of
  // `chainStorage`.
  std::vector<ChainStep> chained;
  Storage chainStorage = Storage::BF16;
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
  std::vector<RunView> runViews;
  std::vector<bool> viewThisRun; // per op: one of runViews that moves nothing in this run
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
  // its producer directly in this run (inPlaceOf, chooseInPlace), or -1.
  std::vector<int> cacheRows;
  // Key rotations done by the split that makes their keys in this run (inPlaceOf,
  // chooseInPlace): per split op, the rotary op and the piece it turns; per rotary op, its split
  // (-1 elsewhere).
  struct SplitRotary {
    int rotary = -1, piece = -1;
  };
  std::vector<SplitRotary> rotaryOfSplit;
  std::vector<int> splitOfRotary;
  // The three above as laid out, for every run; and per concatenation whose new rows come through
  // transposes (a dynamic batch's [B, S, ...] to [S, B, ...]), the way from their maker
  // (AppendWay), along which each run finds where the maker writes its rows [B, S, W] in the
  // cache (rowStridesThisRun; in place where the way can be followed: chooseInPlace).
  std::vector<int> plannedCacheRows;
  std::vector<SplitRotary> plannedRotaryOfSplit;
  std::vector<int> plannedSplitOfRotary;
  std::vector<AppendWay> appendWays;
  std::vector<RowStrides> rowStridesThisRun; // per concatenation
  // What chooseInPlace decides per run: the concatenations with an appendWay, and the splits
  // with a planned rotation (both empty where nothing is decided per run).
  std::vector<int> appendsChosenPerRun, splitsChosenPerRun;
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
    cudaFree(chainBarrier);
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


// Starts an executor for `plan`, before its ops are prepared (Executor.cpp).
void attachPlan(Executor &ex, const llmc_plan_t &plan);

// --- about a plan's values (Executor.cpp) -----------------------------------------------------

// The element type a value has on the device: its 16-bit type in a reduced-precision plan.
DType onDevice(const PlanValue &v);
bool isFloat(const PlanValue &v);
// Whether input i of `op` is given: not -1, nor the empty tensor that stands for an absent
// optional operand. A dynamic dimension holds -1 in a plan's shape, so the numel() of a value
// with one is negative: given. (Until session 24 a linear took a dynamic residual or gate for
// absent, `numel() > 0`, and dropped it: a dynamic-sequence GPT-NeoX ran without its residuals.)
bool givenInput(const llmc_plan_t &plan, const PlanOp &op, size_t i);
Storage storageOf(DType d);
// The one storage type of an op's float operands; an error when they differ.
std::string floatStorage(const Executor &ex, const PlanOp &op, Storage &out);
// Bytes of a value at its bound on the device.
size_t deviceCapacity(const PlanValue &v);
// Bytes of a value of this run's shape on the device.
size_t deviceBytesOf(const Executor &ex, int value, const Shape &shape);
int64_t lastDim(const Shape &s);
int64_t rowsBefore(const Shape &s, int axis);
int64_t elementsFrom(const Shape &s, int axis); // the product of the dims from `axis` on
// The DType number of value v on the device where it is one of the floats (dispatchFloat: f32,
// f16, bf16, f64); 0 otherwise.
int floatTypeOf(const Executor &ex, int v);
// The one type by `typeOf` (floatTypeOf, numericTypeOf) of values `vs`, those absent (-1) left
// out; 0 where one has none or two differ (the operands of a kernel that takes one element type
// throughout). commonFloatType: by floatTypeOf.
int commonType(const Executor &ex, const std::vector<int> &vs, int (*typeOf)(const Executor &, int));
inline int commonFloatType(const Executor &ex, const std::vector<int> &vs) { return commonType(ex, vs, floatTypeOf); }
// The DType number of value v on the device where it is one the kernels of floats and integers
// take (dispatchNumeric: the floats, int64, int32, int8, uint8, bool); 0 otherwise.
int numericTypeOf(const Executor &ex, int v);
// The bytes of value v's elements where it holds int32 or int64 indices; 0 otherwise.
int indexTypeOf(const Executor &ex, int v);
// The largest value of dimension `d` of value `v`.
int64_t dimBound(const Executor &ex, int v, int d);
int axisOf(const PlanOp &op, int rank);
// The values of an integer constant of the plan (a weight with host data), or false.
bool constantInts(const llmc_plan_t &plan, int value, std::vector<int64_t> &out);
// The one element of a weight of the plan (any numeric type) as a double; false for anything else.
bool constantScalar(const PlanValue &v, double &out);
void contiguousStrides(const Shape &s, int64_t *out);
// A transpose op's axes for an input of `rank` axes: its perm attribute, or reversed without one.
std::vector<int64_t> permOf(const PlanOp &transpose, int rank);
// Strides of `in` read at the indices of `out` (numpy broadcasting): 0 where it broadcasts.
void broadcastStridesTo(const Shape &in, const Shape &out, int64_t *strides);

// Who writes and who reads each value of a plan (plan outputs count as a reader).
struct ValueUses {
  std::vector<int> producer, readers;
};
ValueUses usesOf(const llmc_plan_t &plan);
// Per op, its position in `order` (empty: the plan's order).
std::vector<int> positionsIn(const std::vector<int> &order, size_t ops);

} // namespace llmc::rt::cuda::exec
