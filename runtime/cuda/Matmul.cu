// numpy's matmul of two activations on the CUDA executor (CudaKernels.h, matmul): tiles of 16 x 16
// in shared memory, accumulated in Wide<T> (f32 for f32, f16 and bf16; f64; int64 for integers).
// Correct first: what it runs is the attention that llmc-raise-attention left as matmuls (its
// linears have weights and run on cuBLASLt), other products of activations, and the gemms that no
// linear took (transposed, scaled, with an addend).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

namespace llmc::rt::cuda {
namespace {

constexpr int kMatmulTile = 16, kMatmulThreads = kMatmulTile * kMatmulTile;

// Block (column tile, row tile, z): C's tile of matrix z (and z + gridDim.z, ...), A's rows of it
// times B's columns, K in steps of a tile through shared memory (a column of padding each, so
// that a thread's reads along a column of B's tile fall in distinct banks).
// A, B and C are one type, or each of f32 and one 16-bit type (mixedMatmul), accumulated in f32.
template <typename A, typename B, typename C>
__global__ void matmulKernel(const A *__restrict__ a, const B *__restrict__ b, C *__restrict__ c,
                             const C *__restrict__ addend, MatmulArgs m, int64_t matrices) {
  using Acc = Wide<A>;
  __shared__ Acc as[kMatmulTile][kMatmulTile + 1];
  __shared__ Acc bs[kMatmulTile][kMatmulTile + 1];
  const int tx = threadIdx.x % kMatmulTile, ty = threadIdx.x / kMatmulTile;
  const int64_t row = int64_t(blockIdx.y) * kMatmulTile + ty, col = int64_t(blockIdx.x) * kMatmulTile + tx;
  for (int64_t z = blockIdx.z; z < matrices; z += gridDim.z) {
    int64_t rest = z, aAt = 0, bAt = 0;
    for (int d = m.batchRank - 1; d >= 0; --d) {
      const int64_t i = rest % m.batch[d];
      rest /= m.batch[d];
      aAt += i * m.aStride[d], bAt += i * m.bStride[d];
    }
    Acc acc = 0;
    for (int64_t k0 = 0; k0 < m.K; k0 += kMatmulTile) {
      as[ty][tx] = row < m.M && k0 + tx < m.K ? widen(a[aAt + row * m.aRow + (k0 + tx) * m.aCol]) : Acc(0);
      bs[ty][tx] = k0 + ty < m.K && col < m.N ? widen(b[bAt + (k0 + ty) * m.bRow + col * m.bCol]) : Acc(0);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kMatmulTile; ++k)
        acc += as[ty][k] * bs[k][tx];
      __syncthreads(); // every thread is done with the tiles before the next are loaded
    }
    // alpha and beta in the accumulator's type (an integer gemm's truncated, as the CPU's)
    if (row < m.M && col < m.N)
      c[z * m.M * m.N + row * m.N + col] = narrow<C>(
          Acc(m.alpha) * acc + (addend ? Acc(m.beta) * widen(addend[row * m.addRow + col * m.addCol]) : Acc(0)));
  }
}

// The dot products of up to kDots matrix rows with their input rows (K elements each; a null row
// is skipped, its sum 0), summed over the warp, in one pass over K: each lane has a load of every
// row in flight at once, where a dot product at a time left it one. 16 bytes per lane and load
// where `vectors` (the rows 16-byte aligned, K a multiple of the elements in 16 bytes), else an
// element per lane and load. Each sum is added up in the order one row alone would take.
template <typename T, int kDots>
__device__ __forceinline__ void warpDots(const T *const (&rows)[kDots], const T *const (&ins)[kDots], int64_t K,
                                         bool vectors, int lane, float (&sums)[kDots]) {
  float acc[kDots];
#pragma unroll
  for (int j = 0; j < kDots; ++j)
    acc[j] = 0.0f;
  if (vectors) {
    constexpr int kPer = Lanes<T>::kCount;
    for (int64_t k = int64_t(lane) * kPer; k < K; k += 32 * kPer)
#pragma unroll
      for (int j = 0; j < kDots; ++j)
        if (rows[j]) {
          Lanes<T> a, b;
          widen(*reinterpret_cast<const uint4 *>(rows[j] + k), a);
          widen(*reinterpret_cast<const uint4 *>(ins[j] + k), b);
#pragma unroll
          for (int i = 0; i < kPer; ++i)
            acc[j] += a.v[i] * b.v[i];
        }
  } else {
    for (int64_t k = lane; k < K; k += 32)
#pragma unroll
      for (int j = 0; j < kDots; ++j)
        if (rows[j])
          acc[j] += float(widen(rows[j][k])) * float(widen(ins[j][k]));
  }
#pragma unroll
  for (int j = 0; j < kDots; ++j)
    sums[j] = warpReduce<false>(acc[j]);
}

// Expert linear: one warp per (result row r, output m): for each of its ids n (r alone, or the
// `group` ids r * group + j that a combine weighs), the dot product of the chosen matrix's row m
// and input row n / repeat, plus the expert's bias where there is one; with `swiglu`, silu of that
// product times row m + width's (or GPT-OSS's clamped gating of the two, with `clamped`);
// weighted by combine[n] and summed in order of j where there is a combine. kGroup ids at a time
// (1, 4 or 8), each with its gate and up rows, go through warpDots together (a decode step's few
// ids: every matrix row the output needs in flight at once). An id out of range sets `error` and
// counts 0. Every matrix is read in place (no copy per row); many ids (a prompt's) take
// groupedExpertLinear instead, which reads a matrix once per 64 of its rows.
template <typename T, int kGroup>
__global__ void expertLinearKernel(const T *__restrict__ x, const T *__restrict__ w, const int64_t *__restrict__ ids,
                                   const T *__restrict__ combine, T *__restrict__ y, ExpertLinearArgs a, bool vectors,
                                   int *error) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const int64_t width = a.swiglu ? a.M / 2 : a.M, group = combine ? a.group : 1;
  if (warp >= a.N / group * width)
    return;
  const int64_t r = warp / width, m = warp % width;
  float sum = 0.0f;
  for (int64_t j0 = 0; j0 < group; j0 += kGroup) {
    const T *rows[2 * kGroup], *ins[2 * kGroup]; // id j's gate (or only) row at 2j, its up row at 2j + 1
    int64_t expert[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int64_t n = r * group + j0 + j;
      int64_t e = j0 + j < group ? ids[n] : -1 - a.E;
      if (j0 + j < group && (e < -a.E || e >= a.E) && lane == 0)
        atomicExch(error, 1);
      e = e < -a.E || e >= a.E ? -1 : e < 0 ? e + a.E : e;
      expert[j] = e;
      const T *matrix = e >= 0 ? w + e * a.M * a.K : nullptr;
      rows[2 * j] = matrix ? matrix + m * a.K : nullptr;
      rows[2 * j + 1] = matrix && a.swiglu ? matrix + (m + width) * a.K : nullptr;
      ins[2 * j] = ins[2 * j + 1] = matrix ? x + (n / a.repeat) * a.K : nullptr;
    }
    float dots[2 * kGroup];
    warpDots(rows, ins, a.K, vectors, lane, dots);
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      if (expert[j] < 0)
        continue;
      const int64_t n = r * group + j0 + j;
      const T *bias = a.bias ? static_cast<const T *>(a.bias) + expert[j] * a.M : nullptr;
      float v = dots[2 * j] + (bias ? float(widen(bias[m])) : 0.0f);
      if (a.swiglu) {
        const float up = dots[2 * j + 1] + (bias ? float(widen(bias[m + width])) : 0.0f);
        v = a.clamped ? clampedSwigluOf(v, up, a.alpha, a.limit, a.upOffset) : swigluOf(v, up);
      }
      sum += combine ? float(widen(combine[n])) * v : v;
    }
  }
  if (lane == 0)
    y[warp] = narrow<T>(sum);
}

} // namespace

