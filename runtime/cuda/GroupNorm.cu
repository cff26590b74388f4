// The normalizations of convolutional nets and of exports that spell out a layer norm:
// group_norm, instance_norm (a group per channel) and layer_norm_stats (a row's mean and 1/std
// alone) as one kernel of a block per group, its mean and variance in two passes in f32 as the
// CPU's two passes in f64; and batch_norm in inference (per-channel statistics), a thread per
// element. Correct first: the two passes read the group twice from memory.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

template <typename T>
__global__ void groupNormKernel(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ scale,
                                const T *__restrict__ bias, T *__restrict__ mean, T *__restrict__ invStd, int64_t rows,
                                int64_t rowLen, int64_t groups, int64_t channelsPerGroup, int64_t spatial, float eps) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *in = x + row * rowLen;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < rowLen; i += blockDim.x)
      sum += toF(in[i]);
    const float m = blockReduce<false>(sum) / float(rowLen);
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < rowLen; i += blockDim.x) {
      const float d = toF(in[i]) - m;
      squares += d * d;
    }
    const float inv = 1.0f / sqrtf(blockReduce<false>(squares) / float(rowLen) + eps);
    if (mean && threadIdx.x == 0)
      mean[row] = fromF<T>(m), invStd[row] = fromF<T>(inv);
    if (!y)
      continue;
    const int64_t firstChannel = row % groups * channelsPerGroup;
    for (int64_t i = threadIdx.x; i < rowLen; i += blockDim.x) {
      const int64_t c = firstChannel + i / spatial;
      y[row * rowLen + i] = fromF<T>((toF(in[i]) - m) * inv * toF(scale[c]) + toF(bias[c]));
    }
  }
}

template <typename T>
__global__ void batchNormKernel(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ scale,
                                const T *__restrict__ bias, const T *__restrict__ mean, const T *__restrict__ var,
                                int64_t n, int64_t channels, int64_t inner, float eps) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e / inner % channels;
    const float s = toF(scale[c]) / sqrtf(toF(var[c]) + eps);
    y[e] = fromF<T>(toF(x[e]) * s + (toF(bias[c]) - toF(mean[c]) * s));
  }
}

} // namespace

std::string groupNorm(Storage st, const void *x, void *y, const void *scale, const void *bias, void *mean,
                      void *invStd, int64_t rows, int64_t rowLen, int64_t groups, int64_t channelsPerGroup,
                      int64_t spatial, float eps, void *stream) {
  if ((y && (!scale || !bias || groups < 1 || channelsPerGroup < 1 || spatial < 1 ||
             rowLen != channelsPerGroup * spatial)) ||
      (!y && (!mean || !invStd)))
    return "groupNorm: a group of whole channels with their scale and bias, or a mean and 1/std to write";
  if (rows * rowLen == 0)
    return {};
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    groupNormKernel<T><<<unsigned(std::min<int64_t>(rows, 65535 * 8)), kRowThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(y), static_cast<const T *>(scale), static_cast<const T *>(bias),
        static_cast<T *>(mean), static_cast<T *>(invStd), rows, rowLen, groups, channelsPerGroup, spatial, eps);
  });
  return launched("groupNorm");
}

std::string batchNorm(Storage st, const void *x, void *y, const void *scale, const void *bias, const void *mean,
                      const void *var, int64_t n, int64_t channels, int64_t inner, float eps, void *stream) {
  if (n == 0)
    return {};
  if (channels < 1 || inner < 1 || n % (channels * inner))
    return "batchNorm: whole images of channels x inner elements";
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    batchNormKernel<T><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(y), static_cast<const T *>(scale), static_cast<const T *>(bias),
        static_cast<const T *>(mean), static_cast<const T *>(var), n, channels, inner, eps);
  });
  return launched("batchNorm");
}

} // namespace llmc::rt::cuda
