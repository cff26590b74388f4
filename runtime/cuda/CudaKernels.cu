// The CUDA executor's hand-written kernels (see CudaKernels.h): templates over the storage type,
// f32 arithmetic throughout. One block per row for the row-wise kernels (the row staged in shared
// memory as f32), one thread per element for the data movement ones.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr int kElementThreads = 256;
constexpr int64_t kMaxRowCols = 12 * 1024; // the row staged in 48 KiB of shared memory

template <typename T, bool kLayer>
__global__ void addNormKernel(const T *__restrict__ x, const T *__restrict__ r, const T *__restrict__ scale,
                              const T *__restrict__ bias, T *__restrict__ out, T *__restrict__ sum, int64_t cols,
                              float eps) {
  extern __shared__ float row[];
  const int64_t base = int64_t(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = toF(x[base + c]) + (r ? toF(r[base + c]) : 0.0f);
    if (sum)
      sum[base + c] = fromF<T>(v);
    row[c] = v;
    acc += kLayer ? v : v * v;
  }
  const float total = blockReduce<false>(acc);
  float mean = 0.0f, inv;
  if (kLayer) {
    mean = total / float(cols);
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sq += (row[c] - mean) * (row[c] - mean);
    inv = rsqrtf(blockReduce<false>(sq) / float(cols) + eps);
  } else {
    inv = rsqrtf(total / float(cols) + eps);
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float y = (row[c] - mean) * inv * toF(scale[c]);
    if (bias)
      y += toF(bias[c]);
    out[base + c] = fromF<T>(y);
  }
}

template <typename T>
__global__ void softmaxKernel(const T *__restrict__ x, T *__restrict__ y, int64_t cols) {
  extern __shared__ float row[];
  const int64_t base = int64_t(blockIdx.x) * cols;
  float best = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    row[c] = toF(x[base + c]);
    best = fmaxf(best, row[c]);
  }
  best = blockReduce<true>(best);
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    row[c] = __expf(row[c] - best);
    acc += row[c];
  }
  const float inv = 1.0f / blockReduce<false>(acc);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    y[base + c] = fromF<T>(row[c] * inv);
}

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
    if (d >= r.rotaryDim) {
      y[e] = x[base + d];
      continue;
    }
    const int64_t pos = r.positions ? r.positions[b * S + s] : b * S + s; // without ids: tables [B, S, rot/2]
    if (pos < 0 || pos >= r.tableRows) {
      atomicExch(r.error, 1);
      y[e] = x[base + d];
      continue;
    }
    const int64_t i = r.interleaved ? d / 2 : (d < half ? d : d - half);
    const int64_t a = r.interleaved ? 2 * i : i, bIdx = r.interleaved ? 2 * i + 1 : i + half;
    const float c = toF(cosT[pos * half + i]), sn = toF(sinT[pos * half + i]);
    const float x1 = toF(x[base + a]), x2 = toF(x[base + bIdx]);
    y[e] = fromF<T>(d == a ? x1 * c - x2 * sn : x2 * c + x1 * sn);
  }
}

template <typename T> __global__ void rotaryKernel(RotaryArgs r) {
  rotaryElements<T>(r, int64_t(blockIdx.x) * blockDim.x + threadIdx.x, int64_t(gridDim.x) * blockDim.x);
}

template <typename T>
__global__ void gatherRowsKernel(const T *__restrict__ table, int64_t rows, int64_t width,
                                 const int64_t *__restrict__ ids, int64_t count, T *__restrict__ out, int *error) {
  const int64_t n = count * width;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t id = ids[e / width];
    if (id < 0)
      id += rows;
    if (id < 0 || id >= rows) {
      atomicExch(error, 1);
      out[e] = fromF<T>(0.0f);
    } else {
      out[e] = table[id * width + e % width];
    }
  }
}

