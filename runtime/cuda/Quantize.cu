// quantize_linear and dequantize_linear (ONNX QuantizeLinear and DequantizeLinear), a thread per
// element in f64 as the CPU's kernels (Einsum.cpp): the scale and zero point per tensor, per index
// of an axis, or per block along it (QuantArgs).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

// Which scale (and zero point) element i takes.
__device__ int64_t scaleIndex(const QuantArgs &a, int64_t i) {
  if (a.count == 1)
    return 0;
  const int64_t along = i / a.inner % a.dim;
  if (a.block <= 0)
    return along;
  const int64_t blocks = (a.dim + a.block - 1) / a.block;
  return (i / (a.inner * a.dim) * blocks + along / a.block) * a.inner + i % a.inner;
}

// q within the range of integer DType `type` (saturation, as ONNX's QuantizeLinear).
__device__ double saturated(int type, double q) {
  switch (type) {
  case I8: return fmin(fmax(q, -128.0), 127.0);
  case U8: return fmin(fmax(q, 0.0), 255.0);
  case I32: return fmin(fmax(q, -2147483648.0), 2147483647.0);
  default: return fmin(fmax(q, -9223372036854775808.0), 9223372036854774784.0); // the largest double below 2^63
  }
}

__global__ void quantizeKernel(QuantArgs a) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = scaleIndex(a, i);
    const double zero = a.zero ? loadAs(a.zero, a.zeroType, s) : 0.0;
    storeAs(a.out, a.outType, i, saturated(a.outType, rint(loadAs(a.x, a.xType, i) / loadAs(a.scale, a.scaleType, s)) + zero));
  }
}

__global__ void dequantizeKernel(QuantArgs a) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = scaleIndex(a, i);
    const double zero = a.zero ? loadAs(a.zero, a.zeroType, s) : 0.0;
    storeAs(a.out, a.outType, i, (loadAs(a.x, a.xType, i) - zero) * loadAs(a.scale, a.scaleType, s));
  }
}

} // namespace

std::string quantizeLinear(bool quantize, const QuantArgs &a, void *stream) {
  const bool integerOut = a.outType == I8 || a.outType == U8 || a.outType == I32 || a.outType == I64;
  if (quantize && !integerOut)
    return "quantizeLinear: the output must be int8, uint8, int32 or int64";
  if (a.count < 1 || a.dim < 1 || a.inner < 1)
    return "quantizeLinear: bad scale layout";
  if (a.n == 0)
    return {};
  const unsigned blocks = unsigned(blocksFor(a.n, kElementThreads));
  if (quantize)
    quantizeKernel<<<blocks, kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(a);
  else
    dequantizeKernel<<<blocks, kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(a);
  return launched(quantize ? "quantizeLinear" : "dequantizeLinear");
}

} // namespace llmc::rt::cuda
