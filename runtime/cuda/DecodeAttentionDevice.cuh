// The decode attention's device code (DecodeAttention.cu has its launches): shared with the
// chained decode kernel (SmallLinear.cu: decodeChain), which runs the tiled kernel's blocks as
// one of its steps.
//
// Decode attention (CudaKernels.h: decodeAttention): one query per sequence over a cache, the
// keys split across blocks per head (blockIdx.y; at least 64 keys each, so that with a cache
// shorter than the launch's bound the last blocks have none and leave at once), each block's
// partial result (its max, its sum of exponentials, its unnormalized weighted sum of values) in
// the workspace, and the last block of a head to finish combines them, in one round of loads:
// one launch. Where one block has all of a head's keys (at most 64), it writes the head's result
// itself (no partial result, counter or combine). A block of the tiled kernel takes up to 4 of the
// query heads that read one key/value head (blockIdx.x), loading each key and value once for them.
//
// A decode step's attention reads little (a Llama-1B layer at 576 cached tokens: 1.2 MB) and
// waits on latency, so what matters is how many rounds of dependent loads a block waits for. The
// tiled kernel issues every 16-byte load of its keys and values at once (kTileLoads of each per
// thread) and then scores, weighs and sums them from registers: one round per tile of keys, and
// a block holds a tile of 64 keys of 64 bf16 elements (docs/gpu-results.md has the figures). The
// plain kernel takes what the tiled one cannot (unaligned rows, D != Dv, a head that is not 1, 2,
// 4, ... or 32 pieces of 16 bytes): it scores a few keys per warp at a time, then sums the values
// row by row.
#pragma once

#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace llmc::rt::cuda {
namespace {


constexpr int kDecodeThreads = 128;          // 4 warps per block (sequence, heads, split)
constexpr int64_t kMaxDecodeChunk = 1024;    // cache rows one decode block scores
constexpr int kDecodeKeysPerStep = 4;        // keys a warp of the plain kernel scores at once
constexpr int kTileLoads = 4;                // 16-byte loads of keys, and as many of values, per thread and tile
constexpr int64_t kMinDecodeChunk = 64;      // keys a block takes at least (a tiled block's tile of bf16 heads of 64)
constexpr int kMaxGroupedHeadDim = 128;      // head size up to which a tiled block takes the heads that share keys

// Where, in the workspace (floats), the block of split `split` of (sequence, head) `bh` puts its
// partial result: its max, its sum of exponentials, then its Dv weighted value sums.
__device__ __forceinline__ int64_t partialAt(int64_t bh, int split, int splits, int64_t Dv) {
  return (bh * splits + split) * (Dv + 2);
}

// After a block has written its partial results: the last of the `active` blocks of the `heads`
// consecutive (sequence, head) pairs from `bh` that had keys (blocks without keys leave first:
// they count not; one counter per block's heads, at `bh`) merges their results into the output,
// each thread one element of one head's values.
template <typename T>
__device__ void arriveAndCombine(const AttentionArgs &a, const float *ws, unsigned *arrived, int64_t bh, int heads,
                                 int splits, int active) {
  if (!lastToArrive(arrived + bh, active))
    return;
  for (int64_t i = threadIdx.x; i < heads * a.Dv; i += blockDim.x) {
    const int64_t row = bh + i / a.Dv, dv = i % a.Dv;
    const float merged =
        mergeSplits([&](int s) { return ws + partialAt(row, s, splits, a.Dv); }, active, dv, sinkOf<T>(a, row % a.Hq));
    static_cast<T *>(a.out)[row * a.Dv + dv] = fromF<T>(merged);
  }
}

// Element dv of a block's weighted value sum `sum` for head `bh` (its max `best`, its sum of
// exponentials `total`): the head's result where the block is the head's one split with keys
// (`active`), else its partial result's element.
template <typename T>
__device__ __forceinline__ void storeElement(const AttentionArgs &a, float *ws, int64_t bh, int split, int splits,
                                             int active, int64_t dv, float sum, float best, float total) {
  if (active == 1)
    static_cast<T *>(a.out)[bh * a.Dv + dv] = // every key masked: zeros
        fromF<T>(best == -INFINITY ? 0.0f : sum / (total + sinkWeight(sinkOf<T>(a, bh % a.Hq), best)));
  else
    ws[partialAt(bh, split, splits, a.Dv) + 2 + dv] = sum;
}

// After storeElement for the block's kHeads heads from `bh`: a split of several stores each
// head's max and sum and arrives (arriveAndCombine).
template <typename T, int kHeads>
__device__ void finishSplit(const AttentionArgs &a, float *ws, unsigned *arrived, int64_t bh, int split, int splits,
                            int active, const float (&best)[kHeads], const float (&total)[kHeads]) {
  if (active == 1)
    return;
  if (threadIdx.x == 0)
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      float *partial = ws + partialAt(bh + g, split, splits, a.Dv);
      partial[0] = best[g], partial[1] = total[g];
    }
  arriveAndCombine<T>(a, ws, arrived, bh, kHeads, splits, active);
}

