// Greedy decoding on the device: the index of the largest logit in the last row of each
// sequence, so that a decode step copies a token id per sequence to the host instead of its
// vocabulary's scores (500 KB for Llama 3) and the host does not scan them.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

constexpr int kArgmaxThreads = 512;

// The better of two candidates: the larger value, the lower index among equal ones (the first
// maximum, as std::max_element finds it). NaN counts as -inf.
__device__ __forceinline__ void keepBetter(float &value, int64_t &index, float otherValue, int64_t otherIndex) {
  if (otherValue > value || (otherValue == value && otherIndex < index))
    value = otherValue, index = otherIndex;
}

// Block b scans row (b, rows - 1) of x [B, rows, V].
template <typename T>
__global__ void __launch_bounds__(kArgmaxThreads) argmaxKernel(const T *__restrict__ x, int64_t rows, int64_t V,
                                                               int32_t *__restrict__ out) {
  __shared__ float values[kArgmaxThreads / 32];
  __shared__ int64_t indices[kArgmaxThreads / 32];
  const T *row = x + (int64_t(blockIdx.x) * rows + rows - 1) * V;
  float value = -INFINITY;
  int64_t index = V; // past the end: loses every tie
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    const float v = toF(row[j]);
    keepBetter(value, index, v != v ? -INFINITY : v, j);
  }
  for (int o = 16; o > 0; o >>= 1)
    keepBetter(value, index, __shfl_xor_sync(0xffffffffu, value, o), __shfl_xor_sync(0xffffffffu, index, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    values[warp] = value, indices[warp] = index;
  __syncthreads();
  if (warp != 0)
    return;
  value = lane < kArgmaxThreads / 32 ? values[lane] : -INFINITY;
  index = lane < kArgmaxThreads / 32 ? indices[lane] : V;
  for (int o = 16; o > 0; o >>= 1)
    keepBetter(value, index, __shfl_xor_sync(0xffffffffu, value, o), __shfl_xor_sync(0xffffffffu, index, o));
  if (lane == 0)
    out[blockIdx.x] = int32_t(index < V ? index : 0); // every score -inf or NaN: the first
}

} // namespace

std::string argmaxLastRows(Storage s, const void *x, int64_t B, int64_t rows, int64_t V, int32_t *out, void *stream) {
  if (B <= 0 || rows <= 0 || V <= 0 || V > INT32_MAX || B > INT32_MAX)
    return "argmaxLastRows: bad shape";
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    argmaxKernel<T><<<unsigned(B), kArgmaxThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(x),
                                                                                            rows, V, out);
  });
  return launched("argmaxLastRows");
}

} // namespace llmc::rt::cuda
