// DeepSeek's multi-head latent attention over the latent cache on the CUDA executor (see
// CudaKernels.h): one block per query row, its keys and values taken up from the latent by the
// absorbed weights, the cache's rows a chunk at a time (attendRow).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

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
};

template <typename T> __global__ void latentAttentionKernel(LatentArgs a) {
  extern __shared__ float smem[]; // query in the latent space (latent + rope), a chunk of scores, latent output
  const int64_t width = a.latent + a.rope;
  const T *cache = static_cast<const T *>(a.cache), *wuk = static_cast<const T *>(a.wuk),
          *wuv = static_cast<const T *>(a.wuv);
  T *out = static_cast<T *>(a.out);
  float *ql = smem, *chunk = smem + width, *ol = chunk + (a.Sk < kAttendChunk ? a.Sk : kAttendChunk);
  int64_t Sk = a.Sk;
  if (a.skOnDevice && *a.skOnDevice < Sk)
    Sk = *a.skOnDevice;
  const int64_t row = blockIdx.x, i = row % a.Sq, h = (row / a.Sq) % a.H, b = row / (a.Sq * a.H);
  const int64_t qWidth = a.wuk ? a.nope + a.rope : width;
  const T *q = static_cast<const T *>(a.q) + row * qWidth;
  for (int64_t l = threadIdx.x; l < width; l += blockDim.x) {
    if (!wuk || l >= a.latent) {
      ql[l] = toF(wuk ? q[a.nope + (l - a.latent)] : q[l]);
    } else {
      float acc = 0.0f;
      for (int64_t n = 0; n < a.nope; ++n)
        acc += toF(q[n]) * toF(wuk[(h * a.nope + n) * a.latent + l]);
      ql[l] = acc;
    }
  }
  __syncthreads();
  auto score = [&](int64_t t) {
    const T *c = cache + (t * a.B + b) * width;
    float dot = 0.0f;
    for (int64_t l = 0; l < width; ++l)
      dot += ql[l] * toF(c[l]);
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
    return m.causal && t > i + (Sk - a.Sq) ? -INFINITY : s; // Sk: this run's key count
  };
  auto value = [&](int64_t t, int64_t l) { return toF(cache[(t * a.B + b) * width + l]); };
  float best;
  const float total = attendRow(Sk, a.latent, chunk, ol, &best, score, value);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  for (int64_t l = threadIdx.x; l < a.latent; l += blockDim.x)
    ol[l] *= inv;
  __syncthreads();
  if (!wuv) {
    for (int64_t l = threadIdx.x; l < a.latent; l += blockDim.x)
      out[row * a.latent + l] = fromF<T>(ol[l]);
    return;
  }
  for (int64_t j = threadIdx.x; j < a.v; j += blockDim.x) {
    float o = 0.0f;
    for (int64_t l = 0; l < a.latent; ++l)
      o += ol[l] * toF(wuv[(h * a.latent + l) * a.v + j]);
    out[row * a.v + j] = fromF<T>(o);
  }
}

} // namespace

void latentAttentionSetup() {
  for (Storage s : {Storage::F32, Storage::F16, Storage::BF16})
    dispatch(s, [](auto tag) {
      cudaFuncSetAttribute(latentAttentionKernel<decltype(tag)>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(kMaxLatentAttentionShared));
    });
}

size_t latentAttentionSharedBytes(int64_t latent, int64_t rope, int64_t Sk) {
  return size_t(latent + rope + std::min(Sk, kAttendChunk) + latent) * sizeof(float);
}

std::string latentAttention(Storage st, const void *q, const void *cache, const void *wuk, const void *wuv,
                            const LatentMask &mask, void *out, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                            int64_t nope, int64_t rope, int64_t latent, int64_t v, float scale,
                            const int64_t *skOnDevice, void *stream) {
  const size_t shared = latentAttentionSharedBytes(latent, rope, Sk);
  if (B <= 0 || H <= 0 || Sq <= 0 || Sk <= 0 || shared > kMaxLatentAttentionShared)
    return "latentAttention: bad shapes or a cache longer than this kernel stages (" + std::to_string(Sk) + " rows)";
  const LatentArgs a{q, cache, wuk, wuv, mask, out, B, H, Sq, Sk, nope, rope, latent, v, scale, skOnDevice};
  dispatch(st, [&](auto tag) {
    latentAttentionKernel<decltype(tag)>
        <<<unsigned(B * H * Sq), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(a);
  });
  return launched("latentAttention");
}

} // namespace llmc::rt::cuda
