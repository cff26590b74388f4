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
// launch, a grid barrier between two (decodeChain: a decode layer's attention and the linears
// after it).
// cuBLASLt keeps the larger M (PrepareCompute.cpp: prepareLinear, smallLinearCall).
#include "CudaKernels.h"
#include "DecodeAttentionDevice.cuh"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

constexpr int kWarps = 4;  // warps per block: output columns per block times the slices of K
constexpr int kUnroll = 4; // 16-byte weight loads in flight per lane

template <typename T> __device__ __forceinline__ float dot(const Lanes<T> &a, const Lanes<T> &b) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Lanes<T>::kCount; ++i)
    s += a.v[i] * b.v[i];
  return s;
}

// 16 bytes of storage from V floats (rounded as fromF rounds).
template <typename T> __device__ __forceinline__ void store16(void *at, const Lanes<T> &f) {
  T narrow[Lanes<T>::kCount];
#pragma unroll
  for (int i = 0; i < Lanes<T>::kCount; ++i)
    narrow[i] = fromF<T>(f.v[i]);
  uint4 raw;
  memcpy(&raw, narrow, 16);
  *static_cast<uint4 *>(at) = raw;
}

// 16 bytes of an activation (x, a residual): through the read-only cache, or with kCoherent
// through L2 (a chained linear's, which other blocks of the same launch wrote: decodeChain;
// the read-only cache holds only what no one writes during the launch).
template <bool kCoherent> __device__ __forceinline__ uint4 loadActivation(const void *p) {
  if constexpr (kCoherent)
    return __ldcg(static_cast<const uint4 *>(p));
  else
    return __ldg(static_cast<const uint4 *>(p));
}
template <bool kCoherent, typename T> __device__ __forceinline__ float loadActivationElement(const T *p) {
  if constexpr (kCoherent)
    return toF(__ldcg(p));
  else
    return toF(*p);
}

