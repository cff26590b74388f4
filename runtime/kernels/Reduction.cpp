// Reductions and the kernels built on them: reduce_*, softmax, log_softmax, layer_norm,
// rms_norm and cumsum.
#include "KernelUtil.h"

#include <algorithm>
#include <numeric>
#include <limits>

namespace llmc::rt {
namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, SumSquare, L2 };

// Reduces over attribute `axes` (all axes when empty and noop_with_empty_axes is 0). The
// output may keep reduced dims as 1 or drop them; only its element count matters here.
template <Reduce R> std::string reduceKernel(const KernelArgs &args) {
  if (args.numInputs < 1 || args.numOutputs != 1)
    return "expects 1 input and 1 output";
  const TensorRef &in = args.in(0);
  TensorRef &out = args.out(0);
  std::vector<int64_t> axes = args.attrs.getInts("axes");
  const int rank = in.shape.rank;
  bool reduced[kMaxRank] = {};
  if (axes.empty()) {
    if (args.attrs.getInt("noop_with_empty_axes", 0)) {
      if (out.bytes() != in.bytes())
        return "output size differs from input";
      std::memcpy(out.data, in.data, in.bytes());
      return {};
    }
    for (int d = 0; d < rank; ++d)
      reduced[d] = true;
  }
  for (int64_t a : axes) {
    int d = normalizeAxis(a, rank);
    if (d < 0 || d >= rank)
      return "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
    reduced[d] = true;
  }
  // The kept-dims shape of the output, used to broadcast it over the input.
  Shape kept = in.shape;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d)
    if (reduced[d]) {
      count *= kept.dims[d];
      kept.dims[d] = 1;
    }
  if (kept.numel() != out.numel())
    return "output size does not match the reduction";
  std::string err;
  LLMC_DISPATCH_NUMERIC(in.dtype, T, err, {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    std::vector<Acc> acc(size_t(out.numel()));
    Acc init = R == Reduce::Prod ? Acc(1)
               : R == Reduce::Max ? Acc(std::numeric_limits<T>::lowest())
               : R == Reduce::Min ? Acc(std::numeric_limits<T>::max())
                                  : Acc(0);
    if constexpr (std::is_floating_point_v<T>) {
      if (R == Reduce::Max)
        init = -std::numeric_limits<double>::infinity();
      if (R == Reduce::Min)
        init = std::numeric_limits<double>::infinity();
    }
    std::fill(acc.begin(), acc.end(), init);
    const T *x = in.as<const T>();
    // Iterate the input; the output (kept dims) is the "broadcast" operand.
    const Shape *ins[1] = {&kept};
    forEachRow<1>(in.shape, ins, [&](int64_t o, const int64_t *off, const int64_t *st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        Acc v = Acc(x[o + i]);
        Acc &a = acc[size_t(off[0] + i * st[0])];
        switch (R) {
        case Reduce::Sum:
        case Reduce::Mean: a += v; break;
        case Reduce::SumSquare:
        case Reduce::L2: a += v * v; break;
        case Reduce::Prod: a *= v; break;
        case Reduce::Max: a = std::max(a, v); break;
        case Reduce::Min: a = std::min(a, v); break;
        }
      }
    });
    T *y = out.as<T>();
    for (size_t i = 0; i < acc.size(); ++i) {
      Acc v = acc[i];
      if (R == Reduce::Mean)
        v = count ? Acc(v / Acc(count)) : Acc(0);
      if (R == Reduce::L2)
        v = Acc(std::sqrt(double(v)));
      y[i] = T(v);
    }
  });
  return err;
}

