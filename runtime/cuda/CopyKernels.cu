// The data movement and small kernels of the CUDA executor (see CudaKernels.h), one thread per
// element: strided copies (with the rotary embedding of a split's keys piece), the rotary
// embedding, the elementwise op of any type that no fused region took (shapes, masks), range,
// int64 writes, and the precision conversion at the edges of a run (gathers and scatters:
// GatherScatter.cu).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

// Rotary embedding (see RotaryArgs) of the elements first, first + stride, ...: a grid-stride loop
// shared by the rotary kernel and the split that rotates its keys piece.
template <typename T> __device__ void rotaryElements(const RotaryArgs &r, int64_t first, int64_t stride) {
  const T *__restrict__ x = static_cast<const T *>(r.x);
  T *__restrict__ y = static_cast<T *>(r.y.base) + (r.y.shift ? *r.y.shift * r.y.shiftStride : 0);
  const T *__restrict__ cosT = static_cast<const T *>(r.cos), *__restrict__ sinT = static_cast<const T *>(r.sin);
  const int64_t B = r.B, H = r.H, S = r.S, D = r.D, n = B * H * S * D, half = r.rotaryDim / 2;
  for (int64_t e = first; e < n; e += stride) {
    const int64_t d = e % D, rowIndex = e / D;
    int64_t b, h, s;
    if (r.flat) { // rows ordered (b, s, h)
      h = rowIndex % H, s = (rowIndex / H) % S, b = rowIndex / (H * S);
    } else {      // rows ordered (b, h, s)
      s = rowIndex % S, h = (rowIndex / S) % H, b = rowIndex / (S * H);
    }
    const int64_t base = r.flat && r.xRowStride ? (b * S + s) * r.xRowStride + h * D : rowIndex * D;
    const int64_t at = r.flat && r.y.batchStride ? b * r.y.batchStride + s * r.y.tokenStride + h * D + d : e;
    if (d >= r.rotaryDim) {
      y[at] = x[base + d];
      continue;
    }
    // Without ids: tables [B, S, rot/2], or [1, S, rot/2] for every batch.
    const int64_t pos = r.positions ? r.positions[b * S + s] : (r.sharedTables ? 0 : b) * S + s;
    if (pos < 0 || pos >= r.tableRows) {
      atomicExch(r.error, 1);
      y[at] = x[base + d];
      continue;
    }
    const int64_t i = r.interleaved ? d / 2 : (d < half ? d : d - half);
    const int64_t a = r.interleaved ? 2 * i : i, bIdx = r.interleaved ? 2 * i + 1 : i + half;
    const float c = toF(cosT[pos * half + i]), sn = toF(sinT[pos * half + i]);
    const float x1 = toF(x[base + a]), x2 = toF(x[base + bIdx]);
    y[at] = fromF<T>(d == a ? x1 * c - x2 * sn : x2 * c + x1 * sn);
  }
}

template <typename T> __global__ void rotaryKernel(RotaryArgs r) {
  rotaryElements<T>(r, int64_t(blockIdx.x) * blockDim.x + threadIdx.x, int64_t(gridDim.x) * blockDim.x);
}

} // namespace

static std::string checkRotary(const RotaryArgs &a) {
  if (a.rotaryDim <= 0 || a.rotaryDim % 2 || a.rotaryDim > a.D)
    return "rotary: rotaryDim must be even and within the head";
  return a.y.batchStride && !a.flat ? "rotary: rows placed by batch and token need rows [B, S, H * D]" : "";
}

std::string rotary(Storage s, const RotaryArgs &a, void *stream) {
  if (std::string err = checkRotary(a); !err.empty())
    return err;
  const int64_t n = a.B * a.H * a.S * a.D;
  if (n == 0)
    return {};
  dispatch(s, [&](auto tag) {
    rotaryKernel<decltype(tag)>
        <<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(a);
  });
  return launched("rotary");
}

} // namespace llmc::rt::cuda

