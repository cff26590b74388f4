// DeepSeek's multi-head latent attention over the latent cache on the CUDA executor (see
// CudaKernels.h): a block per query row and group of 8, 4, 2 or 1 heads, which share each read
// of the cache (latentAttentionGroupKernel); the keys and values taken up from the latent by the
// absorbed weights. A decode step's few groups share their keys among splits.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

struct LatentArgs {
  const void *q, *cache, *wuk, *wuv;
  LatentMask mask;
  void *out;
  int64_t B, H, Sq, Sk, nope, rope, latent, v;
  float scale;
  const int64_t *skOnDevice; // null: Sk keys; else the count there (at most Sk)
  const float *qLatent = nullptr; // null: each block takes its queries up by W_UK; else [B * H * Sq, latent + rope]
  float *oLatent = nullptr; // null: the block multiplies by W_UV; else it leaves its [B * H * Sq, latent] here
};

// Query row i of head h (sequence b)'s score for key t: dot times the scale, then the mask and
// causality (Sk: this run's key count).
template <typename T>
__device__ __forceinline__ float maskedScore(const LatentArgs &a, float dot, int64_t b, int64_t h, int64_t i,
                                             int64_t t, int64_t Sk) {
  float s = dot * a.scale;
  const LatentMask &m = a.mask;
  if (m.data) {
    const int64_t batchStride = m.rowPerBatch ? Sk : m.strides[0];
    const int64_t at = b * batchStride + h * m.strides[1] + i * m.strides[2] + t * m.strides[3];
    switch (m.type) {
    case AttentionArgs::Mask::Additive: s += toF(static_cast<const T *>(m.data)[at]); break;
    case AttentionArgs::Mask::Bool: s = static_cast<const uint8_t *>(m.data)[at] ? s : -INFINITY; break;
    case AttentionArgs::Mask::Int64: s = static_cast<const int64_t *>(m.data)[at] ? s : -INFINITY; break;
    }
  }
  return m.causal && t > i + (Sk - a.Sq) ? -INFINITY : s;
}

// Element l of head h's query in the latent space: the rotary part as it is, the rest q_nope ·
// W_UK[h] (or, without W_UK, the query as it comes).
template <typename T>
__device__ __forceinline__ float latentQuery(const LatentArgs &a, const T *q, int64_t h, int64_t l) {
  const T *wuk = static_cast<const T *>(a.wuk);
  if (!wuk || l >= a.latent)
    return toF(wuk ? q[a.nope + (l - a.latent)] : q[l]);
  float acc = 0.0f;
  for (int64_t n = 0; n < a.nope; ++n)
    acc += toF(q[n]) * toF(wuk[(h * a.nope + n) * a.latent + l]);
  return acc;
}

// Output j of head h: its latent output `ol` times W_UV[h]'s column j, over the latent features
// first, first + step, ... (a part of the sum where several threads share it).
template <typename T>
__device__ __forceinline__ float latentOutput(const LatentArgs &a, const float *ol, int64_t h, int64_t j,
                                              int64_t first = 0, int64_t step = 1) {
  const T *wuv = static_cast<const T *>(a.wuv) + h * a.latent * a.v;
  float acc = 0.0f;
  for (int64_t l = first; l < a.latent; l += step)
    acc += ol[l] * toF(wuv[l * a.v + j]);
  return acc;
}

// Block (query row, 256 elements): that row's query in the latent space, for the blocks of a
// split launch, which would otherwise each take it up by W_UK again (DeepSeek-V3 keeps W_UK
// apart: 128 KB per head, read by every split of its group).
template <typename T> __global__ void latentQueryKernel(LatentArgs a, float *__restrict__ qLatent) {
  const int64_t width = a.latent + a.rope, row = blockIdx.x, l = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const T *q = static_cast<const T *>(a.q) + row * (a.nope + a.rope);
  if (l < width)
    qLatent[row * width + l] = latentQuery(a, q, row / a.Sq % a.H, l);
}

// Block (query row): its latent output times W_UV[h], for a split launch, whose last blocks would
// otherwise each read their group's W_UV alone (DeepSeek-V3: 1 MB for 8 heads, by one block of
// the 16). The threads take 64 outputs at a time, each output's sum over the latent in 4 parts.
constexpr int kOutputParts = 4, kOutputLanes = kRowThreads / kOutputParts;
template <typename T> __global__ void latentOutputKernel(LatentArgs a) {
  __shared__ float sums[kRowThreads];
  const int64_t row = blockIdx.x;
  const float *ol = a.oLatent + row * a.latent;
  const int lane = int(threadIdx.x) % kOutputLanes, part = int(threadIdx.x) / kOutputLanes;
  for (int64_t j0 = 0; j0 < a.v; j0 += kOutputLanes) {
    const int64_t j = j0 + lane;
    sums[threadIdx.x] = j < a.v ? latentOutput<T>(a, ol, row / a.Sq % a.H, j, part, kOutputParts) : 0.0f;
    __syncthreads();
    if (part == 0 && j < a.v) {
      float o = 0.0f;
      for (int k = 0; k < kOutputParts; ++k)
        o += sums[k * kOutputLanes + lane];
      static_cast<T *>(a.out)[row * a.v + j] = fromF<T>(o);
    }
    __syncthreads(); // before the next outputs' sums
  }
}

