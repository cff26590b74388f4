// A linear for a few rows (a decode step's M of 1 to 8), where the weight's bytes are the whole
// cost: one warp per output column streams that column's weight row W[n, :] ([N, K] row-major,
// the layout llmc-transpose-linear-weights gives CUDA plans) in 16-byte loads, four in flight per
// lane, against every row of x, and reduces with shuffles. Where a launch's columns alone would
// leave most of the warps the GPU holds idle (a Llama-1B layer's output and down projections:
// 2048 columns, where an H200 holds about 6 thousand warps of this kernel), 2 or 4 warps of a
// block share a column, each over a slice of K, and add their sums in shared memory: more loads
// in flight, and no second pass or workspace either way (docs/gpu-results.md has the figures).
// The bias, the activation (SwiGLU: the warp reads the gate's row and the up projection's row),
// the gate and the residual are applied before the one store. Or the output goes to pieces of
// its own (a merged QKV projection's split: queries, keys rotated into the cache, values into
// it), a warp computing two columns of a piece (a rotated piece's pair) as SwiGLU's two rows, so
// that the split costs no launch. An RMS norm in front (the decoder layer's norm before its QKV
// or gate/up projection) costs no launch either: each block adds the residual to x and
// multiplies by the norm's scale once into shared memory, summing the squares on the way (one
// round of loads, where M * K fits there: a decode step's hidden state does), or else each warp
// does so for the rows it reads; the epilogue applies the norm's factor to the dot products. With
// a programmatic launch (DeviceUtil.cuh) the first weight loads are issued before the wait for the
// kernel ahead. A launch may have fewer blocks than groups of columns (SmallLinearArgs::blocks: as
// many as the GPU holds, a persistent launch), each block then taking several groups in turn;
// and up to five steps (linears of one row, a decode attention first) may run in one cooperative
// launch, a grid barrier between two (DecodeChain.cu: a decode layer's attention and the linears
// after it). What the two files share is in SmallLinearDevice.cuh.
// cuBLASLt keeps the larger M (PrepareCompute.cpp: prepareLinear, smallLinearCall).
#include "SmallLinearDevice.cuh"

#include <climits>

