// Prefill attention on tensor cores, flash-attention style (see CudaKernels.h): a block takes 64
// query rows of one (sequence, head), four warps 16 rows each, and walks the keys 64 at a time:
// S = Q K^T and O += P V on WMMA 16x16x16 tiles with f32 accumulators; softmax online (a running
// max and sum per row, O rescaled as the max grows), so the scores never leave shared memory.
// Rotary (rotate-half) is applied to Q and K as they are staged; masks, causality, GQA and every
// layout are those of the plain attention kernel, which f32 storage and unusual head sizes use.
// The next key tile is loaded while the current one computes, and where a launch has few blocks
// of query rows each one's keys are shared out among several blocks (flashAttentionSplits).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <mma.h>

namespace llmc::rt::cuda {
namespace {

using namespace nvcuda;

constexpr int kTile = 64;  // query rows per block, keys per step
constexpr int kWarps = 4;  // 16 query rows each
constexpr int kMaxHead = 128;
size_t allowedShared = 0; // dynamic shared memory the kernels may use (flashAttentionSetup)

// Dynamic shared memory: Q [64][D], K [64][D], V [64][Dv] in the storage type; per warp the
// scores / P·V scratch [16][W] f32 (W = max(64, Dv)), P [16][64] in the storage type, O [16][Dv]
// f32, and the rescale factor and final sum of its 16 rows. The rows of Q, K, V, P and
// the scratch are padded by 16 bytes (`ldq`, `ldv`, `ldp`, `W`): unpadded, rows of 64 or 128
// 16-bit elements all start in the same shared-memory bank, and the 8 rows a WMMA fragment load
// reads at once conflict 8 ways; padded, each row starts 4 banks after the one before. (Every
// fragment pointer stays 32-byte aligned: 16 rows of a padded stride are a multiple of 32 bytes.)
constexpr int kPad16 = 8; // elements of a 16-bit row's padding
constexpr int kPad32 = 4; // of an f32 row's
struct Layout {
  size_t q, k, v, s, p, o, stats, total;
  int ldq, ldv, ldp, W;
};

__host__ __device__ inline Layout layoutFor(int D, int Dv, size_t elem) {
  Layout L;
  L.ldq = D + kPad16, L.ldv = Dv + kPad16, L.ldp = kTile + kPad16;
  L.W = (Dv > kTile ? Dv : kTile) + kPad32;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t start = at;
    at = (at + bytes + 127) / 128 * 128;
    return start;
  };
  L.q = take(size_t(kTile) * L.ldq * elem);
  L.k = take(size_t(kTile) * L.ldq * elem);
  L.v = take(size_t(kTile) * L.ldv * elem);
  L.s = take(size_t(kWarps) * 16 * L.W * sizeof(float));
  L.p = take(size_t(kWarps) * 16 * L.ldp * elem);
  L.o = take(size_t(kWarps) * 16 * Dv * sizeof(float));
  L.stats = take(size_t(kWarps) * 32 * sizeof(float));
  L.total = at;
  return L;
}

// A tile of rows j0 .. j0 + kTile of `from` (row j at from + j * stride, `width` elements, its
// start 16-byte aligned), loaded 16 bytes at a time into registers by the whole block (chunk e
// of the tile by thread e % blockDim.x; rows at or past `rows` are zeros), and then stored into
// `to` [kTile][ld]: the next tile's keys and values are loaded while the current one computes.
// kChunks: per thread, 16 bytes each (4 for rows of up to 64 16-bit elements, 8 up to 128).
template <int kChunks> struct TileChunks {
  uint4 x[kChunks];
};
constexpr int chunksFor(int64_t width) { return width <= 64 ? 4 : 8; }

template <typename T, int kChunks>
__device__ __forceinline__ void loadRows(TileChunks<kChunks> &into, const T *from, int64_t stride, int64_t j0, int64_t rows,
                                         int width) {
  constexpr int kPerLoad = 16 / int(sizeof(T));
  const int perRow = width / kPerLoad; // head sizes are multiples of 16 elements
#pragma unroll
  for (int u = 0; u < kChunks; ++u) {
    const int e = threadIdx.x + u * kWarps * 32, r = e / perRow;
    into.x[u] = make_uint4(0, 0, 0, 0); // zero bits: 0.0 in f16 and bf16
    if (e < kTile * perRow && j0 + r < rows)
      into.x[u] = *reinterpret_cast<const uint4 *>(from + (j0 + r) * stride + e % perRow * kPerLoad);
  }
}

template <typename T, int kChunks>
__device__ __forceinline__ void storeRows(T *to, int ld, const TileChunks<kChunks> &from, int width) {
  constexpr int kPerLoad = 16 / int(sizeof(T));
  const int perRow = width / kPerLoad;
#pragma unroll
  for (int u = 0; u < kChunks; ++u) {
    const int e = threadIdx.x + u * kWarps * 32;
    if (e < kTile * perRow)
      *reinterpret_cast<uint4 *>(to + e / perRow * ld + e % perRow * kPerLoad) = from.x[u];
  }
}

// Rows i0 .. i0 + kTile of `from` as loadRows loads them, each rotated as `rotated` rotates an
// element (rotate-half; no rotation without tables): row i's tables at cosRow0 / sinRow0 + (i -
// i0) * tableWidth. Every chunk lies within one half of the head (halves are multiples of 8
// elements), its partner chunk half a head away.
template <typename T>
__device__ __forceinline__ void stageRotatedRows(T *to, int ld, const T *from, int64_t stride, int64_t i0, int64_t rows,
                                                 int width, const T *cosRow0, const T *sinRow0, int64_t tableWidth,
                                                 bool halfTables) {
  constexpr int kPerLoad = 16 / int(sizeof(T));
  const int perRow = width / kPerLoad, half = width / 2;
  for (int e = threadIdx.x; e < kTile * perRow; e += blockDim.x) {
    const int r = e / perRow, d0 = (e % perRow) * kPerLoad;
    const int64_t i = i0 + r;
    Lanes<T> out;
    if (i >= rows) {
      for (float &v : out.v)
        v = 0.0f;
    } else {
      const T *row = from + i * stride;
      widen(*reinterpret_cast<const uint4 *>(row + d0), out);
      if (cosRow0) {
        const bool first = d0 < half;
        const int column = halfTables && !first ? d0 - half : d0;
        Lanes<T> partner, c, sn;
        widen(*reinterpret_cast<const uint4 *>(row + (first ? d0 + half : d0 - half)), partner);
        widen(*reinterpret_cast<const uint4 *>(cosRow0 + r * tableWidth + column), c);
        widen(*reinterpret_cast<const uint4 *>(sinRow0 + r * tableWidth + column), sn);
#pragma unroll
        for (int k = 0; k < kPerLoad; ++k)
          out.v[k] = out.v[k] * c.v[k] + (first ? -partner.v[k] : partner.v[k]) * sn.v[k];
      }
    }
    T narrow[kPerLoad];
#pragma unroll
    for (int k = 0; k < kPerLoad; ++k)
      narrow[k] = fromF<T>(out.v[k]);
    uint4 raw;
    memcpy(&raw, narrow, 16);
    *reinterpret_cast<uint4 *>(to + r * ld + d0) = raw; // one 16-byte store
  }
}

// Keys per split of a query tile's walk: whole key tiles, the longest walk's shared out evenly.
__host__ __device__ inline int64_t keysPerSplit(int64_t Sk, int splits) {
  const int64_t keyTiles = (Sk + kTile - 1) / kTile;
  return std::max<int64_t>(1, (keyTiles + splits - 1) / splits) * kTile;
}

// kChunks: chunksFor the larger head size. Block ((b * Hq + h) * tiles + query tile) * splits +
// split: with splits > 1 the query tile's keys are shared out in chunks of whole key tiles
// (keysPerSplit), each block writes its rows' partial results to `partials` and the last of the
// query tile's blocks with keys merges them (counted in arrived[(b * Hq + h) * tiles + tile]).
template <typename T, int kChunks>
__global__ void __launch_bounds__(kWarps * 32, kChunks == 4 ? 3 : 1) // head 64: 3 blocks per SM, as shared memory allows
    flashAttentionKernel(AttentionArgs a, int splits, unsigned *arrived, float *partials) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int D = int(a.D), Dv = int(a.Dv);
  const Layout L = layoutFor(D, Dv, sizeof(T));
  const int W = L.W, ldq = L.ldq, ldv = L.ldv, ldp = L.ldp;
  T *qs = reinterpret_cast<T *>(smem + L.q), *ks = reinterpret_cast<T *>(smem + L.k),
    *vs = reinterpret_cast<T *>(smem + L.v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float *sw = reinterpret_cast<float *>(smem + L.s) + warp * 16 * W;
  T *pw = reinterpret_cast<T *>(smem + L.p) + warp * 16 * ldp;
  float *ow = reinterpret_cast<float *>(smem + L.o) + warp * 16 * Dv;
  float *rowSum = reinterpret_cast<float *>(smem + L.stats) + warp * 32, *rescale = rowSum + 16;
  // The running max and sum of the softmax of row lane / 2 of the warp's 16 (both lanes of a row
  // hold them).
  float runningMax = -INFINITY, runningSum = 0.0f;

  const int64_t tiles = (a.Sq + kTile - 1) / kTile, tileIndex = blockIdx.x / splits;
  const int split = int(blockIdx.x % splits);
  const int64_t qt = tileIndex % tiles, h = (tileIndex / tiles) % a.Hq, b = tileIndex / (tiles * a.Hq);
  const int64_t kvh = h / (a.Hq / a.Hkv), i0 = qt * kTile;
  // Causal: no key after the last row's diagonal; a sliding window: none before the first row's
  // window. This block's keys: [jBegin, jEnd); the first `active` splits of the tile's keys
  // [kBegin, kEnd) have keys (with causality, fewer for the first query tiles).
  const int64_t lastRow = (i0 + kTile < a.Sq ? i0 + kTile : a.Sq) - 1;
  const int64_t kEnd = a.causal ? std::min<int64_t>(a.Sk, std::max<int64_t>(0, lastRow + (a.Sk - a.Sq) + 1)) : a.Sk;
  const int64_t kBegin = a.window > 0 ? std::max<int64_t>(0, i0 + (a.Sk - a.Sq) - a.window + 1) : 0;
  const int64_t chunk = keysPerSplit(a.Sk, splits), jBegin = kBegin + split * chunk;
  const int64_t jEnd = std::min(kEnd, jBegin + chunk);
  const int active = int(std::max<int64_t>(1, (kEnd - kBegin + chunk - 1) / chunk));
  if (split >= active) // no keys: nothing to add
    return;
  const T *cosT = static_cast<const T *>(a.cos), *sinT = static_cast<const T *>(a.sin);
  auto tableRow = [&](const T *table, int64_t i) {
    return table ? table + ((a.tablesPerBatch ? b : 0) * a.Sq + i) * tableWidth(a) : nullptr;
  };
  // Rows first .. first + kTile of `from` (row i at from + i * stride, `width` elements) into
  // `to` [kTile][ld] element by element, by the whole block, rotated by the tables with
  // `rotate`; rows at or past `rows` are zeros. Where loadRows and stageRotatedRows cannot go.
  auto stageElements = [&](T *to, int ld, const T *from, int64_t stride, int64_t first, int64_t rows, int width,
                           bool rotate) {
    for (int e = threadIdx.x; e < kTile * width; e += blockDim.x) {
      const int r = e / width, d = e % width;
      const int64_t i = first + r;
      float x = 0.0f;
      if (i < rows)
        x = rotatedBy(a, from + i * stride, rotate ? tableRow(cosT, i) : nullptr, rotate ? tableRow(sinT, i) : nullptr,
                      int64_t(d));
      to[r * ld + d] = fromF<T>(x);
    }
  };

  // Q, rotated; rows past the end are zeros. 16 bytes per load where the rows and the tables
  // allow it (the chunk of 16 / sizeof(T) elements, its rotation partner half a head away, and
  // their cos and sin: rotate-half over the head), else element by element.
  const T *qb = static_cast<const T *>(a.q) + b * a.qs.batch + h * a.qs.head;
  const int64_t columns = tableWidth(a);
  const bool wideQ = aligned16(qb) && (a.qs.token * sizeof(T)) % 16 == 0 &&
                     (!cosT || (!a.rotaryDim && aligned16(cosT) && aligned16(sinT) && (columns * sizeof(T)) % 16 == 0));
  if (wideQ)
    stageRotatedRows(qs, ldq, qb, a.qs.token, i0, a.Sq, D, tableRow(cosT, i0), tableRow(sinT, i0), columns,
                     a.halfTables);
  else
    stageElements(qs, ldq, qb, a.qs.token, i0, a.Sq, D, true);
  for (int e = lane; e < 16 * Dv; e += 32)
    ow[e] = 0.0f;

  const T *kb = static_cast<const T *>(a.k) + b * a.ks.batch + kvh * a.ks.head;
  const T *vb = static_cast<const T *>(a.v) + b * a.vs.batch + kvh * a.vs.head;

  // Rows of keys and values whose starts are 16-byte aligned are staged 16 bytes at a time (a
  // cache's, a split's pieces): all of a tile's loads in flight together rather than a 2-byte
  // load per element. Keys rotated as they are staged go element by element.
  const bool wideK = !a.rotateKeys && aligned16(kb) && (a.ks.token * sizeof(T)) % 16 == 0;
  const bool wideV = aligned16(vb) && (a.vs.token * sizeof(T)) % 16 == 0;

  TileChunks<kChunks> nextK, nextV; // the next tile's, where wide, loaded during the current one's products
  if (wideK && jBegin < jEnd)
    loadRows(nextK, kb, a.ks.token, jBegin, a.Sk, D);
  if (wideV && jBegin < jEnd)
    loadRows(nextV, vb, a.vs.token, jBegin, a.Sk, Dv);
  for (int64_t j0 = jBegin; j0 < jEnd; j0 += kTile) {
    __syncthreads(); // every warp is done with the previous K and V (and Q is staged)
    if (wideK)
      storeRows(ks, ldq, nextK, D);
    else
      stageElements(ks, ldq, kb, a.ks.token, j0, a.Sk, D, a.rotateKeys);
    if (wideV)
      storeRows(vs, ldv, nextV, Dv);
    else
      stageElements(vs, ldv, vb, a.vs.token, j0, a.Sk, Dv, false); // (a 16-bit value through f32 is itself)
    __syncthreads();
    if (wideK && j0 + kTile < jEnd)
      loadRows(nextK, kb, a.ks.token, j0 + kTile, a.Sk, D);
    if (wideV && j0 + kTile < jEnd)
      loadRows(nextV, vb, a.vs.token, j0 + kTile, a.Sk, Dv);

    // S = Q K^T for this warp's 16 rows and the 64 keys.
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> scores[kTile / 16];
    for (auto &f : scores)
      wmma::fill_fragment(f, 0.0f);
    for (int kk = 0; kk < D; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa;
      wmma::load_matrix_sync(qa, qs + warp * 16 * ldq + kk, ldq);
      for (int n = 0; n < kTile / 16; ++n) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kt; // K^T: (k, n) at ks[n * ldq + k]
        wmma::load_matrix_sync(kt, ks + n * 16 * ldq + kk, ldq);
        wmma::mma_sync(scores[n], qa, kt, scores[n]);
      }
    }
    for (int n = 0; n < kTile / 16; ++n)
      wmma::store_matrix_sync(sw + n * 16, scores[n], W, wmma::mem_row_major);
    __syncwarp();

    // Online softmax: lanes 2r and 2r + 1 take row r of the warp's 16, all rows at once, each
    // lane 32 of its columns in registers, so a row's max and sum take one shuffle each (a warp
    // walking its rows one at a time waited on ten dependent shuffles per row). Lane h of a row
    // takes the columns c with c % 4 in {h, h + 2}, rows 8..15 the two in the other order, so that
    // the 32 lanes of each load read 32 different banks (rows are 4 banks apart: W is 4 more than
    // a multiple of 32). P in the storage type.
    {
      const int r = lane >> 1, side = lane & 1, other = r >> 3;
      const int64_t i = i0 + warp * 16 + r;
      auto column = [&](int k) { return 4 * (k % 16) + side + 2 * ((k / 16) ^ other); };
      float s[32], best = -INFINITY;
#pragma unroll
      for (int k = 0; k < 32; ++k) {
        const int c = column(k);
        const int64_t j = j0 + c;
        s[k] = sw[r * W + c] * a.scale;
        if (i >= a.Sq || j >= a.Sk || hiddenByPosition(a, i, j))
          s[k] = -INFINITY;
        else
          s[k] = masked<T>(a, s[k], b * a.maskStrides[0] + h * a.maskStrides[1] + i * a.maskStrides[2] + j * a.maskStrides[3]);
        best = fmaxf(best, s[k]);
      }
      best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, 1));
      const float now = fmaxf(runningMax, best);
      float sum = 0.0f;
#pragma unroll
      for (int k = 0; k < 32; ++k) {
        const float p = now == -INFINITY ? 0.0f : __expf(s[k] - now);
        pw[r * ldp + column(k)] = fromF<T>(p);
        sum += p;
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      const float factor = runningMax == -INFINITY ? 0.0f : __expf(runningMax - now);
      runningSum = runningSum * factor + sum, runningMax = now;
      if (side == 0)
        rescale[r] = factor;
    }
    __syncwarp();

