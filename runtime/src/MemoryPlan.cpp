#include "MemoryPlan.h"

#include "Plan.h"
#include "plan_generated.h"

#include <algorithm>
#include <numeric>

namespace llmc::rt {

ArenaPlan planArena(const std::vector<Lifetime> &lifetimes, size_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(lifetimes.size(), 0);
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> taken; // [begin, end) of placed values live at the same time
  for (size_t i : order) {
    const Lifetime &l = lifetimes[i];
    const size_t bytes = (l.bytes + alignment - 1) / alignment * alignment;
    if (bytes == 0)
      continue;
    taken.clear();
    for (size_t j : placed) {
      const Lifetime &o = lifetimes[j];
      if (o.first <= l.last && l.first <= o.last)
        taken.push_back({plan.offsets[j], plan.offsets[j] + (o.bytes + alignment - 1) / alignment * alignment});
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto &[begin, end] : taken) {
      if (offset + bytes <= begin)
        break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, offset + bytes);
    placed.push_back(i);
  }
  return plan;
}

std::vector<int> aliasCopies(const std::vector<std::pair<int, int>> &copies, const std::vector<bool> &keep,
                             std::vector<Lifetime> &lifetimes) {
  std::vector<int> owner(lifetimes.size());
  std::iota(owner.begin(), owner.end(), 0);
  for (const auto &[in, out] : copies) {
    if (in < 0 || out < 0 || keep[size_t(in)] || keep[size_t(out)] || owner[size_t(out)] != out)
      continue;
    const int root = owner[size_t(in)]; // in program order, the input's owner is already final
    owner[size_t(out)] = root;
    Lifetime &r = lifetimes[size_t(root)], &o = lifetimes[size_t(out)];
    if (r.bytes > 0) { // not a weight (0 bytes): the arena holds the group
      r.bytes = std::max(r.bytes, o.bytes);
      r.first = std::min(r.first, o.first);
      r.last = std::max(r.last, o.last);
    }
    o.bytes = 0;
  }
  return owner;
}

std::vector<Lifetime> planLifetimes(const llmc_plan_t &plan, const std::vector<int> &order) {
  const int end = int(plan.ops.size());
  std::vector<Lifetime> lifetimes(plan.values.size());
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const PlanValue &v = plan.values[i];
    const bool weight = v.kind == llmc::plan::ValueKind_Weight;
    lifetimes[i] = {weight ? 0 : std::max<size_t>(v.capacity, 1), weight ? -1 : end, -1};
  }
  for (int vi : plan.inputs)
    lifetimes[size_t(vi)].first = -1;
  for (int k = 0; k < end; ++k) {
    const PlanOp &op = plan.ops[order.empty() ? size_t(k) : size_t(order[size_t(k)])];
    for (int o : op.outputs)
      lifetimes[size_t(o)].first = std::min(lifetimes[size_t(o)].first, k);
    for (int i : op.inputs)
      if (i >= 0)
        lifetimes[size_t(i)].last = std::max(lifetimes[size_t(i)].last, k);
  }
  for (int vi : plan.outputs)
    lifetimes[size_t(vi)].last = end;
  for (Lifetime &l : lifetimes) // written but never read: live while its op runs
    l.last = std::max(l.last, std::min(l.first, end));
  return lifetimes;
}

} // namespace llmc::rt
