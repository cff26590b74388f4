// Device helpers shared by the CUDA kernel files: storage conversions (f32 arithmetic on f32,
// f16 or bf16 storage), what every attention kernel does to a row (rotary, masks), a linear's
// activations, the dispatch from Storage to a type, and launch bookkeeping.
#pragma once

#include "Activation.h"
#include "CudaKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

namespace llmc::rt::cuda {
namespace {

template <typename T> __device__ __forceinline__ float toF(T x);
template <> __device__ __forceinline__ float toF<float>(float x) { return x; }
template <> __device__ __forceinline__ float toF<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float toF<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

// f32 to storage: round to nearest even; finite values beyond a 16-bit type's range saturate to
// its largest finite value, as narrowFloat (Tensor.h) does to the weights of the plan.
__device__ __forceinline__ float saturate(float x, float largest) {
  return fabsf(x) > largest && !isinf(x) ? copysignf(largest, x) : x;
}
template <typename T> __device__ __forceinline__ T fromF(float x);
template <> __device__ __forceinline__ float fromF<float>(float x) { return x; }
template <> __device__ __forceinline__ __half fromF<__half>(float x) { return __float2half_rn(saturate(x, 65504.0f)); }
template <> __device__ __forceinline__ __nv_bfloat16 fromF<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(saturate(x, 3.38953139e38f));
}

// Element d of a head row, rotated (rotate-half) by the cos/sin row when there is one.
template <typename T>
__device__ __forceinline__ float rotated(const T *row, const T *cosRow, const T *sinRow, int64_t d, int64_t D) {
  const float x = toF(row[d]);
  if (!cosRow)
    return x;
  const int64_t half = D / 2;
  const float partner = d < half ? -toF(row[d + half]) : toF(row[d - half]);
  return x * toF(cosRow[d]) + partner * toF(sinRow[d]);
}

// An attention score after the mask of `a` (element `at`, from its maskStrides): bool bytes or
// int64 values keep it (non-zero) or hide it, anything else is added in the storage type.
template <typename T> __device__ __forceinline__ float masked(const AttentionArgs &a, float score, int64_t at) {
  if (!a.mask)
    return score;
  switch (a.maskType) {
  case AttentionArgs::Mask::Bool: return static_cast<const uint8_t *>(a.mask)[at] ? score : -INFINITY;
  case AttentionArgs::Mask::Int64: return static_cast<const int64_t *>(a.mask)[at] ? score : -INFINITY;
  case AttentionArgs::Mask::Additive: break;
  }
  return score + toF(static_cast<const T *>(a.mask)[at]);
}

// A linear's activation (Activation.h), as the CPU linear computes it.
__device__ __forceinline__ float activate(Activation act, float x) {
  switch (act) {
  case Activation::None: return x;
  case Activation::Relu: return fmaxf(x, 0.0f);
  case Activation::Silu: return x / (1.0f + __expf(-x));
  case Activation::Gelu: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  case Activation::GeluTanh: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

// SwiGLU of a gate and an up projection's value: silu(gate) * up.
__device__ __forceinline__ float swigluOf(float gate, float up) { return gate / (1.0f + __expf(-gate)) * up; }

// Runs `f(T{})` with T the storage type.
template <typename F> void dispatch(Storage s, F &&f) {
  switch (s) {
  case Storage::F32: f(float{}); break;
  case Storage::F16: f(__half{}); break;
  case Storage::BF16: f(__nv_bfloat16{}); break;
  }
}

std::string launched(const char *what) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}

int64_t blocksFor(int64_t n, int threads) { return std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, 65535 * 8)); }

} // namespace
} // namespace llmc::rt::cuda
