// The CUDA kernels of doubles (softmax, matmul and gemm, the reductions, arg reductions, top_k,
// cumsum, the norms, conv; einsum's are in CudaKernelTest.cpp) against the CPU kernels, on values
// that f32 cannot hold: each a small number plus a part in 1e-9, so that a kernel that computed
// doubles in f32 would be off by 1e-8 or more where these tests allow 1e-12. Also the integer
// matmul, max pool and pad.
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

// max_pool (with and without indices) of uint8, int8 and doubles [2, 4, 6, 5], 3x3, stride 2,
// pads 1: exact, values across the whole range of each 8-bit type, and the indices the CPU's.
TEST(Cuda, IntegerAndDoubleMaxPoolMatchTheCpu) {
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
    Buf<T> x(type, {2, 4, 6, 5}, values), want(type, {2, 4, 3, 3}), wantWithIndices(type, {2, 4, 3, 3});
    Buf<int64_t> wantIndices(DType::I64, {2, 4, 3, 3});
    ASSERT_EQ(call("max_pool", a, {x.ref()}, {want.ref()}), "");
    ASSERT_EQ(call("max_pool_with_indices", a, {x.ref()}, {wantWithIndices.ref(), wantIndices.ref()}), "");
    ASSERT_EQ(wantWithIndices.data, want.data);
    auto dx = uploadRaw(x.data);
    Device y(72 * sizeof(T)), yi(72 * sizeof(T)), di(72 * 8);
    ASSERT_EQ(cu::pool(int(type), true, dx->p, y.p, 8, win, false, nullptr), "");
    ASSERT_EQ(cu::pool(int(type), true, dx->p, yi.p, 8, win, false, nullptr, di.as<int64_t>()), "");
    EXPECT_EQ(downloadRaw<T>(y, 72), want.data) << "max_pool of " << dtypeName(type);
    EXPECT_EQ(downloadRaw<T>(yi, 72), want.data) << "max_pool_with_indices of " << dtypeName(type);
    EXPECT_EQ(downloadRaw<int64_t>(di, 72), wantIndices.data) << "max_pool_with_indices' indices, " << dtypeName(type);
  };
  check(uint8_t(0), DType::U8);
  check(int8_t(0), DType::I8);
  check(double(0), DType::F64);
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

