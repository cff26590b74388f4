// A mixture of experts' projection for many ids at once (CudaKernels.h, groupedExpertLinear).
// expertLinear's warp per output reads an expert's matrix row once for every id that picks the
// expert: a 512-token prompt of GPT-OSS-20B (32 experts, 4 per token) reads each matrix about 64
// times. Here the ids are first grouped by expert (one block), then a block multiplies up to 64
// of one expert's rows by 64 of its matrix's rows on tensor cores, so each matrix tile is read
// once per 64 rows that pick it; with a combine, a last kernel weighs and sums each group's rows.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <mma.h>

#include <algorithm>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

using namespace nvcuda;

constexpr int kRows = 64;           // an expert's rows per block
constexpr int kCols = 64;           // outputs per block (with a swiglu, its gate and up columns each)
constexpr int kStep = 32;           // K per step through shared memory
constexpr int kWarps = kRows / 16;  // 16 rows each
constexpr int kGroupThreads = 256;  // the grouping block
constexpr int kLd = kStep + 8;      // a staged row, padded by 16 bytes (see FlashAttention.cu's layout)
constexpr int kLdOut = kCols + 4;   // a row of the f32 results, padded likewise
constexpr int kMaxItems = 65535;    // a launch's grid.y
// Shared memory: the staged rows and matrix rows (gate and up) in 16 bits, then, reusing it, the
// f32 results of both.
constexpr size_t kStagedBytes = size_t(kRows + 2 * kCols) * kLd * 2;
constexpr size_t kResultBytes = size_t(2 * kRows) * kLdOut * 4;
constexpr size_t kSharedBytes = kStagedBytes > kResultBytes ? kStagedBytes : kResultBytes;

// One block's work: `count` (1 to 64) of expert `expert`'s rows, at rows[first ...].
struct Item {
  int expert, first, count;
};

// Where each part of the scratch lies for a chunk of `rows` ids.
struct ScratchLayout {
  size_t counts, cursors, itemCount, items, rows, values, total;
  int64_t maxItems;
};

size_t alignedUp(size_t n) { return (n + 255) / 256 * 256; }

ScratchLayout layoutOf(const ExpertLinearArgs &a, int64_t rows, bool combined) {
  ScratchLayout L;
  const int64_t width = a.swiglu ? a.M / 2 : a.M;
  // Each expert's rows fill whole items but its last.
  L.maxItems = (rows + kRows - 1) / kRows + a.E;
  L.counts = 0;
  L.cursors = alignedUp(size_t(a.E) * sizeof(int));
  L.itemCount = L.cursors + alignedUp(size_t(a.E) * sizeof(int));
  L.items = L.itemCount + alignedUp(sizeof(int));
  L.rows = L.items + alignedUp(size_t(L.maxItems) * sizeof(Item));
  L.values = L.rows + alignedUp(size_t(rows) * sizeof(int));
  L.total = L.values + (combined ? alignedUp(size_t(rows * width) * sizeof(float)) : 0);
  return L;
}

// Groups ids[0, n) (a chunk's, row n0 + i of the whole) by expert: `rows` lists each expert's
// rows (as indices i) one expert after another, `items` the blocks' work, *itemCount their
// number. An id out of range sets `error`, and its outputs are zeros (`values`' row where there
// is a combine, y's row n0 + i where not), as expertLinear counts it 0.
template <typename T>
__global__ void __launch_bounds__(kGroupThreads) groupRowsKernel(const int64_t *__restrict__ ids, int64_t n, int64_t n0,
                                                                 int64_t E, int64_t width, int *counts, int *cursors,
                                                                 int *itemCount, Item *items, int *rows, float *values,
                                                                 T *y, int *error) {
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x)
    counts[e] = 0;
  __syncthreads();
  auto expertOf = [&](int64_t i) {
    const int64_t e = ids[i];
    return e < -E || e >= E ? int64_t(-1) : e < 0 ? e + E : e;
  };
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (const int64_t e = expertOf(i); e >= 0)
      atomicAdd(&counts[e], 1);
  __syncthreads();
  if (threadIdx.x == 0) { // a few hundred experts at most: one thread lays them out
    int at = 0, item = 0;
    for (int64_t e = 0; e < E; ++e) {
      cursors[e] = at;
      for (int first = 0; first < counts[e]; first += kRows)
        items[item++] = Item{int(e), at + first, counts[e] - first < kRows ? counts[e] - first : kRows};
      at += counts[e];
    }
    *itemCount = item;
  }
  __syncthreads();
  // The order of an expert's rows among themselves is the atomics', but no result depends on it.
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (const int64_t e = expertOf(i); e >= 0) {
      rows[atomicAdd(&cursors[e], 1)] = int(i);
    } else {
      atomicExch(error, 1);
      for (int64_t m = 0; m < width; ++m) {
        if (values)
          values[i * width + m] = 0.0f;
        else
          y[(n0 + i) * width + m] = fromF<T>(0.0f);
      }
    }
  }
}