template <bool Log> std::string softmaxKernel(const KernelArgs &args) {
  if (args.numInputs != 1 || args.numOutputs != 1)
    return "expects 1 input and 1 output";
  const TensorRef &in = args.in(0);
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", -1), rank);
  if (rank == 0 || axis < 0 || axis >= rank)
    return "axis out of range";
  if (args.out(0).numel() != in.numel())
    return "output size differs from the input's";
  int64_t outer, n, inner;
  splitAround(in.shape, axis, outer, n, inner);
  std::string err;
  LLMC_DISPATCH_FLOAT(in.dtype, T, err, {
    const T *x = in.as<const T>();
    T *y = args.out(0).as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        T maxv = -std::numeric_limits<T>::infinity();
        for (int64_t k = 0; k < n; ++k)
          maxv = std::max(maxv, x[base + k * inner]);
        if (std::isinf(maxv) && maxv < 0)
          maxv = 0; // a fully masked row: avoid inf - inf
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          T e = std::exp(x[base + k * inner] - maxv);
          if (!Log)
            y[base + k * inner] = e;
          sum += double(e);
        }
        if (Log) {
          const T logSum = T(std::log(sum));
          for (int64_t k = 0; k < n; ++k)
            y[base + k * inner] = x[base + k * inner] - maxv - logSum;
        } else {
          const T inv = T(1.0 / sum);
          for (int64_t k = 0; k < n; ++k)
            y[base + k * inner] *= inv;
        }
      }
  });
  return err;
}

// layer_norm: normalizes over dims [axis, rank); scale and bias broadcast over those dims.
// rms_norm: the same without mean subtraction and bias.
template <bool Rms> std::string normKernel(const KernelArgs &args) {
  if (args.numInputs < 2 || args.numOutputs < 1)
    return "expects input and scale";
  const TensorRef &in = args.in(0), &scale = args.in(1);
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", -1), rank);
  if (rank == 0 || axis < 0 || axis >= rank)
    return "axis out of range";
  const double eps = args.attrs.getFloat("epsilon", 1e-5);
  if (args.out(0).numel() != in.numel())
    return "output size differs from the input's";
  int64_t outer = 1, n = 1;
  for (int d = 0; d < axis; ++d)
    outer *= in.shape.dims[d];
  for (int d = axis; d < rank; ++d)
    n *= in.shape.dims[d];
  if (scale.numel() != n && scale.numel() != 1)
    return "scale has " + std::to_string(scale.numel()) + " elements, expected " + std::to_string(n);
  const bool hasBias = !Rms && args.hasInput(2);
  if (hasBias && args.in(2).numel() != n && args.in(2).numel() != 1)
    return "bias size does not match the normalized dims";
  std::string err;
  LLMC_DISPATCH_FLOAT(in.dtype, T, err, {
    const T *x = in.as<const T>(), *g = scale.as<const T>();
    const T *b = hasBias ? args.in(2).as<const T>() : nullptr;
    const int64_t gStride = scale.numel() == 1 ? 0 : 1;
    const int64_t bStride = hasBias && args.in(2).numel() == 1 ? 0 : 1;
    T *y = args.out(0).as<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = x + o * n;
      T *dst = y + o * n;
      double mean = 0;
      if (!Rms) {
        for (int64_t k = 0; k < n; ++k)
          mean += row[k];
        mean /= double(n);
      }
      double var = 0;
      for (int64_t k = 0; k < n; ++k) {
        double d = row[k] - mean;
        var += d * d;
      }
      var /= double(n);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t k = 0; k < n; ++k) {
        double v = (row[k] - mean) * inv * g[k * gStride];
        if (b)
          v += b[k * bStride];
        dst[k] = T(v);
      }
    }
  });
  return err;
}