namespace llmc::rt::cuda {
namespace {

// Copy `c` from its source elements from `srcBase` on; the blocks along x stride over its elements.
template <typename E>
__device__ void copyStrided(const StridedCopy &c, int64_t srcBase, const E *__restrict__ src, E *__restrict__ dst) {
  int64_t n = 1;
  for (int k = 0; k < c.rank; ++k)
    n *= c.dims[k];
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = e, s = srcBase, d = c.dstBase + (c.dstShift ? *c.dstShift * c.dstShiftStride : 0);
    for (int k = c.rank - 1; k >= 0; --k) {
      const int64_t i = rest % c.dims[k];
      rest /= c.dims[k];
      s += i * c.src[k];
      d += i * c.dst[k];
    }
    dst[d] = src[s];
  }
}

// Piece `piece` of the batch.
template <typename E> __device__ void copyPiece(const StridedCopies &b, int piece) {
  copyStrided<E>(b.copy[piece], b.copy[piece].srcBase, static_cast<const E *>(b.src[piece]), static_cast<E *>(b.dst[piece]));
}

// A slice from starts in device memory (SliceStarts): each thread works out where the slice
// begins, then copies its elements.
template <typename E>
__global__ void slicedCopyKernel(const __grid_constant__ StridedCopy c, const __grid_constant__ SliceStarts s,
                                 const E *__restrict__ src, E *__restrict__ dst, int *error) {
  int64_t base = c.srcBase;
  for (int i = 0; i < s.count; ++i) {
    int64_t start = s.int32 ? static_cast<const int *>(s.values)[i] : static_cast<const long long *>(s.values)[i];
    const int64_t dim = s.inDims[i], step = s.steps[i], n = c.dims[s.axes[i]];
    if (start < 0)
      start += dim;
    start = start < 0 ? 0 : start > (step > 0 ? dim : dim - 1) ? (step > 0 ? dim : dim - 1) : start;
    if (n > 0 && (start + (n - 1) * step < 0 || start + (n - 1) * step >= dim)) {
      if (blockIdx.x == 0 && threadIdx.x == 0)
        atomicExch(error, 1);
      return;
    }
    base += start * s.inStrides[i];
  }
  copyStrided<E>(c, base, src, dst);
}

// Piece blockIdx.y. __grid_constant__ makes reading the pieces where the launch put them (not a
// per-thread copy for the dynamic index) a guarantee rather than the optimizer's choice (nvcc 13
// makes it either way).
template <typename E> __global__ void stridedCopyKernel(const __grid_constant__ StridedCopies b) {
  copyPiece<E>(b, int(blockIdx.y));
}

// The pieces along y, then one more y for the rotary piece (stridedCopiesAndRotary).
template <typename T> __global__ void copiesAndRotaryKernel(const __grid_constant__ StridedCopies b, RotaryArgs r) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  allowNextLaunch(); // (a decode step's attention comes next)
  waitForPrevious();
  if (int(blockIdx.y) < b.count)
    copyPiece<Bits>(b, int(blockIdx.y));
  else
    rotaryElements<T>(r, int64_t(blockIdx.x) * blockDim.x + threadIdx.x, int64_t(gridDim.x) * blockDim.x);
}