    // P V into the scratch, then O = O * rescale + P V.
    for (int nb = 0; nb < Dv; nb += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> pv;
      wmma::fill_fragment(pv, 0.0f);
      for (int kk = 0; kk < kTile; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vt;
        wmma::load_matrix_sync(pa, pw + kk, ldp);
        wmma::load_matrix_sync(vt, vs + kk * ldv + nb, ldv);
        wmma::mma_sync(pv, pa, vt, pv);
      }
      wmma::store_matrix_sync(sw + nb, pv, W, wmma::mem_row_major);
    }
    __syncwarp();
    for (int e = lane; e < 16 * Dv; e += 32)
      ow[e] = ow[e] * rescale[e / Dv] + sw[(e / Dv) * W + e % Dv];
    __syncwarp();
  }

  // Out [B, Sq, Hq * Dv]; a row that attends to nothing (fully masked) is zeros.
  T *out = static_cast<T *>(a.out);
  auto outRow = [&](int64_t qi) { return out + ((b * a.Sq + qi) * a.Hq + h) * a.Dv; };
  if (active == 1) {
    if ((lane & 1) == 0)
      rowSum[lane >> 1] = runningSum + sinkWeight(sinkOf<T>(a, h), runningMax);
    __syncwarp();
    for (int e = lane; e < 16 * Dv; e += 32) {
      const int r = e / Dv;
      const int64_t qi = i0 + warp * 16 + r;
      const float total = rowSum[r];
      if (qi < a.Sq)
        outRow(qi)[e % Dv] = fromF<T>(total > 0.0f ? ow[e] / total : 0.0f);
    }
    return;
  }
  // Split: this block's rows as partial results (max, sum, unnormalized sums of the values),
  // merged by the last of the tile's blocks with keys.
  auto partialRow = [&](int s, int row) { return partials + ((tileIndex * splits + s) * kTile + row) * (Dv + 2); };
  if ((lane & 1) == 0) {
    float *p = partialRow(split, warp * 16 + (lane >> 1));
    p[0] = runningMax, p[1] = runningSum;
  }
  for (int e = lane; e < 16 * Dv; e += 32)
    partialRow(split, warp * 16 + e / Dv)[2 + e % Dv] = ow[e];
  if (!lastToArrive(arrived + tileIndex, active))
    return;
  for (int e = threadIdx.x; e < kTile * Dv; e += blockDim.x) {
    const int row = e / Dv;
    if (i0 + row < a.Sq)
      outRow(i0 + row)[e % Dv] =
          fromF<T>(mergeSplits([&](int s) { return partialRow(s, row); }, active, e % Dv, sinkOf<T>(a, h)));
  }
}