template <typename T> __global__ void attentionKernel(AttentionArgs a) {
  extern __shared__ float smem[]; // q row (D), then Sk scores
  float *qrow = smem, *p = smem + a.D;
  const int64_t row = blockIdx.x, i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
  const int64_t kvh = h / (a.Hq / a.Hkv);
  const T *q = static_cast<const T *>(a.q) + b * a.qs.batch + i * a.qs.token + h * a.qs.head;
  const T *cosT = static_cast<const T *>(a.cos), *sinT = static_cast<const T *>(a.sin);
  const int64_t width = a.halfTables ? a.D / 2 : a.D; // of a table row
  const T *cq = cosT ? cosT + ((a.tablesPerBatch ? b : 0) * a.Sq + i) * width : nullptr;
  const T *sq = sinT ? sinT + ((a.tablesPerBatch ? b : 0) * a.Sq + i) * width : nullptr;
  for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
    qrow[d] = rotated(q, cq, sq, d, a.D, a.halfTables);
  __syncthreads();
  const T *kb = static_cast<const T *>(a.k) + b * a.ks.batch + kvh * a.ks.head;
  for (int64_t j = threadIdx.x; j < a.Sk; j += blockDim.x) {
    const T *kj = kb + j * a.ks.token;
    const T *ck = a.rotateKeys ? cosT + ((a.tablesPerBatch ? b : 0) * a.Sq + j) * width : nullptr;
    const T *sk = a.rotateKeys ? sinT + ((a.tablesPerBatch ? b : 0) * a.Sq + j) * width : nullptr;
    float dot = 0.0f;
    for (int64_t d = 0; d < a.D; ++d)
      dot += qrow[d] * rotated(kj, ck, sk, d, a.D, a.halfTables);
    float score = masked<T>(a, dot * a.scale,
                            b * a.maskStrides[0] + h * a.maskStrides[1] + i * a.maskStrides[2] + j * a.maskStrides[3]);
    if (a.causal && j > i + (a.Sk - a.Sq))
      score = -INFINITY;
    p[j] = score;
  }
  __syncthreads();
  float best;
  const float total = blockExpScores(p, a.Sk, &best);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f; // a fully masked row attends to nothing
  const T *vb = static_cast<const T *>(a.v) + b * a.vs.batch + kvh * a.vs.head;
  T *out = static_cast<T *>(a.out) + ((b * a.Sq + i) * a.Hq + h) * a.Dv;
  for (int64_t dv = threadIdx.x; dv < a.Dv; dv += blockDim.x) {
    float o = 0.0f;
    for (int64_t j = 0; j < a.Sk; ++j)
      o += p[j] * toF(vb[j * a.vs.token + dv]);
    out[dv] = fromF<T>(o * inv);
  }
}

template <typename T>
__global__ void linearEpilogueKernel(const T *__restrict__ y, T *__restrict__ out, const T *__restrict__ gate,
                                     const T *__restrict__ residual, int64_t M, int64_t N, Activation act, bool swiglu) {
  const int64_t n = M * N;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = e / N, c = e % N;
    float v;
    if (swiglu) {
      v = swigluOf(toF(y[m * 2 * N + c]), toF(y[m * 2 * N + N + c]));
    } else {
      v = activate(act, toF(y[e]));
    }
    if (gate)
      v *= toF(gate[e]);
    if (residual)
      v += toF(residual[e]);
    out[e] = fromF<T>(v);
  }
}

} // namespace

size_t storageBytes(Storage s) { return s == Storage::F32 ? 4 : 2; }

std::string addNorm(Storage s, bool layerNorm, const void *x, const void *residual, const void *scale,
                    const void *bias, void *out, void *sum, int64_t rows, int64_t cols, float epsilon, void *stream) {
  if (rows <= 0 || cols <= 0 || cols > kMaxRowCols)
    return "addNorm: rows must be positive and 1 <= cols <= " + std::to_string(kMaxRowCols);
  const size_t shared = size_t(cols) * sizeof(float);
  auto st = static_cast<cudaStream_t>(stream);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    auto kernel = layerNorm ? addNormKernel<T, true> : addNormKernel<T, false>;
    if (shared > 48 * 1024)
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    kernel<<<unsigned(rows), kRowThreads, shared, st>>>(static_cast<const T *>(x), static_cast<const T *>(residual),
                                                        static_cast<const T *>(scale), static_cast<const T *>(bias),
                                                        static_cast<T *>(out), static_cast<T *>(sum), cols, epsilon);
  });
  return launched("addNorm");
}