// How the launch's blocks of a head share its keys: the key count (with skOnDevice the count a
// graph's replay finds there, a.Sk being its bound, which sized the launch), or with a sliding
// window its last a.window keys (the query is the last position), in chunks of at least
// kMinDecodeChunk keys; split s takes keys [t0, t1), and the first `active` splits have keys (a
// cache shorter than the bound leaves the others idle, and the combine reads fewer partials).
struct DecodeChunk {
  int64_t keys, t0, t1;
  int active;
  int64_t maskBatch, maskHead; // the mask's batch and head strides for this key count
};
__device__ __forceinline__ DecodeChunk decodeChunk(const AttentionArgs &a, int split, int splits) {
  const int64_t keys = a.skOnDevice && *a.skOnDevice < a.Sk ? *a.skOnDevice : a.Sk;
  const int64_t first = a.window > 0 && keys > a.window ? keys - a.window : 0;
  int64_t chunk = (keys - first + splits - 1) / splits;
  chunk = chunk < kMinDecodeChunk ? kMinDecodeChunk : chunk;
  const int64_t active = (keys - first + chunk - 1) / chunk, t0 = first + split * chunk;
  return {keys, t0, t0 + chunk < keys ? t0 + chunk : keys, active > 1 ? int(active) : 1,
          a.maskRowsPerBatch ? a.maskRowsPerBatch * keys : a.maskStrides[0],
          a.maskRowsPerHead ? a.maskRowsPerHead * keys : a.maskStrides[1]};
}

// qs[d] = the query of sequence b and head h, rotated by the tables where the op has them and
// scaled, by the whole block (the caller's barrier publishes it).
template <typename T> __device__ void loadQuery(const AttentionArgs &a, int64_t b, int64_t h, float *qs) {
  const T *q = static_cast<const T *>(a.q) + b * a.qs.batch + h * a.qs.head;
  const int64_t width = tableWidth(a); // of a table row
  const T *cq = a.cos ? static_cast<const T *>(a.cos) + (a.tablesPerBatch ? b : 0) * width : nullptr;
  const T *sq = a.sin ? static_cast<const T *>(a.sin) + (a.tablesPerBatch ? b : 0) * width : nullptr;
  for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
    qs[d] = rotatedBy(a, q, cq, sq, d) * a.scale;
}