// The norms of doubles: layer and RMS norms with and without a residual, on rows of 100 (staged)
// and of 7000 (past the 6144 doubles that shared memory stages: read again), against the CPU's
// norm of x + r; then group_norm, instance_norm, layer_norm_stats and batch_norm.
TEST(Cuda, DoubleNormsMatchTheCpu) {
  const int64_t rows = 3;
  for (int64_t cols : {100, 7000})
    for (bool layer : {false, true})
      for (bool withResidual : {false, true}) {
        const size_t n = size_t(rows * cols);
        std::vector<double> xv = fineDoubles(n, 20), rv = withResidual ? fineDoubles(n, 21) : std::vector<double>(n);
        std::vector<double> sumv(n);
        for (size_t i = 0; i < n; ++i)
          sumv[i] = xv[i] + rv[i];
        Buf<double> sum(DType::F64, {rows, cols}, sumv), scale(DType::F64, {cols}, fineDoubles(size_t(cols), 22)),
            bias(DType::F64, {cols}, fineDoubles(size_t(cols), 23)), want(DType::F64, {rows, cols});
        std::vector<TensorRef> ins = {sum.ref(), scale.ref()};
        if (layer)
          ins.push_back(bias.ref());
        ASSERT_EQ(call(layer ? "layer_norm" : "rms_norm", attrs({intAttr("axis", -1), floatAttr("epsilon", 1e-5)}), ins,
                       {want.ref()}),
                  "");
        auto dx = uploadRaw(xv), dr = uploadRaw(rv), dscale = uploadRaw(scale.data), dbias = uploadRaw(bias.data);
        Device out(n * 8), dsum(n * 8);
        ASSERT_EQ(cu::addNorm(kF64, layer, dx->p, withResidual ? dr->p : nullptr, dscale->p, layer ? dbias->p : nullptr,
                              out.p, withResidual ? dsum.p : nullptr, rows, cols, 1e-5, nullptr),
                  "");
        const std::string what = std::string(layer ? "layer" : "rms") + " norm f64 of " + std::to_string(cols) +
                                 (withResidual ? " with a residual" : "");
        expectClose(downloadRaw<double>(out, n), want.data, 1e-12, what);
        if (withResidual)
          expectClose(downloadRaw<double>(dsum, n), sumv, 0, what + ", sum");
      }
  // x [2, 6, 5]: group_norm in 3 groups; instance_norm; layer_norm_stats over [6, 5]; batch_norm.
  const std::vector<int64_t> dims = {2, 6, 5};
  const std::vector<double> xv = fineDoubles(60, 24, 1, 5), scalev = fineDoubles(6, 25), biasv = fineDoubles(6, 26);
  Buf<double> x(DType::F64, dims, xv), scale(DType::F64, {6}, scalev), bias(DType::F64, {6}, biasv);
  auto dx = uploadRaw(xv), ds = uploadRaw(scalev), db = uploadRaw(biasv);
  for (const char *op : {"group_norm", "instance_norm"}) {
    const bool group = std::string(op) == "group_norm";
    Buf<double> want(DType::F64, dims);
    ASSERT_EQ(call(op, attrs({intAttr("num_groups", 3), floatAttr("epsilon", 1e-5)}), {x.ref(), scale.ref(), bias.ref()},
                   {want.ref()}),
              "");
    Device y(60 * 8);
    ASSERT_EQ(group ? cu::groupNorm(kF64, dx->p, y.p, ds->p, db->p, nullptr, nullptr, 6, 10, 3, 2, 5, 1e-5, nullptr)
                    : cu::groupNorm(kF64, dx->p, y.p, ds->p, db->p, nullptr, nullptr, 12, 5, 6, 1, 5, 1e-5, nullptr),
              "");
    expectClose(downloadRaw<double>(y, 60), want.data, 1e-12, std::string(op) + " f64");
  }
  {
    Buf<double> mean(DType::F64, {2, 1, 1}), inv(DType::F64, {2, 1, 1});
    ASSERT_EQ(call("layer_norm_stats", attrs({intAttr("axis", 1), floatAttr("epsilon", 1e-5)}), {x.ref()},
                   {mean.ref(), inv.ref()}),
              "");
    Device m(2 * 8), i(2 * 8);
    ASSERT_EQ(cu::groupNorm(kF64, dx->p, nullptr, nullptr, nullptr, m.p, i.p, 2, 30, 1, 1, 1, 1e-5, nullptr), "");
    expectClose(downloadRaw<double>(m, 2), mean.data, 1e-12, "layer_norm_stats mean f64");
    expectClose(downloadRaw<double>(i, 2), inv.data, 1e-12, "layer_norm_stats 1/std f64");
  }
  {
    std::vector<double> var = fineDoubles(6, 27, 0.5, 2);
    Buf<double> mean(DType::F64, {6}, fineDoubles(6, 28)), variance(DType::F64, {6}, var), want(DType::F64, dims);
    ASSERT_EQ(call("batch_norm", attrs({floatAttr("epsilon", 1e-5)}),
                   {x.ref(), scale.ref(), bias.ref(), mean.ref(), variance.ref()}, {want.ref()}),
              "");
    auto dm = uploadRaw(mean.data), dv = uploadRaw(var);
    Device y(60 * 8);
    ASSERT_EQ(cu::batchNorm(kF64, dx->p, y.p, ds->p, db->p, dm->p, dv->p, 60, 6, 5, 1e-5, nullptr), "");
    expectClose(downloadRaw<double>(y, 60), want.data, 1e-12, "batch_norm f64");
  }
}