// Keys per step of latentAttentionGroupKernel (the scores of its G heads in shared memory).
constexpr int64_t kGroupKeys = 256;

// Its shared memory: per head the query and the output in the latent space and a step's scores,
// then the running max, sum and rescale of each head.
__host__ __device__ inline size_t groupSharedFloats(int G, int64_t latent, int64_t rope) {
  return size_t(G) * size_t(latent + rope + kGroupKeys + latent + 3);
}

// The keys of split `split` of `splits` out of `keys`: whole steps of kGroupKeys, [t0, t1); the
// first `active` splits have keys (a cache shorter than the launch's bound leaves the rest idle).
struct LatentChunk {
  int64_t t0, t1;
  int active;
};
__device__ __forceinline__ LatentChunk latentChunk(int64_t keys, int split, int splits) {
  const int64_t steps = (keys + kGroupKeys - 1) / kGroupKeys, perSplit = (steps + splits - 1) / splits;
  const int64_t chunk = (perSplit > 0 ? perSplit : 1) * kGroupKeys, t0 = split * chunk;
  const int64_t active = (keys + chunk - 1) / chunk;
  return {t0, t0 + chunk < keys ? t0 + chunk : keys, active > 1 ? int(active) : 1};
}

// Block (sequence b, head group, query row i; split blockIdx.y): G heads of one query row, which
// read the same latent cache (absorbed, MLA is attention with one key head shared by every query
// head). Each step's cache rows are read once for the G heads, where a block per head reads them
// G times: the scores by a warp per key (its lanes along the row, coalesced, G dot products at
// once), each head's softmax by a warp, the weighted sums by a thread per latent feature. Online
// softmax per head, as attendRow. With several splits, each block takes its chunk of the keys,
// writes its partial result (max, sum of exponentials, unnormalized latent output: per row and
// split, latent + 2 floats in `ws`) and the last to arrive merges them and writes the output (or,
// with a.oLatent, the merged latent output for latentOutputKernel).
template <typename T, int G>
__global__ void __launch_bounds__(kRowThreads, 2)
    latentAttentionGroupKernel(LatentArgs a, float *__restrict__ ws, unsigned *__restrict__ arrived) {
  extern __shared__ float smem[];
  const int64_t width = a.latent + a.rope;
  const T *cache = static_cast<const T *>(a.cache);
  T *out = static_cast<T *>(a.out);
  float *ql = smem, *p = ql + G * width, *ol = p + G * kGroupKeys, *best = ol + G * a.latent, *total = best + G,
        *rescale = total + G;
  int64_t Sk = a.Sk;
  if (a.skOnDevice && *a.skOnDevice < Sk)
    Sk = *a.skOnDevice;
  const int split = int(blockIdx.y), splits = int(gridDim.y);
  const LatentChunk c = latentChunk(Sk, split, splits);
  if (split >= c.active)
    return; // no keys: the other splits do without this one
  const int64_t groups = a.H / G, i = blockIdx.x % a.Sq, h0 = (blockIdx.x / a.Sq) % groups * G,
                b = blockIdx.x / (a.Sq * groups);
  auto rowOf = [&](int g) { return (b * a.H + h0 + g) * a.Sq + i; }; // head h0 + g's row of q and out
  const int64_t qWidth = a.wuk ? a.nope + a.rope : width;
  for (int64_t e = threadIdx.x; e < G * width; e += blockDim.x) {
    const int g = int(e / width);
    ql[e] = a.qLatent ? a.qLatent[rowOf(g) * width + e % width]
                      : latentQuery(a, static_cast<const T *>(a.q) + rowOf(g) * qWidth, h0 + g, e % width);
  }
  for (int64_t e = threadIdx.x; e < G * a.latent; e += blockDim.x)
    ol[e] = 0.0f;
  if (threadIdx.x < G)
    best[threadIdx.x] = -INFINITY, total[threadIdx.x] = 0.0f;
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t t0 = c.t0; t0 < c.t1; t0 += kGroupKeys) {
    const int64_t n = c.t1 - t0 < kGroupKeys ? c.t1 - t0 : kGroupKeys;
    for (int64_t j = warp; j < n; j += warps) {
      const T *row = cache + ((t0 + j) * a.B + b) * width;
      float dot[G] = {};
      for (int64_t l = lane; l < width; l += 32) {
        const float x = toF(row[l]);
#pragma unroll
        for (int g = 0; g < G; ++g)
          dot[g] += ql[g * width + l] * x;
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float sum = warpReduce<false>(dot[g]);
        if (lane == 0)
          p[g * kGroupKeys + j] = maskedScore<T>(a, sum, b, h0 + g, i, t0 + j, Sk);
      }
    }
    __syncthreads();
    for (int g = warp; g < G; g += warps) {
      float *pg = p + g * kGroupKeys, stepMax = -INFINITY;
      for (int64_t j = lane; j < n; j += 32)
        stepMax = maxOf(stepMax, pg[j]);
      const float next = maxOf(best[g], warpReduce<true>(stepMax));
      float sum = 0.0f;
      for (int64_t j = lane; j < n; j += 32) {
        pg[j] = next == -INFINITY ? 0.0f : fastExpOf(pg[j] - next);
        sum += pg[j];
      }
      sum = warpReduce<false>(sum);
      if (lane == 0) {
        rescale[g] = best[g] == -INFINITY ? 0.0f : fastExpOf(best[g] - next);
        total[g] = total[g] * rescale[g] + sum, best[g] = next;
      }
    }
    __syncthreads();
    for (int64_t l = threadIdx.x; l < a.latent; l += blockDim.x) {
      float o[G];
#pragma unroll
      for (int g = 0; g < G; ++g)
        o[g] = ol[g * a.latent + l] * rescale[g];
      for (int64_t j = 0; j < n; ++j) {
        const float x = toF(cache[((t0 + j) * a.B + b) * width + l]);
#pragma unroll
        for (int g = 0; g < G; ++g)
          o[g] += p[g * kGroupKeys + j] * x;
      }
#pragma unroll
      for (int g = 0; g < G; ++g)
        ol[g * a.latent + l] = o[g];
    }
    __syncthreads(); // before the next step's scores overwrite these
  }
  if (c.active == 1) {
    for (int64_t e = threadIdx.x; e < G * a.latent; e += blockDim.x) {
      const int g = int(e / a.latent);
      ol[e] *= total[g] > 0.0f ? 1.0f / (total[g] + sinkWeight(sinkOf<T>(a.mask.sinks, h0 + g), best[g])) : 0.0f;
    }
  } else {
    auto partialOf = [&](int g, int s) { return ws + (rowOf(g) * splits + s) * (a.latent + 2); };
    for (int64_t e = threadIdx.x; e < G * a.latent; e += blockDim.x)
      partialOf(int(e / a.latent), split)[2 + e % a.latent] = ol[e];
    if (threadIdx.x < G)
      partialOf(threadIdx.x, split)[0] = best[threadIdx.x], partialOf(threadIdx.x, split)[1] = total[threadIdx.x];
    if (!lastToArrive(arrived + blockIdx.x, c.active))
      return;
    for (int64_t e = threadIdx.x; e < G * a.latent; e += blockDim.x) {
      const int g = int(e / a.latent);
      ol[e] = mergeSplits([&](int s) { return partialOf(g, s); }, c.active, e % a.latent,
                          sinkOf<T>(a.mask.sinks, h0 + g));
    }
  }
  __syncthreads();
  if (a.oLatent) { // latentOutputKernel multiplies by W_UV
    for (int64_t e = threadIdx.x; e < G * a.latent; e += blockDim.x)
      a.oLatent[rowOf(int(e / a.latent)) * a.latent + e % a.latent] = ol[e];
    return;
  }
  if (!a.wuv) {
    for (int64_t e = threadIdx.x; e < G * a.latent; e += blockDim.x)
      out[rowOf(int(e / a.latent)) * a.latent + e % a.latent] = fromF<T>(ol[e]);
    return;
  }
  for (int64_t e = threadIdx.x; e < G * a.v; e += blockDim.x) {
    const int g = int(e / a.v);
    out[rowOf(g) * a.v + e % a.v] = fromF<T>(latentOutput<T>(a, ol + g * a.latent, h0 + g, e % a.v));
  }
}

