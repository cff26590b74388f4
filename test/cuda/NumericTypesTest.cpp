// The CUDA kernels of doubles (softmax, matmul and gemm, the reductions, arg reductions, top_k,
// cumsum; einsum's are in CudaKernelTest.cpp) against the CPU kernels, on values that f32 cannot
// hold: each a small number plus a part in 1e-9, so that a kernel that computed doubles in f32
// would be off by 1e-8 or more where these tests allow 1e-12. Also the integer matmul, max pool
// and pad.
#include "CudaTestUtil.h"

using namespace llmc::rt;
using namespace llmc::rt::cudatest;

namespace {

std::vector<double> fineDoubles(size_t n, uint64_t seed, float lo = -2, float hi = 2) {
  const std::vector<float> coarse = randomFloats(n, seed, lo, hi);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = double(coarse[i]) + 1e-9 * double(i % 1000);
  return v;
}

const int kF64 = int(DType::F64);

// Rows of 100 (staged in shared memory) and of 7000 (past the 6144 doubles that fit: read again).
TEST(Cuda, DoubleSoftmaxMatchesTheCpu) {
  const int64_t rows = 3;
  for (int64_t cols : {100, 7000})
    for (const char *op : {"softmax", "log_softmax"}) {
      Buf<double> x(DType::F64, {rows, cols}, fineDoubles(size_t(rows * cols), 1, -8, 8)),
          want(DType::F64, {rows, cols});
      ASSERT_EQ(call(op, attrs({intAttr("axis", -1)}), {x.ref()}, {want.ref()}), "");
      auto dx = uploadRaw(x.data);
      Device y(size_t(rows * cols) * 8);
      ASSERT_EQ(cu::softmax(kF64, dx->p, y.p, rows, cols, nullptr, std::string(op) == "log_softmax"), "");
      expectClose(downloadRaw<double>(y, size_t(rows * cols)), want.data, 1e-12,
                  std::string(op) + " f64 of " + std::to_string(cols));
    }
}

// A batched matmul with a broadcast B, a gemm with transB, alpha, beta and an addend row, and an
// int64 matmul past f32's mantissa (exact).
TEST(Cuda, DoubleAndIntegerMatmulMatchTheCpu) {
  {
    const std::vector<int64_t> aDims = {2, 3, 17, 19}, bDims = {19, 21}, cDims = {2, 3, 17, 21};
    Buf<double> a(DType::F64, aDims, fineDoubles(size_t(elementsOf(aDims)), 2)),
        b(DType::F64, bDims, fineDoubles(size_t(elementsOf(bDims)), 3)), want(DType::F64, cDims);
    ASSERT_EQ(call("matmul", {}, {a.ref(), b.ref()}, {want.ref()}), "");
    cu::MatmulArgs m;
    ASSERT_EQ(cu::matmulArgsOf(4, aDims.data(), 2, bDims.data(), m), "");
    auto da = uploadRaw(a.data), db = uploadRaw(b.data);
    Device out(size_t(want.numel()) * 8);
    ASSERT_EQ(cu::matmul(kF64, da->p, db->p, out.p, m, nullptr), "");
    expectClose(downloadRaw<double>(out, size_t(want.numel())), want.data, 1e-12, "matmul f64");
  }
  {
    const int64_t M = 18, N = 20, K = 7;
    Buf<double> a(DType::F64, {M, K}, fineDoubles(size_t(M * K), 4)), b(DType::F64, {N, K}, fineDoubles(size_t(N * K), 5)),
        c(DType::F64, {N}, fineDoubles(size_t(N), 6)), want(DType::F64, {M, N});
    ASSERT_EQ(call("gemm", attrs({floatAttr("alpha", 0.1), floatAttr("beta", 0.3), intAttr("transB", 1)}),
                   {a.ref(), b.ref(), c.ref()}, {want.ref()}),
              "");
    const int64_t aDims[2] = {M, K}, bDims[2] = {N, K}, cDims[1] = {N};
    cu::MatmulArgs m;
    ASSERT_EQ(cu::gemmArgsOf(aDims, bDims, false, true, 1, cDims, m), "");
    m.alpha = 0.1, m.beta = 0.3;
    auto da = uploadRaw(a.data), db = uploadRaw(b.data), dc = uploadRaw(c.data);
    Device out(size_t(M * N) * 8);
    ASSERT_EQ(cu::matmul(kF64, da->p, db->p, out.p, m, nullptr, dc->p), "");
    expectClose(downloadRaw<double>(out, size_t(M * N)), want.data, 1e-12, "gemm f64");
  }
  {
    const std::vector<int64_t> aDims = {5, 9}, bDims = {9, 6};
    std::vector<int64_t> av(45), bv(54);
    for (size_t i = 0; i < av.size(); ++i)
      av[i] = (int64_t(1) << 30) + int64_t(i % 7) - 3;
    for (size_t i = 0; i < bv.size(); ++i)
      bv[i] = int64_t(i % 5) - 2;
    Buf<int64_t> a(DType::I64, aDims, av), b(DType::I64, bDims, bv), want(DType::I64, {5, 6});
    ASSERT_EQ(call("matmul", {}, {a.ref(), b.ref()}, {want.ref()}), "");
    cu::MatmulArgs m;
    ASSERT_EQ(cu::matmulArgsOf(2, aDims.data(), 2, bDims.data(), m), "");
    auto da = uploadRaw(a.data), db = uploadRaw(b.data);
    Device out(30 * 8);
    ASSERT_EQ(cu::matmul(int(DType::I64), da->p, db->p, out.p, m, nullptr), "");
    EXPECT_EQ(downloadRaw<int64_t>(out, 30), want.data) << "matmul i64";
  }
  cu::MatmulArgs m;
  m.M = m.N = m.K = 1;
  Device unused(8);
  EXPECT_NE(cu::matmul(int(DType::Bool), unused.p, unused.p, unused.p, m, nullptr), "") << "bool operands";
}

// reduce_* over the middle axes of [2, 4, 6, 5], then arg_max and arg_min, top_k and cumsum
// along the middle axis of [3, 40, 2]: values that differ by 1e-9 (ties in f32).
TEST(Cuda, DoubleReductionsMatchTheCpu) {
  const int64_t dims[4] = {2, 4, 6, 5};
  const bool reduced[4] = {false, true, true, false};
  Buf<double> x(DType::F64, {2, 4, 6, 5}, fineDoubles(240, 7, 0.5f, 1.5f));
  auto dx = uploadRaw(x.data);
  for (const char *kind : {"sum", "mean", "max", "min", "l2", "sum_square", "prod"}) {
    Buf<double> want(DType::F64, {2, 1, 1, 5});
    ASSERT_EQ(call(std::string("reduce_") + kind, attrs({intsAttr("axes", {1, 2}), intAttr("keepdims", 1)}),
                   {x.ref()}, {want.ref()}),
              "");
    Device out(10 * 8);
    ASSERT_EQ(cu::reduce(kF64, kind, dx->p, out.p, 4, dims, reduced, nullptr), "");
    expectClose(downloadRaw<double>(out, 10), want.data, 1e-13, std::string("reduce_") + kind + " f64");
  }
  // Lines of 40 along the middle axis whose values differ in their last digits only.
  const int64_t outer = 3, n = 40, inner = 2, k = 4;
  std::vector<double> close(size_t(outer * n * inner));
  for (size_t i = 0; i < close.size(); ++i)
    close[i] = 1.0 + 1e-12 * double((i * 7919) % 97);
  Buf<double> line(DType::F64, {outer, n, inner}, close);
  auto dl = uploadRaw(line.data);
  for (bool max : {true, false}) {
    Buf<int64_t> want(DType::I64, {outer, 1, inner});
    ASSERT_EQ(call(max ? "arg_max" : "arg_min", attrs({intAttr("axis", 1), intAttr("keepdims", 1)}), {line.ref()},
                   {want.ref()}),
              "");
    Device out(size_t(outer * inner) * 8);
    ASSERT_EQ(cu::argReduce(kF64, max, dl->p, out.as<int64_t>(), outer, n, inner, false, nullptr), "");
    EXPECT_EQ(downloadRaw<int64_t>(out, size_t(outer * inner)), want.data) << (max ? "arg_max" : "arg_min") << " f64";
  }
  {
    Buf<double> want(DType::F64, {outer, k, inner});
    Buf<int64_t> wantIndices(DType::I64, {outer, k, inner});
    ASSERT_EQ(call("top_k", attrs({intAttr("axis", 1), intAttr("k", k), intAttr("largest", 1)}), {line.ref()},
                   {want.ref(), wantIndices.ref()}),
              "");
    Device values(size_t(outer * k * inner) * 8), indices(size_t(outer * k * inner) * 8);
    ASSERT_EQ(cu::topK(kF64, dl->p, values.p, indices.as<int64_t>(), outer, n, inner, k, true, nullptr), "");
    EXPECT_EQ(downloadRaw<int64_t>(indices, size_t(outer * k * inner)), wantIndices.data) << "top_k f64";
    EXPECT_EQ(downloadRaw<double>(values, size_t(outer * k * inner)), want.data) << "top_k f64";
  }
  {
    Buf<double> want(DType::F64, {outer, n, inner});
    Buf<int64_t> axis(DType::I64, {1}, {1});
    ASSERT_EQ(call("cumsum", {}, {line.ref(), axis.ref()}, {want.ref()}), "");
    cu::CumsumArgs c;
    c.rank = 3, c.dims[0] = outer, c.dims[1] = n, c.dims[2] = inner, c.axis = 1;
    Device out(size_t(outer * n * inner) * 8), error(4);
    cudaMemset(error.p, 0, 4);
    ASSERT_EQ(cu::cumsum(kF64, dl->p, out.p, c, error.as<int>(), nullptr), "");
    expectClose(downloadRaw<double>(out, size_t(outer * n * inner)), want.data, 1e-14, "cumsum f64");
  }
}

// max_pool (with and without indices) of uint8 and int8 [2, 4, 6, 5], 3x3, stride 2, pads 1:
// exact, values across the whole range of each type; each index at an element that holds the max.
TEST(Cuda, IntegerMaxPoolMatchesTheCpu) {
  cu::Window win;
  win.spatial = 2;
  win.in[0] = 6, win.in[1] = 5, win.out[0] = 3, win.out[1] = 3, win.kernel[0] = win.kernel[1] = 3;
  win.padBegin[0] = win.padBegin[1] = 1, win.stride[0] = win.stride[1] = 2;
  const AttrList a = attrs({intsAttr("kernel_shape", {3, 3}), intsAttr("pads", {1, 1, 1, 1}),
                            intsAttr("strides", {2, 2}), intsAttr("dilations", {1, 1})});
  auto check = [&](auto zero, DType type) {
    using T = decltype(zero);
    std::vector<T> values(240);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = T((i * 7919) % 256); // (int8: wrapped to -128..127)
    Buf<T> x(type, {2, 4, 6, 5}, values), want(type, {2, 4, 3, 3});
    ASSERT_EQ(call("max_pool", a, {x.ref()}, {want.ref()}), "");
    auto dx = uploadRaw(x.data);
    Device y(72), yi(72), di(72 * 8);
    ASSERT_EQ(cu::pool(int(type), true, dx->p, y.p, 8, win, false, nullptr), "");
    ASSERT_EQ(cu::pool(int(type), true, dx->p, yi.p, 8, win, false, nullptr, di.as<int64_t>()), "");
    EXPECT_EQ(downloadRaw<T>(y, 72), want.data) << "max_pool of " << dtypeName(type);
    EXPECT_EQ(downloadRaw<T>(yi, 72), want.data) << "max_pool_with_indices of " << dtypeName(type);
    // (The CPU's max_pool_with_indices takes floats only: each index must hold its maximum.)
    const std::vector<int64_t> at = downloadRaw<int64_t>(di, 72);
    for (size_t e = 0; e < at.size(); ++e) {
      ASSERT_TRUE(at[e] >= 0 && at[e] < 240) << "index " << e << " of " << dtypeName(type);
      EXPECT_EQ(x.data[size_t(at[e])], want.data[e]) << "index " << e << " of " << dtypeName(type);
    }
  };
  check(uint8_t(0), DType::U8);
  check(int8_t(0), DType::I8);
}

// pad of int32 and of doubles in each mode, the constant mode with a value of 7 (exact).
TEST(Cuda, IntegerAndDoublePadMatchesTheCpu) {
  const int64_t inDims[3] = {2, 3, 4}, outDims[3] = {3, 6, 5}, begin[3] = {1, 2, 0};
  auto check = [&](auto zero, DType type) {
    using T = decltype(zero);
    std::vector<T> values(24);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = T(int64_t(i * 7919 % 97) - 48) + T(sizeof(T) == 8 ? 1e-9 : 0);
    Buf<T> x(type, {2, 3, 4}, values), value(type, {}, {T(7)});
    auto dx = uploadRaw(x.data);
    for (const char *mode : {"constant", "edge", "reflect", "wrap"}) {
      Buf<T> want(type, {3, 6, 5});
      ASSERT_EQ(call("pad", attrs({intsAttr("pads", {1, 2, 0, 0, 1, 1}), stringAttr("mode", mode)}),
                     {x.ref(), value.ref()}, {want.ref()}),
                "");
      Device y(90 * sizeof(T));
      ASSERT_EQ(cu::pad(int(type), mode, dx->p, y.p, 3, inDims, outDims, begin, 7.0, nullptr), "");
      EXPECT_EQ(downloadRaw<T>(y, 90), want.data) << "pad " << mode << " of " << dtypeName(type);
    }
  };
  check(int32_t(0), DType::I32);
  check(double(0), DType::F64);
}

} // namespace
