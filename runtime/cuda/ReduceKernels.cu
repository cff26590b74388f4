// Reductions, direct convolution, im2col, pooling and padding on the CUDA executor (see
// CudaKernels.h): correct-first kernels, tested against the CPU ones, one thread per output
// element. Convolutions of one group run as im2col and a cuBLASLt GEMM (PrepareConv.cpp).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

enum ReduceKind : int { RSum, RMean, RMax, RMin, RL2, RSumSquare, RProd };

struct ReduceShape {
  int rank;
  int64_t dims[kMaxDims], strides[kMaxDims];
  bool reduced[kMaxDims];
  int64_t count; // elements reduced into each output
};

// Floats accumulate in f64, integers in int64 (wrapping past it), as the CPU kernel; an integer
// mean divides with truncation, an integer l2 truncates the square root.
template <typename T>
__global__ void reduceKernel(const T *__restrict__ in, T *__restrict__ out, ReduceShape r, int kind,
                             int64_t outputs) {
  constexpr bool kInt = std::is_integral_v<T>;
  using Acc = std::conditional_t<kInt, long long, double>;
  const Acc lowest = lowestOf<T>(), highest = highestOf<T>();
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = o, base = 0;
    for (int d = r.rank - 1; d >= 0; --d)
      if (!r.reduced[d]) {
        base += (rest % r.dims[d]) * r.strides[d];
        rest /= r.dims[d];
      }
    Acc acc = kind == RMax ? lowest : kind == RMin ? highest : kind == RProd ? Acc(1) : Acc(0);
    for (int64_t k = 0; k < r.count; ++k) {
      int64_t q = k, at = base;
      for (int d = r.rank - 1; d >= 0; --d)
        if (r.reduced[d]) {
          at += (q % r.dims[d]) * r.strides[d];
          q /= r.dims[d];
        }
      const Acc v = Acc(widen(in[at]));
      acc = kind == RMax    ? (v > acc ? v : acc) // a NaN never replaces the accumulator, as fmax
            : kind == RMin  ? (v < acc ? v : acc)
            : kind == RProd ? acc * v
            : kind == RL2 || kind == RSumSquare ? acc + v * v
                                                : acc + v;
    }
    if constexpr (kInt)
      out[o] = narrow<T>(kind == RMean ? (r.count ? acc / Acc(r.count) : Acc(0)) : kind == RL2 ? Acc(sqrt(double(acc))) : acc);
    else
      out[o] = narrow<T>(kind == RMean ? acc / double(r.count) : kind == RL2 ? sqrt(acc) : acc);
  }
}

// A thread per output element, walking its line.
template <typename T>
__global__ void argReduceKernel(const T *__restrict__ in, int64_t *__restrict__ out, int64_t outer, int64_t n,
                                int64_t inner, bool max, bool last) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outer * inner;
       o += int64_t(gridDim.x) * blockDim.x) {
    const T *line = in + (o / inner) * n * inner + o % inner;
    int64_t best = 0;
    auto b = widen(line[0]);
    for (int64_t k = 1; k < n; ++k) {
      const auto v = widen(line[k * inner]);
      if (max ? (v > b || (last && v == b)) : (v < b || (last && v == b)))
        best = k, b = v;
    }
    out[o] = best;
  }
}

__device__ int64_t tapOffset(const Window &w, int64_t o, int64_t k) { // -1 in padding
  int64_t offset = 0, scale = 1;
  for (int d = w.spatial - 1; d >= 0; --d) {
    const int64_t od = o % w.out[d], kd = k % w.kernel[d];
    o /= w.out[d];
    k /= w.kernel[d];
    const int64_t p = od * w.stride[d] - w.padBegin[d] + kd * w.dilation[d];
    if (p < 0 || p >= w.in[d])
      return -1;
    offset += p * scale;
    scale *= w.in[d];
  }
  return offset;
}


template <typename T>
__global__ void convKernel(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ bias,
                           T *__restrict__ y, int64_t N, int64_t C, int64_t M, int64_t group, Window win,
                           int64_t inSize, int64_t outSize, int64_t kernelSize) {
  const int64_t total = N * M * outSize, Cg = C / group, Mg = M / group;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e % outSize, m = (e / outSize) % M, b = e / (outSize * M), g = m / Mg;
    Wide<T> acc = bias ? widen(bias[m]) : Wide<T>(0);
    for (int64_t c = 0; c < Cg; ++c) {
      const T *xc = x + (b * C + g * Cg + c) * inSize;
      const T *wc = w + (m * Cg + c) * kernelSize;
      for (int64_t k = 0; k < kernelSize; ++k) {
        const int64_t at = tapOffset(win, o, k);
        if (at >= 0)
          acc += widen(xc[at]) * widen(wc[k]);
      }
    }
    y[e] = narrow<T>(acc);
  }
}