// Block (sequence b and head h, split) of the plain kernel: each warp scores kDecodeKeysPerStep
// keys at a time into shared memory, then the block takes their exponentials and each thread sums
// one element of the values over the chunk.
template <typename T>
__global__ void __launch_bounds__(kDecodeThreads)
    decodeAttentionKernel(AttentionArgs a, float *__restrict__ ws, unsigned *__restrict__ arrived) {
  __shared__ float qs[kMaxDecodeHeadDim];
  __shared__ float p[kMaxDecodeChunk];
  allowNextLaunch();
  prefetchL2Share(a.prefetchL2, a.prefetchL2Bytes);
  waitForPrevious();
  const int64_t bh = blockIdx.x, b = bh / a.Hq, h = bh % a.Hq, kvh = h / (a.Hq / a.Hkv);
  const int split = blockIdx.y, splits = gridDim.y;
  const DecodeChunk c = decodeChunk(a, split, splits);
  if (split >= c.active) // no keys (a launch sized for a longer cache): nothing to add
    return;
  const int64_t t0 = c.t0, t1 = c.t1;
  loadQuery<T>(a, b, h, qs);
  __syncthreads();
  const T *kb = static_cast<const T *>(a.k) + b * a.ks.batch + kvh * a.ks.head;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  // kDecodeKeysPerStep keys per warp at a time, their loads issued together (past the chunk's
  // end a step rereads its last key and drops the score).
  for (int64_t t = t0 + int64_t(warp) * kDecodeKeysPerStep; t < t1; t += int64_t(warps) * kDecodeKeysPerStep) {
    const T *kt[kDecodeKeysPerStep];
    float dot[kDecodeKeysPerStep];
#pragma unroll
    for (int u = 0; u < kDecodeKeysPerStep; ++u)
      kt[u] = kb + (t + u < t1 ? t + u : t1 - 1) * a.ks.token, dot[u] = 0.0f;
    for (int64_t d = lane; d < a.D; d += 32) {
      const float qd = qs[d];
#pragma unroll
      for (int u = 0; u < kDecodeKeysPerStep; ++u)
        dot[u] += qd * toF(kt[u][d]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int u = 0; u < kDecodeKeysPerStep; ++u)
        dot[u] += __shfl_xor_sync(0xffffffffu, dot[u], o);
    if (lane == 0) {
#pragma unroll
      for (int u = 0; u < kDecodeKeysPerStep; ++u)
        if (t + u < t1)
          p[t + u - t0] = masked<T>(a, dot[u], b * c.maskBatch + h * c.maskHead + (t + u) * a.maskStrides[3]);
    }
  }
  __syncthreads();
  float best;
  const float total = blockExpScores(p, t1 - t0, &best);
  const T *vb = static_cast<const T *>(a.v) + b * a.vs.batch + kvh * a.vs.head;
  for (int64_t dv = threadIdx.x; dv < a.Dv; dv += blockDim.x) {
    float o = 0.0f;
#pragma unroll 8
    for (int64_t t = t0; t < t1; ++t)
      o += p[t - t0] * toF(vb[t * a.vs.token + dv]);
    // The head's one split writes the head's result (zeros for an empty cache); several, their
    // partial results.
    storeElement<T>(a, ws, bh, split, splits, c.active, dv, o, best, total);
  }
  const float bests[1] = {best}, totals[1] = {total};
  finishSplit<T, 1>(a, ws, arrived, bh, split, splits, c.active, bests, totals);
}

// Sum (or with kMax, max) of each of N values over the block; every thread gets them (one pair
// of barriers for all N, where blockReduce takes three per value).
template <bool kMax, int N> __device__ void blockReduceEach(float (&v)[N]) {
  __shared__ float partial[kDecodeThreads / 32][N];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int i = 0; i < N; ++i)
    for (int o = 16; o > 0; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, v[i], o);
      v[i] = kMax ? fmaxf(v[i], other) : v[i] + other;
    }
  __syncthreads(); // the previous call's readers are done with `partial`
  if (lane == 0)
#pragma unroll
    for (int i = 0; i < N; ++i)
      partial[warp][i] = v[i];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    v[i] = partial[0][i];
    for (int w = 1; w < kDecodeThreads / 32; ++w)
      v[i] = kMax ? fmaxf(v[i], partial[w][i]) : v[i] + partial[w][i];
  }
}

