// What a plan lets one of the CUDA executor's launches do for another, or skip, decided from
// the plan when it is prepared or the arena laid out (PlanShortcuts.cpp): the RMS norm a GEMV
// computes in front of itself, the split it stores as its output's pieces, the ops nothing on the
// device reads, the rotation tables read by half, the cache rows written in place.
#pragma once

#include "Executor.h"

namespace llmc::rt::cuda::exec {

// Where a norm op's scale is among its inputs: after the residual of an add_ norm.
size_t normScaleInput(const PlanOp &norm);
// Fills ex.normOfLinear / ex.linearOfNorm for the ops in `order` (empty: the plan's).
void findNormsBeforeLinears(Executor &ex, const std::vector<int> &order);
// From value `v` back through copy ops to the op that made it (-1: none, or a value read twice);
// `way`: the values from `v` back to that op's output. With `transposes`, through transposes too,
// which it lists.
int backThroughCopies(const llmc_plan_t &plan, const ValueUses &uses, int v, std::vector<int> &way,
                      std::vector<int> *transposes = nullptr);
// Per op: the split after a linear that the linear stores as its output's pieces, or -1.
std::vector<int> splitsAfterLinears(const llmc_plan_t &plan, const std::vector<int> &order,
                                    const std::vector<bool> &unneeded);
// Fills ex.splitOfLinear / ex.linearOfSplit.
void findSplitsAfterLinears(Executor &ex, const std::vector<int> &order);
// Per op: for a fused_attention, the linear after it whose weight it prefetches into L2, or -1.
std::vector<int> weightsAfterAttention(const llmc_plan_t &plan);
// Whether attention op `op` reads the first halves of its rotation tables (halfOf).
bool readsHalfTables(const PlanOp &op, const std::vector<int> &halfOf);
// Per value: for a concatenation of one value with itself along the last axis, that value; else -1.
std::vector<int> repeatedHalves(const llmc_plan_t &plan);
// Per op: nothing on the device reads what it computes, so it is not launched.
std::vector<bool> unneededOnDevice(const llmc_plan_t &plan, const std::vector<int> &halfOf);
// Whether `past` and `present` are a cache linked with llmc_context_link_cache (one buffer).
bool linkedInPlace(const Executor &ex, int past, int present);

// What the launches of a plan with linked caches write in place of their own outputs:
// - cacheRows (per value: a concatenation op, else -1): a linked cache's new rows, where the op
//   that makes them is a split (a piece), a rotary, or a concatenation (DeepSeek's latent row;
//   a batch's along its rows' last axis), which write at the cache's end themselves,
//   with only copy ops (and transposes: appendWays) between; the concatenation then copies
//   nothing;
// - rotaryOfSplit / splitOfRotary: a key rotation on rows [B, S, H * D] whose input is a piece of
//   a split along the last axis (through copy ops), whose tables are made before the split, and
//   whose output goes into a linked cache (so writing it at the split's turn frees no arena slot
//   early): the split rotates that piece in its own launch (stridedCopiesAndRotary);
// - elsewhere: the values those leave without bytes of their own;
// - appendWays: per concatenation whose rows come through transposes, the way from their maker:
//   each run follows the rows' strides back along it (chooseInPlace), and cacheRows (and the
//   rotation) hold in the runs where it can, the maker writing its rows where the transposes
//   would put them and the transposes moving nothing; the values of such a way keep their bytes
//   for the other runs.
struct InPlace {
  std::vector<int> cacheRows;
  std::vector<Executor::SplitRotary> rotaryOfSplit;
  std::vector<int> splitOfRotary;
  std::vector<bool> elsewhere;
  std::vector<AppendWay> appendWays; // per concatenation op (Executor::appendWays)
};

InPlace inPlaceOf(const Executor &ex, const std::vector<int> &order);
// Keeps `p` as the executor's plan of in-place appends and rotations, and this run's choice.
void keepInPlace(Executor &ex, InPlace p);
// This run's in-place appends and rotations (shapes `t`): those whose appendWays can be followed
// in it, with where their makers write (Executor::rowStridesThisRun).
void chooseInPlace(Executor &ex, const std::vector<TensorRef> &t);

} // namespace llmc::rt::cuda::exec
