// Where each value lives on the device (DeviceArena.h).
#include "DeviceArena.h"
#include "PlanShortcuts.h"

#include <algorithm>
#include <numeric>

namespace llmc::rt::cuda::exec {

namespace {

// The ops (indices, in the order they run) that may be views of their input (RunView): slices
// with steps of 1 and transposes, of the same device type, with an output that is not the plan's,
// and an input and output with bytes of their own in the arena (`owner`: per value the value
// whose bytes it uses).
std::vector<int> runViewsOf(const llmc_plan_t &plan, const std::vector<int> &order, const std::vector<int> &owner,
                            const std::vector<Lifetime> &lifetimes) {
  std::vector<int> views;
  for (size_t pos = 0; pos < plan.ops.size(); ++pos) {
    const int k = order.empty() ? int(pos) : order[pos];
    const PlanOp &op = plan.ops[size_t(k)];
    if ((op.kernel != "slice" && op.kernel != "transpose") || op.inputs.empty() || op.inputs[0] < 0 ||
        op.outputs.size() != 1)
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

// Whether RunView op `op` moves no data in this run (shapes `t`): a slice that takes all of its
// input; a transpose whose axes of more than one element keep their order (a batch's [B, 1, ...]
// rows to [1, B, ...]).
bool movesNothing(const PlanOp &op, const std::vector<TensorRef> &t) {
  const Shape &in = t[size_t(op.inputs[0])].shape;
  if (op.kernel == "slice")
    return in == t[size_t(op.outputs[0])].shape;
  const std::vector<int64_t> perm = permOf(op, in.rank);
  return int(perm.size()) == in.rank && transposeMovesNothing(in.dims, perm.data(), in.rank);
}

} // namespace

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
  // An attention that reads the first halves of its rotation tables (readsHalfTables) reads those
  // halves, which the plan says only the concatenations read: they live until it has run. (Until
  // session 24 a half's slot could be given to a value computed before the attention: a
  // dynamic-sequence Llama's prompt attended over a clobbered table.)
  const std::vector<int> halfOf = repeatedHalves(plan);
  for (size_t k = 0; k < plan.ops.size(); ++k)
    if (const PlanOp &op = plan.ops[k]; readsHalfTables(op, halfOf))
      keepUntil({halfOf[size_t(op.inputs[4])], halfOf[size_t(op.inputs[5])]}, position[k]);
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
    if (isCopyKernel(op.kernel) && !op.inputs.empty() && op.outputs.size() == 1 &&
        onDevice(plan.values[size_t(op.inputs[0])]) == onDevice(plan.values[size_t(op.outputs[0])]))
      copies.emplace_back(op.inputs[0], op.outputs[0]);
  }
  ArenaLayout layout;
  layout.owner = aliasCopies(copies, resident, lifetimes);
  for (size_t v = 0; v < elsewhere.size(); ++v)
    if (elsewhere[v] && layout.owner[v] == int(v))
      lifetimes[v].bytes = 0;
  layout.runViews = runViewsOf(plan, order, layout.owner, lifetimes);
  // Last readers first: a view's input lives as long as its output, which may be another's input.
  for (auto k = layout.runViews.rbegin(); k != layout.runViews.rend(); ++k) {
    const PlanOp &view = plan.ops[size_t(*k)];
    Lifetime &in = lifetimes[size_t(layout.owner[size_t(view.inputs[0])])];
    in.last = std::max(in.last, lifetimes[size_t(view.outputs[0])].last);
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

// The order the ops run in: the split's, where it holds; else the plan's.
std::vector<int> runOrder(const llmc_plan_t &plan, const LengthFreeSplit &split) {
  if (split.whyNot.empty() && !split.order.empty())
    return split.order;
  std::vector<int> order(plan.ops.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

namespace {

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

} // namespace

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
  const std::vector<bool> elsewhere = inPlace.elsewhere;
  keepInPlace(ex, std::move(inPlace));
  findSplitsAfterLinears(ex, ex.order);
  const ArenaLayout layout =
      planDeviceArena(plan, ex.resident, ex.order, elsewhere, ex.normOfLinear, ex.splitOfLinear);
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
  ex.runViews.clear();
  ex.viewThisRun.assign(plan.ops.size(), false);
  for (int k : layout.runViews) {
    RunView view{k, {}};
    const int out = plan.ops[size_t(k)].outputs[0];
    for (size_t i = 0; i < plan.values.size(); ++i)
      if (owner[i] == out)
        view.own.emplace_back(int(i), ex.device_[i]);
    ex.runViews.push_back(std::move(view));
  }
  return {};
}

// Points the readers of each RunView at its input in this run (shapes `t`) where it moves
// nothing, and at its own bytes where it does; in the order they run, so that a view of a view
// reads the first one's input.
void pointRunViews(Executor &ex, const std::vector<TensorRef> &t) {
  for (const RunView &view : ex.runViews) {
    const PlanOp &op = ex.plan->ops[size_t(view.op)];
    const bool same = movesNothing(op, t);
    ex.viewThisRun[size_t(view.op)] = same;
    for (const auto &[v, own] : view.own)
      ex.device_[size_t(v)] = same ? ex.device_[size_t(op.inputs[0])] : own;
  }
  chooseInPlace(ex, t);
}

} // namespace llmc::rt::cuda::exec