// The heads per block of latentAttentionGroupKernel for H heads: 8, 4, 2 or 1, the most that
// divide H and that the shared memory holds; 0 where not even one head's fits (latent widths of
// thousands).
int headsPerBlock(int64_t H, int64_t latent, int64_t rope) {
  for (int G : {8, 4, 2, 1})
    if (H % G == 0 && groupSharedFloats(G, latent, rope) * sizeof(float) <= kMaxLatentAttentionShared)
      return G;
  return 0;
}

} // namespace

void latentAttentionSetup() {
  for (Storage s : {Storage::F32, Storage::F16, Storage::BF16})
    dispatch(s, [](auto tag) {
      using T = decltype(tag);
      for (auto kernel : {latentAttentionGroupKernel<T, 8>, latentAttentionGroupKernel<T, 4>,
                          latentAttentionGroupKernel<T, 2>, latentAttentionGroupKernel<T, 1>})
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxLatentAttentionShared));
    });
}

bool latentAttentionFits(int64_t latent, int64_t rope) { return headsPerBlock(1, latent, rope) == 1; }

// The partial results of `splits` per query row and head, then each row's latent query (width
// latent + rope, for latentQueryKernel) and its latent output (latent, for latentOutputKernel).
size_t latentAttentionWorkspaceBytes(int64_t B, int64_t H, int64_t Sq, int64_t latent, int64_t rope, int splits) {
  return splitWorkspaceBytes(size_t(B * H * Sq) * (size_t(splits) * size_t(latent + 2) + size_t(2 * latent + rope)));
}

