// einsum (ONNX Einsum) of up to kMaxEinsumOperands float or integer operands: a thread per output
// element, which walks the summed labels' index tuples and multiplies the operands' elements (f32
// accumulation for f32, f16 and bf16, f64 for doubles, int64 for integers: Wide). The loops come
// from the CPU kernel's einsumLoops (kernels/Einsum.h). Correct first: an einsum that is a batched
// matrix product runs as a loop, not on tiles.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"
#include "Einsum.h"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

template <typename T> __global__ void einsumKernel(const __grid_constant__ EinsumArgs a, T *__restrict__ out) {
  using Acc = Wide<T>;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < a.outCount;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base[kMaxEinsumOperands] = {};
    int64_t rest = o;
    for (int l = a.outLabels - 1; l >= 0; --l) {
      const int64_t i = rest % a.sizes[l];
      rest /= a.sizes[l];
      for (int k = 0; k < a.operands; ++k)
        base[k] += i * a.strides[k * a.labels + l];
    }
    Acc acc = 0;
    for (int64_t j = 0; j < a.summed; ++j) {
      int64_t at[kMaxEinsumOperands];
      for (int k = 0; k < a.operands; ++k)
        at[k] = base[k];
      int64_t r = j;
      for (int l = a.labels - 1; l >= a.outLabels; --l) {
        const int64_t i = r % a.sizes[l];
        r /= a.sizes[l];
        for (int k = 0; k < a.operands; ++k)
          at[k] += i * a.strides[k * a.labels + l];
      }
      Acc product = 1;
      for (int k = 0; k < a.operands; ++k)
        product *= Acc(widen(static_cast<const T *>(a.in[k])[at[k]]));
      acc += product;
    }
    out[o] = narrow<T>(acc);
  }
}

} // namespace

std::string einsumFits(int operands, int labels) {
  if (operands < 1 || operands > kMaxEinsumOperands)
    return "supports 1 to " + std::to_string(kMaxEinsumOperands) + " operands";
  if (labels > kMaxEinsumLabels || operands * labels > kMaxEinsumStrides)
    return std::to_string(operands) + " operands of " + std::to_string(labels) + " labels: at most " +
           std::to_string(kMaxEinsumStrides) + " operand-label pairs";
  return {};
}

std::string einsumArgsOf(const EinsumLoops &loops, int outLabels, const std::vector<const void *> &in, EinsumArgs &a) {
  const int labels = int(loops.labels.size());
  if (std::string err = einsumFits(int(in.size()), labels); !err.empty())
    return err;
  if (loops.strides.size() != in.size() || outLabels < 0 || outLabels > labels)
    return "einsum: loops and operands differ";
  a = EinsumArgs{};
  a.operands = int(in.size()), a.labels = labels, a.outLabels = outLabels;
  a.outCount = loops.outCount, a.summed = loops.summed;
  for (int l = 0; l < labels; ++l)
    a.sizes[l] = loops.sizes[size_t(l)];
  for (int k = 0; k < a.operands; ++k) {
    a.in[k] = in[size_t(k)];
    for (int l = 0; l < labels; ++l)
      a.strides[k * labels + l] = loops.strides[size_t(k)][size_t(l)];
  }
  return {};
}

std::string einsum(int type, const EinsumArgs &a, void *out, void *stream) {
  if (std::string err = einsumFits(a.operands, a.labels); !err.empty() || a.outLabels > a.labels)
    return "einsum: " + (err.empty() ? std::string("more output labels than labels") : err);
  if (a.outCount == 0)
    return {};
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    einsumKernel<T><<<unsigned(blocksFor(a.outCount, kElementThreads)), kElementThreads, 0,
                      static_cast<cudaStream_t>(stream)>>>(a, static_cast<T *>(out));
  };
  if (!dispatchNumeric(type, launch))
    return "einsum: supports float, integer and bool operands";
  return launched("einsum");
}

} // namespace llmc::rt::cuda