std::string expertLinearArgsError(const ExpertLinearArgs &a, bool combined) {
  if (a.repeat < 1 || (a.swiglu && a.M % 2 != 0) || (combined && (a.group < 1 || a.N % a.group != 0)) ||
      (a.clamped && (!a.swiglu || !(a.limit > 0))))
    return "expert_linear: bad repeat, group or swiglu width";
  return {};
}

std::string expertLinear(int type, const void *x, const void *w, const int64_t *ids, const void *combine, void *y,
                         const ExpertLinearArgs &a, int *error, void *stream) {
  if (std::string err = expertLinearArgsError(a, combine != nullptr); !err.empty())
    return err;
  const int64_t outputs = a.N / (combine ? a.group : 1) * (a.swiglu ? a.M / 2 : a.M);
  if (outputs == 0)
    return {};
  constexpr int kThreads = 256;
  const int64_t blocks = (outputs * 32 + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffff)
    return "expert_linear: too many outputs";
  const bool known = type != F64 && dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, double>) { // (f32, f16, bf16: the 16-byte loads' types)
      const bool vectors = a.K % Lanes<T>::kCount == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                           reinterpret_cast<uintptr_t>(w) % 16 == 0;
      const auto launch = [&](auto kernel) {
        kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T *>(x), static_cast<const T *>(w), ids, static_cast<const T *>(combine),
            static_cast<T *>(y), a, vectors, error);
      };
      const int64_t group = combine ? a.group : 1;
      if (group == 1)
        launch(expertLinearKernel<T, 1>);
      else if (group <= 4)
        launch(expertLinearKernel<T, 4>);
      else
        launch(expertLinearKernel<T, 8>);
    }
  });
  return known ? launched("expert_linear") : "expert_linear: supports f32, f16 and bf16";
}

