// cumsum (ONNX CumSum): each thread scans one line along the axis, as the CPU kernel does. The
// lines are short where plans use it (a mask built from position ids: one sequence), so one
// thread per line and a sequential scan suffice; integers add exactly, 16-bit floats in f32,
// doubles in f64 (Wide). The axis may be one the device holds (an input of the graph): each
// thread reads it and works out the lines' geometry itself.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <algorithm>
#include <cstdint>

namespace llmc::rt::cuda {
namespace {

template <typename T>
__global__ void cumsumKernel(const T *__restrict__ x, T *__restrict__ y, const CumsumArgs a, int *error) {
  int64_t axis = a.axis;
  if (a.axisValue)
    axis = a.axisInt32 ? int64_t(*static_cast<const int32_t *>(a.axisValue))
                       : int64_t(*static_cast<const long long *>(a.axisValue));
  if (axis < 0)
    axis += a.rank;
  if (axis < 0 || axis >= a.rank) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      atomicExch(error, 1);
    return;
  }
  int64_t total = 1, inner = 1;
  for (int d = 0; d < a.rank; ++d) {
    total *= a.dims[d];
    if (d > axis)
      inner *= a.dims[d];
  }
  const int64_t n = a.dims[axis], lines = total / n; // total > 0: the launch checked
  for (int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = line / inner, i = line % inner;
    Wide<T> acc = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = (o * n + (a.reverse ? n - 1 - s : s)) * inner + i;
      const Wide<T> v = widen(x[at]);
      if (a.exclusive) {
        y[at] = narrow<T>(acc);
        acc += v;
      } else {
        acc += v;
        y[at] = narrow<T>(acc);
      }
    }
  }
}

} // namespace

std::string cumsum(int type, const void *x, void *y, const CumsumArgs &a, int *error, void *stream) {
  if (a.rank < 1 || a.rank > kMaxDims)
    return "cumsum: rank 1 to " + std::to_string(kMaxDims);
  int64_t total = 1;
  for (int d = 0; d < a.rank; ++d)
    total *= a.dims[d];
  if (total == 0)
    return {};
  // At most a line per element (an axis of length 1), where the axis is not known here.
  const unsigned blocks = unsigned(std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, 4096)));
  const bool known = dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    cumsumKernel<T><<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(x),
                                                                           static_cast<T *>(y), a, error);
  });
  return known ? launched("cumsum") : "cumsum: supports float and integer values";
}

} // namespace llmc::rt::cuda
