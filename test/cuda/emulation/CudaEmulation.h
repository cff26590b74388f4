// Runs our CUDA kernels on the CPU, so that the kernel tests and the CUDA executor run where no
// GPU exists (every build machine): the kernel files are compiled as C++ with this header
// included first, after emulate_launches.py has turned each `kernel<<<grid, block, shared,
// stream>>>(args)` into a call of llmc_emu::run (CudaEmulation.cpp runs it); the CUDA runtime,
// cuBLASLt and NVRTC calls have stand-ins beside it (Emulated*.cpp). docs/cuda.md has the whole.
//
// Every CUDA thread of a block is a fiber on one OS thread; a fiber runs until it reaches a
// barrier (__syncthreads, __syncwarp, a shuffle), and the scheduler releases a barrier once every
// thread it names has reached it. So barriers are checked, not assumed: a __syncthreads that not
// every thread reaches, or a shuffle that names a thread which has exited, stops the launch with
// an error, where a GPU would hang or read garbage. Blocks run one after another, in an order
// that changes from launch to launch (forward, backward, strided); the threads of a block run in
// index order in every other block and in reverse in the rest, so that a read of shared memory
// that misses its barrier sees the other order's value somewhere, and between two __syncthreads
// one warp is held back while any other thread can run, so that the others run ahead of it as
// far as their barriers let them (a write it should have waited for lands before its read). Shared memory, dynamic
// and `__shared__` variables (blockShared), is each block's own and starts as all-ones bytes (a
// NaN in every float), as device buffers do (EmulatedCudaRuntime.cpp). Built with
// AddressSanitizer, reads and writes past a device buffer or shared memory are reported where
// they happen.
//
// A cooperative launch (a grid barrier's) has every block in flight at once: the scheduler runs
// each block in turn until all its threads wait at the grid barrier, and releases it once every
// block's have.
//
// What it cannot show: speed, the memory model between blocks or warps (blocks never overlap,
// threads never interleave between barriers, a shuffle orders memory as a barrier would), and
// any bug of the real WMMA fragments' layout (mma.h here computes whole tiles per thread; our
// kernels never look inside a fragment).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>

// The execution-space qualifiers mean nothing on the CPU. emulate_launches.py turns the kernel
// files' `__shared__` declarations into blockShared (below); one left in code it did not rewrite
// would be a function-local static that every block shares.
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __grid_constant__
#undef __shared__
#undef __constant__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static
#define __constant__

// The emulation's own functions are visible outside a library built with hidden visibility (the
// CUDA plugin), so that kernels compiled at run time (EmulatedNvrtc.cpp) share its state.
#define LLMC_EMU_API __attribute__((visibility("default")))

namespace llmc_emu {

// The running thread's coordinates (set by the scheduler before it resumes a fiber).
LLMC_EMU_API extern uint3 gThreadIdx, gBlockIdx;
LLMC_EMU_API extern dim3 gBlockDim, gGridDim;

// Barriers: every thread of the block; the threads of `mask` in the caller's warp.
LLMC_EMU_API void syncThreads();
LLMC_EMU_API void syncWarp(unsigned mask);
// A shuffle: every lane of `mask` offers `bytes` at `mine`; the caller reads lane `source`'s (its
// own when `source` is outside the warp).
LLMC_EMU_API void exchange(unsigned mask, const void *mine, void *out, size_t bytes, int source);
// The block's dynamic shared memory (`extern __shared__`).
LLMC_EMU_API unsigned char *dynamicShared();
// The running block's copy of the `__shared__` variable declared at `site`: made at the block's
// first call, of exactly `bytes` (AddressSanitizer sees a read past it) and all-ones bytes (a
// NaN in every float: a GPU's shared memory holds whatever was there, so a read before the
// block's own write sees no earlier block's value), freed when the block ends.
LLMC_EMU_API void *blockStatic(const void *site, size_t bytes, size_t align);
// `__shared__ T name;` as emulate_launches.py writes it: `auto &name = blockShared<T>([] {});`,
// the lambda's type making every declaration (in every instantiation of a template) a site.
template <typename T, typename Site> T &blockShared(Site) {
  static const char site = 0;
  return *static_cast<T *>(blockStatic(&site, sizeof(T), alignof(T)));
}
// Stops the launch: what a GPU would do wrong here (cudaGetLastError then reports it).
[[noreturn]] LLMC_EMU_API void fail(const char *why);

struct Launch {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
  bool cooperative; // every block in flight at once (a grid barrier's launch: syncGrid)
  Launch(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr, bool c = false)
      : grid(g), block(b), shared(s), stream(st), cooperative(c) {}
};
// The most threads, all blocks together, a cooperative launch may have here (each thread is a
// fiber with a stack of its own, all alive at once): more is cudaErrorCooperativeLaunchTooLarge.
constexpr unsigned kMaxCooperativeThreads = 2048;
// A grid-wide barrier (DeviceUtil.cuh: gridSync): every thread of every block of a cooperative
// launch waits until all have reached it; in any other launch, an error.
LLMC_EMU_API void syncGrid();
// Checks a launch and runs `body` once per thread of every block, on `launch.stream`: now, or at
// each replay of the graph that stream is capturing. Errors become cudaGetLastError's.
LLMC_EMU_API void run(const void *kernel, const Launch &launch, std::function<void()> body);

// The runtime's side (EmulatedCudaRuntime.cpp): work on a stream, now or into its capture.
void enqueue(cudaStream_t stream, std::function<void()> work);
// The sticky error of the emulated device, as cudaGetLastError and cudaPeekAtLastError see it.
void setError(cudaError_t e, const std::string &why);
cudaError_t takeError();
cudaError_t peekError();
// cudaFuncAttributeMaxDynamicSharedMemorySize of a kernel.
void allowShared(const void *kernel, int bytes);

template <typename F> struct Pending {
  F *kernel;
  Launch launch;
};
template <typename F> Pending<F> operator^(F *kernel, const Launch &launch) { return {kernel, launch}; }
template <typename... A> std::tuple<std::decay_t<A>...> args(A &&...a) { return {std::forward<A>(a)...}; }
// The arguments are copied, as a launch copies them: a captured launch replays with these values.
template <typename F, typename... A> void operator^(const Pending<F> &p, const std::tuple<A...> &arguments) {
  run(reinterpret_cast<const void *>(p.kernel), p.launch,
      [kernel = p.kernel, arguments] { std::apply(kernel, arguments); });
}

template <typename T> T shuffle(unsigned mask, T v, int source) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  T out;
  exchange(mask, &v, &out, sizeof(T), source);
  return out;
}
inline int lane() { return int((gThreadIdx.x + gBlockDim.x * (gThreadIdx.y + gBlockDim.y * gThreadIdx.z)) & 31); }

} // namespace llmc_emu

