// Kernels that move or generate data without arithmetic on it: copies (reshape and friends),
// transpose, concat, split, slice, gathers, expand, range, shape, constant_of_shape, trilu.
#include "KernelUtil.h"

#include <algorithm>

namespace llmc::rt {
namespace {

// reshape, unsqueeze, squeeze, flatten, identity: the bytes do not change.
std::string copyKernel(const KernelArgs &args) {
  if (args.numInputs < 1 || args.numOutputs != 1)
    return "expects an input and an output";
  if (args.in(0).bytes() != args.out(0).bytes())
    return "input " + args.in(0).shape.str() + " and output " + args.out(0).shape.str() + " differ in size";
  if (args.out(0).data != args.in(0).data)
    std::memcpy(args.out(0).data, args.in(0).data, args.in(0).bytes());
  return {};
}

// Same rank and dimensions except along `axis`.
bool sameExceptAxis(const Shape &a, const Shape &b, int axis) {
  if (a.rank != b.rank)
    return false;
  for (int d = 0; d < a.rank; ++d)
    if (d != axis && a.dims[d] != b.dims[d])
      return false;
  return true;
}

// Copies `count` elements of `elem` bytes.
inline void copyElements(const char *src, char *dst, int64_t count, size_t elem) {
  std::memcpy(dst, src, size_t(count) * elem);
}

// Copies elements of type T (by size) in output order, reading the input through `stride`.
template <typename T> void transposeTyped(const TensorRef &in, TensorRef &out, const int64_t *stride) {
  const T *src = in.as<const T>();
  T *dst = out.as<T>();
  const int rank = out.shape.rank, last = rank - 1;
  const int64_t n = out.numel(), count = out.shape.dims[last], innerStride = stride[last];
  if (count == 0)
    return;
  int64_t index[kMaxRank] = {};
  int64_t offset = 0;
  for (int64_t i = 0; i < n; i += count) {
    for (int64_t k = 0; k < count; ++k)
      dst[i + k] = src[offset + k * innerStride];
    for (int d = last - 1; d >= 0; --d) {
      offset += stride[d];
      if (++index[d] < out.shape.dims[d])
        break;
      offset -= stride[d] * index[d];
      index[d] = 0;
    }
  }
}

std::string transposeKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  TensorRef &out = args.out(0);
  const int rank = in.shape.rank;
  std::vector<int64_t> perm = args.attrs.getInts("perm");
  if (perm.empty())
    for (int d = 0; d < rank; ++d)
      perm.push_back(rank - 1 - d);
  if (int(perm.size()) != rank)
    return "perm has the wrong length";
  int64_t inStrides[kMaxRank], stride[kMaxRank];
  rowMajorStrides(in.shape, inStrides);
  if (out.shape.rank != rank)
    return "output rank differs from the input's";
  for (int d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank)
      return "perm entry out of range";
    if (out.shape.dims[d] != in.shape.dims[perm[d]])
      return "output shape " + out.shape.str() + " is not the permuted input shape";
    stride[d] = inStrides[perm[d]];
  }
  if (rank == 0) {
    std::memcpy(out.data, in.data, dtypeSize(in.dtype));
    return {};
  }
  switch (dtypeSize(in.dtype)) {
  case 1: transposeTyped<uint8_t>(in, out, stride); break;
  case 2: transposeTyped<uint16_t>(in, out, stride); break;
  case 4: transposeTyped<uint32_t>(in, out, stride); break;
  case 8: transposeTyped<uint64_t>(in, out, stride); break;
  default: return "unsupported element size";
  }
  return {};
}

std::string concatKernel(const KernelArgs &args) {
  TensorRef &out = args.out(0);
  const int rank = out.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return "axis out of range";
  const size_t elem = dtypeSize(out.dtype);
  int64_t outer, outDim, inner;
  splitAround(out.shape, axis, outer, outDim, inner);
  char *dst = static_cast<char *>(out.data);
  const int64_t outRow = outDim * inner;
  int64_t position = 0;
  for (int k = 0; k < args.numInputs; ++k) {
    const TensorRef &in = args.in(k);
    if (in.dtype != out.dtype)
      return "input element types differ";
    if (!sameExceptAxis(in.shape, out.shape, axis))
      return "input " + in.shape.str() + " does not match the output " + out.shape.str() + " off the axis";
    const int64_t rowLen = in.shape.dims[axis] * inner;
    if (position + rowLen > outRow)
      return "input sizes exceed the output";
    const char *src = static_cast<const char *>(in.data);
    // An input that already lies where it goes (a KV cache extended in place) is not copied.
    const bool inPlace = outer == 1 && src == dst + position * elem;
    for (int64_t o = 0; o < outer && !inPlace; ++o)
      copyElements(src + o * rowLen * elem, dst + (o * outRow + position) * elem, rowLen, elem);
    position += rowLen;
  }
  if (position != outRow)
    return "input sizes do not add up to the output";
  return {};
}

