// Convolution (im2col + GEMM), max and average pooling, and inference batch normalization, for
// NC[spatial...] tensors with 1 to 3 spatial dimensions.
#include "KernelUtil.h"

#include <algorithm>
#include <limits>

namespace llmc::rt {
namespace {

constexpr int kMaxSpatial = 3;

// The window geometry shared by conv and pooling, read from attributes and checked against the
// input and output shapes so that no index can leave the tensors.
struct Window {
  int n = 0; // spatial dims
  int64_t in[kMaxSpatial], out[kMaxSpatial], kernel[kMaxSpatial];
  int64_t padBegin[kMaxSpatial], stride[kMaxSpatial], dilation[kMaxSpatial];
  int64_t inSize = 1, outSize = 1, kernelSize = 1;

  std::string init(const AttrList &attrs, const Shape &x, const Shape &y, const int64_t *kernelDims) {
    n = x.rank - 2;
    if (n < 1 || n > kMaxSpatial || y.rank != x.rank)
      return "needs 1 to 3 spatial dimensions";
    std::vector<int64_t> pads = attrs.getInts("pads"), strides = attrs.getInts("strides"),
                         dilations = attrs.getInts("dilations");
    if (int(pads.size()) != 2 * n || int(strides.size()) != n || int(dilations.size()) != n)
      return "window attributes do not match the spatial rank";
    for (int d = 0; d < n; ++d) {
      in[d] = x.dims[d + 2];
      out[d] = y.dims[d + 2];
      kernel[d] = kernelDims[d];
      padBegin[d] = pads[d];
      stride[d] = strides[d];
      dilation[d] = dilations[d];
      if (kernel[d] < 1 || stride[d] < 1 || dilation[d] < 1)
        return "window attributes must be positive";
      inSize *= in[d];
      outSize *= out[d];
      kernelSize *= kernel[d];
    }
    return {};
  }

  // Input offset (within one channel) of kernel tap `k` for output position `o`, or -1 when the
  // tap falls into padding. `k` and `o` are flat indices.
  int64_t inputOffset(int64_t o, int64_t k) const {
    int64_t offset = 0, scale = 1;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t od = o % out[d], kd = k % kernel[d];
      o /= out[d];
      k /= kernel[d];
      const int64_t p = od * stride[d] - padBegin[d] + kd * dilation[d];
      if (p < 0 || p >= in[d])
        return -1;
      offset += p * scale;
      scale *= in[d];
    }
    return offset;
  }

  bool isPointwise() const {
    for (int d = 0; d < n; ++d)
      if (kernel[d] != 1 || stride[d] != 1 || padBegin[d] != 0 || in[d] != out[d])
        return false;
    return true;
  }
};

// The common 2-D case of im2col without per-element index arithmetic: one row of `cols` per
// (channel, kernel tap), one column per output position.
void im2col2d(const Window &w, const float *x, int64_t channels, float *cols) {
  const int64_t H = w.in[0], W = w.in[1], OH = w.out[0], OW = w.out[1];
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < w.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
        float *row = cols + ((c * w.kernel[0] + kh) * w.kernel[1] + kw) * OH * OW;
        const float *plane = x + c * H * W;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * w.stride[0] - w.padBegin[0] + kh * w.dilation[0];
          float *dst = row + oh * OW;
          if (ih < 0 || ih >= H) {
            std::fill(dst, dst + OW, 0.f);
            continue;
          }
          const float *line = plane + ih * W;
          const int64_t offset = kw * w.dilation[1] - w.padBegin[1];
          if (w.stride[1] == 1 && offset >= 0 && offset + OW <= W) {
            std::copy(line + offset, line + offset + OW, dst);
            continue;
          }
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * w.stride[1] + offset;
            dst[ow] = iw >= 0 && iw < W ? line[iw] : 0.f;
          }
        }
      }
}

// A convolution of doubles, summed directly in double: a model in doubles is a reference to
// check against, not a hot path.
void convDoubles(const Window &win, const double *x, const double *w, const double *bias, double *y, int64_t N,
                 int64_t C, int64_t M, int64_t group) {
  const int64_t Cg = C / group, Mg = M / group;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < win.outSize; ++o) {
        double acc = bias ? bias[m] : 0.0;
        for (int64_t c = 0; c < Cg; ++c) {
          const double *xc = x + (b * C + m / Mg * Cg + c) * win.inSize, *wc = w + (m * Cg + c) * win.kernelSize;
          for (int64_t k = 0; k < win.kernelSize; ++k)
            if (const int64_t off = win.inputOffset(o, k); off >= 0)
              acc += xc[off] * wc[k];
        }
        y[(b * M + m) * win.outSize + o] = acc;
      }
}