enum Ew : int {
  Add, Sub, Mul, Div, Pow, Max, Min, Equal, Less, LessEqual, Greater, GreaterEqual, And, Or, Xor, Where, Neg, Abs,
  Sqrt, Reciprocal, Exp, Log, Tanh, Erf, Sigmoid, Silu, Relu, Cos, Sin, Floor, Ceil, Sign, Not, Gelu, GeluTanh,
  Identity, Cast, Round, IsNan, Softplus, HardSwish,
  // With attributes (ElementwiseArgs::alpha, beta); Mod and FMod are binary, ONNX Mod's fmod 0 and 1.
  Elu, LeakyRelu, HardSigmoid, Mod, FMod // (the last one: elementwise() checks op <= FMod)
};
const char *const kEwNames[] = {"add", "sub", "mul", "div", "pow", "max", "min", "equal", "less", "less_equal",
                                "greater", "greater_equal", "and", "or", "xor", "where", "neg", "abs", "sqrt",
                                "reciprocal", "exp", "log", "tanh", "erf", "sigmoid", "silu", "relu", "cos", "sin",
                                "floor", "ceil", "sign", "not", "gelu", "gelu_tanh", "identity", "cast",
                                "round", "is_nan", "softplus", "hard_swish", "elu", "leaky_relu", "hard_sigmoid", "mod",
                                "fmod"};
static_assert(sizeof kEwNames / sizeof kEwNames[0] == FMod + 1, "a name per op");

// ONNX Mod: the remainder of truncating division (fmod), or with the divisor's sign (Python's %);
// an integer divisor of 0 gives 0, as on the CPU.
__device__ double modulo(double x, double y, bool integral, bool truncated) {
  if (integral && y == 0)
    return 0;
  double r = fmod(x, y);
  if (!truncated && r != 0 && ((r < 0) != (y < 0)))
    r += y;
  return r;
}

__device__ double apply(int op, double x, double y, double z, bool integral, double alpha, double beta) {
  switch (op) {
  case Add: return x + y;
  case Sub: return x - y;
  case Mul: return x * y;
  case Div: return integral ? trunc(x / y) : x / y; // integer division truncates, as on the CPU
  case Pow: return pow(x, y);
  case Max: return isnan(x) || isnan(y) ? NAN : fmax(x, y);
  case Min: return isnan(x) || isnan(y) ? NAN : fmin(x, y);
  case Equal: return x == y;
  case Less: return x < y;
  case LessEqual: return x <= y;
  case Greater: return x > y;
  case GreaterEqual: return x >= y;
  case And: return (x != 0) && (y != 0);
  case Or: return (x != 0) || (y != 0);
  case Xor: return (x != 0) != (y != 0);
  case Where: return x != 0 ? y : z;
  case Neg: return -x;
  case Abs: return fabs(x);
  case Sqrt: return sqrt(x);
  case Reciprocal: return 1.0 / x;
  case Exp: return exp(x);
  case Log: return log(x);
  case Tanh: return tanh(x);
  case Erf: return erf(x);
  case Sigmoid: return 1.0 / (1.0 + exp(-x));
  case Silu: return x / (1.0 + exp(-x));
  case Relu: return x > 0 ? x : 0.0;
  case Cos: return cos(x);
  case Sin: return sin(x);
  case Floor: return floor(x);
  case Ceil: return ceil(x);
  case Sign: return double((x > 0) - (x < 0));
  case Not: return x == 0;
  case Gelu: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
  case GeluTanh: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  case Round: return rint(x); // halves to even, as nearbyint on the CPU
  case IsNan: return isnan(x);
  case Softplus: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); // no overflow for large x
  case HardSwish: return x * fmin(fmax(x / 6.0 + 0.5, 0.0), 1.0);
  case Elu: return x >= 0 ? x : alpha * expm1(x);
  case LeakyRelu: return x >= 0 ? x : alpha * x;
  case HardSigmoid: { // as std::clamp: a NaN stays NaN
    const double h = alpha * x + beta;
    return h < 0 ? 0.0 : h > 1 ? 1.0 : h;
  }
  case Mod: return modulo(x, y, integral, false);
  case FMod: return modulo(x, y, integral, true);
  default: return x; // identity, cast
  }
}