std::string splitKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  const int rank = in.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return "axis out of range";
  const size_t elem = dtypeSize(in.dtype);
  int64_t outer, inDim, inner;
  splitAround(in.shape, axis, outer, inDim, inner);
  const int64_t inRow = inDim * inner;
  const char *src = static_cast<const char *>(in.data);
  int64_t position = 0;
  for (int k = 0; k < args.numOutputs; ++k) {
    TensorRef &out = args.out(k);
    if (!sameExceptAxis(out.shape, in.shape, axis))
      return "output " + out.shape.str() + " does not match the input " + in.shape.str() + " off the axis";
    const int64_t rowLen = out.shape.dims[axis] * inner;
    if (position + rowLen > inRow)
      return "output sizes exceed the input";
    char *dst = static_cast<char *>(out.data);
    for (int64_t o = 0; o < outer; ++o)
      copyElements(src + (o * inRow + position) * elem, dst + o * rowLen * elem, rowLen, elem);
    position += rowLen;
  }
  return {};
}

// A strided slice (ONNX clamping rules); the output's shape says how many elements each axis takes.
std::string sliceWith(const KernelArgs &args, const std::vector<int64_t> &starts) {
  const TensorRef &in = args.in(0);
  TensorRef &out = args.out(0);
  const int rank = in.shape.rank;
  std::vector<int64_t> axes = args.attrs.getInts("axes"), steps = args.attrs.getInts("steps");
  int64_t begin[kMaxRank], step[kMaxRank];
  for (int d = 0; d < rank; ++d) {
    begin[d] = 0;
    step[d] = 1;
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int d = axes.empty() ? int(i) : normalizeAxis(axes[i], rank);
    if (d < 0 || d >= rank)
      return "axis out of range";
    const int64_t dim = in.shape.dims[d];
    const int64_t st = steps.empty() ? 1 : steps[i];
    if (st == 0)
      return "step must not be 0";
    int64_t s = starts[i];
    if (s < 0)
      s += dim;
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    begin[d] = s;
    step[d] = st;
  }
  int64_t inStrides[kMaxRank];
  rowMajorStrides(in.shape, inStrides);
  if (out.shape.rank != rank)
    return "output rank differs from the input's";
  for (int d = 0; d < rank; ++d) {
    const int64_t n = out.shape.dims[d];
    if (n > 0 && (begin[d] + (n - 1) * step[d] < 0 || begin[d] + (n - 1) * step[d] >= in.shape.dims[d]))
      return "slice reads outside the input";
  }
  const size_t elem = dtypeSize(in.dtype);
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(out.data);
  const int64_t n = out.numel();
  int64_t index[kMaxRank] = {};
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d)
      offset += (begin[d] + index[d] * step[d]) * inStrides[d];
    std::memcpy(dst + i * elem, src + offset * elem, elem);
    advance(index, out.shape);
  }
  return {};
}

// slice with constant starts/ends/axes/steps attributes.
std::string sliceKernel(const KernelArgs &args) { return sliceWith(args, args.attrs.getInts("starts")); }

