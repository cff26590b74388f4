// The row-wise kernels of the CUDA executor (see CudaKernels.h): normalization with a residual,
// softmax, the plain attention (one block per query row), and the embedding gather and a linear's
// epilogue (one thread per element). Templates over the storage type, f32 arithmetic throughout;
// a row is staged in shared memory as f32 (a softmax or a norm of doubles: in f64).
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

namespace llmc::rt::cuda {
namespace {

// The row kernels below read their row more than once: staged as f32 in shared memory where it
// fits (`staged`: cols <= kMaxRowCols), else read again from global memory each time.

// x, r, out and sum carry no __restrict__: the plan may put the output or the sum where x or r is
// (a norm in place). Computed in Wide<T>: f32, or f64 for doubles (staged as such).
template <typename T, bool kLayer>
__global__ void addNormKernel(const T *x, const T *r, const T *__restrict__ scale, const T *__restrict__ bias, T *out,
                              T *sum, int64_t cols, double eps, bool staged) {
  using Acc = Wide<T>;
  extern __shared__ __align__(8) unsigned char normRow[];
  Acc *row = reinterpret_cast<Acc *>(normRow);
  const int64_t base = int64_t(blockIdx.x) * cols;
  // x + r again: from the sum where it was stored (by this thread: the same columns), as x and r
  // may be where the output goes.
  auto again = [&](int64_t c) {
    return staged ? row[c] : sum ? widen(sum[base + c]) : widen(x[base + c]) + (r ? widen(r[base + c]) : Acc(0));
  };
  Acc acc = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const Acc v = widen(x[base + c]) + (r ? widen(r[base + c]) : Acc(0));
    if (sum)
      sum[base + c] = narrow<T>(v);
    if (staged)
      row[c] = v;
    acc += kLayer ? v : v * v;
  }
  const Acc total = blockReduce<false>(acc);
  Acc mean = 0, inv;
  if (kLayer) {
    mean = total / Acc(cols);
    Acc sq = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sq += (again(c) - mean) * (again(c) - mean);
    inv = rsqrtOf(blockReduce<false>(sq) / Acc(cols) + Acc(eps));
  } else {
    inv = rsqrtOf(total / Acc(cols) + Acc(eps));
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    Acc y = (again(c) - mean) * inv * widen(scale[c]);
    if (bias)
      y += widen(bias[c]);
    out[base + c] = narrow<T>(y);
  }
}

// A row's elements `inner` apart (a softmax along an axis before the last). Computed in Wide<T>:
// f32, or f64 for doubles (staged as such).
template <typename T>
__global__ void softmaxKernel(const T *__restrict__ x, T *__restrict__ y, int64_t cols, int64_t inner,
                              bool takeLog, bool staged) {
  using Acc = Wide<T>;
  extern __shared__ __align__(8) unsigned char softmaxRow[];
  Acc *row = reinterpret_cast<Acc *>(softmaxRow);
  const int64_t base = int64_t(blockIdx.x) / inner * cols * inner + int64_t(blockIdx.x) % inner;
  Acc best = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const Acc v = widen(x[base + c * inner]);
    if (staged)
      row[c] = v;
    best = maxOf(best, v);
  }
  best = blockReduce<true>(best);
  // x - max, again: log_softmax keeps it (staged), which exp may take to 0
  auto shiftedAt = [&](int64_t c) { return staged ? row[c] : widen(x[base + c * inner]) - best; };
  Acc acc = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const Acc shifted = staged ? row[c] - best : shiftedAt(c);
    if (staged)
      row[c] = shifted;
    acc += expOf(shifted);
  }
  const Acc total = blockReduce<false>(acc);
  const Acc inv = Acc(1) / total, logTotal = logOf(total);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    y[base + c * inner] = narrow<T>(takeLog ? shiftedAt(c) - logTotal : expOf(shiftedAt(c)) * inv);
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
  extern __shared__ float smem[]; // the q row (D), a chunk of scores, the weighted sums (Dv)
  float *qrow = smem, *chunk = smem + a.D, *acc = chunk + (a.Sk < kAttendChunk ? a.Sk : kAttendChunk);
  const int64_t row = blockIdx.x, i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
  const int64_t kvh = h / (a.Hq / a.Hkv);
  const T *q = static_cast<const T *>(a.q) + b * a.qs.batch + i * a.qs.token + h * a.qs.head;
  const T *cosT = static_cast<const T *>(a.cos), *sinT = static_cast<const T *>(a.sin);
  const int64_t width = tableWidth(a); // of a table row
  const T *cq = cosT ? cosT + ((a.tablesPerBatch ? b : 0) * a.Sq + i) * width : nullptr;
  const T *sq = sinT ? sinT + ((a.tablesPerBatch ? b : 0) * a.Sq + i) * width : nullptr;
  for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
    qrow[d] = rotatedBy(a, q, cq, sq, d);
  __syncthreads();
  const T *kb = static_cast<const T *>(a.k) + b * a.ks.batch + kvh * a.ks.head;
  const T *vb = static_cast<const T *>(a.v) + b * a.vs.batch + kvh * a.vs.head;
  auto score = [&](int64_t j) {
    const T *kj = kb + j * a.ks.token;
    const T *ck = a.rotateKeys ? cosT + ((a.tablesPerBatch ? b : 0) * a.Sq + j) * width : nullptr;
    const T *sk = a.rotateKeys ? sinT + ((a.tablesPerBatch ? b : 0) * a.Sq + j) * width : nullptr;
    float dot = 0.0f;
    for (int64_t d = 0; d < a.D; ++d)
      dot += qrow[d] * rotatedBy(a, kj, ck, sk, d);
    const float s = masked<T>(a, dot * a.scale,
                              b * a.maskStrides[0] + h * a.maskStrides[1] + i * a.maskStrides[2] + j * a.maskStrides[3]);
    return hiddenByPosition(a, i, j) ? -INFINITY : s;
  };
  auto value = [&](int64_t j, int64_t dv) { return toF(vb[j * a.vs.token + dv]); };
  float best;
  const float keys = attendRow(a.Sk, a.Dv, chunk, acc, &best, score, value);
  const float total = keys + sinkWeight(sinkOf<T>(a, h), best);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f; // a fully masked row attends to nothing
  T *out = static_cast<T *>(a.out) + ((b * a.Sq + i) * a.Hq + h) * a.Dv;
  for (int64_t dv = threadIdx.x; dv < a.Dv; dv += blockDim.x)
    out[dv] = fromF<T>(acc[dv] * inv);
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