// Block (sequence b, heads h0 .. h0 + kGroup - 1 that read one key/value head, split) of the tiled
// kernel. A key row and a value row are each `segs` pieces of 16 bytes (segs a power of two up to
// 32): thread i holds piece i % segs of keys i / segs + j * (kDecodeThreads / segs), j <
// kTileLoads, of the tile, and of their values, loaded once for the kGroup heads. The pieces'
// partial dot products are summed over the segs lanes of a key; the block takes each head's
// tile max and sum (online softmax across tiles); each thread adds its keys' weighted value
// pieces into its V running sums per head, which the threads of one piece add together at the end.
template <typename T, int kGroup>
__device__ __forceinline__ void tiledDecodeBlock(const AttentionArgs &a, float *__restrict__ ws,
                                                 unsigned *__restrict__ arrived, int segs, int64_t bx, int split,
                                                 int splits) {
  constexpr int V = Lanes<T>::kCount;
  constexpr int kHeadDim = kGroup == 1 ? int(kMaxDecodeHeadDim) : kMaxGroupedHeadDim;
  __shared__ float qs[kGroup][kHeadDim];
  __shared__ float p[kGroup][kDecodeThreads * kTileLoads]; // a tile's scores (at most one key per thread and load)
  __shared__ float pieceSums[kDecodeThreads / 32][kGroup][kHeadDim];
  const int64_t groups = a.Hq / kGroup; // blocks per sequence and split
  const int64_t b = bx / groups, h0 = bx % groups * kGroup, kvh = h0 / (a.Hq / a.Hkv);
  const int64_t bh0 = b * a.Hq + h0;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, seg = threadIdx.x & (segs - 1);
  const int keysPerPass = kDecodeThreads / segs, tileKeys = keysPerPass * kTileLoads;
  const int firstKey = threadIdx.x / segs;
  const T *kb = static_cast<const T *>(a.k) + b * a.ks.batch + kvh * a.ks.head + seg * V;
  const T *vb = static_cast<const T *>(a.v) + b * a.vs.batch + kvh * a.vs.head + seg * V;
  // Every load of a tile at once, its keys from `tile` on (past `last`, the last key again).
  uint4 kr[kTileLoads], vr[kTileLoads];
  auto loadTile = [&](int64_t tile, int64_t last) {
#pragma unroll
    for (int j = 0; j < kTileLoads; ++j) {
      int64_t t = tile + firstKey + j * keysPerPass;
      t = t < last ? t : last;
      kr[j] = __ldg(reinterpret_cast<const uint4 *>(kb + t * a.ks.token));
      vr[j] = __ldg(reinterpret_cast<const uint4 *>(vb + t * a.vs.token));
    }
  };
  // Where the launch's bound gives every split kMinDecodeChunk keys, a split's first key does not
  // depend on the key count: its first tile is loaded before the count is known (up to the
  // bound), in the same round as the count and the queries, and the keys past the count dropped.
  // (A sliding window's first key follows the count.)
  const bool early = (a.Sk + splits - 1) / splits <= kMinDecodeChunk && (a.window <= 0 || a.window >= a.Sk);
  if (early)
    loadTile(int64_t(split) * kMinDecodeChunk, a.Sk - 1);
#pragma unroll
  for (int g = 0; g < kGroup; ++g)
    loadQuery<T>(a, b, h0 + g, qs[g]); // their loads issued with the key count's
  const DecodeChunk c = decodeChunk(a, split, splits);
  if (split >= c.active) // no keys (a launch sized for a longer cache): nothing to add
    return;
  const int64_t t0 = c.t0, t1 = c.t1;
  float o[kGroup][V] = {}, runningMax[kGroup], runningSum[kGroup] = {};
#pragma unroll
  for (int g = 0; g < kGroup; ++g)
    runningMax[g] = -INFINITY;
  __syncthreads(); // qs
  for (int64_t tile = t0; tile < t1; tile += tileKeys) { // block-uniform: t0, t1 are the block's
    // (Keys past the chunk reread its last key, or hold rows past the cache: their score is
    // dropped, and loaded early their values are zeroed, as such a row may hold anything.)
    if (!early || tile != t0)
      loadTile(tile, t1 - 1);
    else
#pragma unroll
      for (int j = 0; j < kTileLoads; ++j)
        if (tile + firstKey + j * keysPerPass >= t1)
          vr[j] = make_uint4(0, 0, 0, 0);
    float dot[kTileLoads][kGroup];
#pragma unroll
    for (int j = 0; j < kTileLoads; ++j) {
      Lanes<T> k;
      widen(kr[j], k);
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        dot[j][g] = 0.0f;
#pragma unroll
        for (int e = 0; e < V; ++e)
          dot[j][g] += qs[g][seg * V + e] * k.v[e];
      }
    }
    for (int offset = 1; offset < segs; offset <<= 1)
#pragma unroll
      for (int j = 0; j < kTileLoads; ++j)
#pragma unroll
        for (int g = 0; g < kGroup; ++g)
          dot[j][g] += __shfl_xor_sync(0xffffffffu, dot[j][g], offset);
    if (seg == 0)
#pragma unroll
      for (int j = 0; j < kTileLoads; ++j) {
        const int key = firstKey + j * keysPerPass;
        const int64_t t = tile + key;
#pragma unroll
        for (int g = 0; g < kGroup; ++g)
          p[g][key] = t < t1 ? masked<T>(a, dot[j][g], b * c.maskBatch + (h0 + g) * c.maskHead + t * a.maskStrides[3])
                             : -INFINITY;
      }
    __syncthreads();
    float best[kGroup], rescale[kGroup], tileSum[kGroup];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      best[g] = -INFINITY;
      for (int i = threadIdx.x; i < tileKeys; i += blockDim.x)
        best[g] = fmaxf(best[g], p[g][i]);
    }
    blockReduceEach<true>(best);
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      best[g] = fmaxf(runningMax[g], best[g]);
      rescale[g] = runningMax[g] == -INFINITY ? 0.0f : __expf(runningMax[g] - best[g]);
      tileSum[g] = 0.0f;
      for (int i = threadIdx.x; i < tileKeys; i += blockDim.x)
        tileSum[g] += p[g][i] == -INFINITY ? 0.0f : __expf(p[g][i] - best[g]);
    }
    float w[kTileLoads][kGroup];
#pragma unroll
    for (int j = 0; j < kTileLoads; ++j)
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        const float score = p[g][firstKey + j * keysPerPass];
        w[j][g] = score == -INFINITY ? 0.0f : __expf(score - best[g]);
      }
    blockReduceEach<false>(tileSum); // its barriers: p is read before the next tile
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      runningSum[g] = runningSum[g] * rescale[g] + tileSum[g];
      runningMax[g] = best[g];