// kRows x kStep elements of `count` rows (row r at rowOf(r), K elements) from column k0 into `to`
// [kRows][kLd]; rows past `count` and columns past K are zeros. 16 bytes per load where
// `vectors` (rows 16-byte aligned, K a multiple of 8).
template <typename T, typename RowOf>
__device__ __forceinline__ void stageRows(T *to, int count, RowOf rowOf, int64_t K, int64_t k0, bool vectors) {
  constexpr int kPerLoad = 8, kLoads = kStep / kPerLoad;
  for (int e = threadIdx.x; e < kRows * kLoads; e += blockDim.x) {
    const int r = e / kLoads, c = (e % kLoads) * kPerLoad;
    const int64_t k = k0 + c;
    T *dst = to + r * kLd + c;
    const T *src = r < count ? rowOf(r) : nullptr;
    if (src && vectors && k + kPerLoad <= K) {
      *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src + k);
    } else {
#pragma unroll
      for (int j = 0; j < kPerLoad; ++j)
        dst[j] = src && k + j < K ? src[k + j] : fromF<T>(0.0f);
    }
  }
}

// Block (column tile, item): the item's rows times its expert's matrix rows m0 .. m0 + 63 (and,
// with a swiglu, kHalves = 2, width + m0 ...), each warp 16 rows, accumulated in f32; then the
// bias and gating, and the results to y's rows (none combine them) or to `values` (chunk-relative
// rows). kHalves is a template's so that the accumulators stay in registers (indexed by a
// variable, they went to local memory).
template <typename T, int kHalves>
__global__ void __launch_bounds__(kWarps * 32)
    expertTileKernel(const T *__restrict__ x, const T *__restrict__ w, const int *__restrict__ rows,
                     const Item *__restrict__ items, const int *__restrict__ itemCount, T *__restrict__ y,
                     float *__restrict__ values, ExpertLinearArgs a, int64_t n0, bool vectors) {
  if (int(blockIdx.y) >= *itemCount)
    return;
  extern __shared__ __align__(128) unsigned char smem[]; // kSharedBytes (under the 48 KiB of every launch)
  T *xs = reinterpret_cast<T *>(smem), *ws = xs + kRows * kLd; // ws: gate rows, then up rows
  float *out = reinterpret_cast<float *>(smem);                // after the products: gate, then up
  const Item it = items[blockIdx.y];
  const int64_t width = a.swiglu ? a.M / 2 : a.M, m0 = int64_t(blockIdx.x) * kCols;
  const int warp = threadIdx.x / 32;
  const int columns = int(width - m0 < kCols ? width - m0 : kCols);
  const T *matrix = w + int64_t(it.expert) * a.M * a.K;
  const int *itemRows = rows + it.first;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kHalves][kCols / 16];
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int j = 0; j < kCols / 16; ++j)
      wmma::fill_fragment(acc[h][j], 0.0f);
  for (int64_t k0 = 0; k0 < a.K; k0 += kStep) {
    stageRows(xs, it.count, [&](int r) { return x + (n0 + itemRows[r]) / a.repeat * a.K; }, a.K, k0, vectors);
    for (int h = 0; h < kHalves; ++h)
      stageRows(ws + h * kCols * kLd, columns, [&](int r) { return matrix + (h * width + m0 + r) * a.K; }, a.K, k0,
                vectors);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kStep; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> rowsFragment;
      wmma::load_matrix_sync(rowsFragment, xs + warp * 16 * kLd + kk, kLd);
#pragma unroll
      for (int h = 0; h < kHalves; ++h)
#pragma unroll
        for (int j = 0; j < kCols / 16; ++j) {
          // The matrix rows as B's columns: (k, n) at ws[n * kLd + k].
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> matrixFragment;
          wmma::load_matrix_sync(matrixFragment, ws + (h * kCols + j * 16) * kLd + kk, kLd);
          wmma::mma_sync(acc[h][j], rowsFragment, matrixFragment, acc[h][j]);
        }
    }
    __syncthreads(); // every warp is done with the tiles before the next are staged
  }
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int j = 0; j < kCols / 16; ++j)
      wmma::store_matrix_sync(out + (h * kRows + warp * 16) * kLdOut + j * 16, acc[h][j], kLdOut,
                              wmma::mem_row_major);
  __syncthreads();
  const T *bias = a.bias ? static_cast<const T *>(a.bias) + int64_t(it.expert) * a.M : nullptr;
  for (int e = threadIdx.x; e < kRows * kCols; e += blockDim.x) {
    const int r = e / kCols, c = e % kCols;
    if (r >= it.count || c >= columns)
      continue;
    const int64_t m = m0 + c, i = itemRows[r];
    float v = out[r * kLdOut + c] + (bias ? toF(bias[m]) : 0.0f);
    if (kHalves == 2) {
      const float up = out[(kRows + r) * kLdOut + c] + (bias ? toF(bias[width + m]) : 0.0f);
      v = a.clamped ? clampedSwigluOf(v, up, a.alpha, a.limit, a.upOffset) : swigluOf(v, up);
    }
    if (values)
      values[i * width + m] = v;
    else
      y[(n0 + i) * width + m] = fromF<T>(v);
  }
}

