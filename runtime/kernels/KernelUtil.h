// Helpers shared by the kernel implementations: dtype dispatch and broadcast iteration.
#pragma once

#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace llmc::rt {

// Runs BODY with T bound to the C++ type of DTYPE for every numeric dtype; sets ERR otherwise.
#define LLMC_DISPATCH_NUMERIC(DTYPE, T, ERR, ...)                                                  \
  switch (DTYPE) {                                                                                 \
  case DType::F32: { using T = float; __VA_ARGS__; } break;                                        \
  case DType::F64: { using T = double; __VA_ARGS__; } break;                                       \
  case DType::I64: { using T = int64_t; __VA_ARGS__; } break;                                      \
  case DType::I32: { using T = int32_t; __VA_ARGS__; } break;                                      \
  case DType::I8: { using T = int8_t; __VA_ARGS__; } break;                                        \
  case DType::U8: { using T = uint8_t; __VA_ARGS__; } break;                                       \
  case DType::Bool: { using T = uint8_t; __VA_ARGS__; } break;                                     \
  default: ERR = std::string("unsupported element type ") + dtypeName(DTYPE); break;               \
  }

#define LLMC_DISPATCH_FLOAT(DTYPE, T, ERR, ...)                                                    \
  switch (DTYPE) {                                                                                 \
  case DType::F32: { using T = float; __VA_ARGS__; } break;                                        \
  case DType::F64: { using T = double; __VA_ARGS__; } break;                                       \
  default: ERR = std::string("unsupported element type ") + dtypeName(DTYPE); break;               \
  }

inline int normalizeAxis(int64_t axis, int rank) { return int(axis < 0 ? axis + rank : axis); }

// Element strides of a row-major shape.
inline void rowMajorStrides(const Shape &shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dims[i];
  }
}

// Strides of `in` when broadcast (numpy rules, aligned right) to `out`: 0 where broadcast.
inline void broadcastStrides(const Shape &in, const Shape &out, int64_t *strides) {
  int64_t inStrides[kMaxRank];
  rowMajorStrides(in, inStrides);
  int offset = out.rank - in.rank;
  for (int d = 0; d < out.rank; ++d) {
    int id = d - offset;
    strides[d] = (id < 0 || in.dims[id] == 1) ? 0 : inStrides[id];
  }
}

// True when `in` broadcasts to `out` (numpy rules): a check before any broadcast iteration, so
// that a kernel never reads outside an input whatever shapes a plan declares.
inline bool broadcastsTo(const Shape &in, const Shape &out) {
  if (in.rank > out.rank)
    return false;
  for (int d = 0; d < in.rank; ++d) {
    const int64_t dim = in.dims[d], target = out.dims[d + out.rank - in.rank];
    if (dim != 1 && dim != target)
      return false;
  }
  return true;
}

// Steps a row-major multi-index over `shape` to the next element (an odometer).
inline void advance(int64_t *index, const Shape &shape) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    if (++index[d] < shape.dims[d])
      return;
    index[d] = 0;
  }
}

// Splits `shape` around `axis` into outer x dims[axis] x inner element counts.
inline void splitAround(const Shape &shape, int axis, int64_t &outer, int64_t &n, int64_t &inner) {
  outer = 1;
  inner = 1;
  for (int d = 0; d < axis; ++d)
    outer *= shape.dims[d];
  n = shape.dims[axis];
  for (int d = axis + 1; d < shape.rank; ++d)
    inner *= shape.dims[d];
}