// A grouped convolution of doubles (4 -> 6 channels in 2 groups, kernel 3x2, stride (2, 1), pads
// (1, 0, 1, 1), dilation (1, 2)) against the CPU's, whose doubles are in turn checked against its
// f32 convolution (at f32's precision), so that the two direct sums in f64 are not only each other's.
TEST(Cuda, DoubleConvMatchesTheCpu) {
  const std::vector<double> xv = fineDoubles(240, 29), wv = fineDoubles(72, 30), bv = fineDoubles(6, 31);
  Buf<double> x(DType::F64, {2, 4, 6, 5}, xv), w(DType::F64, {6, 2, 3, 2}, wv), bias(DType::F64, {6}, bv),
      want(DType::F64, {2, 6, 3, 4});
  const AttrList a = attrs({intsAttr("pads", {1, 0, 1, 1}), intsAttr("strides", {2, 1}), intsAttr("dilations", {1, 2}),
                            intAttr("group", 2)});
  ASSERT_EQ(call("conv", a, {x.ref(), w.ref(), bias.ref()}, {want.ref()}), "");
  Buf<float> xf(DType::F32, {2, 4, 6, 5}, std::vector<float>(xv.begin(), xv.end())),
      wf(DType::F32, {6, 2, 3, 2}, std::vector<float>(wv.begin(), wv.end())),
      bf(DType::F32, {6}, std::vector<float>(bv.begin(), bv.end())), wantF(DType::F32, {2, 6, 3, 4});
  ASSERT_EQ(call("conv", a, {xf.ref(), wf.ref(), bf.ref()}, {wantF.ref()}), "");
  expectClose(std::vector<float>(want.data.begin(), want.data.end()), wantF.data, 1e-4f, "conv f64 on the CPU");
  const cu::Window win = groupedConvWindow();
  auto dx = uploadRaw(xv), dw = uploadRaw(wv), db = uploadRaw(bv);
  Device y(size_t(want.numel()) * 8);
  ASSERT_EQ(cu::conv(kF64, dx->p, dw->p, db->p, y.p, 2, 4, 6, 2, win, nullptr), "");
  expectClose(downloadRaw<double>(y, size_t(want.numel())), want.data, 1e-12, "conv f64");
}

// The ONNX attention of doubles (B 1, 4 query heads over 2, 3 queries after `past` keys, head
// sizes 8 and 6; causal, softcap 1.5, scale 0.25, an additive mask of doubles) in each of its
// scores' modes, and over 4500 past keys (past a chunk of 4096 keys: the online softmax's
// rescaling in f64), against the CPU's.
TEST(Cuda, DoubleOnnxAttentionMatchesTheCpu) {
  const int64_t B = 1, Hq = 4, Hkv = 2, Sq = 3, Skv = 3, D = 8, Dv = 6;
  for (int64_t past : {int64_t(5), int64_t(4500)})
    for (int mode = 0; mode < 4; ++mode) {
      if (past > 5 && mode != 3)
        continue;
      const int64_t keys = past + Skv;
      Buf<double> q(DType::F64, {B, Hq, Sq, D}, fineDoubles(size_t(B * Hq * Sq * D), 40)),
          k(DType::F64, {B, Hkv, Skv, D}, fineDoubles(size_t(B * Hkv * Skv * D), 41)),
          v(DType::F64, {B, Hkv, Skv, Dv}, fineDoubles(size_t(B * Hkv * Skv * Dv), 42)),
          pastK(DType::F64, {B, Hkv, past, D}, fineDoubles(size_t(B * Hkv * past * D), 43)),
          pastV(DType::F64, {B, Hkv, past, Dv}, fineDoubles(size_t(B * Hkv * past * Dv), 44)),
          mask(DType::F64, {B, 1, Sq, keys}, fineDoubles(size_t(B * Sq * keys), 45, -1, 0)),
          y(DType::F64, {B, Hq, Sq, Dv}), presentK(DType::F64, {B, Hkv, keys, D}), presentV(DType::F64, {B, Hkv, keys, Dv}),
          scores(DType::F64, {B, Hq, Sq, keys});
      Buf<int64_t> none(DType::I64, {0});
      ASSERT_EQ(call("attention",
                     attrs({floatAttr("scale", 0.25), floatAttr("softcap", 1.5), intAttr("is_causal", 1),
                            intAttr("qk_matmul_output_mode", mode)}),
                     {q.ref(), k.ref(), v.ref(), mask.ref(), pastK.ref(), pastV.ref(), none.ref()},
                     {y.ref(), presentK.ref(), presentV.ref(), scores.ref()}),
                "");
      auto dq = uploadRaw(q.data), dk = uploadRaw(k.data), dv = uploadRaw(v.data), dpk = uploadRaw(pastK.data),
           dpv = uploadRaw(pastV.data), dm = uploadRaw(mask.data);
      Device gotY(size_t(y.numel()) * 8), gotK(size_t(presentK.numel()) * 8), gotV(size_t(presentV.numel()) * 8),
          gotS(size_t(scores.numel()) * 8);
      cu::OnnxAttentionArgs o;
      o.B = B, o.Hq = Hq, o.Hkv = Hkv, o.Sq = Sq, o.Skv = Skv, o.past = past, o.D = D, o.Dv = Dv;
      o.scale = 0.25, o.softcap = 1.5, o.causal = true, o.scoresMode = mode;
      o.q = dq->p, o.k = dk->p, o.v = dv->p, o.pastK = dpk->p, o.pastV = dpv->p;
      o.qs = {Hq * Sq * D, D, Sq * D}, o.outs = {Hq * Sq * Dv, Dv, Sq * Dv};
      o.ks = {Hkv * Skv * D, D, Skv * D}, o.vs = {Hkv * Skv * Dv, Dv, Skv * Dv};
      o.mask = dm->p, o.maskType = cu::AttentionArgs::Mask::Additive, o.maskKeys = keys;
      o.maskStrides[2] = keys, o.maskStrides[3] = 1;
      o.out = gotY.p, o.presentK = gotK.p, o.presentV = gotV.p, o.scores = gotS.p;
      ASSERT_EQ(cu::onnxAttention(kF64, o, nullptr), "");
      const std::string what = "ONNX attention f64 over " + std::to_string(keys) + " keys, mode " + std::to_string(mode);
      expectClose(downloadRaw<double>(gotY, size_t(y.numel())), y.data, 1e-12, what);
      expectClose(downloadRaw<double>(gotK, size_t(presentK.numel())), presentK.data, 0, what + ", present keys");
      expectClose(downloadRaw<double>(gotV, size_t(presentV.numel())), presentV.data, 0, what + ", present values");
      expectClose(downloadRaw<double>(gotS, size_t(scores.numel())), scores.data, 1e-12, what + ", scores");
    }
}