std::string softmax(Storage s, const void *x, void *y, int64_t rows, int64_t cols, void *stream) {
  if (rows <= 0 || cols <= 0 || cols > kMaxRowCols)
    return "softmax: rows must be positive and 1 <= cols <= " + std::to_string(kMaxRowCols);
  const size_t shared = size_t(cols) * sizeof(float);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    if (shared > 48 * 1024)
      cudaFuncSetAttribute(softmaxKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    softmaxKernel<T><<<unsigned(rows), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(y), cols);
  });
  return launched("softmax");
}

static std::string checkRotary(const RotaryArgs &a) {
  return a.rotaryDim <= 0 || a.rotaryDim % 2 || a.rotaryDim > a.D ? "rotary: rotaryDim must be even and within the head"
                                                                   : "";
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

std::string gatherRows(Storage s, const void *table, int64_t rows, int64_t width, const int64_t *ids, int64_t count,
                       void *out, int *error, void *stream) {
  if (count * width == 0)
    return {};
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    gatherRowsKernel<T><<<unsigned(blocksFor(count * width, kElementThreads)), kElementThreads, 0,
                          static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(table), rows, width, ids, count,
                                                               static_cast<T *>(out), error);
  });
  return launched("gatherRows");
}

} // namespace llmc::rt::cuda

namespace llmc::rt::cuda {

std::string attention(Storage s, const AttentionArgs &a, void *stream) {
  if (a.B <= 0 || a.Sq <= 0 || a.Sk <= 0 || a.Hkv <= 0 || a.Hq % a.Hkv || a.Sk > kMaxRowCols || (a.cos && a.D % 2) ||
      (a.rotateKeys && (!a.cos || a.Sk != a.Sq)))
    return "attention: bad shapes (Hq a multiple of Hkv, 1 <= Sk <= " + std::to_string(kMaxRowCols) +
           ", even D with rotary, Sk == Sq when keys rotate)";
  const size_t shared = size_t(a.D + a.Sk) * sizeof(float);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    if (shared > 48 * 1024)
      cudaFuncSetAttribute(attentionKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    attentionKernel<T><<<unsigned(a.B * a.Hq * a.Sq), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(a);
  });
  return launched("attention");
}

std::string linearEpilogue(Storage s, const void *y, void *out, const void *gate, const void *residual, int64_t M,
                           int64_t N, const std::string &activation, bool swiglu, void *stream) {
  Activation act;
  if (!parseActivation(activation, act))
    return "linearEpilogue: unknown activation '" + activation + "'";
  if (M * N == 0)
    return {};
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    linearEpilogueKernel<T><<<unsigned(blocksFor(M * N, kElementThreads)), kElementThreads, 0,
                             static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(y), static_cast<T *>(out),
                                                                  static_cast<const T *>(gate),
                                                                  static_cast<const T *>(residual), M, N, act, swiglu);
  });
  return launched("linearEpilogue");
}

} // namespace llmc::rt::cuda

// --- data movement and small ops --------------------------------------------------------------

