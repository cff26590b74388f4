// Device helpers shared by the CUDA kernel files: storage conversions (f32 arithmetic on f32,
// f16 or bf16 storage), what every attention kernel does to a row (rotary, masks), a linear's
// activations, reductions over a block, the dispatch from Storage to a type, and launch bookkeeping.
#pragma once

#include "Activation.h"
#include "CudaKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#ifndef LLMC_CUDA_EMULATION
#include <cuda/atomic>
#endif

namespace llmc::rt::cuda {
namespace {

constexpr int kRowThreads = 256;     // a block per row
constexpr int kElementThreads = 256; // a thread per element
constexpr int64_t kMaxRowCols = 12 * 1024; // a row kernel's row, staged in 48 KiB of shared memory

template <typename T> __device__ __forceinline__ float toF(T x);
template <> __device__ __forceinline__ float toF<float>(float x) { return x; }
template <> __device__ __forceinline__ float toF<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float toF<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

// f32 to storage: round to nearest even; finite values beyond a 16-bit type's range saturate to
// its largest finite value, as narrowFloat (Tensor.h) does to the weights of the plan.
__device__ __forceinline__ float saturate(float x, float largest) {
  return fabsf(x) > largest && !isinf(x) ? copysignf(largest, x) : x;
}
template <typename T> __device__ __forceinline__ T fromF(float x);
template <> __device__ __forceinline__ float fromF<float>(float x) { return x; }
template <> __device__ __forceinline__ __half fromF<__half>(float x) { return __float2half_rn(saturate(x, 65504.0f)); }
template <> __device__ __forceinline__ __nv_bfloat16 fromF<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(saturate(x, 3.38953139e38f));
}

// Element d of a head row, rotated (rotate-half) by the cos/sin row when there is one: D
// columns, or with `halfTables` D / 2 that both halves of the head share (AttentionArgs).
template <typename T>
__device__ __forceinline__ float rotated(const T *row, const T *cosRow, const T *sinRow, int64_t d, int64_t D,
                                         bool halfTables = false) {
  const float x = toF(row[d]);
  if (!cosRow)
    return x;
  const int64_t half = D / 2, column = halfTables && d >= half ? d - half : d;
  const float partner = d < half ? -toF(row[d + half]) : toF(row[d - half]);
  return x * toF(cosRow[column]) + partner * toF(sinRow[column]);
}

// Element d of a head row turned by an attention's tables (row and table rows given; no table: as
// it is): rotate-half over the head (rotated), or with a.rotaryDim llmc.rotary's rotation of the
// first rotaryDim features. tableWidth: the columns of a table row.
template <typename A> __host__ __device__ __forceinline__ int64_t tableWidth(const A &a) {
  return a.rotaryDim ? a.rotaryDim / 2 : a.halfTables ? a.D / 2 : a.D;
}
template <typename T, typename A>
__device__ __forceinline__ float rotatedBy(const A &a, const T *row, const T *cosRow, const T *sinRow, int64_t d) {
  if (!a.rotaryDim)
    return rotated(row, cosRow, sinRow, d, a.D, a.halfTables);
  const float x = toF(row[d]);
  if (!cosRow || d >= a.rotaryDim)
    return x;
  const int64_t half = a.rotaryDim / 2;
  const bool first = a.interleaved ? d % 2 == 0 : d < half;
  const int64_t i = a.interleaved ? d / 2 : first ? d : d - half;
  const float partner = toF(row[a.interleaved ? (first ? d + 1 : d - 1) : (first ? d + half : d - half)]);
  const float c = toF(cosRow[i]), s = toF(sinRow[i]);
  return first ? x * c - partner * s : x * c + partner * s;
}

// The 16 / sizeof(T) elements of a 16-byte load, widened.
template <typename T> struct Lanes {
  static constexpr int kCount = 16 / int(sizeof(T));
  float v[kCount];
};

__device__ __forceinline__ float2 pairOf(unsigned word, __half) {
  __half2 p;
  memcpy(&p, &word, 4);
  return __half22float2(p);
}
__device__ __forceinline__ float2 pairOf(unsigned word, __nv_bfloat16) {
  __nv_bfloat162 p;
  memcpy(&p, &word, 4);
  return __bfloat1622float2(p);
}
template <typename T> __device__ __forceinline__ void widen(const uint4 &raw, Lanes<T> &out) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      out.v[i] = __uint_as_float(words[i]);
    } else {
      const float2 f = pairOf(words[i], T{});
      out.v[2 * i] = f.x, out.v[2 * i + 1] = f.y;
    }
  }
}

