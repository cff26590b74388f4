// Matrix products: matmul (numpy semantics, batched with broadcast) and gemm. Float GEMMs go
// to OpenBLAS (multithreaded, see docs/design.md); other element types use a plain loop.
#include "Activation.h"
#include "KernelUtil.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <string_view>
#include <vector>

namespace llmc::rt {
namespace {

template <typename T>
void naiveGemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T *A, int64_t lda,
               const T *B, int64_t ldb, T beta, T *C, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (transA ? A[k * lda + m] : A[m * lda + k]) * (transB ? B[n * ldb + k] : B[k * ldb + n]);
      C[m * ldc + n] = alpha * acc + (beta == T(0) ? T(0) : beta * C[m * ldc + n]);
    }
}

template <typename T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T *A, int64_t lda,
          const T *B, int64_t ldb, T beta, T *C, int64_t ldc) {
  if (M == 0 || N == 0)
    return;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, int(M),
                int(N), int(K), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, int(M),
                int(N), int(K), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  } else {
    naiveGemm<T>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

// matmul: A [..., M, K] x B [..., K, N] -> [..., M, N]; rank-1 operands are promoted as in numpy.
std::string matmulKernel(const KernelArgs &args) {
  if (args.numInputs != 2 || args.numOutputs != 1)
    return "expects 2 inputs and 1 output";
  const TensorRef &a = args.in(0), &b = args.in(1);
  TensorRef &out = args.out(0);
  if (a.dtype != b.dtype)
    return "operand element types differ";
  if (a.shape.rank == 0 || b.shape.rank == 0)
    return "operands must have rank >= 1";
  Shape sa = a.shape, sb = b.shape;
  if (sa.rank == 1) { // [K] -> [1, K]
    sa.rank = 2;
    sa.dims[1] = sa.dims[0];
    sa.dims[0] = 1;
  }
  if (sb.rank == 1) { // [K] -> [K, 1]
    sb.rank = 2;
    sb.dims[1] = 1;
  }
  const int64_t M = sa.dims[sa.rank - 2], K = sa.dims[sa.rank - 1];
  const int64_t N = sb.dims[sb.rank - 1];
  if (sb.dims[sb.rank - 2] != K)
    return "inner dimensions differ: " + a.shape.str() + " x " + b.shape.str();
  // Batch shapes (all but the last two dims), broadcast against each other.
  Shape ba, bb, bo;
  ba.rank = sa.rank - 2;
  bb.rank = sb.rank - 2;
  for (int i = 0; i < ba.rank; ++i)
    ba.dims[i] = sa.dims[i];
  for (int i = 0; i < bb.rank; ++i)
    bb.dims[i] = sb.dims[i];
  bo.rank = std::max(ba.rank, bb.rank);
  for (int i = 0; i < bo.rank; ++i) {
    int ia = i - (bo.rank - ba.rank), ib = i - (bo.rank - bb.rank);
    int64_t da = ia >= 0 ? ba.dims[ia] : 1, db = ib >= 0 ? bb.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return "batch dimensions do not broadcast: " + a.shape.str() + " x " + b.shape.str();
    bo.dims[i] = std::max(da, db);
  }
  if (out.numel() != bo.numel() * M * N)
    return "output size does not match " + a.shape.str() + " x " + b.shape.str();
  std::string err;
  LLMC_DISPATCH_NUMERIC(a.dtype, T, err, {
    const T *pa = a.as<const T>(), *pb = b.as<const T>();
    T *po = out.as<T>();
    if (bb.numel() == 1 && ba.numel() == bo.numel()) {
      // B is shared by every batch: one GEMM over the batch folded into M.
      gemm<T>(false, false, bo.numel() * M, N, K, T(1), pa, K, pb, N, T(0), po, N);
    } else {
      int64_t sA[kMaxRank], sB[kMaxRank];
      broadcastStrides(ba, bo, sA);
      broadcastStrides(bb, bo, sB);
      const int64_t batches = bo.numel();
      int64_t index[kMaxRank] = {};
      for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t offA = 0, offB = 0;
        for (int d = 0; d < bo.rank; ++d) {
          offA += index[d] * sA[d];
          offB += index[d] * sB[d];
        }
        gemm<T>(false, false, M, N, K, T(1), pa + offA * M * K, K, pb + offB * K * N, N, T(0), po + bi * M * N, N);
        advance(index, bo);
      }
    }
  });
  return err;
}