// layer_norm_stats: mean and 1/sqrt(var + eps) over dims [axis, rank), one value per row.
std::string normStatsKernel(const KernelArgs &args) {
  if (args.numInputs != 1 || args.numOutputs != 2)
    return "expects an input and two outputs";
  const TensorRef &in = args.in(0);
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", -1), rank);
  if (rank == 0 || axis < 0 || axis >= rank)
    return "axis out of range";
  int64_t outer = 1, n = 1;
  for (int d = 0; d < axis; ++d)
    outer *= in.shape.dims[d];
  for (int d = axis; d < rank; ++d)
    n *= in.shape.dims[d];
  if (args.out(0).numel() != outer || args.out(1).numel() != outer)
    return "outputs must have one element per normalized row";
  const double eps = args.attrs.getFloat("epsilon", 1e-5);
  std::string err;
  LLMC_DISPATCH_FLOAT(in.dtype, T, err, {
    const T *x = in.as<const T>();
    T *mean = args.out(0).as<T>(), *inv = args.out(1).as<T>();
    for (int64_t o = 0; o < outer; ++o) {
      double m = 0, v = 0;
      for (int64_t k = 0; k < n; ++k)
        m += x[o * n + k];
      m /= double(n);
      for (int64_t k = 0; k < n; ++k)
        v += (x[o * n + k] - m) * (x[o * n + k] - m);
      mean[o] = T(m);
      inv[o] = T(1.0 / std::sqrt(v / double(n) + eps));
    }
  });
  return err;
}

// arg_max / arg_min along one axis; ties go to the first index unless select_last_index.
template <bool Max> std::string argKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return "axis out of range";
  int64_t outer, n, inner;
  splitAround(in.shape, axis, outer, n, inner);
  if (n == 0 || args.out(0).numel() != outer * inner || args.out(0).dtype != DType::I64)
    return "output must be i64 with the axis reduced (and the axis must not be empty)";
  const bool last = args.attrs.getInt("select_last_index", 0);
  std::string err;
  LLMC_DISPATCH_NUMERIC(in.dtype, T, err, {
    const T *x = in.as<const T>();
    int64_t *y = args.out(0).as<int64_t>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t k = 1; k < n; ++k) {
          const T v = x[(o * n + k) * inner + i], b = x[(o * n + best) * inner + i];
          const bool better = Max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
          if (better)
            best = k;
        }
        y[o * inner + i] = best;
      }
  });
  return err;
}

// top_k: values and indices of the k largest (or smallest) along an axis; ties keep the lower
// index first. The result is sorted (ONNX allows any order when sorted = 0).
std::string topKKernel(const KernelArgs &args) {
  if (args.numOutputs != 2)
    return "expects values and indices outputs";
  const TensorRef &in = args.in(0);
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", -1), rank);
  if (axis < 0 || axis >= rank)
    return "axis out of range";
  int64_t outer, n, inner;
  splitAround(in.shape, axis, outer, n, inner);
  int64_t k = args.attrs.getInt("k", -1);
  if (k < 0 && args.out(0).shape.rank == rank) // k counted from shapes: the outputs' size along the axis
    k = args.out(0).shape.dims[axis];
  const bool largest = args.attrs.getInt("largest", 1);
  if (k < 0 || k > n || args.out(0).numel() != outer * k * inner || args.out(1).numel() != outer * k * inner ||
      args.out(1).dtype != DType::I64)
    return "k out of range or outputs of the wrong size";
  std::string err;
  std::vector<int64_t> order(static_cast<size_t>(n));
  LLMC_DISPATCH_NUMERIC(in.dtype, T, err, {
    const T *x = in.as<const T>();
    T *values = args.out(0).as<T>();
    int64_t *indices = args.out(1).as<int64_t>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return x[(o * n + j) * inner + i]; };
        for (int64_t j = 0; j < n; ++j)
          order[size_t(j)] = j;
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return largest ? at(a) > at(b) : at(a) < at(b); });
        for (int64_t j = 0; j < k; ++j) {
          values[(o * k + j) * inner + i] = at(order[size_t(j)]);
          indices[(o * k + j) * inner + i] = order[size_t(j)];
        }
      }
  });
  return err;
}