std::string convKernel(const KernelArgs &args) {
  if (args.numInputs < 2 || args.numOutputs != 1)
    return "expects input, weight and an optional bias";
  const TensorRef &x = args.in(0), &w = args.in(1);
  TensorRef &y = args.out(0);
  const DType type = x.dtype;
  if ((type != DType::F32 && type != DType::F64) || w.dtype != type || y.dtype != type ||
      (args.hasInput(2) && args.in(2).dtype != type))
    return "conv supports f32 or f64 operands of one type (f16 through conversion)";
  if (w.shape.rank != x.shape.rank)
    return "weight rank differs from the input's";
  Window win;
  if (std::string err = win.init(args.attrs, x.shape, y.shape, w.shape.dims + 2); !err.empty())
    return err;
  const int64_t N = x.shape[0], C = x.shape[1], M = w.shape[0], group = args.attrs.getInt("group", 1);
  if (group < 1 || C % group || M % group || w.shape[1] * group != C || y.shape[0] != N || y.shape[1] != M)
    return "channel counts do not match the group";
  if (args.hasInput(2) && args.in(2).numel() != M)
    return "bias must have one value per output channel";
  if (type == DType::F64) {
    const double *bias = args.hasInput(2) ? args.in(2).as<const double>() : nullptr;
    convDoubles(win, x.as<const double>(), w.as<const double>(), bias, y.as<double>(), N, C, M, group);
    return {};
  }
  const int64_t Cg = C / group, Mg = M / group, rows = Cg * win.kernelSize;
  const float *bias = args.hasInput(2) ? args.in(2).as<const float>() : nullptr;
  std::vector<float> cols;
  const bool pointwise = win.isPointwise();
  if (!pointwise)
    cols.resize(size_t(rows * win.outSize));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x.as<const float>() + (b * C + g * Cg) * win.inSize;
      const float *src = xg;
      if (!pointwise) {
        if (win.n == 2)
          im2col2d(win, xg, Cg, cols.data());
        else
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t k = 0; k < win.kernelSize; ++k) {
              float *row = cols.data() + (c * win.kernelSize + k) * win.outSize;
              for (int64_t o = 0; o < win.outSize; ++o) {
                const int64_t off = win.inputOffset(o, k);
                row[o] = off < 0 ? 0.f : xg[c * win.inSize + off];
              }
            }
        src = cols.data();
      }
      float *yg = y.as<float>() + (b * M + g * Mg) * win.outSize;
      gemmF32(false, false, Mg, win.outSize, rows, 1.f, w.as<const float>() + g * Mg * rows, rows, src, win.outSize,
              0.f, yg, win.outSize);
      if (bias)
        for (int64_t m = 0; m < Mg; ++m)
          for (int64_t o = 0; o < win.outSize; ++o)
            yg[m * win.outSize + o] += bias[g * Mg + m];
    }
  return {};
}

// 2-D max pooling with direct loops (the common case: a ResNet stem).
void maxPool2d(const Window &w, const float *x, float *y, int64_t planes) {
  const int64_t H = w.in[0], W = w.in[1], OH = w.out[0], OW = w.out[1];
  for (int64_t p = 0; p < planes; ++p, x += H * W, y += OH * OW)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
          const int64_t ih = oh * w.stride[0] - w.padBegin[0] + kh * w.dilation[0];
          if (ih < 0 || ih >= H)
            continue;
          for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
            const int64_t iw = ow * w.stride[1] - w.padBegin[1] + kw * w.dilation[1];
            if (iw >= 0 && iw < W)
              best = std::max(best, x[ih * W + iw]);
          }
        }
        y[oh * OW + ow] = best;
      }
}

// The window of a pooling op, from its kernel_shape attribute; batch and channels are kept.
std::string poolWindow(const KernelArgs &args, Window &win) {
  const TensorRef &x = args.in(0), &y = args.out(0);
  std::vector<int64_t> kernel = args.attrs.getInts("kernel_shape");
  if (int(kernel.size()) != x.shape.rank - 2)
    return "kernel_shape does not match the spatial rank";
  if (std::string err = win.init(args.attrs, x.shape, y.shape, kernel.data()); !err.empty())
    return err;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1])
    return "batch and channels must be kept";
  return {};
}