namespace llmc::rt::cuda {
namespace {

// Warp w of block b computes slice (w % slices) of K of output column b * (kWarps / slices) +
// w / slices for every row m < M; the slice-0 warp finishes the column. With kLoop the launch may
// have fewer blocks than groups of kWarps / slices columns (SmallLinearArgs::blocks), and block b
// takes groups b, b + gridDim.x, ... (loopOverGroups); without it, a block per group and none of
// the registers the loop keeps. Its first lines repeat loopOverGroups' on purpose: one body for
// both, with the loop cut to one group at compile time, took ptxas 4 to 12 more registers in
// most one-group variants (bf16, M = 1: 48 -> 52; reordering the epilogue's conditions gave some
// back and cost the looping variants one).
template <typename T, int kMaxM, bool kPaired, bool kNorm, bool kLoop>
__global__ void __launch_bounds__(kWarps * 32)
    smallLinearKernel(const __grid_constant__ SmallLinearArgs a, Activation act, int slices) {
  if constexpr (kLoop) {
    loopOverGroups<T, kMaxM, kPaired, kNorm, false>(a, act, slices, [] { waitForPrevious(); });
    return;
  }
  constexpr int V = Lanes<T>::kCount;
  extern __shared__ float stagedX[]; // stagesNorm: x's rows, plus the residual, times the norm's scale
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t nOut = kPaired ? a.N / 2 : a.N;
  const int64_t n = int64_t(blockIdx.x) * (kWarps / slices) + warp / slices;
  // Slices are whole steps of the warp's 16-byte loads; the last may be shorter, or empty.
  const int64_t step = 32 * V, sliceLength = (a.K + step * slices - 1) / (step * slices) * step;
  const int64_t kBegin = (warp % slices) * sliceLength, kEnd = kBegin + sliceLength < a.K ? kBegin + sliceLength : a.K;
  Sums<T, kMaxM, kPaired, kNorm> sums;
  allowNextLaunch();
  const ColumnRows<T, kPaired> rows = columnRows<T, kPaired>(a, n, nOut);
  int64_t k = kBegin + int64_t(lane) * V;
  uint4 r[kUnroll], u[kUnroll];
  // The first step's weights are loaded before the wait: with a programmatic launch they stream
  // in while the kernel before this one (whose output is x) finishes.
  const bool firstStep = n < nOut && k < kEnd;
  if (firstStep)
    loadStep<T, kPaired>(r, u, rows.row, rows.upRow, k, kEnd);
  waitForPrevious();
  // Lane m finishes row m (finishColumn): its epilogue's operands now (`ends`).
  const RowEpilogue ends = n < nOut && lane < a.M && warp % slices == 0
                               ? rowEpilogue<T, kPaired>(a, rows.pair, rows.rowA, rows.rowB, n, nOut, lane)
                               : RowEpilogue{};
  const bool staged = kNorm && stagesNorm(a);
  __shared__ float stagedSquares[kWarps][kMaxM]; // (with `staged`) per warp and row of x
  if (staged)
    stageNormInputs<T, kMaxM>(a, stagedX, stagedSquares, a.normSum && blockIdx.x == 0);
  const float *xs = staged ? stagedX : nullptr;
  if (n < nOut) { // warps past the last column only take part in addSlices' barrier
    sumSlice(a, sums, r, u, rows.row, rows.upRow, k, kEnd, firstStep, kNorm && !staged && a.normSum && n == 0, xs);
    sums.reduce();
  }
  if (slices > 1)
    sums.addSlices(slices, warp, lane, false);
  if (n < nOut && warp % slices == 0)
    finishColumn<T, kMaxM, kPaired, kNorm>(a, act, sums, ends, rows.pair, kPaired && a.pieces > 0, staged,
                                           stagedSquares, n, nOut, lane);
}

// The warps of `kernel` that the current GPU holds at once; asked once per kernel variant (the
// executor runs on one GPU). 0 where CUDA cannot say (then no slicing).
int64_t residentWarps(const void *kernel) { return residentBlocks(kernel, 0) * kWarps; }

template <typename T, int kMaxM, bool kPaired, bool kNorm> struct Variant {
  template <bool kLoop> static constexpr auto kernel = smallLinearKernel<T, kMaxM, kPaired, kNorm, kLoop>;
  template <bool kLoop> static int64_t resident() {
    static const int64_t warps = residentWarps(reinterpret_cast<const void *>(kernel<kLoop>));
    return warps;
  }
  static int64_t columns(const SmallLinearArgs &a) { return kPaired ? a.N / 2 : a.N; }
  static int slices(const SmallLinearArgs &a) {
    return a.slices > 0 ? a.slices : slicesFor(columns(a), a.K, 16 / int64_t(sizeof(T)), resident<false>());
  }
  // Whether fewer blocks than groups may be launched (the looping kernel exists): for 16-bit
  // weights and up to 2 rows, decode steps of 16-bit plans at batch 1 or 2. Every variant of it
  // adds to each binary that holds the kernels (three in tools/gpu-check.sh's pack, which must
  // stay under 64 MiB with the working tree).
  static constexpr bool kLoops = sizeof(T) == 2 && kMaxM <= 2;
  // A block per group of columns, or (SmallLinearArgs::blocks, where kLoops) fewer, looping.
  static void launch(const SmallLinearArgs &a, Activation act, cudaStream_t stream) {
    const int slices = Variant::slices(a);
    const int64_t columnsPerBlock = kWarps / slices, groups = (columns(a) + columnsPerBlock - 1) / columnsPerBlock;
    const size_t shared = kNorm && stagesNorm(a) ? size_t(a.M * a.K) * sizeof(float) : 0;
    const dim3 block(kWarps * 32);
    if constexpr (kLoops) {
      const int64_t limit = a.blocks > 0   ? a.blocks
                            : a.blocks < 0 ? std::max<int64_t>(1, resident<true>() / kWarps)
                                           : groups;
      if (limit < groups) {
        launchKernel(a.overlapPrevious, kernel<true>, dim3(unsigned(limit)), block, shared, stream, a, act, slices);
        return;
      }
    }
    launchKernel(a.overlapPrevious, kernel<false>, dim3(unsigned(groups)), block, shared, stream, a, act, slices);
  }
};

// Calls f with the Variant type that runs `a` (M rounded up to 1, 2, 4 or 8).
template <typename T, typename F> void withVariant(const SmallLinearArgs &a, F &&f) {
  const bool norm = a.normScale != nullptr;
  auto forM = [&](auto maxM) {
    constexpr int M = decltype(maxM)::value;
    const bool paired = a.swiglu || a.pieces > 0; // a warp reads two weight rows
    if (paired && norm)
      f(Variant<T, M, true, true>{});
    else if (paired)
      f(Variant<T, M, true, false>{});
    else if (norm)
      f(Variant<T, M, false, true>{});
    else
      f(Variant<T, M, false, false>{});
  };
  if (a.M == 1)
    forM(std::integral_constant<int, 1>{});
  else if (a.M == 2)
    forM(std::integral_constant<int, 2>{});
  else if (a.M <= 4)
    forM(std::integral_constant<int, 4>{});
  else
    forM(std::integral_constant<int, 8>{});
}

// Output pieces (LinearPiece) that the kernel can store: none, or up to kMaxLinearPieces of even
// widths adding up to N, rotated ones in whole heads of an even size (rotaryDim even, within the
// head), without SwiGLU, gate or residual.
bool piecesFit(const SmallLinearArgs &a) {
  if (a.pieces == 0)
    return true;
  if (a.pieces < 0 || a.pieces > kMaxLinearPieces || a.swiglu || a.gate || a.residual)
    return false;
  int64_t columns = 0;
  for (int i = 0; i < a.pieces; ++i) {
    const LinearPiece &p = a.piece[i];
    const RotaryArgs &r = p.rotary;
    if (p.columns <= 0 || p.columns % 2 || !p.to.base || p.to.batchStride || // rows one after another
        (r.cos && (!r.sin || r.D <= 0 || r.D % 2 || p.columns % r.D || r.rotaryDim <= 0 || r.rotaryDim % 2 ||
                   r.rotaryDim > r.D)))
      return false;
    columns += p.columns;
  }
  return columns == a.N;
}

} // namespace

bool smallLinearTakes(Storage s, const SmallLinearArgs &a) {
  const int64_t v = 16 / int64_t(storageBytes(s));
  return a.M >= 1 && a.M <= kSmallLinearMaxM && a.K > 0 && a.K % v == 0 && a.N > 0 && (!a.swiglu || a.N % 2 == 0) &&
         a.N / kWarps < int64_t(INT_MAX) && aligned16(a.x) && aligned16(a.w) && aligned16(a.normScale) &&
         aligned16(a.normResidual) && aligned16(a.normSum) && (!a.normSum || a.normResidual) &&
         (!a.normResidual || a.normScale) && (a.slices == 0 || a.slices == 1 || a.slices == 2 || a.slices == 4) && a.blocks >= -1 &&
         piecesFit(a);
}

std::string smallLinear(Storage s, const SmallLinearArgs &a, const std::string &activation, void *stream) {
  Activation act;
  if (!parseActivation(activation, act))
    return "smallLinear: unknown activation '" + activation + "'";
  if (!smallLinearTakes(s, a) || (a.pieces && act != Activation::None))
    return "smallLinear: needs 1 <= M <= " + std::to_string(kSmallLinearMaxM) +
           ", K a multiple of 16 bytes, an even N with swiglu, x, w and the norm's tensors aligned to 16 bytes, "
           "a norm's scale with its residual and sum (a sum only with a residual), 0, 1, 2 or 4 slices, blocks of "
           "-1 or more, and output "
           "pieces (at most " + std::to_string(kMaxLinearPieces) +
           ", of even widths adding up to N, whole heads where rotated, rows one after another) only without an activation, gate or residual";
  dispatch(s, [&](auto tag) {
    withVariant<decltype(tag)>(a, [&](auto variant) { variant.launch(a, act, static_cast<cudaStream_t>(stream)); });
  });
  return launched("smallLinear");
}

int smallLinearSlices(Storage s, const SmallLinearArgs &a) {
  int slices = 0;
  if (smallLinearTakes(s, a))
    dispatch(s, [&](auto tag) { withVariant<decltype(tag)>(a, [&](auto variant) { slices = variant.slices(a); }); });
  return slices;
}

} // namespace llmc::rt::cuda