// A warp's running sums for its output column: the dot products of every row m < M of x with the
// column's weight row (and with kPaired a second row's: SwiGLU's up projection, or the partner
// column of an output piece), and with a norm in front the sums of squares of those rows
// (x + residual), whose factor the epilogue applies. The sums of
// m >= M (kMaxM rounds M up) repeat the last row and are dropped: no branch keeps the loads of
// x from being issued together.
template <typename T, int kMaxM, bool kPaired, bool kNorm> struct Sums {
  float acc[kMaxM] = {}, up[kMaxM] = {}, squares[kMaxM] = {};

  // Elements [k, k + V) of every row: `row` and `upRow` are the weight rows' loads there. With
  // `storeSum` (one warp of the launch) x + residual is stored to normSum on the way. With
  // `staged` (stageNormInputs: x + residual times the scale), x's rows come from there and the
  // epilogue applies the norm's factor. kCoherent: loadActivation's.
  template <bool kCoherent = false>
  __device__ __forceinline__ void add(const SmallLinearArgs &a, const uint4 &row, const uint4 &upRow, int64_t k,
                                      bool storeSum, const float *staged) {
    Lanes<T> w, wu, scale;
    widen(row, w);
    if (kPaired)
      widen(upRow, wu);
    if (kNorm && staged) {
#pragma unroll
      for (int m = 0; m < kMaxM; ++m) {
        const float4 *from = reinterpret_cast<const float4 *>(staged + (m < a.M ? m : a.M - 1) * a.K + k);
        Lanes<T> xs;
#pragma unroll
        for (int q = 0; q < Lanes<T>::kCount / 4; ++q) {
          const float4 f = from[q];
          xs.v[4 * q] = f.x, xs.v[4 * q + 1] = f.y, xs.v[4 * q + 2] = f.z, xs.v[4 * q + 3] = f.w;
        }
        acc[m] += dot(xs, w);
        if (kPaired)
          up[m] += dot(xs, wu);
      }
      return;
    }
    if (kNorm)
      widen(__ldg(reinterpret_cast<const uint4 *>(static_cast<const T *>(a.normScale) + k)), scale);
    const T *x = static_cast<const T *>(a.x), *residual = static_cast<const T *>(a.normResidual);
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      const int64_t r = m < a.M ? m : a.M - 1;
      Lanes<T> xs;
      widen(loadActivation<kCoherent>(x + r * a.K + k), xs);
      if (kNorm) {
        if (residual) {
          Lanes<T> rs;
          widen(loadActivation<kCoherent>(residual + r * a.K + k), rs);
#pragma unroll
          for (int i = 0; i < Lanes<T>::kCount; ++i)
            xs.v[i] += rs.v[i];
          if (storeSum && m < a.M)
            store16<T>(static_cast<T *>(a.normSum) + r * a.K + k, xs);
        }
#pragma unroll
        for (int i = 0; i < Lanes<T>::kCount; ++i) {
          squares[m] += xs.v[i] * xs.v[i];
          xs.v[i] *= scale.v[i];
        }
      }
      acc[m] += dot(xs, w);
      if (kPaired)
        up[m] += dot(xs, wu);
    }
  }

  // Every lane gets the warp's totals.
  __device__ __forceinline__ void reduce() {
#pragma unroll
    for (int m = 0; m < kMaxM; ++m)
      for (int o = 16; o > 0; o >>= 1) {
        acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
        if (kPaired)
          up[m] += __shfl_xor_sync(0xffffffffu, up[m], o);
        if (kNorm)
          squares[m] += __shfl_xor_sync(0xffffffffu, squares[m], o);
      }
  }

  // With K in `slices` slices, the warps of one column (consecutive in the block) add their
  // totals, and the first of them (slice 0) holds the column's. Every warp of the block calls it.
  // `again`: the block called it before, for another group of columns.
  __device__ __forceinline__ void addSlices(int slices, int warp, int lane, bool again) {
    __shared__ float shared[kWarps][3][kMaxM];
    if (again)
      __syncthreads(); // the previous group's sums have been read from `shared`
    if (lane == 0)
#pragma unroll
      for (int m = 0; m < kMaxM; ++m)
        shared[warp][0][m] = acc[m], shared[warp][1][m] = up[m], shared[warp][2][m] = squares[m];
    __syncthreads();
    if (warp % slices != 0)
      return;
    for (int other = warp + 1; other < warp + slices; ++other)
#pragma unroll
      for (int m = 0; m < kMaxM; ++m)
        acc[m] += shared[other][0][m], up[m] += shared[other][1][m], squares[m] += shared[other][2][m];
  }
};

// Rows of x that a block scales for the norm once into shared memory (f32), rather than each warp
// for its column: with a norm in front, where M * K fits (SmallLinearArgs::stageNorm).
constexpr int64_t kMaxStagedFloats = 11 * 1024; // 44 KiB, under the 48 KiB a block has unasked

__host__ __device__ bool stagesNorm(const SmallLinearArgs &a) {
  return a.normScale && a.stageNorm && a.M * a.K <= kMaxStagedFloats;
}

// xs [M, K] = (x + residual) * scale, by the whole block (every thread calls it), in one round of
// loads, and per row the block's sum of squares of x + residual in `squares` (the epilogue's
// norm factor); with `storeSum` (one block of the launch) x + residual is stored to normSum.
// kCoherent: loadActivation's.
template <typename T, int kMaxM, bool kCoherent = false>
__device__ void stageNormInputs(const SmallLinearArgs &a, float *xs, float (&squares)[kWarps][kMaxM], bool storeSum) {
  constexpr int V = Lanes<T>::kCount;
  const T *x = static_cast<const T *>(a.x), *residual = static_cast<const T *>(a.normResidual);
  const T *scale = static_cast<const T *>(a.normScale);
  float sums[kMaxM] = {};
  for (int64_t k = int64_t(threadIdx.x) * V; k < a.K; k += int64_t(blockDim.x) * V) {
    Lanes<T> s;
    widen(__ldg(reinterpret_cast<const uint4 *>(scale + k)), s);
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      if (m >= a.M)
        break;
      Lanes<T> v;
      widen(loadActivation<kCoherent>(x + m * a.K + k), v);
      if (residual) {
        Lanes<T> r;
        widen(loadActivation<kCoherent>(residual + m * a.K + k), r);
#pragma unroll
        for (int i = 0; i < V; ++i)
          v.v[i] += r.v[i];
        if (storeSum)
          store16<T>(static_cast<T *>(a.normSum) + m * a.K + k, v);
      }
#pragma unroll
      for (int i = 0; i < V; ++i)
        sums[m] += v.v[i] * v.v[i], xs[m * a.K + k + i] = v.v[i] * s.v[i];
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) {
    for (int o = 16; o > 0; o >>= 1)
      sums[m] += __shfl_xor_sync(0xffffffffu, sums[m], o);
    if (lane == 0)
      squares[warp][m] = sums[m];
  }
  __syncthreads();
}