// softmax_top_k: top_k (the k largest, sorted) of softmax(logits) over the last axis, by those two
// kernels, so that it is the unfused ops' result to the bit; with `normalize`, the values divided
// by their sum (summed in doubles, as reduce_sum sums).
std::string softmaxTopKKernel(const KernelArgs &args) {
  if (args.numInputs != 1 || args.numOutputs != 2)
    return "expects logits, and values and indices outputs";
  const TensorRef &logits = args.in(0);
  if (logits.dtype != DType::F32 || logits.shape.rank == 0)
    return "expects float logits of rank 1 or more";
  std::vector<float> probabilities(size_t(logits.numel()));
  TensorRef softmaxOut = logits;
  softmaxOut.data = probabilities.data();
  if (std::string err = softmaxKernel<false>(KernelArgs{args.attrs, &logits, 1, &softmaxOut, 1}); !err.empty())
    return err;
  if (std::string err = topKKernel(KernelArgs{args.attrs, &softmaxOut, 1, args.outputs, 2}); !err.empty())
    return err;
  if (!args.attrs.getInt("normalize", 0))
    return {};
  const int64_t k = args.attrs.getInt("k", 0);
  float *values = args.out(0).as<float>();
  for (int64_t row = 0; k > 0 && row < args.out(0).numel() / k; ++row) {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += double(values[row * k + j]);
    const float total = float(sum);
    for (int64_t j = 0; j < k; ++j)
      values[row * k + j] /= total;
  }
  return {};
}

// The indices of the `count` largest of `values`, largest first, equal values by index: top_k's
// order, by its stable sort.
void pickLargest(const std::vector<float> &values, int64_t count, std::vector<int64_t> &order) {
  order.resize(values.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return values[size_t(a)] > values[size_t(b)]; });
  order.resize(size_t(count));
}

// grouped_top_k (llmc-fuse-routing's DeepSeek-V3 and ERNIE 4.5 routers): the ops it replaces, row
// by row, in their arithmetic (sigmoid as the sigmoid kernel, softmax by the softmax kernel, group
// sums and the weights' sum in doubles as reduce_sum, the rest in floats).
std::string groupedTopKKernel(const KernelArgs &args) {
  if (args.numInputs != 2 || args.numOutputs != 2)
    return "expects logits and a bias, and weights and indices outputs";
  const TensorRef &logits = args.in(0), &bias = args.in(1);
  const int64_t k = args.attrs.getInt("k", -1), groups = args.attrs.getInt("groups", 0),
                kept = args.attrs.getInt("kept_groups", 0), top = args.attrs.getInt("group_top", 2);
  if (logits.dtype != DType::F32 || bias.dtype != DType::F32 || logits.shape.rank != 2 || args.out(1).dtype != DType::I64)
    return "expects float logits [rows, n], a float bias and int64 indices";
  const int64_t rows = logits.shape[0], n = logits.shape[1];
  if (bias.numel() != n || groups <= 0 || n % groups != 0 || kept <= 0 || kept > groups || top <= 0 ||
      top > n / groups || k < 0 || k > n || args.out(0).numel() != rows * k || args.out(1).numel() != rows * k)
    return "bias, groups, kept_groups, group_top or k do not fit the logits";
  const float fill = float(args.attrs.getFloat("fill", 0.0)), epsilon = float(args.attrs.getFloat("epsilon", 0.0)),
              scale = float(args.attrs.getFloat("scale", 1.0));
  const int64_t normalize = args.attrs.getInt("normalize", 0);
  const std::string_view scoring = args.attrs.getString("scores");
  if (normalize < 0 || normalize > 2 || (!scoring.empty() && scoring != "sigmoid" && scoring != "softmax"))
    return "normalize must be 0, 1 or 2 and scores sigmoid or softmax";
  const int64_t size = n / groups;
  std::vector<float> scores(static_cast<size_t>(n)), choice(static_cast<size_t>(n)),
      groupScores(static_cast<size_t>(groups)), member(static_cast<size_t>(size));
  std::vector<float> softmaxes; // every row's softmax, by the softmax kernel
  if (scoring == "softmax") {
    softmaxes.resize(size_t(logits.numel()));
    TensorRef out = logits;
    out.data = softmaxes.data();
    const AttrList lastAxis; // (softmax's default axis, the last)
    if (std::string err = softmaxKernel<false>(KernelArgs{lastAxis, &logits, 1, &out, 1}); !err.empty())
      return err;
  }
  std::vector<int64_t> order;
  float *weights = args.out(0).as<float>();
  int64_t *indices = args.out(1).as<int64_t>();
  for (int64_t row = 0; row < rows; ++row) {
    const float *x = logits.as<const float>() + row * n;
    for (int64_t e = 0; e < n; ++e) {
      scores[size_t(e)] = softmaxes.empty() ? sigmoidOf(x[e]) : softmaxes[size_t(row * n + e)];
      choice[size_t(e)] = scores[size_t(e)] + bias.as<const float>()[e];
    }
    for (int64_t g = 0; g < groups; ++g) {
      std::copy(choice.begin() + g * size, choice.begin() + (g + 1) * size, member.begin());
      pickLargest(member, top, order);
      double sum = 0;
      for (int64_t i : order)
        sum += double(member[size_t(i)]);
      groupScores[size_t(g)] = float(sum);
    }
    pickLargest(groupScores, kept, order);
    for (int64_t g = 0; g < groups; ++g)
      if (std::find(order.begin(), order.end(), g) == order.end())
        std::fill(choice.begin() + g * size, choice.begin() + (g + 1) * size, fill);
    pickLargest(choice, k, order);
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      indices[row * k + j] = order[size_t(j)];
      sum += double(scores[size_t(order[size_t(j)])]);
    }
    const float denominator = normalize == 2 ? std::max(float(sum), epsilon) : float(sum) + epsilon;
    for (int64_t j = 0; j < k; ++j) {
      const float w = scores[size_t(order[size_t(j)])];
      weights[row * k + j] = (normalize ? w / denominator : w) * scale;
    }
  }
  return {};
}