// slice whose starts (input 1) and ends (input 2) are tensors; the ends only decide the output
// shape, which the caller has already computed.
std::string dynamicSliceKernel(const KernelArgs &args) {
  const TensorRef &starts = args.in(1);
  if (starts.shape.rank != 1 || (starts.dtype != DType::I64 && starts.dtype != DType::I32))
    return "starts must be a 1-D i32 or i64 tensor";
  std::vector<int64_t> values(size_t(starts.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = starts.dtype == DType::I64 ? starts.as<int64_t>()[i] : starts.as<int32_t>()[i];
  if (values.size() != args.attrs.getInts("axes").size())
    return "starts has " + std::to_string(values.size()) + " entries for " +
           std::to_string(args.attrs.getInts("axes").size()) + " axes";
  return sliceWith(args, values);
}

// Reads index i of an integer tensor as int64.
inline int64_t readIndex(const TensorRef &t, int64_t i) {
  return t.dtype == DType::I64 ? t.as<const int64_t>()[i] : int64_t(t.as<const int32_t>()[i]);
}

std::string gatherKernel(const KernelArgs &args) {
  const TensorRef &data = args.in(0), &indices = args.in(1);
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return "indices must be int32 or int64";
  const int rank = data.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return "axis out of range";
  int64_t outer, dim, inner;
  splitAround(data.shape, axis, outer, dim, inner);
  const int64_t count = indices.numel();
  if (args.out(0).numel() != outer * count * inner)
    return "output size does not match the gather";
  const size_t elem = dtypeSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *dst = static_cast<char *>(args.out(0).data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t idx = readIndex(indices, j);
      if (idx < 0)
        idx += dim;
      if (idx < 0 || idx >= dim)
        return "index " + std::to_string(readIndex(indices, j)) + " out of range for dimension " +
               std::to_string(dim);
      copyElements(src + (o * dim + idx) * inner * elem, dst + (o * count + j) * inner * elem, inner, elem);
    }
  return {};
}

std::string gatherElementsKernel(const KernelArgs &args) {
  const TensorRef &data = args.in(0), &indices = args.in(1);
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return "indices must be int32 or int64";
  const int rank = data.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", 0), rank);
  if (axis < 0 || axis >= rank || indices.shape.rank != rank)
    return "axis or index rank out of range";
  if (args.out(0).numel() != indices.numel())
    return "output size differs from the indices'";
  for (int d = 0; d < rank; ++d)
    if (d != axis && indices.shape.dims[d] > data.shape.dims[d])
      return "indices reach outside the data";
  int64_t dataStrides[kMaxRank];
  rowMajorStrides(data.shape, dataStrides);
  const size_t elem = dtypeSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *dst = static_cast<char *>(args.out(0).data);
  const int64_t n = indices.numel(), dim = data.shape.dims[axis];
  int64_t index[kMaxRank] = {};
  for (int64_t i = 0; i < n; ++i) {
    int64_t idx = readIndex(indices, i);
    if (idx < 0)
      idx += dim;
    if (idx < 0 || idx >= dim)
      return "index out of range";
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d)
      offset += (d == axis ? idx : index[d]) * dataStrides[d];
    std::memcpy(dst + i * elem, src + offset * elem, elem);
    advance(index, indices.shape);
  }
  return {};
}

// gather_nd with batch_dims b: data [B..., D...], indices [B..., I..., k] -> [B..., I..., D[b+k:]].
std::string gatherNdKernel(const KernelArgs &args) {
  const TensorRef &data = args.in(0), &indices = args.in(1);
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return "indices must be int32 or int64";
  const int b = int(args.attrs.getInt("batch_dims", 0));
  const int qr = indices.shape.rank;
  if (qr < 1)
    return "indices must have rank >= 1";
  const int64_t k = indices.shape.dims[qr - 1];
  if (b + k > data.shape.rank)
    return "index depth exceeds the data rank";
  int64_t dataStrides[kMaxRank];
  rowMajorStrides(data.shape, dataStrides);
  int64_t batch = 1;
  for (int d = 0; d < b; ++d)
    batch *= data.shape.dims[d];
  int64_t slice = 1;
  for (int d = b + int(k); d < data.shape.rank; ++d)
    slice *= data.shape.dims[d];
  const int64_t perBatchData = b > 0 ? dataStrides[b - 1] : data.numel();
  int64_t tuples = 1;
  for (int d = b; d < qr - 1; ++d)
    tuples *= indices.shape.dims[d];
  if (indices.numel() != batch * tuples * k || args.out(0).numel() != batch * tuples * slice)
    return "index or output sizes do not match the data";
  const size_t elem = dtypeSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *dst = static_cast<char *>(args.out(0).data);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = bi * perBatchData;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dim = data.shape.dims[b + j];
        int64_t idx = readIndex(indices, (bi * tuples + t) * k + j);
        if (idx < 0)
          idx += dim;
        if (idx < 0 || idx >= dim)
          return "index out of range";
        offset += idx * dataStrides[b + j];
      }
      copyElements(src + offset * elem, dst + (bi * tuples + t) * slice * elem, slice, elem);
    }
  return {};
}