// 16-bit storage and head sizes that are multiples of 16 up to kMaxHead (whole WMMA tiles).
bool tileable(Storage s, int64_t D, int64_t Dv) {
  return s != Storage::F32 && D >= 16 && Dv >= 16 && D % 16 == 0 && Dv % 16 == 0 && D <= kMaxHead && Dv <= kMaxHead;
}

} // namespace

// A kernel's dynamic shared memory and its static one (the split's arrival flag) together may
// not pass the device's opt-in limit, or setting the attribute fails: each kernel is allowed the
// largest tiles it takes (head 128), within the limit less the largest static use.
void flashAttentionSetup(size_t sharedLimit) {
  const void *kernels[] = {reinterpret_cast<const void *>(flashAttentionKernel<__half, 4>),
                           reinterpret_cast<const void *>(flashAttentionKernel<__half, 8>),
                           reinterpret_cast<const void *>(flashAttentionKernel<__nv_bfloat16, 4>),
                           reinterpret_cast<const void *>(flashAttentionKernel<__nv_bfloat16, 8>)};
  size_t allowed = std::min(sharedLimit, layoutFor(kMaxHead, kMaxHead, 2).total);
  for (const void *kernel : kernels) {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess)
      allowed = std::min(allowed, sharedLimit > attributes.sharedSizeBytes ? sharedLimit - attributes.sharedSizeBytes : 0);
  }
  for (const void *kernel : kernels)
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(allowed));
  allowedShared = cudaGetLastError() == cudaSuccess ? allowed : 0;
}

