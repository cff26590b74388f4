// WMMA on the CPU (see CudaEmulation.h): a fragment holds its whole tile, in every thread, so
// load, mma and store work on whole tiles and need no lane mapping; the real fragments' mapping
// is unspecified and our kernels never depend on it. The documented preconditions (a 256-bit
// aligned pointer, a leading dimension of whole 16-byte steps) are checked.
#pragma once

#include "CudaEmulation.h"

#include <cstdint>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K> struct Shape;
template <int M, int N, int K> struct Shape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct Shape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct Shape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

// Elements (r, c) at x[r * cols + c], widened to float (exact for f16 and bf16).
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
  static constexpr int rows = Shape<Use, M, N, K>::rows, cols = Shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  float x[num_elements];
};

namespace detail {
template <typename T> float widen(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else
    return __bfloat162float(v);
}
template <typename T> void check(const T *p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(p) % 32)
    llmc_emu::fail("wmma: a load or store pointer that is not 256-bit aligned");
  if (ldm * sizeof(T) % 16)
    llmc_emu::fail("wmma: a leading dimension that is not a multiple of 16 bytes");
}
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename L>
void fill_fragment(fragment<Use, M, N, K, T, L> &f, float v) {
  for (float &e : f.x)
    e = v;
}

// A or B from memory in the fragment's own layout.
template <typename Use, int M, int N, int K, typename T, typename L>
void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const T *p, unsigned ldm) {
  detail::check(p, ldm);
  using F = fragment<Use, M, N, K, T, L>;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = detail::widen(std::is_same_v<L, col_major> ? p[size_t(c) * ldm + r] : p[size_t(r) * ldm + c]);
  llmc_emu::syncWarp(0xffffffffu);
}

template <int M, int N, int K>
void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f, unsigned ldm, layout_t layout) {
  detail::check(p, ldm);
  // Every lane holds the whole tile: lane 0 stores it, the others only take part in the barrier.
  if (llmc_emu::lane() == 0)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c)
        (layout == mem_col_major ? p[size_t(c) * ldm + r] : p[size_t(r) * ldm + c]) = f.x[r * N + c];
  llmc_emu::syncWarp(0xffffffffu);
}

// d = a b + c, accumulated in f32.
template <int M, int N, int K, typename T, typename LA, typename LB>
void mma_sync(fragment<accumulator, M, N, K, float> &d, const fragment<matrix_a, M, N, K, T, LA> &a,
              const fragment<matrix_b, M, N, K, T, LB> &b, const fragment<accumulator, M, N, K, float> &c) {
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = c.x[i * N + j];
      for (int k = 0; k < K; ++k)
        acc += a.x[i * K + k] * b.x[k * N + j];
      out[i * N + j] = acc;
    }
  for (int e = 0; e < M * N; ++e)
    d.x[e] = out[e];
  llmc_emu::syncWarp(0xffffffffu);
}

} // namespace nvcuda::wmma
