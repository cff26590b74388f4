// A linear for a few rows (a decode step's M of 1 to 8), where the weight's bytes are the whole
// cost: one warp per output column streams that column's weight row W[n, :] ([N, K] row-major,
// the layout llmc-transpose-linear-weights gives CUDA plans) in 16-byte loads, four in flight per
// lane, against every row of x, and reduces with shuffles, so no partial sum leaves the warp and
// no second pass or workspace is needed. The bias, the activation (SwiGLU: the warp reads the
// gate's row and the up projection's row), the gate and the residual are applied before the one
// store. cuBLASLt keeps the larger M (CudaExecutor.cpp).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace llmc::rt::cuda {
namespace {

constexpr int kWarps = 4;  // output columns per block
constexpr int kUnroll = 4; // 16-byte weight loads in flight per lane

// The 16 / sizeof(T) elements of a 16-byte load, widened.
template <typename T> struct Lanes {
  static constexpr int kCount = 16 / int(sizeof(T));
  float v[kCount];
};

__device__ __forceinline__ float2 pairOf(unsigned word, __half) {
  __half2 p;
  memcpy(&p, &word, 4);
  return __half22float2(p);
}
__device__ __forceinline__ float2 pairOf(unsigned word, __nv_bfloat16) {
  __nv_bfloat162 p;
  memcpy(&p, &word, 4);
  return __bfloat1622float2(p);
}
template <typename T> __device__ __forceinline__ void widen(const uint4 &raw, Lanes<T> &out) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      out.v[i] = __uint_as_float(words[i]);
    } else {
      const float2 f = pairOf(words[i], T{});
      out.v[2 * i] = f.x, out.v[2 * i + 1] = f.y;
    }
  }
}

template <typename T> __device__ __forceinline__ float dot(const Lanes<T> &a, const Lanes<T> &b) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Lanes<T>::kCount; ++i)
    s += a.v[i] * b.v[i];
  return s;
}

// Adds x[m, k .. k + V) · row[k .. k + V) to acc[m] for every m < M (row: the weight row's load).
// The sums of m >= M (kMaxM rounds M up) repeat the last row and are dropped: no branch keeps
// the loads of x from being issued together.
template <typename T, int kMaxM>
__device__ __forceinline__ void accumulate(const SmallLinearArgs &a, const uint4 &row, int64_t k, float (&acc)[kMaxM]) {
  Lanes<T> w;
  widen(row, w);
  const T *x = static_cast<const T *>(a.x);
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) {
    const int64_t r = m < a.M ? m : a.M - 1;
    Lanes<T> xs;
    widen(__ldg(reinterpret_cast<const uint4 *>(x + r * a.K + k)), xs);
    acc[m] += dot(xs, w);
  }
}

// Weight rows are read once: streamed (evict first), so that they do not push x out of the caches.
__device__ __forceinline__ uint4 stream(const void *p) { return __ldcs(static_cast<const uint4 *>(p)); }

// Warp (blockIdx.x * kWarps + warp) computes output column n for every row m < M.
template <typename T, int kMaxM, bool kSwiglu>
__global__ void __launch_bounds__(kWarps * 32) smallLinearKernel(SmallLinearArgs a, Activation act) {
  constexpr int V = Lanes<T>::kCount;
  const int lane = threadIdx.x & 31;
  const int64_t nOut = kSwiglu ? a.N / 2 : a.N, n = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (n >= nOut)
    return;
  const T *w = static_cast<const T *>(a.w);
  const T *row = w + n * a.K, *upRow = kSwiglu ? w + (n + nOut) * a.K : nullptr;
  float acc[kMaxM] = {}, up[kMaxM] = {};
  int64_t k = int64_t(lane) * V;
  for (; k + (kUnroll - 1) * 32 * V < a.K; k += kUnroll * 32 * V) {
    uint4 r[kUnroll], u[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      r[i] = stream(row + k + i * 32 * V);
      if (kSwiglu)
        u[i] = stream(upRow + k + i * 32 * V);
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      accumulate<T, kMaxM>(a, r[i], k + i * 32 * V, acc);
      if (kSwiglu)
        accumulate<T, kMaxM>(a, u[i], k + i * 32 * V, up);
    }
  }
  for (; k < a.K; k += 32 * V) {
    accumulate<T, kMaxM>(a, stream(row + k), k, acc);
    if (kSwiglu)
      accumulate<T, kMaxM>(a, stream(upRow + k), k, up);
  }
#pragma unroll
  for (int m = 0; m < kMaxM; ++m)
    for (int o = 16; o > 0; o >>= 1) {
      acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
      if (kSwiglu)
        up[m] += __shfl_xor_sync(0xffffffffu, up[m], o);
    }
  // Lane m finishes row m (every lane holds every sum after the butterfly).
  const T *bias = static_cast<const T *>(a.bias), *gate = static_cast<const T *>(a.gate),
          *residual = static_cast<const T *>(a.residual);
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) {
    if (m >= a.M || lane != m)
      continue;
    float v = acc[m] + (bias ? toF(bias[n]) : 0.0f);
    if (kSwiglu)
      v = swigluOf(v, up[m] + (bias ? toF(bias[n + nOut]) : 0.0f));
    else
      v = activate(act, v);
    if (gate)
      v *= toF(gate[m * nOut + n]);
    if (residual)
      v += toF(residual[m * nOut + n]);
    static_cast<T *>(a.out)[m * nOut + n] = fromF<T>(v);
  }
}

template <typename T, int kMaxM>
void launchFor(const SmallLinearArgs &a, Activation act, bool swiglu, cudaStream_t stream) {
  const int64_t nOut = swiglu ? a.N / 2 : a.N;
  const unsigned blocks = unsigned((nOut + kWarps - 1) / kWarps);
  if (swiglu)
    smallLinearKernel<T, kMaxM, true><<<blocks, kWarps * 32, 0, stream>>>(a, act);
  else
    smallLinearKernel<T, kMaxM, false><<<blocks, kWarps * 32, 0, stream>>>(a, act);
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace

bool smallLinearTakes(Storage s, const SmallLinearArgs &a) {
  const int64_t v = 16 / int64_t(storageBytes(s));
  return a.M >= 1 && a.M <= kSmallLinearMaxM && a.K > 0 && a.K % v == 0 && a.N > 0 && (!a.swiglu || a.N % 2 == 0) &&
         a.N / kWarps < int64_t(INT_MAX) && aligned16(a.x) && aligned16(a.w);
}

std::string smallLinear(Storage s, const SmallLinearArgs &a, const std::string &activation, void *stream) {
  Activation act;
  if (!parseActivation(activation, act))
    return "smallLinear: unknown activation '" + activation + "'";
  if (!smallLinearTakes(s, a))
    return "smallLinear: needs 1 <= M <= " + std::to_string(kSmallLinearMaxM) +
           ", K a multiple of 16 bytes, an even N with swiglu, and x and w aligned to 16 bytes";
  auto st = static_cast<cudaStream_t>(stream);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    if (a.M == 1)
      launchFor<T, 1>(a, act, a.swiglu, st);
    else if (a.M == 2)
      launchFor<T, 2>(a, act, a.swiglu, st);
    else if (a.M <= 4)
      launchFor<T, 4>(a, act, a.swiglu, st);
    else
      launchFor<T, 8>(a, act, a.swiglu, st);
  });
  return launched("smallLinear");
}

} // namespace llmc::rt::cuda
