// Helpers shared by the kernel implementations: dtype dispatch and broadcast iteration.
#pragma once

#include "Kernels.h"

#include <cmath>
#include <cstring>
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

// IEEE half <-> float, round to nearest even.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);

// Runs kernel Fn on f16 data by widening f16 inputs to f32, running the f32 kernel and
// narrowing f16 outputs: float kernels get half precision support without a second body.
template <KernelFn Fn> std::string withHalf(const KernelArgs &args) {
  bool half = false;
  for (int i = 0; i < args.numInputs; ++i)
    half = half || args.inputs[i].dtype == DType::F16;
  for (int i = 0; i < args.numOutputs; ++i)
    half = half || args.outputs[i].dtype == DType::F16;
  if (!half)
    return Fn(args);
  std::vector<TensorRef> ins(args.inputs, args.inputs + args.numInputs);
  std::vector<TensorRef> outs(args.outputs, args.outputs + args.numOutputs);
  std::vector<std::vector<float>> buffers(ins.size() + outs.size());
  auto widen = [&](TensorRef &t, std::vector<float> &buffer, bool copy) {
    if (t.dtype != DType::F16)
      return;
    buffer.resize(size_t(t.numel()));
    if (copy)
      for (int64_t i = 0; i < t.numel(); ++i)
        buffer[size_t(i)] = halfToFloat(t.as<const uint16_t>()[i]);
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
  for (int i = 0; i < args.numOutputs; ++i)
    if (args.outputs[i].dtype == DType::F16)
      for (int64_t k = 0; k < args.outputs[i].numel(); ++k)
        args.outputs[i].as<uint16_t>()[k] = floatToHalf(outs[size_t(i)].as<const float>()[k]);
  return {};
}

struct KernelEntry {
  const char *name;
  KernelFn fn;
};

} // namespace llmc::rt