bool flashAttentionFits(Storage s, int64_t D, int64_t Dv, size_t sharedLimit) {
  const size_t shared = layoutFor(int(D), int(Dv), storageBytes(s)).total;
  return tileable(s, D, Dv) && shared <= sharedLimit && shared <= allowedShared;
}

namespace {

constexpr int kSplitKeyTiles = 4;           // key tiles a split takes at least
constexpr int kMaxFlashSplits = 16;

int64_t queryTiles(const AttentionArgs &a) { return a.B * a.Hq * ((a.Sq + kTile - 1) / kTile); }

size_t flashWorkspaceBytes(const AttentionArgs &a, int splits) {
  return splitWorkspaceBytes(size_t(queryTiles(a)) * size_t(splits) * kTile * size_t(a.Dv + 2));
}

} // namespace

int flashAttentionSplits(const AttentionArgs &a, int sms, size_t workspaceBytes) {
  const int64_t tiles = queryTiles(a), keyTiles = (a.Sk + kTile - 1) / kTile;
  if (tiles >= 2 * int64_t(sms) || tiles > kSplitCounters)
    return 1;
  int splits = int(std::min<int64_t>(kMaxFlashSplits, (keyTiles + kSplitKeyTiles - 1) / kSplitKeyTiles));
  while (splits > 1 && flashWorkspaceBytes(a, splits) > workspaceBytes)
    --splits;
  return std::max(splits, 1);
}