namespace llmc::rt::cuda {
namespace {

// Piece `piece` of the batch; the blocks along x stride over its elements.
template <typename E> __device__ void copyPiece(const StridedCopies &b, int piece) {
  const StridedCopy &c = b.copy[piece];
  const E *__restrict__ src = static_cast<const E *>(b.src[piece]);
  E *__restrict__ dst = static_cast<E *>(b.dst[piece]);
  int64_t n = 1;
  for (int k = 0; k < c.rank; ++k)
    n *= c.dims[k];
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = e, s = c.srcBase, d = c.dstBase + (c.dstShift ? *c.dstShift * c.dstShiftStride : 0);
    for (int k = c.rank - 1; k >= 0; --k) {
      const int64_t i = rest % c.dims[k];
      rest /= c.dims[k];
      s += i * c.src[k];
      d += i * c.dst[k];
    }
    dst[d] = src[s];
  }
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

// DType numbers (Tensor.h).
enum : int { F32 = 1, F16 = 2, F64 = 3, I64 = 4, I32 = 5, I8 = 6, U8 = 7, Bool = 8, BF16 = 9 };

__device__ double loadAs(const void *p, int type, int64_t i) {
  switch (type) {
  case F32: return static_cast<const float *>(p)[i];
  case F16: return __half2float(static_cast<const __half *>(p)[i]);
  case BF16: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case F64: return static_cast<const double *>(p)[i];
  case I64: return double(static_cast<const long long *>(p)[i]);
  case I32: return static_cast<const int *>(p)[i];
  case I8: return static_cast<const signed char *>(p)[i];
  default: return static_cast<const unsigned char *>(p)[i]; // u8, bool
  }
}

__device__ void storeAs(void *p, int type, int64_t i, double v) {
  switch (type) {
  case F32: static_cast<float *>(p)[i] = float(v); break;
  case F16: static_cast<__half *>(p)[i] = fromF<__half>(float(v)); break;
  case BF16: static_cast<__nv_bfloat16 *>(p)[i] = fromF<__nv_bfloat16>(float(v)); break;
  case F64: static_cast<double *>(p)[i] = v; break;
  case I64: static_cast<long long *>(p)[i] = (long long)v; break;
  case I32: static_cast<int *>(p)[i] = int(v); break;
  case I8: static_cast<signed char *>(p)[i] = (signed char)v; break;
  case Bool: static_cast<unsigned char *>(p)[i] = v != 0.0; break;
  default: static_cast<unsigned char *>(p)[i] = (unsigned char)v; break;
  }
}

enum Ew : int {
  Add, Sub, Mul, Div, Pow, Max, Min, Equal, Less, LessEqual, Greater, GreaterEqual, And, Or, Xor, Where, Neg, Abs,
  Sqrt, Reciprocal, Exp, Log, Tanh, Erf, Sigmoid, Silu, Relu, Cos, Sin, Floor, Ceil, Sign, Not, Gelu, GeluTanh,
  Identity, Cast
};
const char *const kEwNames[] = {"add", "sub", "mul", "div", "pow", "max", "min", "equal", "less", "less_equal",
                                "greater", "greater_equal", "and", "or", "xor", "where", "neg", "abs", "sqrt",
                                "reciprocal", "exp", "log", "tanh", "erf", "sigmoid", "silu", "relu", "cos", "sin",
                                "floor", "ceil", "sign", "not", "gelu", "gelu_tanh", "identity", "cast"};

__device__ double apply(int op, double x, double y, double z, bool integral) {
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
    storeAs(a.out, a.outType, e, apply(a.op, v[0], v[1], v[2], integral));
  }
}

__global__ void rangeKernel(int type, const void *start, const void *delta, void *out, int64_t n) {
  const double s = loadAs(start, type, 0), d = loadAs(delta, type, 0);
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
    storeAs(out, type, e, s + double(e) * d);
}

struct Int64s {
  long long v[kMaxDims];
};
__global__ void writeInt64sKernel(long long *out, Int64s values, int count) {
  if (threadIdx.x < count)
    out[threadIdx.x] = values.v[threadIdx.x];
}

struct NdIndex {
  int64_t dims[kMaxDims], strides[kMaxDims];
};
template <typename E>
__global__ void gatherNdKernel(const E *__restrict__ data, const int64_t *__restrict__ indices, E *__restrict__ out,
                               int64_t tuples, int k, NdIndex nd, int64_t slice, int *error) {
  const int64_t n = tuples * slice;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = e / slice;
    int64_t offset = e % slice;
    bool ok = true;
    for (int j = 0; j < k; ++j) {
      int64_t idx = indices[t * k + j];
      if (idx < 0)
        idx += nd.dims[j];
      ok = ok && idx >= 0 && idx < nd.dims[j];
      offset += idx * nd.strides[j];
    }
    if (!ok) {
      atomicExch(error, 1);
      continue;
    }
    out[e] = data[offset];
  }
}

int64_t numelOf(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= dims[d];
  return n;
}