// A cast of doubles and of integers to f16 and bf16 (the elementwise kernel, in doubles) rounds
// once, as the CPU's: each value lies just past (or short of) a tie of the 16-bit type that f32,
// rounded to nearest between, would land on (Kernels.CastToHalfWidthRoundsOnce).
TEST(Cuda, CastToHalfWidthRoundsOnce) {
  const double tiny = std::ldexp(1.0, -40);
  const std::vector<double> doubles = {1 + std::ldexp(1.0, -11) + tiny, -(1 + std::ldexp(1.0, -11) + tiny),
                                       1 + std::ldexp(1.0, -8) + tiny, 1 + std::ldexp(1.0, -11) - tiny, 70000.0, 1e300};
  const int64_t past = (int64_t(1) << 24) + (int64_t(1) << 16) + 1;
  const std::vector<int64_t> integers = {past, -past, 3, 65519, 65520, 0};
  auto check = [](auto values, DType from) {
    using T = typename decltype(values)::value_type;
    Buf<T> x(from, {int64_t(values.size())}, values);
    auto dx = uploadRaw(x.data);
    for (DType to : {DType::F16, DType::BF16}) {
      Buf<uint16_t> want(to, {int64_t(values.size())});
      ASSERT_EQ(call("cast", {}, {x.ref()}, {want.ref()}), "");
      Device got(values.size() * 2);
      cu::ElementwiseArgs e;
      e.op = cu::elementwiseOp("cast"), e.numInputs = 1, e.in[0] = dx->p, e.inType[0] = int(from);
      e.rank = 1, e.dims[0] = int64_t(values.size()), e.inStrides[0][0] = 1, e.out = got.p, e.outType = int(to);
      ASSERT_EQ(cu::elementwise(e, nullptr), "");
      std::vector<uint16_t> bits = downloadRaw<uint16_t>(got, values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        // The CPU gives infinity where the GPU saturates a finite value (docs/cuda.md, Precision).
        const float cpu = widenFloat(want.data[i], to), gpu = widenFloat(bits[i], to);
        if (std::isinf(cpu))
          EXPECT_EQ(gpu, std::copysign(to == DType::F16 ? 65504.0f : 3.38953139e38f, cpu)) << i;
        else
          EXPECT_EQ(bits[i], want.data[i]) << dtypeName(from) << " " << i << " to " << dtypeName(to);
      }
    }
  };
  check(doubles, DType::F64);
  check(integers, DType::I64);
}

} // namespace
