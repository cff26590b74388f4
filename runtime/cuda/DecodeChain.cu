// A decode step's consecutive steps in one cooperative launch (decodeChain, see CudaKernels.h):
// up to five, linears of one row (bf16) as llmc's GEMV computes them (SmallLinearDevice.cuh) and
// optionally a decode attention first (DecodeAttentionDevice.cuh), with a grid barrier between
// two (gridSync, DeviceUtil.cuh): a decoder layer's attention and the four linears after it in one
// launch where there were five. docs/cuda.md, "Chained launches".
#include "DecodeAttentionDevice.cuh"
#include "SmallLinearDevice.cuh"

namespace llmc::rt::cuda {
namespace {

// One step of a chain (decodeChain), as the chained kernel takes it: a linear (with its
// activation and slices of K) or a decode attention (its tiled kernel's blocks: `group` heads and
// `segs` pieces of a row each, `splits` per head; its workspace's counters and partial results).
struct ChainStepArgs {
  bool attention;
  SmallLinearArgs linear;
  Activation act;
  int slices;
  AttentionArgs att;
  int splits, group, segs;
  unsigned *arrived;
  float *partials;
};
struct ChainArgs {
  ChainStepArgs step[kMaxChainSteps];
  int count;
};
static_assert(kWarps * 32 == kDecodeThreads, "an attention's blocks run as the chain's blocks");

// The tiled decode attention's blocks (tiledDecodeBlock), each block of the launch taking blocks
// blockIdx.x, + gridDim.x, ... of the attention's own grid in turn.
template <typename T, int kGroup> __device__ void attentionBlocks(const ChainStepArgs &st) {
  const int64_t perSplit = st.att.B * st.att.Hq / kGroup, blocks = perSplit * st.splits;
  for (int64_t v = blockIdx.x; v < blocks; v += gridDim.x) {
    tiledDecodeBlock<T, kGroup>(st.att, st.partials, st.arrived, st.segs, v % perSplit, int(v / perSplit), st.splits);
    __syncthreads(); // this block's shared memory read before its next block writes it
  }
}

// The steps of `c` one after another, every block taking part in each (a linear's groups of
// columns as loopOverGroups shares them out, an attention's blocks as attentionBlocks does), a
// grid barrier between two: each linear's first weight loads go out before the barrier that lets
// it read what the step before it wrote. Linears of one row (M = 1), their x, residuals and gates
// read through L2; an attention only first (its inputs are the launches' before). kAttention: a
// kernel of its own, since the attention's registers (its tiled kernels' 128 to 168, ptxas sm_90a)
// would halve the blocks of chains of linears alone.
template <typename T, bool kAttention>
__global__ void __launch_bounds__(kWarps * 32)
    decodeChainKernel(const __grid_constant__ ChainArgs c, GridBarrier *barrier) {
  for (int i = 0; i < c.count; ++i) {
    const ChainStepArgs &st = c.step[i];
    auto wait = [&] {
      if (i == 0)
        waitForPrevious();
      else
        gridSync(barrier);
    };
    if constexpr (kAttention) {
      if (st.attention) { // (each group's shared memory is the kernel's: 2, 3 and 4 heads per block)
        wait();
        if (st.group == 4)
          attentionBlocks<T, 4>(st);
        else if (st.group == 3)
          attentionBlocks<T, 3>(st);
        else
          attentionBlocks<T, 2>(st);
        continue;
      }
    }
    const SmallLinearArgs &a = st.linear;
    const bool paired = a.swiglu || a.pieces > 0, norm = a.normScale != nullptr;
    if (paired && norm)
      loopOverGroups<T, 1, true, true, true>(a, st.act, st.slices, wait);
    else if (paired)
      loopOverGroups<T, 1, true, false, true>(a, st.act, st.slices, wait);
    else if (norm)
      loopOverGroups<T, 1, false, true, true>(a, st.act, st.slices, wait);
    else
      loopOverGroups<T, 1, false, false, true>(a, st.act, st.slices, wait);
  }
}

} // namespace

size_t decodeChainBarrierBytes() { return sizeof(GridBarrier); }

bool smallLinearChainTakes(Storage s, const SmallLinearArgs &a) {
  return s == Storage::BF16 && a.M == 1 && smallLinearTakes(s, a);
}

bool decodeAttentionChainTakes(Storage s, const AttentionArgs &a, int splits) {
  if (s != Storage::BF16 || a.plainDecode || splits <= 0 || !decodeAttentionFits(a, splits))
    return false;
  const int group = tiledGroup(a, tiledPieces(s, a)); // 4 (Llama-3.2-1B), 3 (SmolLM2) or 2 heads per block
  return group >= 2;
}

bool chainSetUp = false; // decodeChainSetup has run

void decodeChainSetup() {
  // The attention's static shared memory and the staged norm's dynamic one together pass 48 KiB.
  for (const void *kernel : {reinterpret_cast<const void *>(decodeChainKernel<__nv_bfloat16, true>),
                             reinterpret_cast<const void *>(decodeChainKernel<__nv_bfloat16, false>)})
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxStagedFloats * sizeof(float)));
  cudaGetLastError(); // an older GPU without the opt-in: decodeChain's launches say so
  chainSetUp = true;
}

