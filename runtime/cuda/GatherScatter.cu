// Gathers and scatters by index tensors (ONNX Gather, GatherND, GatherElements, ScatterND,
// ScatterElements), a thread per element; a gather and its scatter are one kernel, which finds
// the data's element as both do. The CPU kernels (DataMovement.cpp) are the reference.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

struct NdIndex {
  int64_t dims[kMaxDims], strides[kMaxDims];
};

// Where index tuple t (indices [tuples, k], each negative from its dimension's end) starts in the
// data; -1 where an index is out of range.
template <typename I> __device__ int64_t tupleOffset(const I *__restrict__ indices, int64_t t, int k, const NdIndex &nd) {
  int64_t offset = 0;
  for (int j = 0; j < k; ++j) {
    int64_t idx = int64_t(indices[t * k + j]);
    if (idx < 0)
      idx += nd.dims[j];
    if (idx < 0 || idx >= nd.dims[j])
      return -1;
    offset += idx * nd.strides[j];
  }
  return offset;
}

// Where element e of the indices (dims `shape`) points in the data: e's coordinates with the axis
// one replaced by indices[e] (negative from the end); -1 where that is out of range.
template <typename I>
__device__ int64_t elementOffset(const I *__restrict__ indices, int64_t e, int rank, int axis, const NdIndex &shape,
                                 const NdIndex &dataStrides, int64_t axisDim) {
  int64_t idx = int64_t(indices[e]);
  if (idx < 0)
    idx += axisDim;
  if (idx < 0 || idx >= axisDim)
    return -1;
  int64_t rest = e, offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t c = rest % shape.dims[d];
    rest /= shape.dims[d];
    offset += (d == axis ? idx : c) * dataStrides.dims[d];
  }
  return offset;
}

// ONNX Gather along any axis: data [outer, dim, inner], `count` indices (I: int32 or int64);
// out [outer, count, inner] element e takes index j = e / inner % count.
template <typename E, typename I>
__global__ void gatherAxisKernel(const E *__restrict__ data, const I *__restrict__ indices, E *__restrict__ out,
                                 int64_t outer, int64_t dim, int64_t count, int64_t inner, int *error) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < outer * count * inner;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t id = int64_t(indices[e / inner % count]);
    if (id < 0)
      id += dim;
    if (id < 0 || id >= dim)
      atomicExch(error, 1);
    else
      out[e] = data[(e / (inner * count) * dim + id) * inner + e % inner];
  }
}

// --- scatter reductions -----------------------------------------------------------------------

enum Reduction : int { kNone, kAdd, kMul, kMax, kMin };

int reductionOf(const std::string &name) {
  if (name.empty() || name == "none")
    return kNone;
  return name == "add" ? kAdd : name == "mul" ? kMul : name == "max" ? kMax : name == "min" ? kMin : -1;
}

// a combined with b, as the CPU's combine (max and min as std::max and std::min take NaNs).
template <typename T> __device__ T reduced(T a, T b, int r) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return fromF<T>(reduced(toF(a), toF(b), r));
  } else {
    switch (r) {
    case kAdd: return T(a + b);
    case kMul: return T(a * b);
    case kMax: return a < b ? b : a;
    case kMin: return b < a ? b : a;
    default: return b;
    }
  }
}

// *p = reduced(*p, u) atomically: a compare-and-swap of the 8-byte word, or of the aligned 4-byte
// word that holds a smaller element (the device arena's values start 256-byte aligned, so that
// word lies in the value's slot).
template <typename T> __device__ void combineAt(T *p, T u, int r) {
  if (r == kNone) {
    *p = u;
  } else if constexpr (sizeof(T) == 8) {
    auto *word = reinterpret_cast<unsigned long long *>(p);
    unsigned long long seen = *word, expected;
    do {
      expected = seen;
      T current, next;
      memcpy(&current, &expected, 8);
      next = reduced(current, u, r);
      unsigned long long desired;
      memcpy(&desired, &next, 8);
      seen = atomicCAS(word, expected, desired);
    } while (seen != expected);
  } else {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    auto *word = reinterpret_cast<unsigned *>(at & ~uintptr_t(3));
    const unsigned shift = unsigned(at & 3);
    unsigned seen = *word, expected;
    do {
      expected = seen;
      unsigned desired = expected;
      T current;
      memcpy(&current, reinterpret_cast<const char *>(&expected) + shift, sizeof(T));
      const T next = reduced(current, u, r);
      memcpy(reinterpret_cast<char *>(&desired) + shift, &next, sizeof(T));
      seen = atomicCAS(word, expected, desired);
    } while (seen != expected);
  }
}

