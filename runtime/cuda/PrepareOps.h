// Each op of a plan, prepared for the CUDA executor: its kernel chosen and checked once, its
// launch a closure that takes the run's shapes. PrepareOps.cpp has the dispatch, data movement,
// small integer ops, reductions, pooling and padding; PrepareConv.cpp the convolutions;
// PrepareCompute.cpp the norms, linears, rotary and fused regions; PrepareAttention.cpp the
// attention ops.
#pragma once

#include "Executor.h"

namespace llmc::rt::cuda::exec {

// The op's CUDA kernel, prepared; or why it has none. An error names the op and its node.
std::string prepareOp(Executor &ex, int k, PreparedOp &p, size_t &scratch);
// Without a device: `ex` for `plan` with every op prepared (as for sm_90a), the linears' scratch
// bytes in `scratch`; `missing(k, why)` hears of each op the executor has no kernel for.
void prepareWithoutDevice(Executor &ex, const llmc_plan_t &plan, size_t &scratch,
                          const std::function<void(size_t, const std::string &)> &missing);

// PrepareConv.cpp: a convolution (im2col and a cuBLASLt GEMM where it has one group, its
// scratch in `scratchBytes`; else the direct kernel), and the window of a conv or pool op for
// this run's shapes.
std::string prepareConv(Executor &ex, const PlanOp &op, PreparedOp &out, size_t &scratchBytes);
std::string windowOf(const PlanOp &op, const Shape &x, const Shape &y, const int64_t *kernel, Window &w);

// PrepareCompute.cpp.
std::string prepareNorm(Executor &ex, const PlanOp &op, int k, PreparedOp &out);
std::string prepareSoftmax(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareGroupNorm(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareGather(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareLinear(Executor &ex, const PlanOp &op, int k, PreparedOp &out, size_t &scratchBytes);
std::string prepareMatmul(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareGemm(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareEinsum(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareExpertLinear(Executor &ex, const PlanOp &op, PreparedOp &out, size_t &scratchBytes);
std::string prepareRotary(Executor &ex, const PlanOp &op, PreparedOp &out, int index);
std::string prepareFusedElementwise(Executor &ex, const PlanOp &op, PreparedOp &out, int index);

// PrepareAttention.cpp.
std::string prepareAttention(Executor &ex, const PlanOp &op, PreparedOp &out, int index);
std::string prepareLatentAttention(Executor &ex, const PlanOp &op, PreparedOp &out);
std::string prepareOnnxAttention(Executor &ex, const PlanOp &op, PreparedOp &out);
// The smallLinear call of linear op `k` in this run (with its norm and split where paired), or
// false where cuBLASLt runs it; the norm's and the split's launches ask too, so that all agree.
bool smallLinearCall(const Executor &e, int k, const std::vector<TensorRef> &t, Storage st, SmallLinearArgs &a);
// Linear `a` (smallLinearCall's) with `activation`: queued for the next chained launch where the
// executor chains GEMVs and the chain takes it, else launched after the queued ones.
std::string launchOrChain(Executor &e, Storage st, const SmallLinearArgs &a, const std::string &activation);
// A decode step's attention (`splits` blocks per head): queued to start the next chained launch
// where the executor chains and the chain takes it, else launched after the queued steps.
std::string attentionOrChain(Executor &e, Storage st, const AttentionArgs &a, int splits);
// Launches the steps queued by launchOrChain and attentionOrChain, if any: one of them as itself,
// several chained.
std::string flushChainedLinears(Executor &e);
// Where an op writes value `v`: its own bytes, or a linked cache's end (InPlace::cacheRows).
ShiftedOutput destinationOf(const Executor &e, int v, const std::vector<TensorRef> &t);
// A rotary op's kernel arguments for this run's shapes.
std::string rotaryArgsOf(const Executor &e, const PlanOp &op, const std::vector<TensorRef> &t, RotaryArgs &a);

} // namespace llmc::rt::cuda::exec
