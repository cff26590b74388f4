// A linear for a few rows (a decode step's M of 1 to 8), where the weight's bytes are the whole
// cost: one warp per output column streams that column's weight row W[n, :] ([N, K] row-major,
// the layout llmc-transpose-linear-weights gives CUDA plans) in 16-byte loads, four in flight per
// lane, against every row of x, and reduces with shuffles, so no partial sum leaves the warp and
// no second pass or workspace is needed. The bias, the activation (SwiGLU: the warp reads the
// gate's row and the up projection's row), the gate and the residual are applied before the one
// store. An RMS norm in front (the decoder layer's norm before its QKV or gate/up projection)
// costs no launch either: each warp sums the squares of the rows of x it reads anyway and
// scales its dot products by their factor. cuBLASLt keeps the larger M (CudaExecutor.cpp).
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

// A warp's running sums for its output column: the dot products of every row m < M of x with the
// column's weight row (and, with SwiGLU, the up projection's), and with a norm in front the sums
// of squares of those rows (x + residual), whose factor the epilogue applies. The sums of
// m >= M (kMaxM rounds M up) repeat the last row and are dropped: no branch keeps the loads of
// x from being issued together.
template <typename T, int kMaxM, bool kSwiglu, bool kNorm> struct Sums {
  float acc[kMaxM] = {}, up[kMaxM] = {}, squares[kMaxM] = {};

  // Elements [k, k + V) of every row: `row` and `upRow` are the weight rows' loads there. With
  // `storeSum` (one warp of the launch) x + residual is stored to normSum on the way.
  __device__ __forceinline__ void add(const SmallLinearArgs &a, const uint4 &row, const uint4 &upRow, int64_t k,
                                      bool storeSum) {
    Lanes<T> w, wu, scale;
    widen(row, w);
    if (kSwiglu)
      widen(upRow, wu);
    if (kNorm)
      widen(__ldg(reinterpret_cast<const uint4 *>(static_cast<const T *>(a.normScale) + k)), scale);
    const T *x = static_cast<const T *>(a.x), *residual = static_cast<const T *>(a.normResidual);
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      const int64_t r = m < a.M ? m : a.M - 1;
      Lanes<T> xs;
      widen(__ldg(reinterpret_cast<const uint4 *>(x + r * a.K + k)), xs);
      if (kNorm) {
        if (residual) {
          Lanes<T> rs;
          widen(__ldg(reinterpret_cast<const uint4 *>(residual + r * a.K + k)), rs);
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
      if (kSwiglu)
        up[m] += dot(xs, wu);
    }
  }

  // Every lane gets the warp's totals.
  __device__ __forceinline__ void reduce() {
#pragma unroll
    for (int m = 0; m < kMaxM; ++m)
      for (int o = 16; o > 0; o >>= 1) {
        acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
        if (kSwiglu)
          up[m] += __shfl_xor_sync(0xffffffffu, up[m], o);
        if (kNorm)
          squares[m] += __shfl_xor_sync(0xffffffffu, squares[m], o);
      }
  }
};

// Weight rows are read once: streamed (evict first), so that they do not push x out of the caches.
__device__ __forceinline__ uint4 stream(const void *p) { return __ldcs(static_cast<const uint4 *>(p)); }

// Warp (blockIdx.x * kWarps + warp) computes output column n for every row m < M.
template <typename T, int kMaxM, bool kSwiglu, bool kNorm>
__global__ void __launch_bounds__(kWarps * 32) smallLinearKernel(SmallLinearArgs a, Activation act) {
  constexpr int V = Lanes<T>::kCount;
  const int lane = threadIdx.x & 31;
  const int64_t nOut = kSwiglu ? a.N / 2 : a.N, n = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (n >= nOut)
    return;
  const T *w = static_cast<const T *>(a.w);
  const T *row = w + n * a.K, *upRow = kSwiglu ? w + (n + nOut) * a.K : row;
  const bool storeSum = kNorm && a.normSum && n == 0;
  Sums<T, kMaxM, kSwiglu, kNorm> sums;
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
    for (int i = 0; i < kUnroll; ++i)
      sums.add(a, r[i], kSwiglu ? u[i] : r[i], k + i * 32 * V, storeSum);
  }
  for (; k < a.K; k += 32 * V) {
    const uint4 r = stream(row + k);
    sums.add(a, r, kSwiglu ? stream(upRow + k) : r, k, storeSum);
  }
  sums.reduce();
  // Lane m finishes row m.
  const T *bias = static_cast<const T *>(a.bias), *gate = static_cast<const T *>(a.gate),
          *residual = static_cast<const T *>(a.residual);
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) {
    if (m >= a.M || lane != m)
      continue;
    const float norm = kNorm ? rsqrtf(sums.squares[m] / float(a.K) + a.normEpsilon) : 1.0f;
    float v = sums.acc[m] * norm + (bias ? toF(bias[n]) : 0.0f);
    if (kSwiglu)
      v = swigluOf(v, sums.up[m] * norm + (bias ? toF(bias[n + nOut]) : 0.0f));
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
void launchFor(const SmallLinearArgs &a, Activation act, cudaStream_t stream) {
  const int64_t nOut = a.swiglu ? a.N / 2 : a.N;
  const unsigned blocks = unsigned((nOut + kWarps - 1) / kWarps);
  const bool norm = a.normScale != nullptr;
  if (a.swiglu && norm)
    smallLinearKernel<T, kMaxM, true, true><<<blocks, kWarps * 32, 0, stream>>>(a, act);
  else if (a.swiglu)
    smallLinearKernel<T, kMaxM, true, false><<<blocks, kWarps * 32, 0, stream>>>(a, act);
  else if (norm)
    smallLinearKernel<T, kMaxM, false, true><<<blocks, kWarps * 32, 0, stream>>>(a, act);
  else
    smallLinearKernel<T, kMaxM, false, false><<<blocks, kWarps * 32, 0, stream>>>(a, act);
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace

bool smallLinearTakes(Storage s, const SmallLinearArgs &a) {
  const int64_t v = 16 / int64_t(storageBytes(s));
  return a.M >= 1 && a.M <= kSmallLinearMaxM && a.K > 0 && a.K % v == 0 && a.N > 0 && (!a.swiglu || a.N % 2 == 0) &&
         a.N / kWarps < int64_t(INT_MAX) && aligned16(a.x) && aligned16(a.w) && aligned16(a.normScale) &&
         aligned16(a.normResidual) && aligned16(a.normSum) && (!a.normSum || a.normResidual) &&
         (!a.normResidual || a.normScale);
}

std::string smallLinear(Storage s, const SmallLinearArgs &a, const std::string &activation, void *stream) {
  Activation act;
  if (!parseActivation(activation, act))
    return "smallLinear: unknown activation '" + activation + "'";
  if (!smallLinearTakes(s, a))
    return "smallLinear: needs 1 <= M <= " + std::to_string(kSmallLinearMaxM) +
           ", K a multiple of 16 bytes, an even N with swiglu, x, w and the norm's tensors aligned to 16 bytes, "
           "and a norm's scale with its residual and sum (a sum only with a residual)";
  auto st = static_cast<cudaStream_t>(stream);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    if (a.M == 1)
      launchFor<T, 1>(a, act, st);
    else if (a.M == 2)
      launchFor<T, 2>(a, act, st);
    else if (a.M <= 4)
      launchFor<T, 4>(a, act, st);
    else
      launchFor<T, 8>(a, act, st);
  });
  return launched("smallLinear");
}

} // namespace llmc::rt::cuda