// gemm: Y = alpha * op(A) * op(B) + beta * C, with C broadcast to [M, N].
std::string gemmKernel(const KernelArgs &args) {
  if (args.numInputs < 2 || args.numOutputs != 1)
    return "expects 2 or 3 inputs and 1 output";
  const TensorRef &a = args.in(0), &b = args.in(1);
  TensorRef &out = args.out(0);
  if (a.shape.rank != 2 || b.shape.rank != 2)
    return "operands must be matrices";
  const bool transA = args.attrs.getInt("transA", 0), transB = args.attrs.getInt("transB", 0);
  const double alpha = args.attrs.getFloat("alpha", 1.0), beta = args.attrs.getFloat("beta", 1.0);
  const int64_t M = transA ? a.shape[1] : a.shape[0], K = transA ? a.shape[0] : a.shape[1];
  const int64_t N = transB ? b.shape[0] : b.shape[1];
  if ((transB ? b.shape[1] : b.shape[0]) != K)
    return "inner dimensions differ: " + a.shape.str() + " x " + b.shape.str();
  if (out.shape.rank != 2 || out.shape[0] != M || out.shape[1] != N)
    return "output shape must be " + std::to_string(M) + "x" + std::to_string(N);
  const bool hasC = args.hasInput(2) && beta != 0.0;
  std::string err;
  LLMC_DISPATCH_NUMERIC(a.dtype, T, err, {
    T *po = out.as<T>();
    if (hasC) {
      const TensorRef &c = args.in(2);
      if (!broadcastsTo(c.shape, out.shape)) {
        err = "C of shape " + c.shape.str() + " does not broadcast to " + out.shape.str();
        break;
      }
      const T *pc = c.as<const T>();
      const Shape *ins[1] = {&c.shape};
      forEachRow<1>(out.shape, ins, [&](int64_t o, const int64_t *off, const int64_t *st, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          po[o + i] = pc[off[0] + i * st[0]];
      });
    }
    gemm<T>(transA, transB, M, N, K, T(alpha), a.as<const T>(), a.shape[1], b.as<const T>(), b.shape[1],
            hasC ? T(beta) : T(0), po, N);
  });
  return err;
}

