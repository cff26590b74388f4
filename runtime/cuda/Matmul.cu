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
template <typename T> __global__ void matmulKernel(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ c,
                                                   const T *__restrict__ addend, MatmulArgs m, int64_t matrices) {
  using Acc = Wide<T>;
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
      c[z * m.M * m.N + row * m.N + col] = narrow<T>(
          Acc(m.alpha) * acc + (addend ? Acc(m.beta) * widen(addend[row * m.addRow + col * m.addCol]) : Acc(0)));
  }
}

// The dot product of a matrix row and an input row of K elements, summed over the warp: 16 bytes
// per lane and load where `vectors` (both rows 16-byte aligned, K a multiple of the elements in
// 16 bytes), else an element per lane and load.
template <typename T>
__device__ __forceinline__ float warpDot(const T *__restrict__ row, const T *__restrict__ in, int64_t K, bool vectors,
                                         int lane) {
  float acc = 0.0f;
  if (vectors) {
    constexpr int kPer = Lanes<T>::kCount;
    for (int64_t k = int64_t(lane) * kPer; k < K; k += 32 * kPer) {
      Lanes<T> a, b;
      widen(*reinterpret_cast<const uint4 *>(row + k), a);
      widen(*reinterpret_cast<const uint4 *>(in + k), b);
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        acc += a.v[i] * b.v[i];
    }
  } else {
    for (int64_t k = lane; k < K; k += 32)
      acc += float(widen(row[k])) * float(widen(in[k]));
  }
  return warpReduce<false>(acc);
}

// Expert linear: one warp per (result row r, output m): for each of its ids n (r alone, or the
// `group` ids r * group + j that a combine weighs), the dot product of the chosen matrix's row m
// and input row n / repeat (warpDot), plus the expert's bias where there is one; with `swiglu`, silu of that product times row m + width's
// (or GPT-OSS's clamped gating of the two, with `clamped`);
// weighted by combine[n] and summed where there is a combine. An id out of range sets `error`
// and counts 0. Correct first: every matrix is read in place (no copy per row), but by one warp
// per output.
template <typename T>
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
  for (int64_t n = r * group; n < (r + 1) * group; ++n) {
    int64_t e = ids[n];
    if (e < -a.E || e >= a.E) {
      if (lane == 0)
        atomicExch(error, 1);
      continue;
    }
    e = e < 0 ? e + a.E : e;
    const T *matrix = w + e * a.M * a.K, *in = x + (n / a.repeat) * a.K;
    const T *bias = a.bias ? static_cast<const T *>(a.bias) + e * a.M : nullptr;
    float v = warpDot(matrix + m * a.K, in, a.K, vectors, lane) + (bias ? float(widen(bias[m])) : 0.0f);
    if (a.swiglu) {
      const float up = warpDot(matrix + (m + width) * a.K, in, a.K, vectors, lane) +
                       (bias ? float(widen(bias[m + width])) : 0.0f);
      v = a.clamped ? clampedSwigluOf(v, up, a.alpha, a.limit) : swigluOf(v, up);
    }
    sum += combine ? float(widen(combine[n])) * v : v;
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
      expertLinearKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T *>(x), static_cast<const T *>(w), ids, static_cast<const T *>(combine),
          static_cast<T *>(y), a, vectors, error);
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

std::string matmul(int type, const void *a, const void *b, void *c, const MatmulArgs &m, void *stream,
                   const void *addend) {
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
  const bool known = type != Bool && dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    matmulKernel<T><<<grid, kMatmulThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(a), static_cast<const T *>(b), static_cast<T *>(c), static_cast<const T *>(addend), m,
        matrices);
  });
  return known ? launched("matmul") : "matmul: supports float and integer operands";
}

} // namespace llmc::rt::cuda
