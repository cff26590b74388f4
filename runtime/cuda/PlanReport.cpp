// What a plan would do on the CUDA executor, answered without a device: the ops it has no
// kernel for, the memory a context would hold, how decode steps use graphs (CudaBackend.h).
#include "DeviceArena.h"
#include "PlanReport.h"
#include "PlanShortcuts.h"
#include "PrepareOps.h"

#include <algorithm>

namespace llmc::rt::cuda::exec {

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
  // Appends whose rows come through transposes (a batch's): their maker writes them where the
  // transposes put them, in every run whose shapes let chooseInPlace follow them.
  const size_t throughTransposes = size_t(std::count_if(appendsInPlace.begin(), appendsInPlace.end(), [&](int k) {
    return k >= 0 && !inPlace.appendWays[size_t(k)].values.empty();
  }));
  const std::string appends = "cache appends written in place by the op that makes the rows: " +
                              std::to_string(appendsInPlace.size() - appendsInPlace.count(-1)) + " of " +
                              std::to_string(pairs) +
                              (throughTransposes ? " (" + std::to_string(throughTransposes) +
                                                       " through transposes: a batch's rows written where those put "
                                                       "them)"
                                                 : std::string()) +
                              "; key rotations done by their QKV split: " + std::to_string(rotations) +
                              "; ops not launched (results only reshapes' target shapes or attentions' tables read by "
                              "half): " +
                              std::to_string(unneeded);
  // The linears a decode step (one row per sequence) runs on smallLinear: [N, K] weights whose
  // rows are whole 16-byte loads; and those of them that compute the RMS norm before them.
  findNormsBeforeLinears(ex, order);
  ex.rotaryOfSplit = inPlace.rotaryOfSplit;
  findSplitsAfterLinears(ex, order);
  const size_t views =
      planDeviceArena(plan, ex.resident, order, inPlace.elsewhere, ex.normOfLinear, ex.splitOfLinear).runViews.size();
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
                                 "\nslices and transposes that launch nothing in the runs where they move no data "
                                 "(a decode step's last position, a batch's rows [B, 1] to [1, B]): " +
                                 std::to_string(views);
  if (split.lengthSymbol.empty())
    return "no attention over a cache that grows: each input-shape bucket is one graph, captured once" + linearLine;
  if (!split.whyNot.empty())
    return "decode steps are captured as a graph again for each cache length: " + split.whyNot + "; " + appends +
           linearLine;
  // Before the graph, the copy ops are views (the arena gives them their input's bytes), and ops
  // whose results nothing on the device reads are not launched.
  size_t launching = 0;
  for (size_t pos = 0; pos < split.before; ++pos) {
    const PlanOp &op = plan.ops[size_t(order[pos])];
    const bool view =
        isCopyKernel(op.kernel) && onDevice(plan.values[size_t(op.inputs[0])]) == onDevice(plan.values[size_t(op.outputs[0])]);
    launching += !view && !ex.unneeded[size_t(order[pos])];
  }
  return "decode steps replay one graph for every cache length: " + std::to_string(plan.ops.size() - split.before) +
         " ops in it, " + std::to_string(split.before) + " run before it (those with the length in their shapes), " +
         std::to_string(launching) + " of which launch a kernel; " + appends + linearLine;
}

} // namespace llmc::rt::cuda::exec
