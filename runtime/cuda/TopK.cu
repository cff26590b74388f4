// top_k (ONNX TopK), softmax_top_k and grouped_top_k (routers): a block per line along the
// axis, which picks the k values one after another;
// each pick is the block's best among the elements that come after the one picked before, in an
// order without ties (value, then index). So it keeps no sorted copy and no state but the last
// pick: k passes over the line, fine for the lines plans have (a mixture of experts' router picks
// 2 to 8 of 8 to 256 experts), correct rather than fast for a sampler's k of a whole vocabulary.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

constexpr int kTopKThreads = 256; // at most; a short line takes a warp per 32 elements

__device__ __forceinline__ bool isNan(float x) { return isnan(x); }
__device__ __forceinline__ bool isNan(double x) { return isnan(x); }
__device__ __forceinline__ bool isNan(long long) { return false; }

// Whether (va, ia) comes before (vb, ib): the larger value first (the smaller with !largest), the
// lower index among equal values (as the CPU's stable sort keeps them). A NaN counts as larger than
// any number, as PyTorch's topk takes it (the CPU's sort leaves NaNs' place undefined).
template <typename K> __device__ __forceinline__ bool comesFirst(K va, int64_t ia, K vb, int64_t ib, bool largest) {
  const bool na = isNan(va), nb = isNan(vb);
  if (na != nb)
    return largest ? na : nb;
  if (!na && va != vb)
    return largest ? va > vb : va < vb;
  return ia < ib;
}

template <typename K> struct Pick {
  K value;
  int64_t index; // -1: none
};

template <typename K> __device__ __forceinline__ Pick<K> firstOf(Pick<K> a, Pick<K> b, bool largest) {
  if (b.index < 0)
    return a;
  if (a.index < 0)
    return b;
  return comesFirst(a.value, a.index, b.value, b.index, largest) ? a : b;
}

template <typename K> __device__ Pick<K> blockFirst(Pick<K> p, bool largest) {
  __shared__ Pick<K> warpPicks[kTopKThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    Pick<K> other;
    other.value = __shfl_down_sync(0xffffffffu, p.value, offset);
    other.index = __shfl_down_sync(0xffffffffu, p.index, offset);
    p = firstOf(p, other, largest);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    warpPicks[warp] = p;
  __syncthreads();
  Pick<K> best = warpPicks[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w)
    best = firstOf(best, warpPicks[w], largest);
  __syncthreads(); // before warpPicks is written again
  return best;
}

template <typename T>
__global__ void topKKernel(const T *__restrict__ x, T *__restrict__ values, int64_t *__restrict__ indices,
                           int64_t lines, int64_t n, int64_t inner, int64_t k, bool largest) {
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t o = line / inner, i = line % inner;
    const T *in = x + o * n * inner + i;
    using K = Wide<T>;
    Pick<K> last{K(0), -1};
    for (int64_t j = 0; j < k; ++j) {
      Pick<K> mine{K(0), -1};
      for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
        const K v = widen(in[e * inner]);
        if (last.index < 0 || comesFirst(last.value, last.index, v, e, largest))
          mine = firstOf(mine, Pick<K>{v, e}, largest);
      }
      last = blockFirst(mine, largest);
      if (threadIdx.x == 0) {
        const int64_t at = (o * k + j) * inner + i;
        values[at] = in[last.index * inner];
        indices[at] = last.index;
      }
    }
  }
}