std::string expandKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  TensorRef &out = args.out(0);
  if (!broadcastsTo(in.shape, out.shape))
    return "input " + in.shape.str() + " does not broadcast to " + out.shape.str();
  const size_t elem = dtypeSize(in.dtype);
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(out.data);
  const Shape *ins[1] = {&in.shape};
  forEachRow<1>(out.shape, ins, [&](int64_t o, const int64_t *off, const int64_t *st, int64_t n) {
    if (st[0] == 1) {
      copyElements(src + off[0] * elem, dst + o * elem, n, elem);
    } else {
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + (o + i) * elem, src + off[0] * elem, elem);
    }
  });
  return {};
}

std::string rangeKernel(const KernelArgs &args) {
  if (args.numInputs != 3 || args.in(0).numel() < 1 || args.in(2).numel() < 1)
    return "expects scalar start, limit and delta";
  TensorRef &out = args.out(0);
  std::string err;
  LLMC_DISPATCH_NUMERIC(out.dtype, T, err, {
    const T start = *args.in(0).as<const T>(), delta = *args.in(2).as<const T>();
    T *y = out.as<T>();
    for (int64_t i = 0; i < out.numel(); ++i)
      y[i] = T(start + T(i) * delta);
  });
  return err;
}

std::string shapeKernel(const KernelArgs &args) {
  const Shape &s = args.in(0).shape;
  int64_t start = args.attrs.getInt("start", 0), end = args.attrs.getInt("end", s.rank);
  if (start < 0)
    start += s.rank;
  if (end < 0)
    end += s.rank;
  start = std::clamp<int64_t>(start, 0, s.rank);
  end = std::clamp<int64_t>(end, 0, s.rank);
  int64_t *y = args.out(0).as<int64_t>();
  if (args.out(0).numel() != std::max<int64_t>(0, end - start))
    return "output size does not match the shape slice";
  for (int64_t d = start; d < end; ++d)
    y[d - start] = s.dims[d];
  return {};
}

std::string constantOfShapeKernel(const KernelArgs &args) {
  TensorRef &out = args.out(0);
  const double value = args.attrs.getFloat("value", 0.0);
  std::string err;
  if (isHalfWidth(out.dtype)) {
    std::fill_n(out.as<uint16_t>(), out.numel(), toHalfWidth(float(value), out.dtype));
    return {};
  }
  LLMC_DISPATCH_NUMERIC(out.dtype, T, err, std::fill_n(out.as<T>(), out.numel(), T(value)));
  return err;
}

// pad: begin/end amounts per axis (negative crops); constant, reflect, edge or wrap.
std::string padKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  TensorRef &out = args.out(0);
  const int rank = in.shape.rank;
  std::vector<int64_t> pads = args.attrs.getInts("pads");
  if (int(pads.size()) != 2 * rank || out.shape.rank != rank)
    return "pads must have a begin and an end amount per axis";
  for (int d = 0; d < rank; ++d)
    if (out.shape.dims[d] != in.shape.dims[d] + pads[size_t(d)] + pads[size_t(d + rank)])
      return "output shape does not match the padding";
  const std::string_view mode = args.attrs.getString("mode").empty() ? "constant" : args.attrs.getString("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return "unknown pad mode '" + std::string(mode) + "'";
  const size_t elem = dtypeSize(in.dtype);
  std::vector<char> fill(elem, 0);
  if (args.hasInput(1)) {
    if (args.in(1).dtype != in.dtype || args.in(1).numel() < 1)
      return "the constant value must be one element of the input's type";
    std::memcpy(fill.data(), args.in(1).data, elem);
  }
  for (int d = 0; d < rank; ++d)
    if (mode != "constant" && out.shape.dims[d] > 0 && in.shape.dims[d] == 0)
      return "cannot " + std::string(mode) + "-pad an empty axis";
  int64_t inStrides[kMaxRank];
  rowMajorStrides(in.shape, inStrides);
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(out.data);
  bool growsOnly = true;
  for (int64_t p : pads)
    growsOnly = growsOnly && p >= 0;
  if (mode == "constant" && growsOnly && rank > 0 && in.numel() > 0) {
    // Fill, then copy whole input rows to their place.
    for (int64_t i = 0; i < out.numel(); ++i)
      std::memcpy(dst + i * elem, fill.data(), elem);
    int64_t outStrides[kMaxRank];
    rowMajorStrides(out.shape, outStrides);
    const int64_t row = in.shape.dims[rank - 1];
    int64_t index[kMaxRank] = {};
    for (int64_t i = 0; i < in.numel(); i += row) {
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d)
        offset += (index[d] + pads[size_t(d)]) * outStrides[d];
      std::memcpy(dst + offset * elem, src + i * elem, size_t(row) * elem);
      for (int d = rank - 2; d >= 0; --d) {
        if (++index[d] < in.shape.dims[d])
          break;
        index[d] = 0;
      }
    }
    return {};
  }
  int64_t index[kMaxRank] = {};
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t offset = 0;
    bool outside = false;
    for (int d = 0; d < rank; ++d) {
      const int64_t n = in.shape.dims[d];
      int64_t p = index[d] - pads[size_t(d)];
      if (p < 0 || p >= n) {
        if (mode == "constant") {
          outside = true;
          break;
        }
        if (mode == "edge") {
          p = std::clamp<int64_t>(p, 0, n - 1);
        } else if (mode == "wrap") {
          p = ((p % n) + n) % n;
        } else { // reflect, without repeating the edge
          const int64_t period = n > 1 ? 2 * (n - 1) : 1;
          p = ((p % period) + period) % period;
          if (p >= n)
            p = period - p;
        }
      }
      offset += p * inStrides[d];
    }
    std::memcpy(dst + i * elem, outside ? fill.data() : src + offset * elem, elem);
    advance(index, out.shape);
  }
  return {};
}