// instance_norm: each (batch, channel) plane normalized over its elements, then scale and bias.
std::string instanceNormKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0), &scale = args.in(1), &bias = args.in(2);
  if (x.shape.rank < 3)
    return "input must have rank >= 3";
  const int64_t C = x.shape[1], planes = x.shape[0] * C, n = planes ? x.numel() / planes : 0;
  if (scale.numel() != C || bias.numel() != C || args.out(0).numel() != x.numel())
    return "scale and bias need one value per channel";
  const double eps = args.attrs.getFloat("epsilon", 1e-5);
  std::string err;
  LLMC_DISPATCH_FLOAT(x.dtype, T, err, {
    const T *px = x.as<const T>(), *g = scale.as<const T>(), *b = bias.as<const T>();
    T *py = args.out(0).as<T>();
    for (int64_t p = 0; p < planes; ++p) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i)
        mean += px[p * n + i];
      mean /= double(n);
      for (int64_t i = 0; i < n; ++i)
        var += (px[p * n + i] - mean) * (px[p * n + i] - mean);
      const double inv = 1.0 / std::sqrt(var / double(n) + eps);
      for (int64_t i = 0; i < n; ++i)
        py[p * n + i] = T((px[p * n + i] - mean) * inv * g[p % C] + b[p % C]);
    }
  });
  return err;
}