std::string matmulArgsOf(int aRank, const int64_t *aDims, int bRank, const int64_t *bDims, MatmulArgs &m) {
  if (aRank < 1 || bRank < 1)
    return "operands must have rank >= 1";
  // The matrices' dims: a rank-1 A is one row, a rank-1 B one column.
  const int64_t rowsA = aRank == 1 ? 1 : aDims[aRank - 2], colsB = bRank == 1 ? 1 : bDims[bRank - 1];
  const int64_t inner = aDims[aRank - 1], innerB = bRank == 1 ? bDims[0] : bDims[bRank - 2];
  if (inner != innerB)
    return "inner dimensions differ";
  const int batchA = std::max(aRank - 2, 0), batchB = std::max(bRank - 2, 0);
  m = MatmulArgs{};
  m.M = rowsA, m.K = inner, m.N = colsB, m.batchRank = std::max(batchA, batchB);
  m.aRow = m.K, m.bRow = m.N;
  if (m.batchRank > kMaxDims)
    return "more than " + std::to_string(kMaxDims) + " batch dimensions";
  // Innermost first: each operand's matrices along a batch dim of C, 0 where it broadcasts.
  int64_t aMatrices = 1, bMatrices = 1;
  for (int d = m.batchRank - 1; d >= 0; --d) {
    const int ia = d - (m.batchRank - batchA), ib = d - (m.batchRank - batchB);
    const int64_t da = ia >= 0 ? aDims[ia] : 1, db = ib >= 0 ? bDims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return "batch dimensions do not broadcast";
    m.batch[d] = std::max(da, db);
    m.aStride[d] = da == 1 ? 0 : aMatrices * m.M * m.K;
    m.bStride[d] = db == 1 ? 0 : bMatrices * m.K * m.N;
    aMatrices *= da, bMatrices *= db;
  }
  return {};
}

std::string gemmArgsOf(const int64_t *aDims, const int64_t *bDims, bool transA, bool transB, int addRank,
                       const int64_t *addDims, MatmulArgs &m) {
  m = MatmulArgs{};
  m.M = aDims[transA ? 1 : 0], m.K = aDims[transA ? 0 : 1], m.N = bDims[transB ? 0 : 1];
  if (bDims[transB ? 1 : 0] != m.K)
    return "inner dimensions differ";
  m.aRow = transA ? 1 : m.K, m.aCol = transA ? m.M : 1;
  m.bRow = transB ? 1 : m.N, m.bCol = transB ? m.K : 1;
  if (addRank > 2)
    return "C has rank above 2";
  const int64_t rows = addRank == 2 ? addDims[0] : 1, cols = addRank >= 1 ? addDims[addRank - 1] : 1;
  if ((rows != 1 && rows != m.M) || (cols != 1 && cols != m.N))
    return "C does not broadcast to the product's shape";
  m.addRow = rows == 1 ? 0 : cols, m.addCol = cols == 1 ? 0 : 1;
  return {};
}