// Iterates the shape `out` one innermost row at a time. For each row calls
// fn(outOffset, inOffsets, innerStrides, count), where inOffsets/innerStrides hold one entry
// per broadcast input.
template <int N, typename Fn>
void forEachRow(const Shape &out, const Shape *const (&ins)[N], Fn &&fn) {
  int64_t strides[N][kMaxRank];
  for (int k = 0; k < N; ++k)
    broadcastStrides(*ins[k], out, strides[k]);
  int64_t offsets[N] = {};
  int64_t inner[N];
  if (out.rank == 0) {
    for (int k = 0; k < N; ++k)
      inner[k] = 0;
    fn(int64_t(0), offsets, inner, int64_t(1));
    return;
  }
  const int last = out.rank - 1;
  const int64_t count = out.dims[last];
  for (int k = 0; k < N; ++k)
    inner[k] = strides[k][last];
  if (count == 0)
    return;
  const int64_t rows = out.numel() / count;
  int64_t index[kMaxRank] = {};
  for (int64_t row = 0; row < rows; ++row) {
    fn(row * count, offsets, inner, count);
    // Advance the odometer over the outer dimensions.
    for (int d = last - 1; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (index[d] < out.dims[d])
        break;
      for (int k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * index[d];
      index[d] = 0;
    }
  }
}

// Row-major float GEMM: C = alpha * op(A) * op(B) + beta * C (OpenBLAS, multithreaded).
void gemmF32(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
             const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

// exp for float, branch-free so that loops over it vectorize: Cephes' range reduction by ln 2
// and degree-6 polynomial (within 2 ulp of std::exp over [-87, 88]; below that it returns about
// 1e-38 rather than 0, above it saturates).
inline float fastExp(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.7f ? 88.7f : x;
  const float y = x * 1.44269504088896341f;
  const int32_t i = int32_t(y + std::copysign(0.5f, y)); // round to nearest: SSE2 has no floor
  const float n = float(i);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (i + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// The logistic sigmoid as the sigmoid kernel computes it (one side of zero each, no overflow);
// what the fused region's interpreter and grouped_top_k compute too.
template <typename T> inline T sigmoidOf(T x) {
  return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}

// SwiGLU of a gate and an up projection's value, silu(gate) * up (the swiglu linear's and
// expert_linear's gating).
inline float swigluOf(float gate, float up) { return gate / (1.0f + fastExp(-gate)) * up; }

// GPT-OSS's gating (expert_linear's "clamped_swiglu"): the gate clamped from above at `limit`,
// the up value to [-limit, limit], then (up + upOffset) * gate * sigmoid(alpha * gate) (GPT-OSS:
// an offset of 1; HY V4: 0 and alpha 1). A NaN stays NaN (the comparisons keep the value they
// are given), as the unfused min and max give it.
inline float clampedSwigluOf(float gate, float up, float alpha, float limit, float upOffset) {
  gate = limit < gate ? limit : gate;
  up = limit < up ? limit : (up < -limit ? -limit : up);
  return (up + upOffset) * gate * sigmoidOf(alpha * gate);
}

// One head's row of D features turned as llmc.rotary (ONNX RotaryEmbedding) turns it: the first R
// in pairs (i, i + R/2), or (2i, 2i + 1) with `interleaved`, by cos/sin[i] (R/2 of each); the
// rest as they are. `out` may be `in` (each pair is read before it is written).
inline void rotateHeadRow(const float *in, float *out, int64_t D, int64_t R, bool interleaved, const float *cos,
                          const float *sin) {
  const int64_t half = R / 2;
  for (int64_t d = R; d < D; ++d)
    out[d] = in[d];
  for (int64_t i = 0; i < half; ++i) {
    const int64_t first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
    const float x1 = in[first], x2 = in[second];
    out[first] = x1 * cos[i] - x2 * sin[i];
    out[second] = x2 * cos[i] + x1 * sin[i];
  }
}

// Max and sum of a row with eight independent accumulators: without -ffast-math the compiler
// keeps a reduction sequential, and one dependency chain runs several times slower.
inline float rowMax(const float *x, int64_t n) {
  float m[8];
  std::fill(m, m + 8, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k)
      m[k] = m[k] < x[j + k] ? x[j + k] : m[k];
  float best = *std::max_element(m, m + 8);
  for (; j < n; ++j)
    best = best < x[j] ? x[j] : best;
  return best;
}

inline float rowSum(const float *x, int64_t n) {
  float s[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k)
      s[k] += x[j + k];
  float total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; j < n; ++j)
    total += x[j];
  return total;
}

// erf for float (Abramowitz and Stegun 7.1.26 with fastExp: absolute error below 2e-7).
inline float fastErf(float x) {
  const float a = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float y = 1.0f - poly * fastExp(-a * a);
  return std::copysign(y, x);
}

// tanh for float through fastExp (saturates exactly to +-1 for large |x|).
inline float fastTanh(float x) {
  const float e = fastExp(-2.0f * std::fabs(x));
  return std::copysign((1.0f - e) / (1.0f + e), x);
}

// Runs kernel Fn on 16-bit float data (f16, bf16) by widening those inputs to f32, running the f32
// kernel and narrowing those outputs to their type (round to nearest even): float kernels get
// the 16-bit types without a second body.
// Whether optional input i is absent: not given, or an empty tensor (a fused op's placeholder).
inline bool absent(const KernelArgs &args, int i) { return !args.hasInput(i) || args.in(i).numel() == 0; }

template <KernelFn Fn> std::string withHalf(const KernelArgs &args) {
  bool half = false;
  for (int i = 0; i < args.numInputs; ++i)
    half = half || isHalfWidth(args.inputs[i].dtype);
  for (int i = 0; i < args.numOutputs; ++i)
    half = half || isHalfWidth(args.outputs[i].dtype);
  if (!half)
    return Fn(args);
  std::vector<TensorRef> ins(args.inputs, args.inputs + args.numInputs);
  std::vector<TensorRef> outs(args.outputs, args.outputs + args.numOutputs);
  std::vector<std::vector<float>> buffers(ins.size() + outs.size());
  auto widen = [&](TensorRef &t, std::vector<float> &buffer, bool copy) {
    if (!isHalfWidth(t.dtype))
      return;
    buffer.resize(size_t(t.numel()));
    if (copy)
      for (int64_t i = 0; i < t.numel(); ++i)
        buffer[size_t(i)] = widenFloat(t.as<const uint16_t>()[i], t.dtype);
    t.dtype = DType::F32;
    t.data = buffer.data();
  };
  for (size_t i = 0; i < ins.size(); ++i)
    widen(ins[i], buffers[i], true);
  for (size_t i = 0; i < outs.size(); ++i)
    widen(outs[i], buffers[ins.size() + i], false);
  KernelArgs wide{args.attrs, ins.data(), args.numInputs, outs.data(), args.numOutputs};
  std::string err = Fn(wide);
  if (!err.empty())
    return err;
  for (int i = 0; i < args.numOutputs; ++i) {
    const DType to = args.outputs[i].dtype;
    if (!isHalfWidth(to))
      continue;
    const float *from = outs[size_t(i)].as<const float>();
    uint16_t *dst = args.outputs[i].as<uint16_t>();
    for (int64_t k = 0; k < args.outputs[i].numel(); ++k)
      dst[k] = toHalfWidth(from[k], to);
  }
  return {};
}

struct KernelEntry {
  const char *name;
  KernelFn fn;
};

} // namespace llmc::rt
