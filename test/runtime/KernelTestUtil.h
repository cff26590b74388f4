// Helpers shared by the kernel tests: buffers, random data, multi-index arithmetic, attribute
// builders, and `call`, which records every kernel a test runs (Kernels.ZZEveryKernelIsTested).
#pragma once

#include "Kernels.h"
#include "KernelUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace llmc::rt::test {

inline std::set<std::string> &tested() {
  static std::set<std::string> names;
  return names;
}

// An owning tensor for tests.
template <typename T> struct Buf {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<T> data;
  Buf(DType d, std::vector<int64_t> s, std::vector<T> values = {}) : dtype(d), shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t x : shape)
      n *= x;
    data = values.empty() ? std::vector<T>(size_t(n)) : std::move(values);
  }
  TensorRef ref() {
    TensorRef t;
    t.dtype = dtype;
    t.shape.rank = int(shape.size());
    for (size_t i = 0; i < shape.size(); ++i)
      t.shape.dims[i] = shape[i];
    t.data = data.data();
    return t;
  }
  int64_t numel() const { return int64_t(data.size()); }
};

inline std::vector<float> randomFloats(size_t n, uint64_t seed, float lo = -2, float hi = 2) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto &x : v)
    x = d(rng);
  return v;
}

inline std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t> &idx, const std::vector<int64_t> &shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    off = off * shape[d] + idx[d];
  return off;
}

// Index into `shape` broadcast against an output multi-index (aligned right).
inline int64_t broadcastIndex(const std::vector<int64_t> &outIdx, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  size_t off = outIdx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    idx[d] = shape[d] == 1 ? 0 : outIdx[d + off];
  return ravel(idx, shape);
}

inline std::string call(const std::string &name, const AttrList &attrs, std::vector<TensorRef> ins,
                 std::vector<TensorRef> outs) {
  tested().insert(name);
  KernelFn fn = findKernel(name);
  if (!fn)
    return "no kernel " + name;
  KernelArgs args{attrs, ins.data(), int(ins.size()), outs.data(), int(outs.size())};
  return fn(args);
}

inline Attr intAttr(const char *name, int64_t v) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Int;
  a.i = v;
  return a;
}
inline Attr floatAttr(const char *name, double v) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Float;
  a.f = v;
  return a;
}
inline Attr intsAttr(const char *name, std::vector<int64_t> v) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
inline Attr stringAttr(const char *name, std::string v) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::String;
  a.s = std::move(v);
  return a;
}
inline AttrList attrs(std::initializer_list<Attr> list) {
  AttrList l;
  for (const Attr &a : list)
    l.add(a);
  return l;
}

} // namespace llmc::rt::test