// Runs `f(E{})` with E an unsigned integer type of `bytes` bytes.
template <typename F> bool byElementSize(int bytes, F &&f) {
  switch (bytes) {
  case 1: f(uint8_t{}); return true;
  case 2: f(uint16_t{}); return true;
  case 4: f(uint32_t{}); return true;
  case 8: f(uint64_t{}); return true;
  default: return false;
  }
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

std::string stridedCopy(const void *src, void *dst, const StridedCopy &c, void *stream) {
  StridedCopies one;
  one.count = 1, one.src[0] = src, one.dst[0] = dst, one.copy[0] = c;
  return stridedCopies(one, stream);
}

int elementwiseOp(const std::string &name) {
  for (int i = 0; i < int(sizeof kEwNames / sizeof kEwNames[0]); ++i)
    if (name == kEwNames[i])
      return i;
  return -1;
}

int elementwiseArity(int op) { return op == Where ? 3 : op <= Xor ? 2 : 1; }

std::string elementwise(const ElementwiseArgs &a, void *stream) {
  const int64_t n = numelOf(a.rank, a.dims);
  if (a.op < 0 || a.op > Cast || a.numInputs != elementwiseArity(a.op) || a.rank > kMaxDims)
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

std::string gatherNd(const void *data, const int64_t *indices, void *out, int64_t tuples, int k, const int64_t *dims,
                     const int64_t *strides, int64_t slice, int elemBytes, int *error, void *stream) {
  if (k < 1 || k > kMaxDims)
    return "gatherNd: index depth must be 1.." + std::to_string(kMaxDims);
  if (tuples * slice == 0)
    return {};
  NdIndex nd{};
  for (int j = 0; j < k; ++j)
    nd.dims[j] = dims[j], nd.strides[j] = strides[j];
  const bool known = byElementSize(elemBytes, [&](auto tag) {
    using E = decltype(tag);
    gatherNdKernel<E><<<unsigned(blocksFor(tuples * slice, kElementThreads)), kElementThreads, 0,
                        static_cast<cudaStream_t>(stream)>>>(static_cast<const E *>(data), indices, static_cast<E *>(out),
                                                             tuples, k, nd, slice, error);
  });
  return known ? launched("gatherNd") : "gatherNd: elements of " + std::to_string(elemBytes) + " bytes";
}

// out[e] = data at e's coordinates over the indices' dims, the axis coordinate replaced by
// indices[e] (negative from the end).
template <typename E>
__global__ void gatherElementsKernel(const E *__restrict__ data, const int64_t *__restrict__ indices, E *__restrict__ out,
                                     int64_t n, int rank, int axis, NdIndex shape, NdIndex dataStrides, int64_t axisDim,
                                     int *error) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t idx = indices[e];
    if (idx < 0)
      idx += axisDim;
    if (idx < 0 || idx >= axisDim) {
      atomicExch(error, 1);
      continue;
    }
    int64_t rest = e, offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % shape.dims[d];
      rest /= shape.dims[d];
      offset += (d == axis ? idx : c) * dataStrides.dims[d];
    }
    out[e] = data[offset];
  }
}

std::string gatherElements(const void *data, const int64_t *indices, void *out, int rank, int axis,
                           const int64_t *indexDims, const int64_t *dataDims, int elemBytes, int *error, void *stream) {
  if (rank < 1 || rank > kMaxDims || axis < 0 || axis >= rank)
    return "gatherElements: rank 1.." + std::to_string(kMaxDims) + " and an axis within it";
  NdIndex shape{}, strides{};
  int64_t n = 1, stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    shape.dims[d] = indexDims[d], n *= indexDims[d];
    strides.dims[d] = stride, stride *= dataDims[d];
  }
  if (n == 0)
    return {};
  const bool known = byElementSize(elemBytes, [&](auto tag) {
    using E = decltype(tag);
    gatherElementsKernel<E><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0,
                              static_cast<cudaStream_t>(stream)>>>(static_cast<const E *>(data), indices,
                                                                   static_cast<E *>(out), n, rank, axis, shape, strides,
                                                                   dataDims[axis], error);
  });
  return known ? launched("gatherElements") : "gatherElements: elements of " + std::to_string(elemBytes) + " bytes";
}

} // namespace llmc::rt::cuda

// --- reductions, convolution, pooling, padding ------------------------------------------------

