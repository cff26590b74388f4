// One CUDA graph for every cache length. A graph replays the kernel arguments it was captured
// with, and a decode step's shapes grow by a token each time, so a graph keyed by the exact
// shapes is captured again every step. The lengths that grow (the cache length `past` and the
// attended length `total` of a KV export) change few launches: the cache append, the attention
// and the ops that build the mask. This splits a plan so that the CUDA executor can replay one
// graph whatever those lengths are:
//   - length symbols: those in the dimensions of an attention's keys, values or mask (or a
//     latent attention's cache or mask) that its queries do not have;
//   - ops that read such a length from device memory instead of their launch arguments (the
//     caller says which: the CUDA executor's in-place cache append and decode attention) stay
//     in the graph, as do ops whose shapes involve no length symbol;
//   - every other op with a length in its shapes runs before the graph, launched one by one each
//     run, and so do the ops that compute its inputs (the scalars a mask's range starts from);
//     none of them may need an op that reads its length on the device (the mask is built from
//     the inputs alone), or the split is refused.
// No GPU needed: the CUDA executor calls it, and tests check it on plans here.
#pragma once

#include <functional>
#include <string>
#include <vector>

struct llmc_plan_t;

namespace llmc::rt {

struct PlanOp;

struct LengthFreeSplit {
  std::string whyNot;              // empty: the split holds
  std::vector<bool> lengthSymbol;  // per plan symbol
  std::vector<bool> lengthNode;    // per dimension-expression node: it reads a length symbol
  std::vector<bool> lengthValue;   // per value: some dimension depends on a length symbol
  std::vector<int> order;          // every op: those before the graph, then the graph's, each in plan order
  size_t before = 0;               // how many ops of `order` run before the graph
};

// Whether some input or output of `op` has a length in its shapes.
bool hasLength(const LengthFreeSplit &split, const PlanOp &op);

// `readsLengthOnDevice(op)`: op `op` can take its length-dependent quantity from device memory.
// The graph's ops must all carry one graph-segment mark (llmc-mark-graph-segments).
LengthFreeSplit splitForLengths(const llmc_plan_t &plan, const std::function<bool(int op)> &readsLengthOnDevice);

} // namespace llmc::rt