__global__ void elementwiseKernel(ElementwiseArgs a, int64_t n) {
  const bool integral = a.outType == I64 || a.outType == I32 || a.outType == I8 || a.outType == U8;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = e, at[3] = {0, 0, 0};
    for (int k = a.rank - 1; k >= 0; --k) {
      const int64_t i = rest % a.dims[k];
      rest /= a.dims[k];
      for (int j = 0; j < a.numInputs; ++j)
        at[j] += i * a.inStrides[j][k];
    }
    double v[3] = {0, 0, 0};
    for (int j = 0; j < a.numInputs; ++j)
      v[j] = loadAs(a.in[j], a.inType[j], at[j]);
    storeAs(a.out, a.outType, e, apply(a.op, v[0], v[1], v[2], integral, a.alpha, a.beta));
  }
}

__global__ void rangeKernel(int type, const void *start, const void *delta, void *out, int64_t n) {
  const double s = loadAs(start, type, 0), d = loadAs(delta, type, 0);
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
    storeAs(out, type, e, s + double(e) * d);
}

__global__ void fillKernel(void *out, int type, double value, int64_t n) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
    storeAs(out, type, e, value);
}

struct Int64s {
  long long v[kMaxDims];
};
__global__ void writeInt64sKernel(long long *out, Int64s values, int count) {
  if (threadIdx.x < count)
    out[threadIdx.x] = values.v[threadIdx.x];
}

int64_t numelOf(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= dims[d];
  return n;
}

} // namespace

// Why a batch of pieces cannot be launched, or "": the count, their ranks, one element size
// (`elemBytes`). `most` gets the largest piece's element count.
static std::string checkPieces(const StridedCopies &batch, int elemBytes, int64_t &most) {
  if (batch.count < 0 || batch.count > kMaxCopies)
    return "stridedCopies: " + std::to_string(batch.count) + " pieces (at most " + std::to_string(kMaxCopies) + ")";
  most = 0;
  for (int i = 0; i < batch.count; ++i) {
    const StridedCopy &c = batch.copy[i];
    if (c.rank < 0 || c.rank > kMaxDims)
      return "stridedCopy: rank above " + std::to_string(kMaxDims);
    if (c.elemBytes != elemBytes)
      return "stridedCopies: pieces of different element sizes";
    most = std::max(most, numelOf(c.rank, c.dims));
  }
  return {};
}

std::string stridedCopies(const StridedCopies &batch, void *stream) {
  int64_t most = 0;
  if (std::string err = checkPieces(batch, batch.copy[0].elemBytes, most); !err.empty())
    return err;
  if (most == 0)
    return {};
  const dim3 grid(unsigned(blocksFor(most, kElementThreads)), unsigned(batch.count));
  const bool known = byElementSize(batch.copy[0].elemBytes, [&](auto tag) {
    stridedCopyKernel<decltype(tag)><<<grid, kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(batch);
  });
  return known ? launched("stridedCopy")
               : "stridedCopy: elements of " + std::to_string(batch.copy[0].elemBytes) + " bytes";
}

std::string stridedCopiesAndRotary(Storage s, const StridedCopies &copies, const RotaryArgs &rotary, void *stream,
                                   bool overlapPrevious) {
  int64_t most = 0;
  if (std::string err = checkPieces(copies, int(storageBytes(s)), most); !err.empty())
    return err;
  if (std::string err = checkRotary(rotary); !err.empty())
    return err;
  if (!rotary.flat)
    return "stridedCopiesAndRotary: the rotated piece must be rows [B, S, H * D]";
  most = std::max(most, rotary.B * rotary.H * rotary.S * rotary.D);
  if (most == 0)
    return {};
  const dim3 grid(unsigned(blocksFor(most, kElementThreads)), unsigned(copies.count + 1));
  dispatch(s, [&](auto tag) {
    launchKernel(overlapPrevious, copiesAndRotaryKernel<decltype(tag)>, grid, dim3(kElementThreads), 0,
                 static_cast<cudaStream_t>(stream), copies, rotary);
  });
  return launched("stridedCopiesAndRotary");
}