namespace llmc::rt::cuda {
namespace {

enum ReduceKind : int { RSum, RMean, RMax, RMin, RL2, RSumSquare };

struct ReduceShape {
  int rank;
  int64_t dims[kMaxDims], strides[kMaxDims];
  bool reduced[kMaxDims];
  int64_t count; // elements reduced into each output
};

template <typename T>
__global__ void reduceKernel(const T *__restrict__ in, T *__restrict__ out, ReduceShape r, int kind,
                             int64_t outputs) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = o, base = 0;
    for (int d = r.rank - 1; d >= 0; --d)
      if (!r.reduced[d]) {
        base += (rest % r.dims[d]) * r.strides[d];
        rest /= r.dims[d];
      }
    double acc = kind == RMax ? -INFINITY : kind == RMin ? INFINITY : 0.0;
    for (int64_t k = 0; k < r.count; ++k) {
      int64_t q = k, at = base;
      for (int d = r.rank - 1; d >= 0; --d)
        if (r.reduced[d]) {
          at += (q % r.dims[d]) * r.strides[d];
          q /= r.dims[d];
        }
      const double v = toF(in[at]);
      acc = kind == RMax ? fmax(acc, v) : kind == RMin ? fmin(acc, v) : kind == RL2 || kind == RSumSquare ? acc + v * v : acc + v;
    }
    out[o] = fromF<T>(float(kind == RMean ? acc / double(r.count) : kind == RL2 ? sqrt(acc) : acc));
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

int64_t sizeOf(const int64_t *dims, int n) {
  int64_t s = 1;
  for (int d = 0; d < n; ++d)
    s *= dims[d];
  return s;
}

template <typename T>
__global__ void convKernel(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ bias,
                           T *__restrict__ y, int64_t N, int64_t C, int64_t M, int64_t group, Window win,
                           int64_t inSize, int64_t outSize, int64_t kernelSize) {
  const int64_t total = N * M * outSize, Cg = C / group, Mg = M / group;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e % outSize, m = (e / outSize) % M, b = e / (outSize * M), g = m / Mg;
    float acc = bias ? toF(bias[m]) : 0.0f;
    for (int64_t c = 0; c < Cg; ++c) {
      const T *xc = x + (b * C + g * Cg + c) * inSize;
      const T *wc = w + (m * Cg + c) * kernelSize;
      for (int64_t k = 0; k < kernelSize; ++k) {
        const int64_t at = tapOffset(win, o, k);
        if (at >= 0)
          acc += toF(xc[at]) * toF(wc[k]);
      }
    }
    y[e] = fromF<T>(acc);
  }
}

template <typename T>
__global__ void poolKernel(bool max, const T *__restrict__ x, T *__restrict__ y, int64_t planes, Window win,
                           int64_t inSize, int64_t outSize, int64_t kernelSize, bool countPad) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < planes * outSize; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e % outSize, p = e / outSize;
    const T *xp = x + p * inSize;
    float acc = max ? -INFINITY : 0.0f;
    int64_t counted = 0;
    for (int64_t k = 0; k < kernelSize; ++k) {
      const int64_t at = tapOffset(win, o, k);
      if (at < 0)
        continue;
      acc = max ? fmaxf(acc, toF(xp[at])) : acc + toF(xp[at]);
      ++counted;
    }
    y[e] = fromF<T>(max ? acc : acc / float(countPad ? kernelSize : (counted ? counted : 1)));
  }
}

struct PadShape {
  int rank;
  int64_t in[kMaxDims], out[kMaxDims], begin[kMaxDims];
};

// mode 0 constant, 1 edge (clamp), 2 reflect (mirror without repeating the edge), 3 wrap.
template <typename T>
__global__ void padKernel(const T *__restrict__ in, T *__restrict__ out, PadShape s, float value, int mode,
                          int64_t n) {
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
    out[e] = inside ? in[at] : fromF<T>(value);
  }
}

} // namespace

std::string reduce(Storage st, const std::string &kind, const void *in, void *out, int rank, const int64_t *dims,
                   const bool *reduced, void *stream) {
  const int k = kind == "sum" ? RSum : kind == "mean" ? RMean : kind == "max" ? RMax : kind == "min" ? RMin
              : kind == "l2" ? RL2 : kind == "sum_square" ? RSumSquare : -1;
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
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    reduceKernel<T><<<unsigned(blocksFor(outputs, kElementThreads)), kElementThreads, 0,
                      static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(in), static_cast<T *>(out), r, k,
                                                           outputs);
  });
  return launched("reduce");
}