std::string decodeChain(Storage s, const ChainStep *steps, int count, int64_t blocks, void *barrier, void *stream) {
  if (!chainSetUp)
    return "decodeChain: decodeChainSetup has not run";
  if (count < 1 || count > kMaxChainSteps || !barrier || blocks < 0 || reinterpret_cast<uintptr_t>(barrier) % 4)
    return "decodeChain: needs 1 to " + std::to_string(kMaxChainSteps) +
           " steps, a barrier's aligned device memory and 0 or more blocks";
  ChainArgs c = {};
  c.count = count;
  size_t shared = 0; // the largest norm staged
  for (int i = 0; i < count; ++i) {
    const ChainStep &from = steps[i];
    ChainStepArgs &st = c.step[i];
    st.attention = from.attention;
    if (from.attention) {
      if (i > 0 || !decodeAttentionChainTakes(s, from.attentionArgs, from.splits) || !from.workspace)
        return "decodeChain: step " + std::to_string(i) +
               " is an attention that is not the first step, or that the tiled decode kernel of 16-bit storage does "
               "not take, or has no workspace";
      st.att = from.attentionArgs, st.splits = from.splits;
      st.segs = tiledPieces(s, st.att), st.group = tiledGroup(st.att, st.segs);
      st.arrived = splitCounters(from.workspace), st.partials = splitPartials(from.workspace);
      continue;
    }
    const SmallLinearArgs &a = from.linear;
    if (!parseActivation(from.activation, st.act))
      return "decodeChain: unknown activation '" + from.activation + "'";
    if (!smallLinearChainTakes(s, a) || (a.pieces && st.act != Activation::None))
      return "decodeChain: step " + std::to_string(i) +
             " is not a linear of one row of 16-bit storage that smallLinear takes (with pieces only without an "
             "activation)";
    st.linear = a;
    if (a.normScale && stagesNorm(a))
      shared = std::max(shared, size_t(a.K) * sizeof(float));
  }
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, __nv_bfloat16>) { // (bf16 alone: each kernel adds to the GPU check's pack)
      auto *kernel = c.step[0].attention ? decodeChainKernel<T, true> : decodeChainKernel<T, false>;
      // (Asked per launch, as `shared` varies: the chain is for comparison until measured.)
      const int64_t resident = std::max<int64_t>(1, residentBlocks(reinterpret_cast<const void *>(kernel), shared));
      for (int i = 0; i < count; ++i) {
        ChainStepArgs &st = c.step[i];
        const SmallLinearArgs &a = st.linear;
        if (!st.attention)
          st.slices = a.slices > 0 ? a.slices
                                   : slicesFor(a.swiglu || a.pieces ? a.N / 2 : a.N, a.K, 8, resident * kWarps);
      }
      const int64_t grid = blocks > 0 ? std::min(blocks, resident) : resident;
      launchCooperative(kernel, dim3(unsigned(grid)), dim3(kWarps * 32), shared, static_cast<cudaStream_t>(stream), c,
                        static_cast<GridBarrier *>(barrier));
    }
  });
  return launched("decodeChain");
}

} // namespace llmc::rt::cuda