namespace {

constexpr int kTransposeTile = 32, kTransposeThreads = 256; // a warp per row of the tile, 8 rows at a time

// Block (t, image): tile t of the image's [rows, cols] (tiles row after row), read into shared
// memory along its rows and written out along its columns, which are dst's rows. The tile has a
// column of padding, so that reading one of its columns touches 32 banks.
template <typename E>
__global__ void transposeTilesKernel(const E *__restrict__ src, E *__restrict__ dst, int64_t rows, int64_t cols,
                                     int64_t tilesAcross) {
  __shared__ E tile[kTransposeTile][kTransposeTile + 1];
  const int64_t r0 = int64_t(blockIdx.x) / tilesAcross * kTransposeTile;
  const int64_t c0 = int64_t(blockIdx.x) % tilesAcross * kTransposeTile;
  const int64_t offset = int64_t(blockIdx.y) * rows * cols;
  const int lane = threadIdx.x % kTransposeTile, first = threadIdx.x / kTransposeTile;
  constexpr int kStep = kTransposeThreads / kTransposeTile;
  for (int i = first; i < kTransposeTile; i += kStep)
    if (r0 + i < rows && c0 + lane < cols)
      tile[i][lane] = src[offset + (r0 + i) * cols + c0 + lane];
  __syncthreads();
  for (int i = first; i < kTransposeTile; i += kStep)
    if (c0 + i < cols && r0 + lane < rows)
      dst[offset + (c0 + i) * rows + r0 + lane] = tile[lane][i];
}

} // namespace

std::string transposeBatched(const void *src, void *dst, int64_t n, int64_t rows, int64_t cols, int elemBytes,
                             void *stream) {
  if ((elemBytes != 2 && elemBytes != 4) || n < 0 || n > 65535 || rows < 0 || cols < 0)
    return "transposeBatched: elements of 2 or 4 bytes, at most 65535 matrices";
  if (n * rows * cols == 0)
    return {};
  const int64_t across = (cols + kTransposeTile - 1) / kTransposeTile;
  const int64_t tiles = across * ((rows + kTransposeTile - 1) / kTransposeTile);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(n));
  auto st = static_cast<cudaStream_t>(stream);
  if (elemBytes == 2)
    transposeTilesKernel<uint16_t><<<grid, kTransposeThreads, 0, st>>>(static_cast<const uint16_t *>(src),
                                                                       static_cast<uint16_t *>(dst), rows, cols, across);
  else
    transposeTilesKernel<uint32_t><<<grid, kTransposeThreads, 0, st>>>(static_cast<const uint32_t *>(src),
                                                                       static_cast<uint32_t *>(dst), rows, cols, across);
  return launched("transposeBatched");
}

namespace {

template <typename E>
__global__ void triluKernel(const E *__restrict__ in, E *__restrict__ out, int64_t count, int64_t rows, int64_t cols,
                            int64_t k, const int64_t *kOnDevice, bool upper) {
  if (kOnDevice)
    k = *kOnDevice;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    out[e] = (upper ? j - i >= k : j - i <= k) ? in[e] : E(0);
  }
}

} // namespace

std::string trilu(const void *in, void *out, int64_t count, int64_t rows, int64_t cols, int64_t k, bool upper,
                  int elemBytes, void *stream, const int64_t *kOnDevice) {
  if (count == 0)
    return {};
  if (rows <= 0 || cols <= 0 || count % (rows * cols))
    return "trilu: count must be whole matrices";
  const unsigned blocks = unsigned(blocksFor(count, kElementThreads));
  const bool known = byElementSize(elemBytes, [&](auto tag) {
    using E = decltype(tag);
    triluKernel<E><<<blocks, kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const E *>(in), static_cast<E *>(out), count, rows, cols, k, kOnDevice, upper);
  });
  return known ? launched("trilu") : "trilu: elements of 1, 2, 4 or 8 bytes";
}