// group_norm: channels split into groups, each (batch, group) normalized over its channels and
// spatial elements, then per-channel scale and bias.
std::string groupNormKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0), &scale = args.in(1), &bias = args.in(2);
  if (x.shape.rank < 2)
    return "input must have rank >= 2";
  const int64_t N = x.shape[0], C = x.shape[1], groups = args.attrs.getInt("num_groups", 0);
  if (groups < 1 || C % groups || scale.numel() != C || bias.numel() != C || args.out(0).numel() != x.numel())
    return "num_groups must divide the channels; scale and bias need one value per channel";
  const int64_t spatial = N * C ? x.numel() / (N * C) : 0, perGroup = C / groups * spatial;
  const double eps = args.attrs.getFloat("epsilon", 1e-5);
  std::string err;
  LLMC_DISPATCH_FLOAT(x.dtype, T, err, {
    const T *px = x.as<const T>(), *g = scale.as<const T>(), *b = bias.as<const T>();
    T *py = args.out(0).as<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t grp = 0; grp < groups; ++grp) {
        const int64_t base = (n * C + grp * (C / groups)) * spatial;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < perGroup; ++i)
          mean += px[base + i];
        mean /= double(perGroup);
        for (int64_t i = 0; i < perGroup; ++i)
          var += (px[base + i] - mean) * (px[base + i] - mean);
        const double inv = 1.0 / std::sqrt(var / double(perGroup) + eps);
        for (int64_t i = 0; i < perGroup; ++i) {
          const int64_t c = grp * (C / groups) + i / spatial;
          py[base + i] = T((px[base + i] - mean) * inv * g[c] + b[c]);
        }
      }
  });
  return err;
}

// cumsum(x, axis) with the exclusive and reverse attributes.
std::string cumsumKernel(const KernelArgs &args) {
  if (args.numInputs != 2 || args.numOutputs != 1)
    return "expects input and axis";
  const TensorRef &in = args.in(0), &axisT = args.in(1);
  if (axisT.numel() != 1 || (axisT.dtype != DType::I64 && axisT.dtype != DType::I32))
    return "axis must be an integer scalar";
  const int64_t a = axisT.dtype == DType::I64 ? *axisT.as<const int64_t>() : *axisT.as<const int32_t>();
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(a, rank);
  if (axis < 0 || axis >= rank)
    return "axis out of range";
  if (args.out(0).numel() != in.numel())
    return "output size differs from the input's";
  const bool exclusive = args.attrs.getInt("exclusive", 0), reverse = args.attrs.getInt("reverse", 0);
  int64_t outer, n, inner;
  splitAround(in.shape, axis, outer, n, inner);
  std::string err;
  LLMC_DISPATCH_NUMERIC(in.dtype, T, err, {
    const T *x = in.as<const T>();
    T *y = args.out(0).as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        T acc = 0;
        for (int64_t s = 0; s < n; ++s) {
          const int64_t k = reverse ? n - 1 - s : s;
          const int64_t idx = (o * n + k) * inner + i;
          if (exclusive) {
            y[idx] = acc;
            acc += x[idx];
          } else {
            acc += x[idx];
            y[idx] = acc;
          }
        }
      }
  });
  return err;
}

} // namespace

extern const KernelEntry kReductionKernels[] = {
    {"reduce_sum", withHalf<reduceKernel<Reduce::Sum>>},
    {"reduce_mean", withHalf<reduceKernel<Reduce::Mean>>},
    {"reduce_max", withHalf<reduceKernel<Reduce::Max>>},
    {"reduce_min", withHalf<reduceKernel<Reduce::Min>>},
    {"reduce_prod", withHalf<reduceKernel<Reduce::Prod>>},
    {"reduce_sum_square", withHalf<reduceKernel<Reduce::SumSquare>>},
    {"reduce_l2", withHalf<reduceKernel<Reduce::L2>>},
    {"softmax", withHalf<softmaxKernel<false>>},
    {"log_softmax", withHalf<softmaxKernel<true>>},
    {"layer_norm", withHalf<normKernel<false>>},
    {"rms_norm", withHalf<normKernel<true>>},
    {"layer_norm_stats", withHalf<normStatsKernel>},
    {"cumsum", withHalf<cumsumKernel>},
    {"arg_max", withHalf<argKernel<true>>},
    {"arg_min", withHalf<argKernel<false>>},
    {"top_k", withHalf<topKKernel>},
    {"softmax_top_k", withHalf<softmaxTopKKernel>},
    {"grouped_top_k", withHalf<groupedTopKKernel>},
    {"instance_norm", withHalf<instanceNormKernel>},
    {"group_norm", withHalf<groupNormKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