// softmax_top_k: a block per row of n logits takes the row's max and its exponentials' sum, then
// picks k times as topKKernel does, over the probabilities exp(x - max) / sum (computed the same
// way at every pass: one order); thread 0 keeps the picks in `picked` (k floats of shared memory)
// and writes them, divided by their sum with `normalize`. A row of -inf logits counts from 0 as
// the CPU's softmax (its probabilities NaN, as there).
template <typename T>
__global__ void softmaxTopKKernel(const T *__restrict__ x, T *__restrict__ values, int64_t *__restrict__ indices,
                                  int64_t rows, int64_t n, int64_t k, bool normalize) {
  extern __shared__ float picked[];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *in = x + row * n;
    float best = -INFINITY;
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
      best = fmaxf(best, toF(in[e]));
    best = blockReduce<true>(best);
    if (best == -INFINITY)
      best = 0.0f;
    float sum = 0.0f;
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
      sum += expf(toF(in[e]) - best);
    const float inv = 1.0f / blockReduce<false>(sum);
    Pick<float> last{0.0f, -1};
    for (int64_t j = 0; j < k; ++j) {
      Pick<float> mine{0.0f, -1};
      for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
        const float p = expf(toF(in[e]) - best) * inv;
        if (last.index < 0 || comesFirst(last.value, last.index, p, e, true))
          mine = firstOf(mine, Pick<float>{p, e}, true);
      }
      last = blockFirst(mine, true);
      if (threadIdx.x == 0)
        picked[j] = last.value, indices[row * k + j] = last.index;
    }
    if (threadIdx.x == 0) {
      float total = 0.0f;
      for (int64_t j = 0; j < k; ++j)
        total += picked[j];
      for (int64_t j = 0; j < k; ++j)
        values[row * k + j] = fromF<T>(normalize ? picked[j] / total : picked[j]);
    }
  }
}

// The sigmoid kernel's formula (kernels/KernelUtil.h, sigmoidOf), in floats.
__device__ __forceinline__ float sigmoidOf(float x) {
  return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

// The first `count` of `n` floats at `v` (shared memory), largest first and equal ones by index,
// picked by the whole block one after another (topKKernel's order); `take(j, pick)` sees each.
template <typename Take> __device__ void pickLargest(const float *v, int64_t n, int64_t count, Take take) {
  Pick<float> last{0.0f, -1};
  for (int64_t j = 0; j < count; ++j) {
    Pick<float> mine{0.0f, -1};
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
      if (last.index < 0 || comesFirst(last.value, last.index, v[e], e, true))
        mine = firstOf(mine, Pick<float>{v[e], e}, true);
    last = blockFirst(mine, true);
    take(j, last);
  }
}

// grouped_top_k: a block per row. The biased scores go to shared memory (`choice`, n floats),
// then each group's sum of its `top` largest (a thread per group, in doubles, largest first),
// the kept groups (`keep`), the others' scores replaced by `fill`, and the k picks, whose
// scores thread 0 weighs as the CPU does. Softmax scores (`a.softmax`) are softmaxTopKKernel's,
// exp(x - max) times 1 / sum, the row's max and sum taken first.
template <typename T>
__global__ void groupedTopKKernel(const T *__restrict__ logits, const T *__restrict__ bias, T *__restrict__ weights,
                                  int64_t *__restrict__ indices, int64_t rows, GroupedTopKArgs a) {
  extern __shared__ float shared[];
  float *choice = shared, *groupScores = shared + a.n, *picked = groupScores + a.groups;
  int *keep = reinterpret_cast<int *>(picked + a.k);
  const int64_t size = a.n / a.groups;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *x = logits + row * a.n;
    float rowMax = 0.0f, rowInverse = 1.0f; // (softmax scores)
    if (a.softmax) {
      float m = -INFINITY;
      for (int64_t e = threadIdx.x; e < a.n; e += blockDim.x)
        m = fmaxf(m, toF(x[e]));
      rowMax = blockReduce<true>(m);
      if (rowMax == -INFINITY)
        rowMax = 0.0f;
      float sum = 0.0f;
      for (int64_t e = threadIdx.x; e < a.n; e += blockDim.x)
        sum += expf(toF(x[e]) - rowMax);
      rowInverse = 1.0f / blockReduce<false>(sum);
    }
    auto score = [&](int64_t e) {
      return a.softmax ? expf(toF(x[e]) - rowMax) * rowInverse : sigmoidOf(toF(x[e]));
    };
    for (int64_t e = threadIdx.x; e < a.n; e += blockDim.x)
      choice[e] = score(e) + toF(bias[e]);
    for (int64_t g = threadIdx.x; g < a.groups; g += blockDim.x)
      keep[g] = 0;
    __syncthreads();
    for (int64_t g = threadIdx.x; g < a.groups; g += blockDim.x) {
      const float *member = choice + g * size;
      double sum = 0.0;
      Pick<float> last{0.0f, -1};
      for (int64_t j = 0; j < a.top; ++j) {
        Pick<float> best{0.0f, -1};
        for (int64_t e = 0; e < size; ++e)
          if (last.index < 0 || comesFirst(last.value, last.index, member[e], e, true))
            best = firstOf(best, Pick<float>{member[e], e}, true);
        sum += double(best.value);
        last = best;
      }
      groupScores[g] = float(sum);
    }
    __syncthreads();
    pickLargest(groupScores, a.groups, a.keptGroups, [&](int64_t, Pick<float> p) {
      if (threadIdx.x == 0)
        keep[p.index] = 1;
    });
    __syncthreads();
    for (int64_t e = threadIdx.x; e < a.n; e += blockDim.x)
      if (!keep[e / size])
        choice[e] = a.fill;
    __syncthreads();
    pickLargest(choice, a.n, a.k, [&](int64_t j, Pick<float> p) {
      if (threadIdx.x == 0) {
        indices[row * a.k + j] = p.index;
        picked[j] = score(p.index);
      }
    });
    if (threadIdx.x == 0) {
      double sum = 0.0;
      for (int64_t j = 0; j < a.k; ++j)
        sum += double(picked[j]);
      const float denominator = a.normalize == 2 ? fmaxf(float(sum), a.epsilon) : float(sum) + a.epsilon;
      for (int64_t j = 0; j < a.k; ++j)
        weights[row * a.k + j] = fromF<T>((a.normalize ? picked[j] / denominator : picked[j]) * a.scale);
    }
    __syncthreads(); // before the next row writes `choice` and `keep`
  }
}

} // namespace