// An element as the kernels of floats and integers compute with it (compare, sum: top_k, the
// reductions, einsum, cumsum, matmul, softmax): f32, f16 and bf16 as f32, doubles as themselves,
// integers exactly, as int64; and a result stored back (integers truncated, as a cast; 16-bit
// floats rounded as fromF). Wide<T> is what widen gives, spelled out: nvcc's host pass, which
// sizes launches with it, does not see a device function's body to deduce it from.
template <typename T>
using Wide = std::conditional_t<std::is_integral_v<T>, long long,
                                std::conditional_t<std::is_same_v<T, double>, double, float>>;
template <typename T> __device__ __forceinline__ Wide<T> widen(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<long long>(x);
  else if constexpr (std::is_same_v<T, double>)
    return x;
  else
    return toF(x);
}
template <typename T, typename A> __device__ __forceinline__ T narrow(A v) {
  if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>)
    return static_cast<T>(v);
  else
    return fromF<T>(float(v));
}
// Where a max or a min over T's values starts, widened: T's lowest or highest integer, or an
// infinity.
template <typename T> __device__ __forceinline__ Wide<T> lowestOf() {
  if constexpr (std::is_integral_v<T>)
    return std::numeric_limits<T>::lowest();
  else
    return -INFINITY;
}
template <typename T> __device__ __forceinline__ Wide<T> highestOf() {
  if constexpr (std::is_integral_v<T>)
    return std::numeric_limits<T>::max();
  else
    return INFINITY;
}