std::string stridedCopy(const void *src, void *dst, const StridedCopy &c, void *stream) {
  StridedCopies one;
  one.count = 1, one.src[0] = src, one.dst[0] = dst, one.copy[0] = c;
  return stridedCopies(one, stream);
}

std::string slicedCopy(const void *src, void *dst, const StridedCopy &c, const SliceStarts &s, int *error,
                       void *stream) {
  if (c.rank < 0 || c.rank > kMaxDims || s.count < 0 || s.count > c.rank)
    return "slicedCopy: rank above " + std::to_string(kMaxDims) + " or more starts than axes";
  for (int i = 0; i < s.count; ++i)
    if (s.axes[i] < 0 || s.axes[i] >= c.rank || s.steps[i] == 0)
      return "slicedCopy: an axis out of range or a step of 0";
  const int64_t n = numelOf(c.rank, c.dims);
  if (n == 0)
    return {};
  const bool known = byElementSize(c.elemBytes, [&](auto tag) {
    using E = decltype(tag);
    slicedCopyKernel<E><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0,
                          static_cast<cudaStream_t>(stream)>>>(c, s, static_cast<const E *>(src), static_cast<E *>(dst),
                                                               error);
  });
  return known ? launched("slicedCopy") : "slicedCopy: elements of " + std::to_string(c.elemBytes) + " bytes";
}

int elementwiseOp(const std::string &name) {
  for (int i = 0; i < int(sizeof kEwNames / sizeof kEwNames[0]); ++i)
    if (name == kEwNames[i])
      return i;
  return -1;
}

int elementwiseArity(int op) { return op == Where ? 3 : op <= Xor || op == Mod || op == FMod ? 2 : 1; }

std::string elementwise(const ElementwiseArgs &a, void *stream) {
  const int64_t n = numelOf(a.rank, a.dims);
  if (a.op < 0 || a.op > FMod || a.numInputs != elementwiseArity(a.op) || a.rank > kMaxDims)
    return "elementwise: bad arguments";
  if (n == 0)
    return {};
  elementwiseKernel<<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(a, n);
  return launched("elementwise");
}

std::string range(int type, const void *start, const void *delta, void *out, int64_t count, void *stream) {
  if (count == 0)
    return {};
  rangeKernel<<<unsigned(blocksFor(count, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      type, start, delta, out, count);
  return launched("range");
}

std::string fill(void *out, int type, double value, int64_t count, void *stream) {
  if (count == 0)
    return {};
  fillKernel<<<unsigned(blocksFor(count, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      out, type, value, count);
  return launched("fill");
}

std::string writeInt64s(void *out, const int64_t *values, int count, void *stream) {
  if (count < 0 || count > kMaxDims)
    return "writeInt64s: at most " + std::to_string(kMaxDims) + " values";
  if (count == 0)
    return {};
  Int64s v{};
  for (int i = 0; i < count; ++i)
    v.v[i] = values[i];
  writeInt64sKernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<long long *>(out), v, count);
  return launched("writeInt64s");
}

} // namespace llmc::rt::cuda

// --- precision conversion at the edges of a run -------------------------------------------------

namespace llmc::rt::cuda {
namespace {

template <typename From, typename To>
__global__ void convertKernel(const From *__restrict__ in, To *__restrict__ out, int64_t n) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
    out[e] = fromF<To>(toF(in[e]));
}

} // namespace

std::string convertFloats(Storage from, const void *in, Storage to, void *out, int64_t count, void *stream) {
  if (count == 0)
    return {};
  dispatch(from, [&](auto fromTag) {
    dispatch(to, [&](auto toTag) {
      using F = decltype(fromTag);
      using T = decltype(toTag);
      convertKernel<F, T><<<unsigned(blocksFor(count, kElementThreads)), kElementThreads, 0,
                            static_cast<cudaStream_t>(stream)>>>(static_cast<const F *>(in), static_cast<T *>(out), count);
    });
  });
  return launched("convertFloats");
}

} // namespace llmc::rt::cuda