// y's rows r0 .. r0 + groups - 1: each the sum over j of combine[r * group + j] times the chunk's
// row (r - r0) * group + j, in order of j (as expertLinear sums them).
template <typename T>
__global__ void combineRowsKernel(const float *__restrict__ values, const T *__restrict__ combine, T *__restrict__ y,
                                  int64_t r0, int64_t groups, int64_t group, int64_t width) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < groups * width;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / width, m = e % width;
    float sum = 0.0f;
    for (int64_t j = 0; j < group; ++j)
      sum += toF(combine[(r0 + r) * group + j]) * values[(r * group + j) * width + m];
    y[(r0 + r) * width + m] = fromF<T>(sum);
  }
}

} // namespace

// The most ids of a chunk (whole groups, at most a.N) whose layout fits `bytes` and a launch's
// grid, or 0.
int64_t groupedExpertRowsWithin(const ExpertLinearArgs &a, bool combined, size_t bytes) {
  const int64_t group = combined ? a.group : 1;
  auto fits = [&](int64_t groups) {
    const ScratchLayout L = layoutOf(a, groups * group, combined);
    return L.total <= bytes && L.maxItems <= kMaxItems && groups * group <= 0x7fffffff;
  };
  int64_t low = 0, high = a.N / group; // fits(low) or low = 0
  while (low < high) {
    const int64_t mid = low + (high - low + 1) / 2;
    if (fits(mid))
      low = mid;
    else
      high = mid - 1;
  }
  return low * group;
}

size_t groupedExpertScratchBytes(const ExpertLinearArgs &a, int64_t rows, bool combined) {
  return layoutOf(a, rows, combined).total;
}

bool groupedExpertsPay(int type, const ExpertLinearArgs &a) {
  // Not measured on a GPU: with fewer than two rows per expert on average each matrix tile serves
  // about one row either way, and the grouping costs two launches more.
  return (type == F16 || type == BF16) && a.N >= 16 && a.N >= 2 * a.E;
}

std::string groupedExpertLinear(int type, const void *x, const void *w, const int64_t *ids, const void *combine,
                                void *y, const ExpertLinearArgs &a, void *scratch, size_t scratchBytes, int *error,
                                void *stream) {
  if (std::string err = expertLinearArgsError(a, combine != nullptr); !err.empty())
    return err;
  if (type != F16 && type != BF16)
    return "grouped expert_linear: supports f16 and bf16";
  const int64_t width = a.swiglu ? a.M / 2 : a.M, group = combine ? a.group : 1;
  if (a.N == 0 || width == 0)
    return {};
  const int64_t chunk = groupedExpertRowsWithin(a, combine != nullptr, scratchBytes);
  if (chunk == 0)
    return "grouped expert_linear: " + std::to_string(scratchBytes) + " bytes of scratch hold no group of ids";
  const int64_t columnTiles = (width + kCols - 1) / kCols;
  if (columnTiles > 0x7fffffff)
    return "grouped expert_linear: too many outputs";
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  char *base = static_cast<char *>(scratch);
  dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) { // (the types checked above)
      const bool vectors = a.K % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                           reinterpret_cast<uintptr_t>(w) % 16 == 0;
      for (int64_t n0 = 0; n0 < a.N; n0 += chunk) {
        const int64_t n = std::min(chunk, a.N - n0);
        const ScratchLayout L = layoutOf(a, n, combine != nullptr);
        int *counts = reinterpret_cast<int *>(base + L.counts), *cursors = reinterpret_cast<int *>(base + L.cursors);
        int *itemCount = reinterpret_cast<int *>(base + L.itemCount), *rows = reinterpret_cast<int *>(base + L.rows);
        Item *items = reinterpret_cast<Item *>(base + L.items);
        float *values = combine ? reinterpret_cast<float *>(base + L.values) : nullptr;
        groupRowsKernel<T><<<1, kGroupThreads, 0, s>>>(ids + n0, n, n0, a.E, width, counts, cursors, itemCount, items,
                                                       rows, values, static_cast<T *>(y), error);
        const dim3 grid(unsigned(columnTiles), unsigned(L.maxItems));
        if (a.swiglu)
          expertTileKernel<T, 2><<<grid, kWarps * 32, kSharedBytes, s>>>(
              static_cast<const T *>(x), static_cast<const T *>(w), rows, items, itemCount, static_cast<T *>(y),
              values, a, n0, vectors);
        else
          expertTileKernel<T, 1><<<grid, kWarps * 32, kSharedBytes, s>>>(
              static_cast<const T *>(x), static_cast<const T *>(w), rows, items, itemCount, static_cast<T *>(y),
              values, a, n0, vectors);
        if (combine) {
          const int64_t groups = n / group;
          combineRowsKernel<T><<<unsigned(blocksFor(groups * width, kElementThreads)), kElementThreads, 0, s>>>(
              values, static_cast<const T *>(combine), static_cast<T *>(y), n0 / group, groups, group, width);
        }
      }
    }
  });
  return launched("grouped expert_linear");
}

} // namespace llmc::rt::cuda
