// cumsum (ONNX CumSum): each thread scans one line along the axis, as the CPU kernel does. The
// lines are short where plans use it (a mask built from position ids: one sequence), so one
// thread per line and a sequential scan suffice; integers add exactly, 16-bit floats in f32.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

template <typename T, typename Acc>
__global__ void cumsumKernel(const T *__restrict__ x, T *__restrict__ y, int64_t outer, int64_t n, int64_t inner,
                             bool exclusive, bool reverse) {
  for (int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; line < outer * inner;
       line += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = line / inner, i = line % inner;
    Acc acc = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = (o * n + (reverse ? n - 1 - s : s)) * inner + i;
      const Acc v = Acc(widen(x[at]));
      if (exclusive) {
        y[at] = narrow<T>(acc);
        acc += v;
      } else {
        acc += v;
        y[at] = narrow<T>(acc);
      }
    }
  }
}

template <typename T, typename Acc>
std::string launchCumsum(const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse,
                         cudaStream_t stream) {
  const int64_t lines = outer * inner;
  const unsigned blocks = unsigned(std::max<int64_t>(1, std::min<int64_t>((lines + 255) / 256, 4096)));
  cumsumKernel<T, Acc><<<blocks, 256, 0, stream>>>(static_cast<const T *>(x), static_cast<T *>(y), outer, n, inner,
                                                   exclusive, reverse);
  return launched("cumsum");
}

} // namespace

std::string cumsum(int type, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                   bool reverse, void *stream) {
  if (outer * n * inner == 0)
    return {};
  auto st = static_cast<cudaStream_t>(stream);
  switch (type) { // the plan's DType numbers (CudaKernels.h)
  case 4: return launchCumsum<long long, long long>(x, y, outer, n, inner, exclusive, reverse, st);
  case 5: return launchCumsum<int32_t, long long>(x, y, outer, n, inner, exclusive, reverse, st);
  case 1: return launchCumsum<float, float>(x, y, outer, n, inner, exclusive, reverse, st);
  case 2: return launchCumsum<__half, float>(x, y, outer, n, inner, exclusive, reverse, st);
  case 9: return launchCumsum<__nv_bfloat16, float>(x, y, outer, n, inner, exclusive, reverse, st);
  default: return "cumsum: supports i64, i32 and float values";
  }
}

} // namespace llmc::rt::cuda