std::string addNorm(int type, bool layerNorm, const void *x, const void *residual, const void *scale, const void *bias,
                    void *out, void *sum, int64_t rows, int64_t cols, double epsilon, void *stream) {
  if (rows <= 0 || cols <= 0)
    return "addNorm: rows and cols must be positive";
  auto st = static_cast<cudaStream_t>(stream);
  const bool known = dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const bool staged = cols * sizeof(Wide<T>) <= kMaxRowCols * sizeof(float); // 48 KiB
    const size_t shared = staged ? size_t(cols) * sizeof(Wide<T>) : 0;
    auto kernel = layerNorm ? addNormKernel<T, true> : addNormKernel<T, false>;
    allowDynamicShared(kernel, shared);
    kernel<<<unsigned(rows), kRowThreads, shared, st>>>(static_cast<const T *>(x), static_cast<const T *>(residual),
                                                        static_cast<const T *>(scale), static_cast<const T *>(bias),
                                                        static_cast<T *>(out), static_cast<T *>(sum), cols, epsilon,
                                                        staged);
  });
  return known ? launched("addNorm") : "addNorm: supports float elements";
}

std::string softmax(int type, const void *x, void *y, int64_t rows, int64_t cols, void *stream, bool log,
                    int64_t inner) {
  if (rows <= 0 || cols <= 0 || inner <= 0 || rows % inner)
    return "softmax: rows and cols must be positive, rows a multiple of inner";
  const bool known = dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const bool staged = cols * sizeof(Wide<T>) <= kMaxRowCols * sizeof(float); // 48 KiB
    const size_t shared = staged ? size_t(cols) * sizeof(Wide<T>) : 0;
    allowDynamicShared(softmaxKernel<T>, shared);
    softmaxKernel<T><<<unsigned(rows), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(y), cols, inner, log, staged);
  });
  return known ? launched("softmax") : "softmax: supports float elements";
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
  if (a.B <= 0 || a.Sq <= 0 || a.Sk <= 0 || a.Hkv <= 0 || a.Hq % a.Hkv || a.D > kMaxRowCols || a.Dv > kMaxRowCols ||
      (a.cos && a.D % 2) || (a.rotateKeys && (!a.cos || a.Sk != a.Sq)))
    return "attention: bad shapes (Hq a multiple of Hkv, Sk >= 1, head sizes at most " + std::to_string(kMaxRowCols) +
           ", even D with rotary, Sk == Sq when keys rotate)";
  const size_t shared = size_t(a.D + std::min(a.Sk, kAttendChunk) + a.Dv) * sizeof(float);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    allowDynamicShared(attentionKernel<T>, shared);
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