// Lets `kernel` take `bytes` of dynamic shared memory where that is more than the 48 KiB every
// kernel gets (a function attribute, set before each launch that needs it).
template <typename Kernel> void allowDynamicShared(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

// An attention score (f32, or f64 for doubles) after element `at` of a mask: bool bytes or int64
// values keep it (non-zero) or hide it, anything else is added in the storage type.
template <typename T, typename S>
__device__ __forceinline__ S maskedBy(const void *mask, AttentionArgs::Mask type, S score, int64_t at) {
  switch (type) {
  case AttentionArgs::Mask::Bool: return static_cast<const uint8_t *>(mask)[at] ? score : S(-INFINITY);
  case AttentionArgs::Mask::Int64: return static_cast<const int64_t *>(mask)[at] ? score : S(-INFINITY);
  case AttentionArgs::Mask::Additive: break;
  }
  return score + S(widen(static_cast<const T *>(mask)[at]));
}
// Whether a fused attention's causal frontier or sliding window hides key j from query i (at
// position i + Sk - Sq among the keys: bottom-right aligned).
__device__ __forceinline__ bool hiddenByPosition(const AttentionArgs &a, int64_t i, int64_t j) {
  const int64_t at = i + (a.Sk - a.Sq);
  return (a.causal && j > at) || (a.window > 0 && at - j >= a.window);
}
// Head h's sink logit of `sinks` (one per head, T), -inf where there are none.
template <typename T> __device__ __forceinline__ float sinkOf(const void *sinks, int64_t h) {
  return sinks ? toF(static_cast<const T *>(sinks)[h]) : -INFINITY;
}
// Head h's sink logit of the attention (AttentionArgs::sinks).
template <typename T> __device__ __forceinline__ float sinkOf(const AttentionArgs &a, int64_t h) {
  return sinkOf<T>(a.sinks, h);
}
// What a sink logit adds to the denominator of a softmax whose scores' max is `best`:
// exp(sink - best); 0 without a sink or where every key is hidden (the row is zeros then).
__device__ __forceinline__ float sinkWeight(float sink, float best) {
  return sink == -INFINITY || best == -INFINITY ? 0.0f : __expf(sink - best);
}
// A fused attention's scaled score as its softmax takes it: capped (a.softcap), then after the
// mask of `a`, if any (`at` from its maskStrides).
template <typename T> __device__ __forceinline__ float masked(const AttentionArgs &a, float score, int64_t at) {
  if (a.softcap > 0.0f)
    score = a.softcap * tanhf(score / a.softcap);
  return a.mask ? maskedBy<T>(a.mask, a.maskType, score, at) : score;
}

// A linear's activation (Activation.h), as the CPU linear computes it.
__device__ __forceinline__ float activate(Activation act, float x) {
  switch (act) {
  case Activation::None: return x;
  case Activation::Relu: return fmaxf(x, 0.0f);
  case Activation::Silu: return x / (1.0f + __expf(-x));
  case Activation::Gelu: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  case Activation::GeluTanh: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

// SwiGLU of a gate and an up projection's value: silu(gate) * up.
__device__ __forceinline__ float swigluOf(float gate, float up) { return gate / (1.0f + __expf(-gate)) * up; }

// GPT-OSS's gating (kernels/KernelUtil.h clampedSwigluOf): the gate clamped from above at
// `limit`, the up value to [-limit, limit], then (up + upOffset) * gate * sigmoid(alpha * gate).
__device__ __forceinline__ float clampedSwigluOf(float gate, float up, float alpha, float limit, float upOffset) {
  gate = limit < gate ? limit : gate;
  up = limit < up ? limit : (up < -limit ? -limit : up);
  return (up + upOffset) * gate / (1.0f + __expf(-alpha * gate));
}

// The larger of two values; a NaN loses to a number (fmax).
__device__ __forceinline__ float maxOf(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double maxOf(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ long long maxOf(long long a, long long b) { return a > b ? a : b; }
// exp and log in the precision of their argument (expf and logf for f32).
__device__ __forceinline__ float expOf(float x) { return expf(x); }
__device__ __forceinline__ double expOf(double x) { return exp(x); }
__device__ __forceinline__ float logOf(float x) { return logf(x); }
__device__ __forceinline__ double logOf(double x) { return log(x); }
// exp through the hardware approximation for f32 (__expf, as the attentions use), exactly for f64.
__device__ __forceinline__ float fastExpOf(float x) { return __expf(x); }
__device__ __forceinline__ double fastExpOf(double x) { return exp(x); }
__device__ __forceinline__ float tanhOf(float x) { return tanhf(x); }
__device__ __forceinline__ double tanhOf(double x) { return tanh(x); }
__device__ __forceinline__ float sqrtOf(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrtOf(double x) { return sqrt(x); }
__device__ __forceinline__ float rsqrtOf(float x) { return rsqrtf(x); }
__device__ __forceinline__ double rsqrtOf(double x) { return rsqrt(x); }

// Sum / max over the warp (every lane takes part); every lane gets it. V: float or double.
template <bool kMax, typename V> __device__ __forceinline__ V warpReduce(V v) {
  for (int o = 16; o > 0; o >>= 1) {
    const V other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? maxOf(v, other) : v + other;
  }
  return v;
}

// Sum / max over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
template <bool kMax, typename V> __device__ V blockReduce(V v) {
  __shared__ V partial[32];
  v = warpReduce<kMax>(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads(); // the previous call's readers are done with `partial`
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warpReduce<kMax>(lane < warps ? partial[lane] : V(kMax ? -INFINITY : 0.0));
    if (lane == 0)
      partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}

// Attention rows whose keys several blocks of a launch share (the decode and the prompt
// attention's splits): each block writes its partial result of a row, [its max, its sum of
// exponentials, its unnormalized weighted sums of the values], and the last block to arrive
// merges them.
//
// The attention workspace (Executor::attentionWorkspace) of such a launch: kSplitCounters arrival
// counters first, at one place for every launch of either kernel, so that they stay 0 between
// launches whatever the sizes (zeroed once; each launch leaves them so), then the partial results.
constexpr int64_t kSplitCounters = 1 << 16; // rows' groups a split launch may count
inline unsigned *splitCounters(void *workspace) { return static_cast<unsigned *>(workspace); }
inline float *splitPartials(void *workspace) {
  return workspace ? reinterpret_cast<float *>(splitCounters(workspace) + kSplitCounters) : nullptr;
}
inline size_t splitWorkspaceBytes(size_t partialFloats) {
  return size_t(kSplitCounters) * sizeof(unsigned) + partialFloats * sizeof(float);
}

// Whether this block is the last of the `active` blocks counted in *counter: every thread's
// writes are made visible device-wide first, and the last block sets the counter back to 0 for
// the next launch. Every thread of the block must call it.
__device__ bool lastToArrive(unsigned *counter, int active) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == unsigned(active - 1);
    if (last) // every block has counted itself in
      *counter = 0;
  }
  __syncthreads();
  if (last)
    __threadfence();
  return last;
}

constexpr int kMergeLoads = 8; // splits whose partial results a merging thread loads at once

// Element dv of a row merged from the partial results of its `active` splits (`partialOf(s)`:
// split s's [max, sum, Dv sums] of the row), rescaled to a running max as they come (online
// softmax): the row's attention output, 0 where every key was masked. Loads kMergeLoads splits at
// a time (one round of loads for up to kMergeLoads splits), through L2 (__ldcg): other blocks of
// this launch wrote them. `sink`: the row's sink logit (sinkOf), whose weight joins the sum.
template <typename PartialOf>
__device__ float mergeSplits(PartialOf partialOf, int active, int64_t dv, float sink = -INFINITY) {
  float best = -INFINITY, total = 0.0f, o = 0.0f;
  for (int s0 = 0; s0 < active; s0 += kMergeLoads) {
    float m[kMergeLoads], t[kMergeLoads], x[kMergeLoads];
#pragma unroll
    for (int j = 0; j < kMergeLoads; ++j) { // past `active`: the last split again, weighed 0
      const float *r = partialOf(s0 + j < active ? s0 + j : active - 1);
      m[j] = __ldcg(r), t[j] = __ldcg(r + 1), x[j] = __ldcg(r + 2 + dv);
    }
#pragma unroll
    for (int j = 0; j < kMergeLoads; ++j) {
      const float mj = s0 + j < active ? m[j] : -INFINITY; // -inf: a split whose keys were all masked
      const float next = fmaxf(best, mj);
      const float keep = best == -INFINITY ? 0.0f : __expf(best - next), w = mj == -INFINITY ? 0.0f : __expf(mj - next);
      total = total * keep + w * t[j], o = o * keep + w * x[j], best = next;
    }
  }
  return best == -INFINITY ? 0.0f : o / (total + sinkWeight(sink, best));
}

// Turns the n scores in p (shared memory, written before the call) into exp(score - max) in place
// and returns their sum; *best gets the max (-inf when every score is masked: then all are 0).
// Every thread must call it; it ends with a barrier, so p can be read right after.
__device__ inline float blockExpScores(float *p, int64_t n, float *best) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    m = fmaxf(m, p[j]);
  m = blockReduce<true>(m);
  float acc = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    p[j] = m == -INFINITY ? 0.0f : __expf(p[j] - m);
    acc += p[j];
  }
  *best = m;
  return blockReduce<false>(acc);
}

// One query row's attention over `keys` keys by a block, a chunk of kAttendChunk keys at a time
// with an online softmax, so that any number of keys fits: score(j) is key j's score with its
// bias (-inf: hidden), value(j, dv) element dv of its value. `chunk` (kAttendChunk of Acc: f32,
// or f64 for doubles) and `acc` (Dv) are shared memory. Leaves in acc the sum of exp(score - max)
// * value over the keys and returns the sum of exp(score - max) (0 when every key is hidden: acc
// is 0 then), `*best` the max; every thread must call it, and may read acc right after.
constexpr int64_t kAttendChunk = 4096;
template <typename Acc, typename Score, typename Value>
__device__ Acc attendRow(int64_t keys, int64_t Dv, Acc *chunk, Acc *acc, Acc *best, Score score, Value value) {
  for (int64_t dv = threadIdx.x; dv < Dv; dv += blockDim.x)
    acc[dv] = Acc(0);
  Acc m = -INFINITY, total = 0;
  for (int64_t c0 = 0; c0 < keys; c0 += kAttendChunk) {
    const int64_t n = keys - c0 < kAttendChunk ? keys - c0 : kAttendChunk;
    Acc chunkMax = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      chunk[j] = score(c0 + j);
      chunkMax = maxOf(chunkMax, chunk[j]);
    }
    const Acc next = maxOf(m, blockReduce<true>(chunkMax));
    Acc sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      chunk[j] = next == Acc(-INFINITY) ? Acc(0) : fastExpOf(chunk[j] - next);
      sum += chunk[j];
    }
    // (blockReduce's barriers also make the chunk's weights visible to every thread)
    const Acc rescale = m == Acc(-INFINITY) ? Acc(0) : fastExpOf(m - next);
    total = total * rescale + blockReduce<false>(sum);
    m = next;
    for (int64_t dv = threadIdx.x; dv < Dv; dv += blockDim.x) {
      Acc o = acc[dv] * rescale;
      for (int64_t j = 0; j < n; ++j)
        o += chunk[j] * value(c0 + j, dv);
      acc[dv] = o;
    }
    __syncthreads(); // before the next chunk's scores overwrite these, and acc is read
  }
  *best = m;
  return total;
}

// Programmatic dependent launch (compute capability 9.0 and newer; nothing on older GPUs and in
// the CPU emulation, which runs launches one after another). A kernel launched by launchKernel
// with `overlap` may start before the kernel ahead of it in the stream has finished, once that
// one has called allowNextLaunch in every block: it must call waitForPrevious before it reads
// anything the kernels before it wrote, or writes anything they might still read. Until then it
// may only read what no kernel writes (a linear's weights). waitForPrevious returns once the
// kernels ahead have finished and their writes are visible.
__device__ __forceinline__ void waitForPrevious() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allowNextLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks the L2 cache to fetch this block's share of [p, p + bytes) (16-byte aligned; a tail short
// of 16 bytes is left out) for a kernel that comes later: one bulk prefetch per block, by its
// first thread, issued and not waited for. Compute capability 9.0 and newer; nothing elsewhere
// (the CPU emulation included).
__device__ __forceinline__ void prefetchL2Share(const void *p, size_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (!p || threadIdx.x != 0)
    return;
  const size_t blocks = size_t(gridDim.x) * gridDim.y * gridDim.z;
  const size_t block = (size_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const size_t lines = bytes / 16, share = (lines + blocks - 1) / blocks; // in 16-byte lines
  const size_t first = block * share, last = first + share < lines ? first + share : lines;
  for (size_t at = first; at < last;) { // at most 1 MiB per instruction
    const size_t n = last - at < (size_t(1) << 16) ? last - at : (size_t(1) << 16);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(static_cast<const char *>(p) + at * 16),
                 "r"(unsigned(n * 16))
                 : "memory");
    at += n;
  }
#else
  (void)p, (void)bytes;
#endif
}

#ifndef LLMC_CUDA_EMULATION
// kernel<<<grid, block, shared, stream>>>(args...) with one launch attribute; an error is the next
// cudaGetLastError's.
template <typename... P, typename... A>
void launchWith(cudaLaunchAttribute attribute, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared,
                cudaStream_t stream, const A &...args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid, config.blockDim = block, config.dynamicSmemBytes = shared, config.stream = stream;
  config.attrs = &attribute, config.numAttrs = 1;
  cudaLaunchKernelEx(&config, kernel, args...);
}
#endif

// kernel<<<grid, block, shared, stream>>>(args...), with programmatic dependent launch where
// `overlap` (the caller knows the GPU has it, and `kernel` calls waitForPrevious as above).
template <typename... P, typename... A>
void launchKernel(bool overlap, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                  const A &...args) {
#ifdef LLMC_CUDA_EMULATION // (the emulation's launch, as emulate_launches.py writes a launch)
  (void)overlap;
  kernel ^ ::llmc_emu::Launch(grid, block, shared, stream) ^ ::llmc_emu::args(args...);
#else
  if (!overlap) {
    kernel<<<grid, block, shared, stream>>>(args...);
    return;
  }
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  launchWith(attribute, kernel, grid, block, shared, stream, args...);
#endif
}

// kernel<<<grid, block, shared, stream>>>(args...) as a cooperative launch: every block resident
// at once (cudaErrorCooperativeLaunchTooLarge where the GPU cannot hold them), as gridSync needs.
template <typename... P, typename... A>
void launchCooperative(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                       const A &...args) {
#ifdef LLMC_CUDA_EMULATION
  kernel ^ ::llmc_emu::Launch(grid, block, shared, stream, true) ^ ::llmc_emu::args(args...);
#else
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  launchWith(attribute, kernel, grid, block, shared, stream, args...);
#endif
}

// A grid-wide barrier in a cooperative launch (launchCooperative): every thread of every block
// calls it, and none goes on until all have arrived; what any block wrote before it is then seen
// by all (through L2: data written during the kernel is not read with __ldg). `barrier`: two
// counters in device memory, zero before the first launch that uses them; each barrier leaves
// them so (the last block to arrive sets the count back and moves the generation on, which the
// others wait for), so they need no reset between launches.
struct GridBarrier {
  unsigned arrived, generation;
};
__device__ __forceinline__ void gridSync(GridBarrier *barrier) {
#ifdef LLMC_CUDA_EMULATION
  (void)barrier;
  ::llmc_emu::syncGrid();
#else
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    using Counter = ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device>;
    Counter arrived(barrier->arrived), generation(barrier->generation);
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    const unsigned now = generation.load(::cuda::memory_order_acquire);
    __threadfence();
    if (arrived.fetch_add(1, ::cuda::memory_order_acq_rel) == blocks - 1) {
      arrived.store(0, ::cuda::memory_order_relaxed);
      generation.store(now + 1, ::cuda::memory_order_release);
    } else {
      // A block that never comes (a launch that was not cooperative, or blocks that left early)
      // would hang the GPU: after 2 s the kernel traps instead, an error the launch reports.
      unsigned long long start, at;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
      while (generation.load(::cuda::memory_order_acquire) == now) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(at));
        if (at - start > 2000000000ull)
          __trap();
      }
    }
    __threadfence();
  }
  __syncthreads();
