// Helpers of the CUDA kernel tests (CudaKernelTest.cpp, NumericTypesTest.cpp): device buffers,
// uploads and downloads in each storage type, and comparisons with the CPU kernels' results.
#pragma once

#include "CudaKernels.h"
#include "KernelTestUtil.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace llmc::rt::cudatest {
namespace cu = llmc::rt::cuda;
using namespace llmc::rt::test;

inline const cu::Storage kStorages[] = {cu::Storage::F32, cu::Storage::F16, cu::Storage::BF16};

inline const char *name(cu::Storage s) { return s == cu::Storage::F32 ? "f32" : s == cu::Storage::F16 ? "f16" : "bf16"; }
inline DType storageDType(cu::Storage s) { return s == cu::Storage::F32 ? DType::F32 : s == cu::Storage::F16 ? DType::F16 : DType::BF16; }

inline uint16_t toBf16(float f) { // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float fromBf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Values as `s` stores them, widened back: what both executors read.
inline std::vector<float> rounded(std::vector<float> v, cu::Storage s) {
  for (float &x : v)
    x = s == cu::Storage::F16 ? halfToFloat(floatToHalf(x)) : s == cu::Storage::BF16 ? fromBf16(toBf16(x)) : x;
  return v;
}

inline float tolerance(cu::Storage s) { return s == cu::Storage::F32 ? 2e-5f : s == cu::Storage::F16 ? 4e-3f : 3e-2f; }

// A device buffer.
struct Device {
  void *p = nullptr;
  size_t bytes = 0;
  explicit Device(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(n, 1)), cudaSuccess); }
  ~Device() { cudaFree(p); }
  Device(const Device &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(p); }
};

// Floats uploaded in storage `s`.
inline std::unique_ptr<Device> upload(const std::vector<float> &v, cu::Storage s) {
  auto d = std::make_unique<Device>(v.size() * cu::storageBytes(s));
  if (s == cu::Storage::F32) {
    cudaMemcpy(d->p, v.data(), d->bytes, cudaMemcpyHostToDevice);
  } else {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = s == cu::Storage::F16 ? floatToHalf(v[i]) : toBf16(v[i]);
    cudaMemcpy(d->p, h.data(), d->bytes, cudaMemcpyHostToDevice);
  }
  return d;
}

template <typename T> inline std::vector<T> downloadRaw(const Device &d, size_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaMemcpy(out.data(), d.p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

// The elements of a tensor of these dims.
inline int64_t elementsOf(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

inline std::vector<float> download(const Device &d, size_t n, cu::Storage s) {
  std::vector<float> out(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (s == cu::Storage::F32) {
    cudaMemcpy(out.data(), d.p, n * 4, cudaMemcpyDeviceToHost);
  } else {
    std::vector<uint16_t> h(n);
    cudaMemcpy(h.data(), d.p, n * 2, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; ++i)
      out[i] = s == cu::Storage::F16 ? halfToFloat(h[i]) : fromBf16(h[i]);
  }
  return out;
}

template <typename T> inline std::unique_ptr<Device> uploadRaw(const std::vector<T> &v) {
  auto d = std::make_unique<Device>(v.size() * sizeof(T));
  cudaMemcpy(d->p, v.data(), d->bytes, cudaMemcpyHostToDevice);
  return d;
}

// The window of the grouped convolution tests: [6, 5] to [3, 4], kernel 3x2, stride (2, 1), pads
// (1, 0) at the start, dilation (1, 2).
inline cu::Window groupedConvWindow() {
  cu::Window win;
  win.spatial = 2;
  const int64_t in[2] = {6, 5}, out[2] = {3, 4}, k[2] = {3, 2}, pb[2] = {1, 0}, st[2] = {2, 1}, di[2] = {1, 2};
  for (int d = 0; d < 2; ++d)
    win.in[d] = in[d], win.out[d] = out[d], win.kernel[d] = k[d], win.padBegin[d] = pb[d], win.stride[d] = st[d],
    win.dilation[d] = di[d];
  return win;
}

// |got - want| <= tol * (1 + |want|) everywhere (floats or doubles).
template <typename V>
void expectClose(const std::vector<V> &got, const std::vector<V> &want, double tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) // equal infinities are close too
      ASSERT_LE(std::fabs(got[i] - want[i]), tol * (1 + std::fabs(want[i]))) << what << " at " << i;
}

// As expectClose (within tol * (1 + |want|)), and a NaN wherever want has one.
inline void expectCloseOrNan(const std::vector<float> &got, const std::vector<float> &want, float tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    else
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
}

} // namespace llmc::rt::cudatest