// One thread per element of col (im2col): the writes of a warp along a row, coalesced.
template <typename T>
__global__ void im2colKernel(const T *__restrict__ x, T *__restrict__ col, int64_t N, int64_t C, Window win,
                             int64_t inSize, int64_t outSize, int64_t kernelSize) {
  const int64_t width = C * kernelSize, total = N * outSize * width;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = e % kernelSize, c = (e / kernelSize) % C, row = e / width;
    const int64_t o = row % outSize, b = row / outSize;
    const int64_t at = tapOffset(win, o, k);
    col[e] = at >= 0 ? x[(b * C + c) * inSize + at] : fromF<T>(0.0f);
  }
}

// An average pool's divisor with count_include_pad: the taps of output o's window within the
// input and its explicit padding (not those past the end padding that ceil_mode adds), as the CPU.
__device__ int64_t paddedTaps(const Window &w, int64_t o) {
  int64_t taps = 1;
  for (int d = w.spatial - 1; d >= 0; --d) {
    const int64_t start = o % w.out[d] * w.stride[d] - w.padBegin[d];
    o /= w.out[d];
    int64_t inside = 0;
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      const int64_t at = start + k * w.dilation[d];
      inside += at >= -w.padBegin[d] && at < w.in[d] + w.padEnd[d];
    }
    taps *= inside;
  }
  return taps ? taps : 1;
}

template <typename T>
__global__ void poolKernel(bool max, const T *__restrict__ x, T *__restrict__ y, int64_t planes, Window win,
                           int64_t inSize, int64_t outSize, int64_t kernelSize, bool countPad,
                           int64_t *__restrict__ indices, bool columnMajor) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < planes * outSize; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e % outSize, p = e / outSize;
    const T *xp = x + p * inSize;
    using Acc = Wide<T>;
    Acc acc = max ? lowestOf<T>() : Acc(0);
    int64_t counted = 0, best = -1;
    for (int64_t k = 0; k < kernelSize; ++k) {
      const int64_t at = tapOffset(win, o, k);
      if (at < 0)
        continue;
      const Acc v = widen(xp[at]);
      if (indices) { // the CPU's rule: the first tap, then each one strictly greater
        if (best < 0 || v > acc)
          acc = v, best = at;
      } else {
        acc = max ? maxOf(acc, v) : acc + v;
      }
      ++counted;
    }
    y[e] = narrow<T>(max ? acc : acc / Acc(countPad ? paddedTaps(win, o) : (counted ? counted : 1)));
    if (indices) {
      if (best >= 0 && columnMajor)
        best = best % win.in[1] * win.in[0] + best / win.in[1];
      indices[e] = best < 0 ? -1 : p * inSize + best;
    }
  }
}

struct PadShape {
  int rank;
  int64_t in[kMaxDims], out[kMaxDims], begin[kMaxDims];
};

// mode 0 constant, 1 edge (clamp), 2 reflect (mirror without repeating the edge), 3 wrap.
template <typename T>
__global__ void padKernel(const T *__restrict__ in, T *__restrict__ out, PadShape s, double value, int mode,
                          int64_t n) {
  const T fill = narrow<T>(Wide<T>(value));
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = e, at = 0, scale = 1;
    bool inside = true;
    for (int d = s.rank - 1; d >= 0; --d) {
      int64_t i = rest % s.out[d] - s.begin[d];
      const int64_t len = s.in[d];
      rest /= s.out[d];
      if (i < 0 || i >= len) {
        if (mode == 1) {
          i = i < 0 ? 0 : len - 1;
        } else if (mode == 2 && len > 1) {
          const int64_t period = 2 * (len - 1);
          i = ((i % period) + period) % period;
          i = i < len ? i : period - i;
        } else if (mode == 3) {
          i = ((i % len) + len) % len;
        } else if (mode == 2) {
          i = 0;
        } else {
          inside = false;
        }
      }
      at += i * scale;
      scale *= len;
    }
    out[e] = inside ? in[at] : fill;
  }
}

} // namespace

int64_t productOf(const int64_t *dims, int n) {
  int64_t s = 1;
  for (int d = 0; d < n; ++d)
    s *= dims[d];
  return s;
}