std::string groupedTopK(Storage s, const void *logits, const void *bias, void *weights, int64_t *indices, int64_t rows,
                        const GroupedTopKArgs &a, void *stream) {
  if (a.groups <= 0 || a.n % a.groups != 0 || a.keptGroups <= 0 || a.keptGroups > a.groups || a.top <= 0 ||
      a.top > a.n / a.groups || a.k < 0 || a.k > a.n)
    return "groupedTopK: groups, kept groups, group top or k do not fit the experts";
  if (a.normalize < 0 || a.normalize > 2)
    return "groupedTopK: normalize must be 0, 1 or 2";
  const size_t shared = size_t(a.n + a.groups + a.k) * sizeof(float) + size_t(a.groups) * sizeof(int);
  if (shared > kMaxGroupedTopKShared)
    return "groupedTopK: " + std::to_string(a.n) + " experts take more shared memory than a block has";
  if (rows * a.k == 0)
    return {};
  const unsigned blocks = unsigned(std::min<int64_t>(rows, 65535 * 8));
  const int threads = int(std::min<int64_t>((a.n + 31) / 32 * 32, kTopKThreads));
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    groupedTopKKernel<T><<<blocks, threads, shared, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(logits), static_cast<const T *>(bias), static_cast<T *>(weights), indices, rows, a);
  });
  return launched("groupedTopK");
}

std::string softmaxTopK(Storage s, const void *logits, void *values, int64_t *indices, int64_t rows, int64_t n,
                        int64_t k, bool normalize, void *stream) {
  if (k < 0 || k > n || k > kMaxSoftmaxTopK)
    return "softmaxTopK: k must be 0 to the row's length, at most " + std::to_string(kMaxSoftmaxTopK);
  if (rows * k == 0)
    return {};
  const unsigned blocks = unsigned(std::min<int64_t>(rows, 65535 * 8));
  const int threads = int(std::min<int64_t>((n + 31) / 32 * 32, kTopKThreads));
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    softmaxTopKKernel<T><<<blocks, threads, size_t(k) * sizeof(float), static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(logits), static_cast<T *>(values), indices, rows, n, k, normalize);
  });
  return launched("softmaxTopK");
}

std::string topK(int type, const void *x, void *values, int64_t *indices, int64_t outer, int64_t n, int64_t inner,
                 int64_t k, bool largest, void *stream) {
  if (k < 0 || k > n)
    return "topK: k must be 0 to the axis' length";
  const int64_t lines = outer * inner;
  if (lines * k == 0)
    return {};
  const unsigned blocks = unsigned(std::min<int64_t>(lines, 65535 * 8));
  const int threads = int(std::min<int64_t>((n + 31) / 32 * 32, kTopKThreads));
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    topKKernel<T><<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T *>(x), static_cast<T *>(values), indices, lines, n, inner, k, largest);
  };
  if (!dispatchNumeric(type, launch))
    return "topK: supports float, integer and bool values";
  return launched("topK");
}

} // namespace llmc::rt::cuda