std::string conv(Storage st, const void *x, const void *w, const void *bias, void *y, int64_t N, int64_t C, int64_t M,
                 int64_t group, const Window &win, void *stream) {
  if (win.spatial < 1 || win.spatial > 3 || group < 1 || C % group || M % group)
    return "conv: 1 to 3 spatial dims and channels divisible by the group";
  const int64_t outSize = sizeOf(win.out, win.spatial), total = N * M * outSize;
  if (total == 0)
    return {};
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    convKernel<T><<<unsigned(blocksFor(total, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<const T *>(w), static_cast<const T *>(bias), static_cast<T *>(y), N, C, M,
        group, win, sizeOf(win.in, win.spatial), outSize, sizeOf(win.kernel, win.spatial));
  });
  return launched("conv");
}

std::string pool(Storage st, bool max, const void *x, void *y, int64_t planes, const Window &win, bool countPad,
                 void *stream) {
  if (win.spatial < 1 || win.spatial > 3)
    return "pool: 1 to 3 spatial dims";
  const int64_t outSize = sizeOf(win.out, win.spatial);
  if (planes * outSize == 0)
    return {};
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    poolKernel<T><<<unsigned(blocksFor(planes * outSize, kElementThreads)), kElementThreads, 0,
                    static_cast<cudaStream_t>(stream)>>>(max, static_cast<const T *>(x), static_cast<T *>(y), planes, win,
                                                         sizeOf(win.in, win.spatial), outSize,
                                                         sizeOf(win.kernel, win.spatial), countPad);
  });
  return launched("pool");
}

std::string pad(Storage st, const std::string &mode, const void *in, void *out, int rank, const int64_t *inDims,
                const int64_t *outDims, const int64_t *padBegin, float value, void *stream) {
  const int m = mode.empty() || mode == "constant" ? 0 : mode == "edge" ? 1 : mode == "reflect" ? 2 : mode == "wrap" ? 3 : -1;
  if (m < 0)
    return "pad: unknown mode '" + mode + "'";
  if (rank < 0 || rank > kMaxDims)
    return "pad: rank above " + std::to_string(kMaxDims);
  PadShape s{};
  s.rank = rank;
  for (int d = 0; d < rank; ++d)
    s.in[d] = inDims[d], s.out[d] = outDims[d], s.begin[d] = padBegin[d];
  const int64_t n = sizeOf(outDims, rank);
  if (n == 0)
    return {};
  dispatch(st, [&](auto tag) {
    using T = decltype(tag);
    padKernel<T><<<unsigned(blocksFor(n, kElementThreads)), kElementThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(in), static_cast<T *>(out), s, value, m, n);
  });
  return launched("pad");
}

} // namespace llmc::rt::cuda