std::string reduce(int type, const std::string &kind, const void *in, void *out, int rank, const int64_t *dims,
                   const bool *reduced, void *stream) {
  const int k = kind == "sum" ? RSum : kind == "mean" ? RMean : kind == "max" ? RMax : kind == "min" ? RMin
              : kind == "l2" ? RL2 : kind == "sum_square" ? RSumSquare : kind == "prod" ? RProd : -1;
  if (k < 0 || rank < 0 || rank > kMaxDims)
    return "reduce: unknown kind '" + kind + "' or rank above " + std::to_string(kMaxDims);
  ReduceShape r{};
  r.rank = rank, r.count = 1;
  int64_t outputs = 1, stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    r.dims[d] = dims[d], r.strides[d] = stride, r.reduced[d] = reduced[d];
    stride *= dims[d];
    (reduced[d] ? r.count : outputs) *= dims[d];
  }
  if (outputs == 0)
    return {};
  const bool known = dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    reduceKernel<T><<<unsigned(blocksFor(outputs, kElementThreads)), kElementThreads, 0,
                      static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(in), static_cast<T *>(out), r, k,
                                                           outputs);
  });
  return known ? launched("reduce") : "reduce: supports float, integer and bool elements";
}

std::string conv(int type, const void *x, const void *w, const void *bias, void *y, int64_t N, int64_t C, int64_t M,
                 int64_t group, const Window &win, void *stream) {
  if (win.spatial < 1 || win.spatial > 3 || group < 1 || C % group || M % group)
    return "conv: 1 to 3 spatial dims and channels divisible by the group";
  const int64_t outSize = productOf(win.out, win.spatial), total = N * M * outSize;
  if (total == 0)
    return {};
  const bool known = dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    convKernel<T><<<unsigned(blocksFor(total, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<const T *>(w), static_cast<const T *>(bias), static_cast<T *>(y), N, C, M,
        group, win, productOf(win.in, win.spatial), outSize, productOf(win.kernel, win.spatial));
  });
  return known ? launched("conv") : "conv: supports float elements";
}

std::string argReduce(int type, bool max, const void *in, int64_t *out, int64_t outer, int64_t n, int64_t inner,
                      bool last, void *stream) {
  if (n <= 0)
    return "argReduce: the axis must not be empty";
  if (outer * inner == 0)
    return {};
  const bool known = dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    argReduceKernel<T><<<unsigned(blocksFor(outer * inner, kElementThreads)), kElementThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(in), out, outer, n, inner, max,
                                                              last);
  });
  return known ? launched("argReduce") : "argReduce: supports float, integer and bool elements";
}

std::string im2col(Storage st, const void *x, void *col, int64_t N, int64_t C, const Window &win, void *stream) {
  if (win.spatial < 1 || win.spatial > 3)
    return "im2col: 1 to 3 spatial dims";
  const int64_t outSize = productOf(win.out, win.spatial), kernelSize = productOf(win.kernel, win.spatial);
  const int64_t total = N * outSize * C * kernelSize;
  if (total == 0)
    return {};
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    im2colKernel<T><<<unsigned(blocksFor(total, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(col), N, C, win, productOf(win.in, win.spatial), outSize,
        kernelSize);
  });
  return launched("im2col");
}

std::string pool(int type, bool max, const void *x, void *y, int64_t planes, const Window &win, bool countPad,
                 void *stream, int64_t *indices, bool columnMajor) {
  if (win.spatial < 1 || win.spatial > 3)
    return "pool: 1 to 3 spatial dims";
  if (indices && (!max || (columnMajor && win.spatial != 2)))
    return "pool: indices of a max pooling only, column-major ones of two spatial dims";
  const int64_t outSize = productOf(win.out, win.spatial);
  if (planes * outSize == 0)
    return {};
  const bool known = type != Bool && dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    poolKernel<T><<<unsigned(blocksFor(planes * outSize, kElementThreads)), kElementThreads, 0,
                    static_cast<cudaStream_t>(stream)>>>(max, static_cast<const T *>(x), static_cast<T *>(y), planes, win,
                                                         productOf(win.in, win.spatial), outSize,
                                                         productOf(win.kernel, win.spatial), countPad, indices,
                                                         columnMajor);
  });
  return known ? launched("pool") : "pool: supports float and integer elements";
}

std::string pad(int type, const std::string &mode, const void *in, void *out, int rank, const int64_t *inDims,
                const int64_t *outDims, const int64_t *padBegin, double value, void *stream) {
  const int m = mode.empty() || mode == "constant" ? 0 : mode == "edge" ? 1 : mode == "reflect" ? 2 : mode == "wrap" ? 3 : -1;
  if (m < 0)
    return "pad: unknown mode '" + mode + "'";
  if (rank < 0 || rank > kMaxDims)
    return "pad: rank above " + std::to_string(kMaxDims);
  PadShape s{};
  s.rank = rank;
  for (int d = 0; d < rank; ++d)
    s.in[d] = inDims[d], s.out[d] = outDims[d], s.begin[d] = padBegin[d];
  const int64_t n = productOf(outDims, rank);
  if (n == 0)
    return {};
  const bool known = dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    padKernel<T><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(in), static_cast<T *>(out), s, value, m, n);
  });
  return known ? launched("pad") : "pad: supports float, integer and bool elements";
}

} // namespace llmc::rt::cuda
