// The normalizations of convolutional nets and of exports that spell out a layer norm:
// group_norm, instance_norm (a group per channel) and layer_norm_stats (a row's mean and 1/std
// alone) as one kernel of a block per group, its mean and variance in two passes in Wide<T> (f32,
// or f64 for doubles) as the CPU's two passes in f64; and batch_norm in inference (per-channel
// statistics), a thread per element. Correct first: the two passes read the group twice from
// memory.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

template <typename T>
__global__ void groupNormKernel(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ scale,
                                const T *__restrict__ bias, T *__restrict__ mean, T *__restrict__ invStd, int64_t rows,
                                int64_t rowLen, int64_t groups, int64_t channelsPerGroup, int64_t spatial, double eps) {
  using Acc = Wide<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *in = x + row * rowLen;
    Acc sum = 0;
    for (int64_t i = threadIdx.x; i < rowLen; i += blockDim.x)
      sum += widen(in[i]);
    const Acc m = blockReduce<false>(sum) / Acc(rowLen);
    Acc squares = 0;
    for (int64_t i = threadIdx.x; i < rowLen; i += blockDim.x) {
      const Acc d = widen(in[i]) - m;
      squares += d * d;
    }
    const Acc inv = Acc(1) / sqrtOf(blockReduce<false>(squares) / Acc(rowLen) + Acc(eps));
    if (mean && threadIdx.x == 0)
      mean[row] = narrow<T>(m), invStd[row] = narrow<T>(inv);
    if (!y)
      continue;
    const int64_t firstChannel = row % groups * channelsPerGroup;
    for (int64_t i = threadIdx.x; i < rowLen; i += blockDim.x) {
      const int64_t c = firstChannel + i / spatial;
      y[row * rowLen + i] = narrow<T>((widen(in[i]) - m) * inv * widen(scale[c]) + widen(bias[c]));
    }
  }
}

template <typename T>
__global__ void batchNormKernel(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ scale,
                                const T *__restrict__ bias, const T *__restrict__ mean, const T *__restrict__ var,
                                int64_t n, int64_t channels, int64_t inner, double eps) {
  using Acc = Wide<T>;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e / inner % channels;
    const Acc s = widen(scale[c]) / sqrtOf(widen(var[c]) + Acc(eps));
    y[e] = narrow<T>(widen(x[e]) * s + (widen(bias[c]) - widen(mean[c]) * s));
  }
}

} // namespace

std::string groupNorm(int type, const void *x, void *y, const void *scale, const void *bias, void *mean,
                      void *invStd, int64_t rows, int64_t rowLen, int64_t groups, int64_t channelsPerGroup,
                      int64_t spatial, double eps, void *stream) {
  if ((y && (!scale || !bias || groups < 1 || channelsPerGroup < 1 || spatial < 1 ||
             rowLen != channelsPerGroup * spatial)) ||
      (!y && (!mean || !invStd)))
    return "groupNorm: a group of whole channels with their scale and bias, or a mean and 1/std to write";
  if (rows * rowLen == 0)
    return {};
  const bool known = dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    groupNormKernel<T><<<unsigned(std::min<int64_t>(rows, 65535 * 8)), kRowThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(y), static_cast<const T *>(scale), static_cast<const T *>(bias),
        static_cast<T *>(mean), static_cast<T *>(invStd), rows, rowLen, groups, channelsPerGroup, spatial, eps);
  });
  return known ? launched("groupNorm") : "groupNorm: supports float elements";
}

std::string batchNorm(int type, const void *x, void *y, const void *scale, const void *bias, const void *mean,
                      const void *var, int64_t n, int64_t channels, int64_t inner, double eps, void *stream) {
  if (n == 0)
    return {};
  if (channels < 1 || inner < 1 || n % (channels * inner))
    return "batchNorm: whole images of channels x inner elements";
  const bool known = dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    batchNormKernel<T><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(y), static_cast<const T *>(scale), static_cast<const T *>(bias),
        static_cast<const T *>(mean), static_cast<const T *>(var), n, channels, inner, eps);
  });
  return known ? launched("batchNorm") : "batchNorm: supports float elements";
}

} // namespace llmc::rt::cuda
