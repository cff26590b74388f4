// Greedy decoding on the device: the index of the largest logit in the last row of each
// sequence, so that a decode step copies a token id per sequence to the host instead of its
// vocabulary's scores (500 KB for Llama 3) and the host does not scan them.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <climits>
#include <cstdint>

namespace llmc::rt::cuda {
namespace {

constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxLoads = 4; // 16-byte loads per thread, issued together

// A candidate as one 64-bit key whose unsigned order is the choice's: the value's bits made
// monotonic above, the complement of the index below (so that among equal values the lower index
// is the larger key). NaN counts as -inf, -0 as +0 (equal values: the first index wins).
__device__ __forceinline__ unsigned long long candidate(float v, int64_t j) {
  const float f = v != v ? -INFINITY : v == 0.0f ? 0.0f : v;
  const unsigned u = __float_as_uint(f), ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(ordered) << 32) | static_cast<unsigned>(~static_cast<uint32_t>(j));
}

__device__ __forceinline__ unsigned long long larger(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// Block (x, b) scans its slice of row (b, rows - 1) of x [B, rows, V] (every 16-byte load of it
// at once where the rows are 16-byte aligned), and takes the block's best candidate to best[b]
// with an atomic max; the last block of row b to arrive (counted in arrived[b]) writes its index
// and sets best[b] and arrived[b] back to 0 for the next launch. Before, one block scanned a row:
// 61 us for Llama 3's 128256 scores on the H200, where this reads them in one round of loads.
template <typename T>
__global__ void __launch_bounds__(kArgmaxThreads)
    argmaxKernel(const T *__restrict__ x, int64_t rows, int64_t V, bool vectorized, int32_t *__restrict__ out,
                 unsigned long long *__restrict__ best, unsigned *__restrict__ arrived) {
  constexpr int E = Lanes<T>::kCount;
  constexpr int64_t kPerBlock = int64_t(kArgmaxThreads) * kArgmaxLoads * E;
  __shared__ unsigned long long warpBest[kArgmaxThreads / 32];
  const int64_t b = blockIdx.y, first = int64_t(blockIdx.x) * kPerBlock, end = first + kPerBlock < V ? first + kPerBlock : V;
  const T *row = x + (b * rows + rows - 1) * V;
  unsigned long long mine = 0; // below every candidate
  if (vectorized) {
    uint4 raw[kArgmaxLoads];
#pragma unroll
    for (int i = 0; i < kArgmaxLoads; ++i) {
      const int64_t j = first + (int64_t(i) * kArgmaxThreads + threadIdx.x) * E;
      if (j < end)
        raw[i] = __ldg(reinterpret_cast<const uint4 *>(row + j));
    }
#pragma unroll
    for (int i = 0; i < kArgmaxLoads; ++i) {
      const int64_t j = first + (int64_t(i) * kArgmaxThreads + threadIdx.x) * E;
      if (j >= end)
        continue;
      Lanes<T> v;
      widen(raw[i], v);
#pragma unroll
      for (int e = 0; e < E; ++e)
        mine = larger(mine, candidate(v.v[e], j + e));
    }
  } else {
    for (int64_t j = first + threadIdx.x; j < end; j += blockDim.x)
      mine = larger(mine, candidate(toF(row[j]), j));
  }
  for (int o = 16; o > 0; o >>= 1)
    mine = larger(mine, __shfl_xor_sync(0xffffffffu, mine, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    warpBest[warp] = mine;
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  for (int w = 1; w < kArgmaxThreads / 32; ++w)
    mine = larger(mine, warpBest[w]);
  atomicMax(best + b, mine);
  __threadfence(); // the max in place before the block counts itself in
  if (atomicAdd(arrived + b, 1u) != gridDim.x - 1)
    return;
  __threadfence();
  const unsigned long long winner = atomicExch(best + b, 0ull);
  out[b] = int32_t(~static_cast<uint32_t>(winner & 0xffffffffu));
  arrived[b] = 0;
}

} // namespace

size_t argmaxWorkspaceBytes(int64_t B) { return size_t(B) * (sizeof(unsigned long long) + sizeof(unsigned)); }

std::string argmaxLastRows(Storage s, const void *x, int64_t B, int64_t rows, int64_t V, int32_t *out,
                           void *workspace, void *stream) {
  if (B <= 0 || rows <= 0 || V <= 0 || V > INT32_MAX || B > 65535)
    return "argmaxLastRows: bad shape";
  auto *best = static_cast<unsigned long long *>(workspace);
  auto *arrived = reinterpret_cast<unsigned *>(best + B);
  const int64_t perLoad = 16 / int64_t(storageBytes(s)), perBlock = int64_t(kArgmaxThreads) * kArgmaxLoads * perLoad;
  const bool vectorized = reinterpret_cast<uintptr_t>(x) % 16 == 0 && V % perLoad == 0;
  const dim3 grid(unsigned((V + perBlock - 1) / perBlock), unsigned(B));
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    argmaxKernel<T><<<grid, kArgmaxThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(x), rows, V,
                                                                                    vectorized, out, best, arrived);
  });
  return launched("argmaxLastRows");
}

} // namespace llmc::rt::cuda