std::string flashAttention(Storage s, const AttentionArgs &a, void *stream, int splits, void *workspace) {
  if (!tileable(s, a.D, a.Dv) || a.Hkv <= 0 || a.Hq % a.Hkv)
    return "flashAttention: needs f16 or bf16 storage and head sizes that are multiples of 16 up to 128";
  if (splits < 1 || (splits > 1 && (!workspace || queryTiles(a) > kSplitCounters)))
    return "flashAttention: splits of the keys need 1 or more, a workspace, and at most " +
           std::to_string(kSplitCounters) + " blocks of query rows";
  if (a.B == 0 || a.Sq == 0)
    return {};
  const size_t shared = layoutFor(int(a.D), int(a.Dv), storageBytes(s)).total;
  if (shared > allowedShared)
    return "flashAttention: " + std::to_string(shared) + " bytes of shared memory, above the " +
           std::to_string(allowedShared) + " flashAttentionSetup allowed";
  const unsigned blocks = unsigned(queryTiles(a) * splits);
  const bool wide = chunksFor(std::max(a.D, a.Dv)) == 8;
  auto st = static_cast<cudaStream_t>(stream);
  unsigned *arrived = splitCounters(workspace);
  float *partials = splitPartials(workspace);
  if (s == Storage::F16)
    wide ? flashAttentionKernel<__half, 8><<<blocks, kWarps * 32, shared, st>>>(a, splits, arrived, partials)
         : flashAttentionKernel<__half, 4><<<blocks, kWarps * 32, shared, st>>>(a, splits, arrived, partials);
  else
    wide ? flashAttentionKernel<__nv_bfloat16, 8><<<blocks, kWarps * 32, shared, st>>>(a, splits, arrived, partials)
         : flashAttentionKernel<__nv_bfloat16, 4><<<blocks, kWarps * 32, shared, st>>>(a, splits, arrived, partials);
  return launched("flashAttention");
}

} // namespace llmc::rt::cuda