#endif
}

__host__ __device__ inline bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

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

// DType numbers (Tensor.h): the element types kernels of any type take (elementwise, scatter).
enum : int { F32 = 1, F16 = 2, F64 = 3, I64 = 4, I32 = 5, I8 = 6, U8 = 7, Bool = 8, BF16 = 9 };

// Element i of p, of DType number `type`, as a double; and a double stored as one (integers
// truncated, as a cast).
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

// v as f32 rounded to odd (toward zero, its last bit set when inexact), so that narrowing it once
// more to f16 or bf16 rounds v once, as the CPU's cast does (roundToOddFloat, Tensor.h).
__device__ __forceinline__ float roundToOdd(double v) {
  float f = float(v);
  if (isnan(v) || double(f) == v)
    return f;
  if (fabs(double(f)) > fabs(v))
    f = nextafterf(f, 0.0f);
  return __uint_as_float(__float_as_uint(f) | 1u);
}

__device__ void storeAs(void *p, int type, int64_t i, double v) {
  switch (type) {
  case F32: static_cast<float *>(p)[i] = float(v); break;
  case F16: static_cast<__half *>(p)[i] = fromF<__half>(roundToOdd(v)); break;
  case BF16: static_cast<__nv_bfloat16 *>(p)[i] = fromF<__nv_bfloat16>(roundToOdd(v)); break;
  case F64: static_cast<double *>(p)[i] = v; break;
  case I64: static_cast<long long *>(p)[i] = (long long)v; break;
  case I32: static_cast<int *>(p)[i] = int(v); break;
  case I8: static_cast<signed char *>(p)[i] = (signed char)v; break;
  case Bool: static_cast<unsigned char *>(p)[i] = v != 0.0; break;
  default: static_cast<unsigned char *>(p)[i] = (unsigned char)v; break;
  }
}