// A gather (kScatter false: out[e] = in[offset]) or a scatter (out[offset] combined with in[e],
// the updates) by index tuples: e's tuple's offset, plus e's place within its slice. The tuples
// come in batches of `perBatch` (GatherND's batch_dims), each into its own `batchStride` elements
// of the data.
template <bool kScatter, typename T, typename I>
__global__ void byTuplesKernel(const T *__restrict__ in, const I *__restrict__ indices, T *out, int64_t tuples,
                               int k, NdIndex nd, int64_t slice, int64_t perBatch, int64_t batchStride, int r,
                               int *error) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < tuples * slice;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = e / slice, inTuple = tupleOffset(indices, t, k, nd);
    const int64_t offset = inTuple < 0 ? -1 : t / perBatch * batchStride + inTuple;
    if (offset < 0)
      atomicExch(error, 1);
    else if constexpr (kScatter)
      combineAt(out + offset + e % slice, in[e], r);
    else
      out[e] = in[offset + e % slice];
  }
}

// The same by elements' indices along an axis (GatherElements, ScatterElements).
template <bool kScatter, typename T, typename I>
__global__ void byElementsKernel(const T *__restrict__ in, const I *__restrict__ indices, T *out, int64_t n,
                                 int rank, int axis, NdIndex shape, NdIndex dataStrides, int64_t axisDim, int r,
                                 int *error) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t offset = elementOffset(indices, e, rank, axis, shape, dataStrides, axisDim);
    if (offset < 0)
      atomicExch(error, 1);
    else if constexpr (kScatter)
      combineAt(out + offset, in[e], r);
    else
      out[e] = in[offset];
  }
}

// Runs `f(T{})` with T the C++ type of DType number `dtype` (a reduction computes in it), or for
// kNone an unsigned type of its size (a store moves bytes).
template <typename F> bool byScatterType(int dtype, int r, F &&f) {
  if (r == kNone)
    return byElementSize(dtype == F64 || dtype == I64 ? 8 : dtype == F32 || dtype == I32 ? 4
                         : dtype == F16 || dtype == BF16 ? 2 : 1,
                         f);
  switch (dtype) {
  case F32: f(float{}); return true;
  case F16: f(__half{}); return true;
  case BF16: f(__nv_bfloat16{}); return true;
  case F64: f(double{}); return true;
  case I64: f(0LL); return true;
  case I32: f(int{}); return true;
  case I8: f(static_cast<signed char>(0)); return true;
  case U8: f(static_cast<unsigned char>(0)); return true;
  default: return false; // a bool's sum or product is no bool
  }
}

// Runs `f(I{})` with I the index type of `bytes` bytes: int32 or int64.
template <typename F> bool byIndexType(int bytes, F &&f) {
  if (bytes == 8)
    f(int64_t{});
  else if (bytes == 4)
    f(int32_t{});
  return bytes == 8 || bytes == 4;
}

NdIndex ndIndexOf(int k, const int64_t *dims, const int64_t *strides) {
  NdIndex nd{};
  for (int j = 0; j < k; ++j)
    nd.dims[j] = dims[j], nd.strides[j] = strides[j];
  return nd;
}

// The indices' dims and the data's row-major strides, for gatherElements and scatterElements;
// false where the rank or axis is out of range.
bool elementIndexOf(int rank, int axis, const int64_t *indexDims, const int64_t *dataDims, NdIndex &shape,
                    NdIndex &strides, int64_t &n) {
  if (rank < 1 || rank > kMaxDims || axis < 0 || axis >= rank)
    return false;
  shape = NdIndex{}, strides = NdIndex{};
  n = 1;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    shape.dims[d] = indexDims[d], strides.dims[d] = stride;
    stride *= dataDims[d];
    n *= indexDims[d];
  }
  return true;
}

// The launches a gather and its scatter share: `in` is the data of a gather (kScatter false), the
// updates of a scatter; `byType(f)` runs f(T{}) with the element type (byElementSize for a
// gather, byScatterType for a scatter) and is false where it has none, which `unknownType` then
// says; `r` is the reduction (kNone for a gather, -1 for one unknown, named by `reduction`).
template <bool kScatter, typename ByType>
std::string byTuples(const char *name, ByType byType, const std::string &unknownType, const void *in,
                     const void *indices, void *out, int64_t tuples, int k, const int64_t *dims,
                     const int64_t *strides, int64_t slice, int r, const std::string &reduction, int *error,
                     void *stream, int indexBytes, int64_t batches = 1, int64_t batchStride = 0) {
  if (indexBytes != 4 && indexBytes != 8)
    return std::string(name) + ": int32 or int64 indices";
  if (r < 0)
    return std::string(name) + ": unknown reduction '" + reduction + "'";
  if (k < 1 || k > kMaxDims)
    return std::string(name) + ": index depth must be 1.." + std::to_string(kMaxDims);
  if (tuples * slice == 0)
    return {};
  if (batches < 1 || tuples % batches)
    return std::string(name) + ": the tuples do not split into the batches";
  const NdIndex nd = ndIndexOf(k, dims, strides);
  const bool known = byType([&](auto tag) {
    using T = decltype(tag);
    byIndexType(indexBytes, [&](auto index) {
      using I = decltype(index);
      byTuplesKernel<kScatter, T, I><<<unsigned(blocksFor(tuples * slice, kElementThreads)), kElementThreads, 0,
                                       static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T *>(in), static_cast<const I *>(indices), static_cast<T *>(out), tuples, k, nd, slice,
          tuples / batches, batchStride, r, error);
    });
  });
  return known ? launched(name) : std::string(name) + ": " + unknownType;
}