namespace {

// Checks m's shapes and returns launch(grid, matrices) where there is a product to compute.
template <typename F> std::string launchMatmul(const MatmulArgs &m, F &&launch) {
  if (m.batchRank < 0 || m.batchRank > kMaxDims || m.M < 0 || m.N < 0 || m.K < 0)
    return "matmul: bad shapes";
  int64_t matrices = 1;
  for (int d = 0; d < m.batchRank; ++d)
    matrices *= m.batch[d];
  if (matrices * m.M * m.N == 0)
    return {};
  const int64_t across = (m.N + kMatmulTile - 1) / kMatmulTile, down = (m.M + kMatmulTile - 1) / kMatmulTile;
  if (across > 0x7fffffff || down > 65535)
    return "matmul: more than 65535 tiles of rows";
  const dim3 grid(static_cast<unsigned>(across), static_cast<unsigned>(down),
                  static_cast<unsigned>(std::min<int64_t>(matrices, 65535)));
  return launch(grid, matrices);
}

// The 16-bit type among a matmul's types: f16 where one is, else bf16.
int halfTypeOf(int aType, int bType, int cType) { return aType == F16 || bType == F16 || cType == F16 ? F16 : BF16; }

// Runs `f(T{})` with T f32 where `type` is F32, else X.
template <typename X, typename F> void f32Or(int type, F &&f) {
  if (type == F32)
    f(float{});
  else
    f(X{});
}

} // namespace

std::string matmul(int type, const void *a, const void *b, void *c, const MatmulArgs &m, void *stream,
                   const void *addend) {
  if (type == Bool || !dispatchNumeric(type, [](auto) {}))
    return "matmul: supports float and integer operands";
  return launchMatmul(m, [&](dim3 grid, int64_t matrices) {
    dispatchNumeric(type, [&](auto tag) {
      using T = decltype(tag);
      matmulKernel<T, T, T><<<grid, kMatmulThreads, 0, static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T *>(a), static_cast<const T *>(b), static_cast<T *>(c), static_cast<const T *>(addend), m,
          matrices);
    });
    return launched("matmul");
  });
}

bool mixedMatmulTakes(int aType, int bType, int cType) {
  const int half = halfTypeOf(aType, bType, cType);
  for (int type : {aType, bType, cType})
    if (type != F32 && type != half)
      return false;
  return true;
}

std::string mixedMatmul(int aType, int bType, int cType, const void *a, const void *b, void *c, const MatmulArgs &m,
                        void *stream) {
  if (!mixedMatmulTakes(aType, bType, cType))
    return "matmul: mixes types other than f32 and one 16-bit type";
  const int half = halfTypeOf(aType, bType, cType);
  auto over = [&](auto x, dim3 grid, int64_t matrices) {
    using X = decltype(x);
    f32Or<X>(aType, [&](auto ta) {
      f32Or<X>(bType, [&](auto tb) {
        f32Or<X>(cType, [&](auto tc) {
          using A = decltype(ta);
          using B = decltype(tb);
          using C = decltype(tc);
          matmulKernel<A, B, C><<<grid, kMatmulThreads, 0, static_cast<cudaStream_t>(stream)>>>(
              static_cast<const A *>(a), static_cast<const B *>(b), static_cast<C *>(c), nullptr, m, matrices);
        });
      });
    });
  };
  return launchMatmul(m, [&](dim3 grid, int64_t matrices) {
    if (half == F16)
      over(__half{}, grid, matrices);
    else
      over(__nv_bfloat16{}, grid, matrices);
    return launched("matmul");
  });
}

} // namespace llmc::rt::cuda