// Runs `f(T{})` with T the storage type.
template <typename F> void dispatch(Storage s, F &&f) {
  switch (s) {
  case Storage::F32: f(float{}); break;
  case Storage::F16: f(__half{}); break;
  case Storage::BF16: f(__nv_bfloat16{}); break;
  }
}

// Runs `f(T{})` with T the type of DType number `type` among the floats (f32, f16, bf16, f64);
// false for any other type.
template <typename F> bool dispatchFloat(int type, F &&f) {
  switch (type) {
  case F32: f(float{}); return true;
  case F16: f(__half{}); return true;
  case BF16: f(__nv_bfloat16{}); return true;
  case F64: f(double{}); return true;
  default: return false;
  }
}

// Runs `f(T{})` with T the type of DType number `type` among those the kernels of floats and
// integers take: the floats and int64, int32, int8, uint8 and bool (the last as uint8, as the CPU
// kernels take it); false for any other type.
template <typename F> bool dispatchNumeric(int type, F &&f) {
  if (dispatchFloat(type, f))
    return true;
  switch (type) {
  case I64: f(static_cast<long long>(0)); return true;
  case I32: f(int32_t{}); return true;
  case I8: f(static_cast<signed char>(0)); return true;
  case U8:
  case Bool: f(static_cast<unsigned char>(0)); return true;
  default: return false;
  }
}

std::string launched(const char *what) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}

int64_t blocksFor(int64_t n, int threads) { return std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, 65535 * 8)); }

} // namespace
} // namespace llmc::rt::cuda