#define threadIdx (::llmc_emu::gThreadIdx)
#define blockIdx (::llmc_emu::gBlockIdx)
#define blockDim (::llmc_emu::gBlockDim)
#define gridDim (::llmc_emu::gGridDim)
#ifndef warpSize
#define warpSize 32
#endif

// Device code calls these unqualified, as CUDA declares them.
using std::isfinite;
using std::isinf;
using std::isnan;

// cuda_runtime.h's overload for a kernel (rather than a void pointer) is nvcc's only.
template <typename T> cudaError_t cudaFuncSetAttribute(T *kernel, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel), attr, value);
}

inline void __syncthreads() { llmc_emu::syncThreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { llmc_emu::syncWarp(mask); }
inline void __threadfence() {}

template <typename T> T __shfl_sync(unsigned mask, T v, int source, int width = 32) {
  const int l = llmc_emu::lane();
  return llmc_emu::shuffle(mask, v, (l & ~(width - 1)) + (source & (width - 1)));
}
template <typename T> T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  const int l = llmc_emu::lane(), to = l ^ laneMask;
  return llmc_emu::shuffle(mask, v, (to & ~(width - 1)) == (l & ~(width - 1)) ? to : l);
}
template <typename T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int l = llmc_emu::lane();
  return llmc_emu::shuffle(mask, v, (l & (width - 1)) + int(delta) < width ? l + int(delta) : l);
}
template <typename T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int l = llmc_emu::lane();
  return llmc_emu::shuffle(mask, v, (l & (width - 1)) >= int(delta) ? l - int(delta) : l);
}

// Loads with cache hints are plain loads.
template <typename T> T __ldg(const T *p) { return *p; }
template <typename T> T __ldcg(const T *p) { return *p; }
template <typename T> T __ldcs(const T *p) { return *p; }

// Atomics: the threads never run at the same time.
template <typename T> T atomicAdd(T *p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T> T atomicMax(T *p, T v) {
  const T old = *p;
  *p = old > v ? old : v;
  return old;
}
template <typename T> T atomicExch(T *p, T v) {
  const T old = *p;
  *p = v;
  return old;
}
template <typename T> T atomicCAS(T *p, T compare, T v) {
  const T old = *p;
  if (old == compare)
    *p = v;
  return old;
}

// The PTX conversions of generated kernels (EmulatedNvrtc.cpp), on 16-bit patterns: round to
// nearest even.
namespace llmc_emu {
inline float cvt_f32_f16(unsigned short h) {
  __half x;
  std::memcpy(&x, &h, 2);
  return __half2float(x);
}
inline unsigned short cvt_f16_f32(float f) {
  const __half x = __float2half_rn(f);
  unsigned short h;
  std::memcpy(&h, &x, 2);
  return h;
}
inline unsigned short cvt_bf16_f32(float f) {
  const __nv_bfloat16 x = __float2bfloat16_rn(f);
  unsigned short h;
  std::memcpy(&h, &x, 2);
  return h;
}
} // namespace llmc_emu

inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __int_as_float(int i) { return __uint_as_float(unsigned(i)); }
inline int __float_as_int(float f) { return int(__float_as_uint(f)); }
