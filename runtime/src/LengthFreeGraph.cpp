#include "LengthFreeGraph.h"

#include "Plan.h"

#include <cstdint>

namespace llmc::rt {
namespace {

using llmc::plan::DimOp;

// Per dimension-expression node: the symbols it reads, one bit each.
std::vector<uint64_t> symbolsOfNodes(const llmc_plan_t &plan) {
  std::vector<uint64_t> bits(plan.dimNodes.size(), 0);
  for (size_t n = 0; n < plan.dimNodes.size(); ++n) {
    const auto &node = plan.dimNodes[n];
    if (node.op == DimOp::Symbol)
      bits[n] = uint64_t(1) << node.value;
    else if (node.op != DimOp::Const)
      bits[n] = (node.a >= 0 ? bits[size_t(node.a)] : 0) | (node.b >= 0 ? bits[size_t(node.b)] : 0);
  }
  return bits;
}

uint64_t symbolsOfValue(const llmc_plan_t &plan, const std::vector<uint64_t> &nodeBits, int value) {
  if (value < 0)
    return 0;
  const PlanValue &v = plan.values[size_t(value)];
  uint64_t bits = 0;
  for (int d = 0; d < v.shape.rank; ++d)
    if (v.dimNode[d] >= 0)
      bits |= nodeBits[size_t(v.dimNode[d])];
  return bits;
}

} // namespace

bool hasLength(const LengthFreeSplit &split, const PlanOp &op) {
  for (int v : op.inputs)
    if (v >= 0 && split.lengthValue[size_t(v)])
      return true;
  for (int v : op.outputs)
    if (split.lengthValue[size_t(v)])
      return true;
  return false;
}

LengthFreeSplit splitForLengths(const llmc_plan_t &plan, const std::function<bool(int op)> &readsLengthOnDevice) {
  LengthFreeSplit split;
  if (plan.symbols.size() > 64) {
    split.whyNot = "more than 64 symbols";
    return split;
  }
  const std::vector<uint64_t> nodeBits = symbolsOfNodes(plan);
  auto symbolsOf = [&](int value) { return symbolsOfValue(plan, nodeBits, value); };

  // The length symbols: an attention's keys, values and mask have them, its queries not.
  uint64_t lengths = 0;
  for (const PlanOp &op : plan.ops) {
    std::vector<size_t> keyOperands; // keys, values, mask
    if (op.kernel == "fused_attention")
      keyOperands = {1, 2, 3};
    else if (op.kernel == "latent_attention")
      keyOperands = {1, 4}; // the latent cache, the mask
    uint64_t keys = 0;
    for (size_t i : keyOperands)
      keys |= i < op.inputs.size() ? symbolsOf(op.inputs[i]) : 0;
    if (!op.inputs.empty())
      lengths |= keys & ~symbolsOf(op.inputs[0]);
  }
  if (!lengths) {
    split.whyNot = "no attention over a dynamic key length";
    return split;
  }
  split.lengthSymbol.assign(plan.symbols.size(), false);
  for (size_t s = 0; s < plan.symbols.size(); ++s)
    split.lengthSymbol[s] = (lengths >> s) & 1;
  for (uint64_t bits : nodeBits)
    split.lengthNode.push_back((bits & lengths) != 0);
  split.lengthValue.assign(plan.values.size(), false);
  for (size_t v = 0; v < plan.values.size(); ++v)
    split.lengthValue[v] = (symbolsOf(int(v)) & lengths) != 0;

  // Ops before the graph: those with a length in their shapes that cannot read it on the device,
  // and what computes their inputs (the scalars a mask's range is built from), found from the
  // last op back. An op that reads its length on the device stays in the graph; one that an op
  // before the graph needs would have to run before it, which it cannot.
  std::vector<bool> before(plan.ops.size(), false), neededBefore(plan.values.size(), false);
  for (size_t k = plan.ops.size(); k-- > 0;) {
    const PlanOp &op = plan.ops[k];
    bool needed = false;
    for (int v : op.outputs)
      needed |= neededBefore[size_t(v)];
    const bool onDevice = readsLengthOnDevice(int(k));
    if (needed && onDevice) {
      split.whyNot = "op '" + op.kernel + "'" + (op.location.empty() ? "" : " (" + op.location + ")") +
                     " reads its length on the device, but an op with a length in its shapes needs its result";
      return split;
    }
    before[k] = needed || (hasLength(split, op) && !onDevice);
    if (before[k])
      for (int v : op.inputs)
        if (v >= 0)
          neededBefore[size_t(v)] = true;
  }
  int graphSegment = -1;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    if (before[k]) {
      split.order.push_back(int(k));
      continue;
    }
    if (plan.ops[k].segment < 0 || (graphSegment >= 0 && plan.ops[k].segment != graphSegment)) {
      split.whyNot = "the ops after the mask are not one graph segment";
      return split;
    }
    graphSegment = plan.ops[k].segment;
  }
  split.before = split.order.size();
  for (size_t k = 0; k < plan.ops.size(); ++k)
    if (!before[k])
      split.order.push_back(int(k));
  if (split.before == plan.ops.size()) {
    split.whyNot = "every op has a length in its shapes";
    split.order.clear();
  }
  return split;
}

} // namespace llmc::rt