namespace llmc::rt::cuda {
namespace {

struct LatentArgs {
  const void *q, *cache, *wuk, *wuv;
  LatentMask mask;
  void *out;
  int64_t B, H, Sq, Sk, nope, rope, latent, v;
  float scale;
  const int64_t *skOnDevice; // null: Sk keys; else the count there (at most Sk)
};

template <typename T> __global__ void latentAttentionKernel(LatentArgs a) {
  extern __shared__ float smem[]; // query in the latent space (latent + rope), Sk scores, latent output
  const int64_t width = a.latent + a.rope;
  const T *cache = static_cast<const T *>(a.cache), *wuk = static_cast<const T *>(a.wuk),
          *wuv = static_cast<const T *>(a.wuv);
  T *out = static_cast<T *>(a.out);
  float *ql = smem, *p = smem + width, *ol = p + a.Sk;
  int64_t Sk = a.Sk;
  if (a.skOnDevice && *a.skOnDevice < Sk)
    Sk = *a.skOnDevice;
  const int64_t row = blockIdx.x, i = row % a.Sq, h = (row / a.Sq) % a.H, b = row / (a.Sq * a.H);
  const int64_t qWidth = a.wuk ? a.nope + a.rope : width;
  const T *q = static_cast<const T *>(a.q) + row * qWidth;
  for (int64_t l = threadIdx.x; l < width; l += blockDim.x) {
    if (!wuk || l >= a.latent) {
      ql[l] = toF(wuk ? q[a.nope + (l - a.latent)] : q[l]);
    } else {
      float acc = 0.0f;
      for (int64_t n = 0; n < a.nope; ++n)
        acc += toF(q[n]) * toF(wuk[(h * a.nope + n) * a.latent + l]);
      ql[l] = acc;
    }
  }
  __syncthreads();
  for (int64_t t = threadIdx.x; t < Sk; t += blockDim.x) {
    const T *c = cache + (t * a.B + b) * width;
    float dot = 0.0f;
    for (int64_t l = 0; l < width; ++l)
      dot += ql[l] * toF(c[l]);
    float score = dot * a.scale;
    const LatentMask &m = a.mask;
    if (m.data) {
      const int64_t batchStride = m.rowPerBatch ? Sk : m.strides[0];
      const int64_t at = b * batchStride + h * m.strides[1] + i * m.strides[2] + t * m.strides[3];
      switch (m.type) {
      case AttentionArgs::Mask::Additive: score += toF(static_cast<const T *>(m.data)[at]); break;
      case AttentionArgs::Mask::Bool: score = static_cast<const uint8_t *>(m.data)[at] ? score : -INFINITY; break;
      case AttentionArgs::Mask::Int64: score = static_cast<const int64_t *>(m.data)[at] ? score : -INFINITY; break;
      }
    }
    if (m.causal && t > i + (Sk - a.Sq)) // Sk: this run's key count
      score = -INFINITY;
    p[t] = score;
  }
  __syncthreads();
  float best;
  const float total = blockExpScores(p, Sk, &best);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  for (int64_t l = threadIdx.x; l < a.latent; l += blockDim.x) {
    float o = 0.0f;
    for (int64_t t = 0; t < Sk; ++t)
      o += p[t] * toF(cache[(t * a.B + b) * width + l]);
    ol[l] = o * inv;
  }
  __syncthreads();
  if (!wuv) {
    for (int64_t l = threadIdx.x; l < a.latent; l += blockDim.x)
      out[row * a.latent + l] = fromF<T>(ol[l]);
    return;
  }
  for (int64_t j = threadIdx.x; j < a.v; j += blockDim.x) {
    float o = 0.0f;
    for (int64_t l = 0; l < a.latent; ++l)
      o += ol[l] * toF(wuv[(h * a.latent + l) * a.v + j]);
    out[row * a.v + j] = fromF<T>(o);
  }
}

} // namespace

void latentAttentionSetup() {
  for (Storage s : {Storage::F32, Storage::F16, Storage::BF16})
    dispatch(s, [](auto tag) {
      cudaFuncSetAttribute(latentAttentionKernel<decltype(tag)>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(kMaxLatentAttentionShared));
    });
}

size_t latentAttentionSharedBytes(int64_t latent, int64_t rope, int64_t Sk) {
  return size_t(latent + rope + Sk + latent) * sizeof(float);
}

std::string latentAttention(Storage st, const void *q, const void *cache, const void *wuk, const void *wuv,
                            const LatentMask &mask, void *out, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                            int64_t nope, int64_t rope, int64_t latent, int64_t v, float scale,
                            const int64_t *skOnDevice, void *stream) {
  const size_t shared = latentAttentionSharedBytes(latent, rope, Sk);
  if (B <= 0 || H <= 0 || Sq <= 0 || Sk <= 0 || shared > kMaxLatentAttentionShared)
    return "latentAttention: bad shapes or a cache longer than this kernel stages (" + std::to_string(Sk) + " rows)";
  const LatentArgs a{q, cache, wuk, wuv, mask, out, B, H, Sq, Sk, nope, rope, latent, v, scale, skOnDevice};
  dispatch(st, [&](auto tag) {
    latentAttentionKernel<decltype(tag)>
        <<<unsigned(B * H * Sq), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(a);
  });
  return launched("latentAttention");
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