// About two blocks per multiprocessor, each with at least one step of keys of the longest cache
// (Sk), as many as the workspace holds; 1 where the groups' blocks are that many already.
int latentAttentionSplits(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t latent, int64_t rope, int sms,
                          size_t workspaceBytes) {
  const int G = headsPerBlock(H, latent, rope);
  const int64_t blocks = G ? B * Sq * (H / G) : 0;
  if (blocks <= 0 || blocks > kSplitCounters)
    return 1;
  int64_t splits = std::min((2 * int64_t(sms) + blocks - 1) / blocks, (Sk + kGroupKeys - 1) / kGroupKeys);
  while (splits > 1 && latentAttentionWorkspaceBytes(B, H, Sq, latent, rope, int(splits)) > workspaceBytes)
    --splits;
  return int(std::max<int64_t>(splits, 1));
}

std::string latentAttention(Storage st, const void *q, const void *cache, const void *wuk, const void *wuv,
                            const LatentMask &mask, void *out, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                            int64_t nope, int64_t rope, int64_t latent, int64_t v, float scale,
                            const int64_t *skOnDevice, int splits, void *workspace, void *stream) {
  const int G = headsPerBlock(H, latent, rope);
  if (B <= 0 || H <= 0 || Sq <= 0 || Sk <= 0 || !G)
    return "latentAttention: bad shapes or a latent row wider than this kernel stages (" +
           std::to_string(latent + rope) + " elements)";
  LatentArgs a{q, cache, wuk, wuv, mask, out, B, H, Sq, Sk, nope, rope, latent, v, scale, skOnDevice};
  const unsigned blocks = unsigned(B * Sq * (H / G));
  splits = std::max(splits, 1);
  if (splits > 1 && (!workspace || blocks > unsigned(kSplitCounters)))
    return "latentAttention: splits need a workspace and at most " + std::to_string(kSplitCounters) +
           " blocks of groups";
  const size_t groupShared = groupSharedFloats(G, latent, rope) * sizeof(float);
  float *partials = splitPartials(workspace);
  unsigned *arrived = splitCounters(workspace);
  const dim3 grid(blocks, unsigned(splits));
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    const int64_t rows = B * H * Sq;
    if (splits > 1) { // the workspace after the partial results: the latent queries, then outputs
      float *qLatent = partials + rows * splits * (latent + 2), *oLatent = qLatent + rows * (latent + rope);
      if (wuk) {
        const dim3 queryGrid(unsigned(rows), unsigned((latent + rope + kRowThreads - 1) / kRowThreads));
        latentQueryKernel<T><<<queryGrid, kRowThreads, 0, s>>>(a, qLatent);
        a.qLatent = qLatent;
      }
      a.oLatent = wuv ? oLatent : nullptr;
    }
    switch (G) {
    case 8: latentAttentionGroupKernel<T, 8><<<grid, kRowThreads, groupShared, s>>>(a, partials, arrived); break;
    case 4: latentAttentionGroupKernel<T, 4><<<grid, kRowThreads, groupShared, s>>>(a, partials, arrived); break;
    case 2: latentAttentionGroupKernel<T, 2><<<grid, kRowThreads, groupShared, s>>>(a, partials, arrived); break;
    default: latentAttentionGroupKernel<T, 1><<<grid, kRowThreads, groupShared, s>>>(a, partials, arrived); break;
    }
    if (a.oLatent)
      latentOutputKernel<T><<<unsigned(rows), kRowThreads, 0, s>>>(a);
  });
  return launched("latentAttention");
}

} // namespace llmc::rt::cuda