#pragma unroll
      for (int e = 0; e < V; ++e)
        o[g][e] *= rescale[g];
    }
#pragma unroll
    for (int j = 0; j < kTileLoads; ++j) {
      Lanes<T> v;
      widen(vr[j], v);
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
#pragma unroll
        for (int e = 0; e < V; ++e)
          o[g][e] += w[j][g] * v.v[e];
    }
  }
  // The value pieces' sums: over the lanes of one piece in each warp, then over the warps.
  for (int other = segs; other < 32; other <<= 1)
#pragma unroll
    for (int g = 0; g < kGroup; ++g)
#pragma unroll
      for (int e = 0; e < V; ++e)
        o[g][e] += __shfl_xor_sync(0xffffffffu, o[g][e], other);
  if (lane < segs)
#pragma unroll
    for (int g = 0; g < kGroup; ++g)
#pragma unroll
      for (int e = 0; e < V; ++e)
        pieceSums[warp][g][seg * V + e] = o[g][e];
  __syncthreads();
  // A head's one split writes the head's result (zeros where every key was masked or the cache
  // is empty); several, their partial results.
#pragma unroll
  for (int g = 0; g < kGroup; ++g)
    for (int64_t dv = threadIdx.x; dv < a.Dv; dv += blockDim.x) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < kDecodeThreads / 32; ++w)
        sum += pieceSums[w][g][dv];
      storeElement<T>(a, ws, bh0 + g, split, splits, c.active, dv, sum, runningMax[g], runningSum[g]);
    }
  finishSplit<T, kGroup>(a, ws, arrived, bh0, split, splits, c.active, runningMax, runningSum);
}

// Block (blockIdx.x: the sequence and the heads from h0; blockIdx.y: the split) of the tiled
// kernel: tiledDecodeBlock, after the programmatic launch's prologue.
template <typename T, int kGroup>
__global__ void __launch_bounds__(kDecodeThreads)
    decodeAttentionTiledKernel(AttentionArgs a, float *__restrict__ ws, unsigned *__restrict__ arrived, int segs) {
  allowNextLaunch();
  prefetchL2Share(a.prefetchL2, a.prefetchL2Bytes);
  waitForPrevious();
  tiledDecodeBlock<T, kGroup>(a, ws, arrived, segs, blockIdx.x, int(blockIdx.y), int(gridDim.y));
}

// The 16-byte pieces of a head row that the tiled kernel takes `a` with, or 0 where it cannot:
// keys and values of one size whose every row starts on 16 bytes, and at most 32 pieces.
int tiledPieces(Storage s, const AttentionArgs &a) {
  const int64_t elem = storageBytes(s), perPiece = 16 / elem;
  if (a.D != a.Dv || a.D % perPiece || !aligned16(a.k) || !aligned16(a.v))
    return 0;
  for (int64_t stride : {a.ks.batch, a.ks.head, a.ks.token, a.vs.batch, a.vs.head, a.vs.token})
    if (stride % perPiece)
      return 0;
  const int64_t pieces = a.D / perPiece;
  return pieces <= 32 && (pieces & (pieces - 1)) == 0 ? int(pieces) : 0;
}

// Whether decodeAttention takes `a` in `splits` blocks per head (its message says what it needs).
bool decodeAttentionFits(const AttentionArgs &a, int splits) {
  const int64_t chunk = (decodeKeysSeen(a) + splits - 1) / splits;
  return a.Sq == 1 && a.B > 0 && a.Hkv > 0 && a.Hq % a.Hkv == 0 && a.Sk > 0 && a.D <= kMaxDecodeHeadDim &&
         !(a.cos && a.D % 2) && !a.rotateKeys && chunk <= kMaxDecodeChunk && splits <= kMaxDecodeChunk &&
         a.B * a.Hq <= kSplitCounters;
}

// The query heads a block of the tiled kernel (of `pieces`: tiledPieces) takes: those that read
// one key/value head (heads up to kMaxGroupedHeadDim; 4, 3 or 2 of them, the most that divides
// their number: 8 in two blocks), which it loads each key and value once for; 1 with
// a.oneHeadPerBlock or without the tiled kernel.
int tiledGroup(const AttentionArgs &a, int pieces) {
  if (!pieces || a.oneHeadPerBlock || a.D > kMaxGroupedHeadDim)
    return 1;
  for (int g : {4, 3, 2})
    if (a.Hq / a.Hkv % g == 0)
      return g;
  return 1;
}

} // namespace
} // namespace llmc::rt::cuda
