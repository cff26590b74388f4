// Where each value of a plan lives on the device (DeviceArena.cpp): the weights' slots, one
// arena for the rest laid out from the values' lifetimes in the order the ops run, the copy ops
// and slice views that share their input's bytes, and the graph segments over that order.
#pragma once

#include "Executor.h"
#include "MemoryPlan.h"

namespace llmc::rt::cuda::exec {

// Every value but the weights and the linked caches (`resident`) gets a slot of one arena;
// values whose lifetimes do not overlap share bytes, and the output of a copy op (reshape,
// squeeze, ...) shares its input's, so that the copy launches nothing (MemoryPlan.h). `owner`:
// per value the value whose bytes it uses.
struct ArenaLayout {
  ArenaPlan arena;
  std::vector<int> owner;
  std::vector<int> runViews; // the ops that are views of their input in the runs where they move nothing (RunView)
};

// `elsewhere` (may be empty): values with no bytes of their own (InPlace). `normOfLinear`,
// `splitOfLinear`: linears that read their norm's inputs, or write their split's pieces, at
// another op's turn than the plan's (PlanShortcuts.h), whose values then live longer.
ArenaLayout planDeviceArena(const llmc_plan_t &plan, const std::vector<bool> &resident, const std::vector<int> &order,
                            const std::vector<bool> &elsewhere, const std::vector<int> &normOfLinear,
                            const std::vector<int> &splitOfLinear);
// A weight's device bytes, aligned.
size_t weightSlot(const PlanValue &v);
// The staging buffer: the largest f32 input or output of a value kept in 16 bits.
size_t stagingBytesOf(const llmc_plan_t &plan);
// The split of the plan around one graph for every cache length, with the caches linked so far.
LengthFreeSplit splitOf(const Executor &ex);
// The order the ops run in: the split's, where it holds; else the plan's.
std::vector<int> runOrder(const llmc_plan_t &plan, const LengthFreeSplit &split);
// Lays the arena out and allocates it, and builds the segments.
std::string layoutArena(Executor &ex);
// Points the readers of each RunView at its input or its own bytes, for this run's shapes.
void pointRunViews(Executor &ex, const std::vector<TensorRef> &t);

} // namespace llmc::rt::cuda::exec