// The two columns that warp `n` computes with output pieces (SmallLinearArgs::piece), within
// piece `piece` (its first column `first` of the linear's): pair p of the piece in order, of a
// rotated piece's head the rotation's pair (i, i + rotaryDim / 2), or (2i, 2i + 1) interleaved,
// then the columns past rotaryDim two by two; of an unrotated piece two columns side by side.
// `angle`: the pair's column of the cos/sin tables, -1 for none.
struct PiecePair {
  int piece = 0;
  int64_t first = 0, a = 0, b = 0, angle = -1;
};

__device__ PiecePair piecePair(const SmallLinearArgs &s, int64_t n) {
  PiecePair r;
  int64_t p = n;
  while (r.piece + 1 < s.pieces && p >= s.piece[r.piece].columns / 2)
    p -= s.piece[r.piece].columns / 2, r.first += s.piece[r.piece].columns, ++r.piece;
  const RotaryArgs &rot = s.piece[r.piece].rotary;
  r.a = 2 * p, r.b = 2 * p + 1;
  if (!rot.cos)
    return r;
  const int64_t half = rot.rotaryDim / 2, head = p / (rot.D / 2) * rot.D, i = p % (rot.D / 2);
  if (i >= half) // past rotaryDim: columns 2i and 2i + 1 of the head, unrotated
    return r.a = head + 2 * i, r.b = r.a + 1, r;
  r.a = head + (rot.interleaved ? 2 * i : i), r.b = r.a + (rot.interleaved ? 1 : half), r.angle = i;
  return r;
}

// A pair's rotation for row m: its cos and sin where the pair has an angle and the row's position
// is inside the tables (`rotate`; outside them: `outside`). Two dependent loads: the position,
// then the tables (RowEpilogue loads them early).
struct PairAngle {
  float c = 1.0f, s = 0.0f;
  bool rotate = false, outside = false;
};

template <typename T> __device__ PairAngle pairAngle(const LinearPiece &piece, const PiecePair &pair, int64_t m) {
  PairAngle r;
  const RotaryArgs &rot = piece.rotary;
  if (pair.angle < 0)
    return r;
  const int64_t pos = rot.positions ? rot.positions[m] : m, half = rot.rotaryDim / 2;
  if (pos < 0 || pos >= rot.tableRows) {
    r.outside = true;
    return r;
  }
  r.c = toF(static_cast<const T *>(rot.cos)[pos * half + pair.angle]);
  r.s = toF(static_cast<const T *>(rot.sin)[pos * half + pair.angle]);
  r.rotate = true;
  return r;
}

// What the lane that finishes row m adds to the row's dot products, loaded by it right after the
// wait for the kernel ahead, so that these loads overlap the dot products instead of following
// them: the bias of the column (and of its pair's or SwiGLU's second row), the gate and the
// residual, a piece's rotation and the rows already in its cache (ShiftedOutput::shift).
struct RowEpilogue {
  float biasA = 0.0f, biasB = 0.0f, gate = 1.0f, residual = 0.0f;
  PairAngle angle;
  int64_t shift = 0;
};