std::string tileKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  TensorRef &out = args.out(0);
  const int rank = in.shape.rank;
  if (out.shape.rank != rank)
    return "output rank differs from the input's";
  for (int d = 0; d < rank; ++d)
    if (in.shape.dims[d] == 0 ? out.shape.dims[d] != 0 : out.shape.dims[d] % in.shape.dims[d] != 0)
      return "output dimensions must be multiples of the input's";
  int64_t inStrides[kMaxRank];
  rowMajorStrides(in.shape, inStrides);
  const size_t elem = dtypeSize(in.dtype);
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(out.data);
  int64_t index[kMaxRank] = {};
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d)
      offset += (index[d] % in.shape.dims[d]) * inStrides[d];
    std::memcpy(dst + i * elem, src + offset * elem, elem);
    advance(index, out.shape);
  }
  return {};
}

// Combines `update` into `target` per the scatter reduction.
template <typename T> void combine(T &target, T update, std::string_view reduction) {
  if (reduction == "add")
    target = T(target + update);
  else if (reduction == "mul")
    target = T(target * update);
  else if (reduction == "max")
    target = std::max(target, update);
  else if (reduction == "min")
    target = std::min(target, update);
  else
    target = update;
}

std::string checkReduction(std::string_view reduction) {
  if (reduction.empty() || reduction == "none" || reduction == "add" || reduction == "mul" || reduction == "max" ||
      reduction == "min")
    return {};
  return "unknown reduction '" + std::string(reduction) + "'";
}

std::string scatterElementsKernel(const KernelArgs &args) {
  const TensorRef &data = args.in(0), &indices = args.in(1), &updates = args.in(2);
  TensorRef &out = args.out(0);
  const int rank = data.shape.rank;
  const int axis = normalizeAxis(args.attrs.getInt("axis", 0), rank);
  const std::string_view reduction = args.attrs.getString("reduction");
  if (std::string err = checkReduction(reduction); !err.empty())
    return err;
  if (axis < 0 || axis >= rank || indices.shape.rank != rank || !(indices.shape == updates.shape) ||
      out.bytes() != data.bytes() || (indices.dtype != DType::I64 && indices.dtype != DType::I32))
    return "indices and updates must have one shape and the data's rank";
  for (int d = 0; d < rank; ++d)
    if (d != axis && indices.shape.dims[d] > data.shape.dims[d])
      return "indices reach outside the data";
  std::memcpy(out.data, data.data, data.bytes());
  int64_t strides[kMaxRank];
  rowMajorStrides(data.shape, strides);
  std::string err;
  LLMC_DISPATCH_NUMERIC(data.dtype, T, err, {
    T *y = out.as<T>();
    const T *u = updates.as<const T>();
    int64_t index[kMaxRank] = {};
    for (int64_t i = 0; i < indices.numel(); ++i) {
      int64_t at = readIndex(indices, i);
      if (at < 0)
        at += data.shape.dims[axis];
      if (at < 0 || at >= data.shape.dims[axis]) {
        err = "index out of range";
        break;
      }
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d)
        offset += (d == axis ? at : index[d]) * strides[d];
      combine(y[offset], u[i], reduction);
      advance(index, indices.shape);
    }
  });
  return err;
}

