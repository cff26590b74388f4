// What llmc's GEMV (SmallLinear.cu) and the chained decode launch (DecodeChain.cu) share: a warp's
// sums over its slice of K for its output column, the norm staged in front, the epilogue that
// finishes a column (bias, activation, gate, residual, or output pieces rotated into a cache),
// the loop of a block over groups of columns, and how many slices and blocks a launch takes.
// Included by those two files only (each gets its own copy of what it instantiates).
#pragma once

#include "CudaKernels.h"
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
  // Without ids row m = b * S + s reads table row m, or row s of tables shared by every batch.
  const int64_t pos = rot.positions ? rot.positions[m] : (rot.sharedTables ? m % rot.S : m), half = rot.rotaryDim / 2;
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

} // namespace
} // namespace llmc::rt::cuda