template <bool kScatter, typename ByType>
std::string byElements(const char *name, ByType byType, const std::string &unknownType, const void *in,
                       const void *indices, void *out, int rank, int axis, const int64_t *indexDims,
                       const int64_t *dataDims, int r, const std::string &reduction, int *error, void *stream,
                       int indexBytes) {
  if (indexBytes != 4 && indexBytes != 8)
    return std::string(name) + ": int32 or int64 indices";
  if (r < 0)
    return std::string(name) + ": unknown reduction '" + reduction + "'";
  NdIndex shape, strides;
  int64_t n;
  if (!elementIndexOf(rank, axis, indexDims, dataDims, shape, strides, n))
    return std::string(name) + ": rank 1.." + std::to_string(kMaxDims) + " and an axis within it";
  if (n == 0)
    return {};
  const bool known = byType([&](auto tag) {
    using T = decltype(tag);
    byIndexType(indexBytes, [&](auto index) {
      using I = decltype(index);
      byElementsKernel<kScatter, T, I><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0,
                                         static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T *>(in), static_cast<const I *>(indices), static_cast<T *>(out), n, rank, axis, shape,
          strides, dataDims[axis], r, error);
    });
  });
  return known ? launched(name) : std::string(name) + ": " + unknownType;
}

} // namespace

std::string gatherNd(const void *data, const void *indices, void *out, int64_t tuples, int k, const int64_t *dims,
                     const int64_t *strides, int64_t slice, int elemBytes, int *error, void *stream, int indexBytes,
                     int64_t batches, int64_t batchStride) {
  return byTuples<false>("gatherNd", [&](auto f) { return byElementSize(elemBytes, f); },
                         "elements of " + std::to_string(elemBytes) + " bytes", data, indices, out, tuples, k, dims,
                         strides, slice, kNone, "", error, stream, indexBytes, batches, batchStride);
}

std::string gatherAxis(const void *data, const void *indices, int indexBytes, void *out, int64_t outer, int64_t dim,
                       int64_t count, int64_t inner, int elemBytes, int *error, void *stream) {
  if (indexBytes != 4 && indexBytes != 8)
    return "gatherAxis: int32 or int64 indices";
  if (outer * count * inner == 0)
    return {};
  const unsigned blocks = unsigned(blocksFor(outer * count * inner, kElementThreads));
  const bool known = byElementSize(elemBytes, [&](auto tag) {
    using E = decltype(tag);
    byIndexType(indexBytes, [&](auto index) {
      using I = decltype(index);
      gatherAxisKernel<E, I><<<blocks, kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
          static_cast<const E *>(data), static_cast<const I *>(indices), static_cast<E *>(out), outer, dim, count,
          inner, error);
    });
  });
  return known ? launched("gatherAxis") : "gatherAxis: elements of " + std::to_string(elemBytes) + " bytes";
}

std::string gatherElements(const void *data, const void *indices, void *out, int rank, int axis,
                           const int64_t *indexDims, const int64_t *dataDims, int elemBytes, int *error, void *stream,
                           int indexBytes) {
  return byElements<false>("gatherElements", [&](auto f) { return byElementSize(elemBytes, f); },
                           "elements of " + std::to_string(elemBytes) + " bytes", data, indices, out, rank, axis,
                           indexDims, dataDims, kNone, "", error, stream, indexBytes);
}

std::string scatterNd(void *out, const void *indices, const void *updates, int64_t tuples, int k,
                      const int64_t *dims, const int64_t *strides, int64_t slice, int dtype,
                      const std::string &reduction, int *error, void *stream, int indexBytes) {
  const int r = reductionOf(reduction);
  return byTuples<true>("scatterNd", [&](auto f) { return byScatterType(dtype, r, f); },
                        "no '" + reduction + "' of this element type", updates, indices, out, tuples, k, dims, strides,
                        slice, r, reduction, error, stream, indexBytes);
}

std::string scatterElements(void *out, const void *indices, const void *updates, int rank, int axis,
                            const int64_t *indexDims, const int64_t *dataDims, int dtype,
                            const std::string &reduction, int *error, void *stream, int indexBytes) {
  const int r = reductionOf(reduction);
  return byElements<true>("scatterElements", [&](auto f) { return byScatterType(dtype, r, f); },
                          "no '" + reduction + "' of this element type", updates, indices, out, rank, axis, indexDims,
                          dataDims, r, reduction, error, stream, indexBytes);
}

} // namespace llmc::rt::cuda