template <typename T, bool kPaired, bool kCoherent = false>
__device__ RowEpilogue rowEpilogue(const SmallLinearArgs &a, const PiecePair &pair, int64_t rowA, int64_t rowB,
                                   int64_t n, int64_t nOut, int64_t m) {
  RowEpilogue e;
  const T *bias = static_cast<const T *>(a.bias), *gate = static_cast<const T *>(a.gate),
          *residual = static_cast<const T *>(a.residual);
  if (bias) {
    e.biasA = toF(bias[rowA]);
    if (kPaired)
      e.biasB = toF(bias[rowB]);
  }
  if (gate)
    e.gate = loadActivationElement<kCoherent>(gate + m * nOut + n);
  if (residual)
    e.residual = loadActivationElement<kCoherent>(residual + m * nOut + n);
  if (kPaired && a.pieces > 0) {
    const LinearPiece &piece = a.piece[pair.piece];
    e.angle = pairAngle<T>(piece, pair, m);
    e.shift = piece.to.shift ? *piece.to.shift : 0;
  }
  return e;
}

// Row m's values of a pair's two columns into its piece, rotated by the row's angle (a position
// outside the tables sets the error flag and stores them unrotated, as rotaryElements).
template <typename T>
__device__ void storePair(const LinearPiece &piece, const PiecePair &pair, const RowEpilogue &row, int64_t m, float va,
                          float vb) {
  const PairAngle &angle = row.angle;
  if (angle.outside && piece.rotary.error)
    atomicExch(piece.rotary.error, 1);
  if (angle.rotate) {
    const float a = va * angle.c - vb * angle.s;
    vb = vb * angle.c + va * angle.s, va = a;
  }
  T *y = static_cast<T *>(piece.to.base) + row.shift * piece.to.shiftStride + m * piece.columns;
  y[pair.a] = fromF<T>(va), y[pair.b] = fromF<T>(vb);
}

// Lane m of a column's finishing warp stores row m: the norm's factor, the bias, then SwiGLU or
// the activation, the gate and the residual (or the pair's two values into their piece).
template <typename T, int kMaxM, bool kPaired, bool kNorm>
__device__ __forceinline__ void finishColumn(const SmallLinearArgs &a, Activation act,
                                             const Sums<T, kMaxM, kPaired, kNorm> &sums, const RowEpilogue &ends,
                                             const PiecePair &pair, bool pieces, bool staged,
                                             const float (&stagedSquares)[kWarps][kMaxM], int64_t n, int64_t nOut,
                                             int lane) {
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) {
    if (m >= a.M || lane != m)
      continue;
    float squares = sums.squares[m];
    if (staged) {
      squares = 0.0f;
#pragma unroll
      for (int other = 0; other < kWarps; ++other)
        squares += stagedSquares[other][m];
    }
    const float norm = kNorm ? rsqrtf(squares / float(a.K) + a.normEpsilon) : 1.0f;
    float v = sums.acc[m] * norm + ends.biasA;
    if (pieces) {
      storePair<T>(a.piece[pair.piece], pair, ends, m, v, sums.up[m] * norm + ends.biasB);
      continue;
    }
    if (kPaired)
      v = swigluOf(v, sums.up[m] * norm + ends.biasB);
    else
      v = activate(act, v);
    if (a.gate)
      v *= ends.gate;
    if (a.residual)
      v += ends.residual;
    static_cast<T *>(a.out)[m * nOut + n] = fromF<T>(v);
  }
}

// Weight rows are read once: streamed (evict first), so that they do not push x out of the caches.
__device__ __forceinline__ uint4 stream(const void *p) { return __ldcs(static_cast<const uint4 *>(p)); }

// The weight rows a warp reads for output column n: W[n] (and with kPaired W[n + nOut], or with
// output pieces the pair's two columns: piecePair).
template <typename T, bool kPaired> struct ColumnRows {
  PiecePair pair;
  int64_t rowA = 0, rowB = 0;
  const T *row = nullptr, *upRow = nullptr;
};