template <bool Max> std::string poolKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0);
  TensorRef &y = args.out(0);
  Window win;
  if (std::string err = poolWindow(args, win); !err.empty())
    return err;
  const bool countPad = args.attrs.getInt("count_include_pad", 0);
  const int64_t planes = x.shape[0] * x.shape[1];
  std::string err;
  if (Max && win.n == 2 && x.dtype == DType::F32) {
    maxPool2d(win, x.as<const float>(), y.as<float>(), planes);
    return {};
  }
  LLMC_DISPATCH_NUMERIC(x.dtype, T, err, {
    for (int64_t p = 0; p < planes; ++p) {
      const T *xp = x.as<const T>() + p * win.inSize;
      T *yp = y.as<T>() + p * win.outSize;
      for (int64_t o = 0; o < win.outSize; ++o) {
        double acc = Max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        for (int64_t k = 0; k < win.kernelSize; ++k) {
          const int64_t off = win.inputOffset(o, k);
          if (off < 0)
            continue;
          ++count;
          acc = Max ? std::max(acc, double(xp[off])) : acc + double(xp[off]);
        }
        if (!Max) {
          // With count_include_pad the divisor counts padding taps but not taps past the end padding.
          int64_t divisor = count;
          if (countPad) {
            divisor = 1;
            int64_t rest = o;
            for (int d = win.n - 1; d >= 0; --d) {
              const int64_t od = rest % win.out[d];
              rest /= win.out[d];
              const int64_t start = od * win.stride[d] - win.padBegin[d];
              const int64_t padEnd = args.attrs.getInts("pads")[size_t(d + win.n)];
              int64_t taps = 0;
              for (int64_t kd = 0; kd < win.kernel[d]; ++kd) {
                const int64_t pos = start + kd * win.dilation[d];
                taps += pos >= -win.padBegin[d] && pos < win.in[d] + padEnd;
              }
              divisor *= taps;
            }
          }
          acc = divisor ? acc / double(divisor) : 0.0;
        }
        yp[o] = T(acc);
      }
    }
  });
  return err;
}

// max pooling with the flat input index of each maximum (first one on ties), of floats or
// integers; a window wholly in the padding gives the type's lowest value (-inf for floats), -1.
std::string maxPoolIndicesKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0);
  TensorRef &y = args.out(0), &idx = args.out(1);
  Window win;
  if (std::string err = poolWindow(args, win); !err.empty())
    return err;
  if (idx.dtype != DType::I64 || idx.numel() != y.numel() || y.dtype != x.dtype || x.dtype == DType::Bool)
    return "indices must be i64 shaped like the values, and the values of the input's type";
  const bool columnMajor = args.attrs.getInt("storage_order", 0);
  if (columnMajor && win.n != 2)
    return "storage_order 1 needs two spatial dimensions";
  const int64_t planes = x.shape[0] * x.shape[1];
  std::string err;
  LLMC_DISPATCH_NUMERIC(x.dtype, T, err, {
    using Limits = std::numeric_limits<T>;
    for (int64_t p = 0; p < planes; ++p) {
      const T *xp = x.as<const T>() + p * win.inSize;
      for (int64_t o = 0; o < win.outSize; ++o) {
        T best = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
        int64_t at = -1;
        for (int64_t k = 0; k < win.kernelSize; ++k) {
          const int64_t off = win.inputOffset(o, k);
          if (off >= 0 && (at < 0 || xp[off] > best)) {
            best = xp[off];
            at = off;
          }
        }
        if (at >= 0 && columnMajor)
          at = (at % win.in[1]) * win.in[0] + at / win.in[1];
        y.as<T>()[p * win.outSize + o] = best;
        idx.as<int64_t>()[p * win.outSize + o] = at < 0 ? -1 : p * win.inSize + at;
      }
    }
  });
  return err;
}

std::string batchNormKernel(const KernelArgs &args) {
  if (args.numInputs != 5 || args.numOutputs != 1)
    return "expects input, scale, bias, mean and variance";
  const TensorRef &x = args.in(0);
  if (x.shape.rank < 2)
    return "input must have rank >= 2";
  const int64_t C = x.shape[1], inner = x.numel() / std::max<int64_t>(1, x.shape[0] * C);
  for (int i = 1; i < 5; ++i)
    if (args.in(i).numel() != C || args.in(i).dtype != x.dtype)
      return "scale, bias, mean and variance need one value per channel";
  if (args.out(0).numel() != x.numel())
    return "output size differs from the input's";
  const double eps = args.attrs.getFloat("epsilon", 1e-5);
  std::string err;
  LLMC_DISPATCH_FLOAT(x.dtype, T, err, {
    const T *s = args.in(1).as<const T>(), *b = args.in(2).as<const T>(), *m = args.in(3).as<const T>(),
            *v = args.in(4).as<const T>();
    const T *px = x.as<const T>();
    T *py = args.out(0).as<T>();
    for (int64_t n = 0; n < x.shape[0]; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const double scale = double(s[c]) / std::sqrt(double(v[c]) + eps), shift = double(b[c]) - double(m[c]) * scale;
        const int64_t base = (n * C + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          py[base + i] = T(double(px[base + i]) * scale + shift);
      }
  });
  return err;
}

} // namespace

extern const KernelEntry kConvolutionKernels[] = {
    {"conv", withHalf<convKernel>},
    {"max_pool", withHalf<poolKernel<true>>},
    {"average_pool", withHalf<poolKernel<false>>},
    {"batch_norm", withHalf<batchNormKernel>},
    {"max_pool_with_indices", withHalf<maxPoolIndicesKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