std::string scatterNdKernel(const KernelArgs &args) {
  const TensorRef &data = args.in(0), &indices = args.in(1), &updates = args.in(2);
  TensorRef &out = args.out(0);
  const std::string_view reduction = args.attrs.getString("reduction");
  if (std::string err = checkReduction(reduction); !err.empty())
    return err;
  if (indices.shape.rank < 1 || (indices.dtype != DType::I64 && indices.dtype != DType::I32) ||
      out.bytes() != data.bytes())
    return "indices must be an integer tensor of rank >= 1";
  const int64_t k = indices.shape.dims[indices.shape.rank - 1];
  if (k > data.shape.rank)
    return "index tuples are longer than the data's rank";
  int64_t strides[kMaxRank];
  rowMajorStrides(data.shape, strides);
  int64_t slice = 1;
  for (int d = int(k); d < data.shape.rank; ++d)
    slice *= data.shape.dims[d];
  const int64_t tuples = k ? indices.numel() / k : 0;
  if (updates.numel() != tuples * slice)
    return "updates do not match the indices and the data";
  std::memcpy(out.data, data.data, data.bytes());
  std::string err;
  LLMC_DISPATCH_NUMERIC(data.dtype, T, err, {
    T *y = out.as<T>();
    const T *u = updates.as<const T>();
    for (int64_t t = 0; t < tuples && err.empty(); ++t) {
      int64_t offset = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t at = readIndex(indices, t * k + j);
        const int64_t dim = data.shape.dims[j];
        if (at < 0)
          at += dim;
        if (at < 0 || at >= dim) {
          err = "index out of range";
          break;
        }
        offset += at * strides[j];
      }
      for (int64_t s = 0; s < slice && err.empty(); ++s)
        combine(y[offset + s], u[t * slice + s], reduction);
    }
  });
  return err;
}

std::string triluKernel(const KernelArgs &args) {
  const TensorRef &in = args.in(0);
  if (in.shape.rank < 2)
    return "input must have rank >= 2";
  if (args.out(0).numel() != in.numel() || (args.hasInput(1) && args.in(1).numel() < 1))
    return "output size differs from the input's, or k is empty";
  const int64_t k = args.hasInput(1) ? readIndex(args.in(1), 0) : 0;
  const bool upper = args.attrs.getInt("upper", 1);
  const int64_t rows = in.shape.dims[in.shape.rank - 2], cols = in.shape.dims[in.shape.rank - 1];
  const int64_t mats = rows * cols ? in.numel() / (rows * cols) : 0;
  const size_t elem = dtypeSize(in.dtype);
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(args.out(0).data);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t at = (m * rows + i) * cols + j;
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (keep)
          std::memcpy(dst + at * elem, src + at * elem, elem);
        else
          std::memset(dst + at * elem, 0, elem);
      }
  return {};
}

} // namespace

extern const KernelEntry kDataMovementKernels[] = {
    {"reshape", copyKernel},
    {"unsqueeze", copyKernel},
    {"squeeze", copyKernel},
    {"flatten", copyKernel},
    {"identity", copyKernel},
    {"transpose", transposeKernel},
    {"concat", concatKernel},
    {"split", splitKernel},
    {"slice", sliceKernel},
    {"dynamic_slice", dynamicSliceKernel},
    {"gather", gatherKernel},
    {"gather_elements", gatherElementsKernel},
    {"gather_nd", gatherNdKernel},
    {"expand", expandKernel},
    {"range", withHalf<rangeKernel>},
    {"shape", shapeKernel},
    {"constant_of_shape", constantOfShapeKernel},
    {"trilu", triluKernel},
    {"pad", padKernel},
    {"tile", tileKernel},
    {"scatter_elements", withHalf<scatterElementsKernel>},
    {"scatter_nd", withHalf<scatterNdKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