template <typename T, bool kPaired>
__device__ __forceinline__ ColumnRows<T, kPaired> columnRows(const SmallLinearArgs &a, int64_t n, int64_t nOut) {
  ColumnRows<T, kPaired> c;
  const bool pieces = kPaired && a.pieces > 0;
  c.pair = pieces && n < nOut ? piecePair(a, n) : PiecePair{};
  c.rowA = pieces ? c.pair.first + c.pair.a : n, c.rowB = pieces ? c.pair.first + c.pair.b : n + nOut;
  const T *w = static_cast<const T *>(a.w);
  c.row = w + c.rowA * a.K, c.upRow = kPaired ? w + c.rowB * a.K : c.row;
  return c;
}

// A warp's next kUnroll 16-byte loads of its weight rows from k, those before kEnd (the end of
// its slice of K), into r (and with kPaired the second row's into u): a short row's loads are
// issued together, not one round after another.
template <typename T, bool kPaired>
__device__ __forceinline__ void loadStep(uint4 (&r)[kUnroll], uint4 (&u)[kUnroll], const T *row, const T *upRow,
                                         int64_t k, int64_t kEnd) {
  constexpr int64_t step = 32 * Lanes<T>::kCount;
#pragma unroll
  for (int i = 0; i < kUnroll; ++i)
    if (k + i * step < kEnd) {
      r[i] = stream(row + k + i * step);
      if (kPaired)
        u[i] = stream(upRow + k + i * step);
    }
}

// A warp's sums over its slice of K for its column's rows: the loads of the first step already
// in r and u where `loaded`, the other steps' loaded here. kCoherent: loadActivation's.
template <bool kCoherent = false, typename T, int kMaxM, bool kPaired, bool kNorm>
__device__ __forceinline__ void sumSlice(const SmallLinearArgs &a, Sums<T, kMaxM, kPaired, kNorm> &sums,
                                         uint4 (&r)[kUnroll], uint4 (&u)[kUnroll], const T *row, const T *upRow,
                                         int64_t kFirst, int64_t kEnd, bool loaded, bool storeSum, const float *xs) {
  constexpr int64_t step = 32 * Lanes<T>::kCount;
  for (int64_t k = kFirst; k < kEnd; k += kUnroll * step, loaded = false) {
    if (!loaded)
      loadStep<T, kPaired>(r, u, row, upRow, k, kEnd);
#pragma unroll
    for (int i = 0; i < kUnroll; ++i)
      if (k + i * step < kEnd)
        sums.template add<kCoherent>(a, r[i], kPaired ? u[i] : r[i], k + i * step, storeSum, xs);
  }
}