// expert_linear: input [T, K], weight [E, M, K], ids [N] or [N, 1] (int64, negative from the end)
// with N = T * repeat -> [N, M], row n = weight[ids[n]] · input[n / repeat] (a mixture of
// experts' projection); with activation "swiglu" [N, M / 2], silu(first half) * second half
// ("clamped_swiglu": clampedSwigluOf, attributes alpha, limit and up_offset);
// with a combine [R, g] (R * g = N) [R, .], row r = sum over j of combine[r, j] * row r * g + j;
// with a bias [E, M] (input 4), bias[ids[n]] added to row n before the activation and the sum.
std::string expertLinearKernel(const KernelArgs &args) {
  if (args.numInputs < 3 || args.numInputs > 5 || args.numOutputs != 1)
    return "expects 3 to 5 inputs and 1 output";
  const TensorRef &x = args.in(0), &w = args.in(1), &ids = args.in(2);
  TensorRef &out = args.out(0);
  // (An empty combine: none, before a bias.)
  const bool combined = !absent(args, 3), biased = !absent(args, 4);
  const int64_t repeat = args.attrs.getInt("repeat", 1);
  ExpertGating gating;
  const bool gatingKnown = parseExpertGating(args.attrs.getString("activation"), args.attrs.getFloat("alpha", 1.0),
                                             args.attrs.getFloat("limit", 0.0), args.attrs.getFloat("up_offset", 1.0),
                                             gating);
  const bool swiglu = gating.halves;
  if (x.dtype != DType::F32 || w.dtype != DType::F32 || out.dtype != DType::F32 || ids.dtype != DType::I64 ||
      (combined && args.in(3).dtype != DType::F32) || (biased && args.in(4).dtype != DType::F32))
    return "takes float rows, matrices, combine weights and biases and int64 ids";
  if (!gatingKnown || repeat < 1)
    return std::string("takes an activation ") + kExpertGatings + " and a repeat of 1 or more";
  const int64_t N = ids.numel(), M = w.shape.rank == 3 ? w.shape[1] : 0, width = swiglu ? M / 2 : M;
  const int64_t group = combined && args.in(3).shape.rank == 2 ? args.in(3).shape[1] : 1;
  if (x.shape.rank != 2 || w.shape.rank != 3 || w.shape[2] != x.shape[1] || N != x.shape[0] * repeat ||
      (swiglu && M % 2 != 0) || (combined && (args.in(3).shape.rank != 2 || args.in(3).numel() != N)) ||
      out.numel() != N / std::max<int64_t>(group, 1) * width ||
      (biased && (args.in(4).shape.rank != 2 || args.in(4).shape[0] != w.shape[0] || args.in(4).shape[1] != M)))
    return "operands do not agree: input " + x.shape.str() + ", weight " + w.shape.str() + ", ids " + ids.shape.str();
  const int64_t K = x.shape[1], E = w.shape[0];
  const int64_t *id = ids.as<const int64_t>();
  for (int64_t n = 0; n < N; ++n)
    if (id[n] < -E || id[n] >= E)
      return "expert id " + std::to_string(id[n]) + " is out of range for " + std::to_string(E) + " experts";
  const float *px = x.as<const float>(), *pw = w.as<const float>();
  const float *weights = combined ? args.in(3).as<const float>() : nullptr;
  const float *bias = biased ? args.in(4).as<const float>() : nullptr;
  float *py = out.as<float>();
  // The ids grouped by expert (in order of n within each): an expert's rows go through its matrix
  // in one product, which reads the matrix once rather than once per row (a prompt's rows: each
  // expert's matrix tens of times otherwise, from memory at that size).
  std::vector<int64_t> first(static_cast<size_t>(E) + 1, 0), order(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n)
    ++first[size_t(id[n] < 0 ? id[n] + E : id[n]) + 1];
  for (int64_t e = 0; e < E; ++e)
    first[size_t(e) + 1] += first[size_t(e)];
  {
    std::vector<int64_t> at(first.begin(), first.end() - 1);
    for (int64_t n = 0; n < N; ++n)
      order[size_t(at[size_t(id[n] < 0 ? id[n] + E : id[n])]++)] = n;
  }
  // Each row's activated results, then (with a combine) summed in order of j, as one row at a
  // time would.
  std::vector<float> results(combined ? size_t(N * width) : 0);
  float *rowsOut = combined ? results.data() : py;
  std::vector<float> rows, products;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t count = first[size_t(e) + 1] - first[size_t(e)];
    if (count == 0)
      continue;
    const int64_t *members = order.data() + first[size_t(e)];
    products.assign(size_t(count * M), 0.0f);
    if (M > 0 && K > 0) {
      if (count == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, int(M), int(K), 1.0f, pw + e * M * K, int(K),
                    px + (members[0] / repeat) * K, 1, 0.0f, products.data(), 1);
      } else {
        rows.resize(size_t(count * K));
        for (int64_t i = 0; i < count; ++i)
          std::copy_n(px + (members[i] / repeat) * K, K, rows.data() + i * K);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(count), int(M), int(K), 1.0f, rows.data(), int(K),
                    pw + e * M * K, int(K), 0.0f, products.data(), int(M));
      }
    }
    for (int64_t i = 0; i < count; ++i) {
      float *y = products.data() + i * M, *to = rowsOut + members[i] * width;
      if (bias)
        for (int64_t m = 0; m < M; ++m)
          y[m] += bias[e * M + m];
      if (gating.clamped)
        for (int64_t m = 0; m < width; ++m)
          to[m] = clampedSwigluOf(y[m], y[width + m], gating.alpha, gating.limit, gating.upOffset);
      else if (swiglu)
        for (int64_t m = 0; m < width; ++m)
          to[m] = swigluOf(y[m], y[width + m]);
      else
        std::copy_n(y, width, to);
    }
  }
  if (combined) {
    std::fill(py, py + out.numel(), 0.0f);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < width; ++m)
        py[(n / group) * width + m] += weights[n] * results[size_t(n * width + m)];
  }
  return {};
}

} // namespace

void gemmF32(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
             const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  gemm<float>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void setGemmThreads(int threads) {
  // OpenBLAS's thread count is process-wide; change it only when asked for another value, so
  // that contexts with the same setting never touch it while another runs a GEMM.
  static std::atomic<int> current{0};
  if (threads > 0 && current.exchange(threads) != threads)
    openblas_set_num_threads(threads);
}

extern const KernelEntry kMatMulKernels[] = {
    {"matmul", withHalf<matmulKernel>},
    {"gemm", withHalf<gemmKernel>},
    {"expert_linear", withHalf<expertLinearKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