// smallLinearKernel with fewer blocks than groups of columns: block b takes groups b, b +
// gridDim.x, ...; in group g, warp w computes slice (w % slices) of K of column g * (kWarps /
// slices) + w / slices. The norm in front is staged once per block, and a group's first weight
// loads are issued before the previous group's reductions and stores (the first group's before
// `wait()`: the wait for the kernel ahead, or in a chain of linears the grid barrier after the
// linear before; kCoherent then, as x was written during the launch: loadActivation's).
template <typename T, int kMaxM, bool kPaired, bool kNorm, bool kCoherent, typename Wait>
__device__ __forceinline__ void loopOverGroups(const SmallLinearArgs &a, Activation act, int slices, Wait wait) {
  constexpr int V = Lanes<T>::kCount;
  extern __shared__ float stagedX[]; // stagesNorm: x's rows, plus the residual, times the norm's scale
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t nOut = kPaired ? a.N / 2 : a.N, columnsPerBlock = kWarps / slices;
  const int64_t groups = (nOut + columnsPerBlock - 1) / columnsPerBlock;
  const int64_t step = 32 * V, sliceLength = (a.K + step * slices - 1) / (step * slices) * step;
  const int64_t kBegin = (warp % slices) * sliceLength, kEnd = kBegin + sliceLength < a.K ? kBegin + sliceLength : a.K;
  const int64_t kFirst = kBegin + int64_t(lane) * V;
  allowNextLaunch();
  int64_t group = blockIdx.x, n = group * columnsPerBlock + warp / slices;
  ColumnRows<T, kPaired> rows = columnRows<T, kPaired>(a, n, nOut);
  uint4 r[kUnroll], u[kUnroll];
  bool loaded = n < nOut && kFirst < kEnd;
  if (loaded)
    loadStep<T, kPaired>(r, u, rows.row, rows.upRow, kFirst, kEnd);
  wait();
  auto epilogueOf = [&](const ColumnRows<T, kPaired> &c, int64_t column) {
    return column < nOut && warp % slices == 0 && lane < a.M
               ? rowEpilogue<T, kPaired, kCoherent>(a, c.pair, c.rowA, c.rowB, column, nOut, lane)
               : RowEpilogue{};
  };
  RowEpilogue ends = epilogueOf(rows, n);
  const bool staged = kNorm && stagesNorm(a);
  __shared__ float stagedSquares[kWarps][kMaxM];
  if (staged)
    stageNormInputs<T, kMaxM, kCoherent>(a, stagedX, stagedSquares, a.normSum && blockIdx.x == 0);
  const float *xs = staged ? stagedX : nullptr;
  for (; group < groups; group += gridDim.x) { // block-uniform
    Sums<T, kMaxM, kPaired, kNorm> sums;
    if (n < nOut)
      sumSlice<kCoherent>(a, sums, r, u, rows.row, rows.upRow, kFirst, kEnd, loaded,
                          kNorm && !staged && a.normSum && n == 0, xs);
    // The block's next group: its first loads go out before this group's reductions.
    const int64_t nextN = (group + gridDim.x) * columnsPerBlock + warp / slices;
    const ColumnRows<T, kPaired> next = columnRows<T, kPaired>(a, nextN, nOut);
    loaded = group + gridDim.x < groups && nextN < nOut && kFirst < kEnd;
    if (loaded)
      loadStep<T, kPaired>(r, u, next.row, next.upRow, kFirst, kEnd);
    if (n < nOut)
      sums.reduce();
    if (slices > 1)
      sums.addSlices(slices, warp, lane, group != blockIdx.x);
    if (n < nOut && warp % slices == 0)
      finishColumn<T, kMaxM, kPaired, kNorm>(a, act, sums, ends, rows.pair, kPaired && a.pieces > 0, staged,
                                             stagedSquares, n, nOut, lane);
    n = nextN, rows = next, ends = epilogueOf(next, nextN);
  }
}

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

// Slices of K per column (1, 2 or 4): doubled while the launch's warps would still all be
// resident at once (`resident`: the GPU's multiprocessors times the kernel's warps per
// multiprocessor, which its registers bound) and each slice keeps at least two of a warp's
// 16-byte load steps (32 * v elements each). More warps than are resident would only queue.
int slicesFor(int64_t columns, int64_t K, int64_t v, int64_t resident) {
  int slices = 1;
  while (slices < kWarps && columns * slices * 2 <= resident && K >= 2 * int64_t(slices) * 2 * 32 * v)
    slices *= 2;
  return slices;
}

// The blocks of `kernel` (with `shared` bytes of dynamic shared memory each) that the current
// GPU holds at once; 0 where CUDA cannot say.
int64_t residentBlocks(const void *kernel, size_t shared) {
  int device = 0, multiprocessors = 0, blocks = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWarps * 32, shared) != cudaSuccess) {
    cudaGetLastError(); // not the next launch's error
    return 0;
  }
  return int64_t(multiprocessors) * blocks;
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
    if (p.columns <= 0 || p.columns % 2 || !p.to.base ||
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
           ", of even widths adding up to N, whole heads where rotated) only without an activation, gate or residual";
  dispatch(s, [&](auto tag) {
    withVariant<decltype(tag)>(a, [&](auto variant) { variant.launch(a, act, static_cast<cudaStream_t>(stream)); });
  });
  return launched("smallLinear");
}

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
      st.arrived = decodeCounters(from.workspace), st.partials = decodePartials(from.workspace);
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

int smallLinearSlices(Storage s, const SmallLinearArgs &a) {
  int slices = 0;
  if (smallLinearTakes(s, a))
    dispatch(s, [&](auto tag) { withVariant<decltype(tag)>(a, [&](auto variant) { slices = variant.slices(a); }); });
  return slices;
}

} // namespace llmc::rt::cuda
