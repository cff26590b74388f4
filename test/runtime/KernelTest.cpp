// Every CPU kernel against a naive reference written independently here (index arithmetic on
// multi-indices, no shared helpers with the kernels).
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <tuple>

using namespace llmc::rt;
using namespace llmc::rt::test;

namespace {
TEST(Kernels, UnaryFloat) {
  const std::vector<std::pair<std::string, std::function<double(double)>>> cases = {
      {"neg", [](double x) { return -x; }},
      {"abs", [](double x) { return std::fabs(x); }},
      {"sqrt", [](double x) { return std::sqrt(std::fabs(x)); }},
      {"reciprocal", [](double x) { return 1.0 / x; }},
      {"exp", [](double x) { return std::exp(x); }},
      {"log", [](double x) { return std::log(std::fabs(x)); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"erf", [](double x) { return std::erf(x); }},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"relu", [](double x) { return x > 0 ? x : 0; }},
      {"cos", [](double x) { return std::cos(x); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},
      {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
  };
  for (const auto &[name, ref] : cases) {
    std::vector<float> values = randomFloats(37, 1);
    if (name == "sqrt" || name == "log")
      for (auto &v : values)
        v = std::fabs(v) + 0.01f;
    Buf<float> x(DType::F32, {37}, values), y(DType::F32, {37});
    ASSERT_EQ(call(name, {}, {x.ref()}, {y.ref()}), "") << name;
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(y.data[i], ref(values[i]), 1e-5 * (1 + std::fabs(ref(values[i])))) << name << " at " << i;
  }
  Buf<float> x(DType::F32, {5}, {-3, -0.5f, 0, 0.5f, 3}), y(DType::F32, {5});
  ASSERT_EQ(call("gelu", attrs({stringAttr("approximate", "tanh")}), {x.ref()}, {y.ref()}), "");
  for (int i = 0; i < 5; ++i) {
    double v = x.data[i];
    double ref = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y.data[i], ref, 1e-6);
  }
}

TEST(Kernels, UnaryIntegerAndBool) {
  Buf<int64_t> x(DType::I64, {4}, {-2, 0, 3, -7}), y(DType::I64, {4});
  ASSERT_EQ(call("neg", {}, {x.ref()}, {y.ref()}), "");
  EXPECT_EQ(y.data, (std::vector<int64_t>{2, 0, -3, 7}));
  ASSERT_EQ(call("abs", {}, {x.ref()}, {y.ref()}), "");
  EXPECT_EQ(y.data, (std::vector<int64_t>{2, 0, 3, 7}));
  Buf<uint8_t> b(DType::Bool, {3}, {1, 0, 1}), nb(DType::Bool, {3});
  ASSERT_EQ(call("not", {}, {b.ref()}, {nb.ref()}), "");
  EXPECT_EQ(nb.data, (std::vector<uint8_t>{0, 1, 0}));
  Buf<float> f(DType::F32, {3}, {1, NAN, -INFINITY});
  Buf<uint8_t> isnan(DType::Bool, {3});
  ASSERT_EQ(call("is_nan", {}, {f.ref()}, {isnan.ref()}), "");
  EXPECT_EQ(isnan.data, (std::vector<uint8_t>{0, 1, 0}));
}

// Binary ops with broadcasting: [2,1,4] op [3,1] -> [2,3,4].
TEST(Kernels, BinaryBroadcast) {
  const std::vector<std::pair<std::string, std::function<double(double, double)>>> arith = {
      {"add", [](double a, double b) { return a + b; }},  {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},  {"div", [](double a, double b) { return a / b; }},
      {"max", [](double a, double b) { return std::max(a, b); }},
      {"min", [](double a, double b) { return std::min(a, b); }},
      {"pow", [](double a, double b) { return std::pow(std::fabs(a), b); }},
  };
  std::vector<int64_t> sa = {2, 1, 4}, sb = {3, 1}, so = {2, 3, 4};
  for (const auto &[name, ref] : arith) {
    std::vector<float> av = randomFloats(8, 2), bv = randomFloats(3, 3, 0.5f, 2);
    if (name == "pow")
      for (auto &v : av)
        v = std::fabs(v);
    Buf<float> a(DType::F32, sa, av), b(DType::F32, sb, bv), o(DType::F32, so);
    ASSERT_EQ(call(name, {}, {a.ref(), b.ref()}, {o.ref()}), "") << name;
    for (int64_t i = 0; i < o.numel(); ++i) {
      auto idx = unravel(i, so);
      double expect = ref(av[broadcastIndex(idx, sa)], bv[broadcastIndex(idx, sb)]);
      EXPECT_NEAR(o.data[i], expect, 1e-5 * (1 + std::fabs(expect))) << name << " at " << i;
    }
  }
  const std::vector<std::pair<std::string, std::function<bool(int64_t, int64_t)>>> cmp = {
      {"equal", [](int64_t a, int64_t b) { return a == b; }},
      {"less", [](int64_t a, int64_t b) { return a < b; }},
      {"less_equal", [](int64_t a, int64_t b) { return a <= b; }},
      {"greater", [](int64_t a, int64_t b) { return a > b; }},
      {"greater_equal", [](int64_t a, int64_t b) { return a >= b; }},
  };
  for (const auto &[name, ref] : cmp) {
    Buf<int64_t> a(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6}), b(DType::I64, {3}, {2, 2, 6});
    Buf<uint8_t> o(DType::Bool, {2, 3});
    ASSERT_EQ(call(name, {}, {a.ref(), b.ref()}, {o.ref()}), "") << name;
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(bool(o.data[i]), ref(a.data[i], b.data[i % 3])) << name << " at " << i;
  }
  const std::vector<std::pair<std::string, std::function<bool(bool, bool)>>> logic = {
      {"and", [](bool a, bool b) { return a && b; }},
      {"or", [](bool a, bool b) { return a || b; }},
      {"xor", [](bool a, bool b) { return a != b; }},
  };
  for (const auto &[name, ref] : logic) {
    Buf<uint8_t> a(DType::Bool, {4}, {0, 0, 1, 1}), b(DType::Bool, {4}, {0, 1, 0, 1}), o(DType::Bool, {4});
    ASSERT_EQ(call(name, {}, {a.ref(), b.ref()}, {o.ref()}), "") << name;
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(bool(o.data[i]), ref(a.data[i], b.data[i])) << name;
  }
  Buf<float> a(DType::F32, {2}), b(DType::I64, {2}), o(DType::F32, {2});
  EXPECT_NE(call("add", {}, {a.ref(), b.ref()}, {o.ref()}), "") << "mixed element types must be refused";
}

TEST(Kernels, WhereAndCast) {
  Buf<uint8_t> c(DType::Bool, {2, 1}, {1, 0});
  Buf<float> x(DType::F32, {3}, {1, 2, 3}), y(DType::F32, {1}, {-1}), o(DType::F32, {2, 3});
  ASSERT_EQ(call("where", {}, {c.ref(), x.ref(), y.ref()}, {o.ref()}), "");
  EXPECT_EQ(o.data, (std::vector<float>{1, 2, 3, -1, -1, -1}));

  Buf<float> f(DType::F32, {5}, {-1.7f, 0, 2.5f, 1e30f, NAN});
  Buf<int64_t> i(DType::I64, {5});
  ASSERT_EQ(call("cast", {}, {f.ref()}, {i.ref()}), "");
  EXPECT_EQ(i.data[0], -1);
  EXPECT_EQ(i.data[2], 2);
  EXPECT_EQ(i.data[3], std::numeric_limits<int64_t>::max()); // saturates
  Buf<uint8_t> b(DType::Bool, {5});
  ASSERT_EQ(call("cast", {}, {f.ref()}, {b.ref()}), "");
  EXPECT_EQ(b.data, (std::vector<uint8_t>{1, 0, 1, 1, 1}));
  Buf<uint16_t> h(DType::F16, {5});
  Buf<float> back(DType::F32, {5});
  ASSERT_EQ(call("cast", {}, {f.ref()}, {h.ref()}), "");
  ASSERT_EQ(call("cast", {}, {h.ref()}, {back.ref()}), "");
  EXPECT_FLOAT_EQ(back.data[0], -1.7001953125f); // nearest half
  EXPECT_FLOAT_EQ(back.data[2], 2.5f);
  EXPECT_TRUE(std::isinf(back.data[3]));
  EXPECT_TRUE(std::isnan(back.data[4]));
}

void naiveMatMul(const std::vector<float> &a, const std::vector<float> &b, std::vector<float> &c, int64_t batch,
                 bool shareB, int64_t M, int64_t N, int64_t K) {
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += double(a[(t * M + m) * K + k]) * b[((shareB ? 0 : t) * K + k) * N + n];
        c[(t * M + m) * N + n] = float(acc);
      }
}

TEST(Kernels, MatMul) {
  for (bool shareB : {true, false}) {
    const int64_t batch = 3, M = 5, N = 7, K = 9;
    Buf<float> a(DType::F32, {batch, M, K}, randomFloats(batch * M * K, 4));
    Buf<float> b(DType::F32, shareB ? std::vector<int64_t>{K, N} : std::vector<int64_t>{batch, K, N},
                 randomFloats((shareB ? 1 : batch) * K * N, 5));
    Buf<float> c(DType::F32, {batch, M, N});
    ASSERT_EQ(call("matmul", {}, {a.ref(), b.ref()}, {c.ref()}), "");
    std::vector<float> ref(c.data.size());
    naiveMatMul(a.data, b.data, ref, batch, shareB, M, N, K);
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_NEAR(c.data[i], ref[i], 1e-4) << i;
  }
  // Broadcast batch [2,1] x [3] batches, and int64.
  Buf<int64_t> a(DType::I64, {2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Buf<int64_t> b(DType::I64, {3, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2, 0, 1, 1, 0});
  Buf<int64_t> c(DType::I64, {2, 3, 2, 2});
  ASSERT_EQ(call("matmul", {}, {a.ref(), b.ref()}, {c.ref()}), "");
  EXPECT_EQ(std::vector<int64_t>(c.data.begin(), c.data.begin() + 12),
            (std::vector<int64_t>{1, 2, 3, 4, 2, 4, 6, 8, 2, 1, 4, 3}));
  Buf<float> x(DType::F32, {2, 3}), y(DType::F32, {4, 2}), z(DType::F32, {2, 2});
  EXPECT_NE(call("matmul", {}, {x.ref(), y.ref()}, {z.ref()}), "");
}

// Each id's row times the matrix the id picks (a negative id from the end), an input row read by
// one id or by two (repeat), with or without the expert's bias (a fifth input, the combine empty
// where there is none), with no activation, a swiglu, GPT-OSS's clamped one (a limit that
// clamps some of the values) or HY V4's (alpha 1, up_offset 0), each row alone or weighed and
// summed by pairs (combine), against a plain loop; an id out of range is an error, and so is a
// clamped swiglu without a limit.
TEST(Kernels, ExpertLinear) {
  const int64_t N = 6, K = 7, E = 3, M = 4, group = 2;
  const double alpha = 1.702, limit = 0.5;
  for (int64_t repeat : {1, 2})
    for (std::string variant : {"none", "swiglu", "clamped_swiglu", "clamped_silu"})
      for (bool combined : {false, true})
        for (bool biased : {false, true}) {
          const bool hy = variant == "clamped_silu";
          const std::string activation = hy ? "clamped_swiglu" : variant;
          const double a = hy ? 1.0 : alpha, upOffset = hy ? 0.0 : 1.0;
          const bool swiglu = activation != "none", clamped = activation == "clamped_swiglu";
          const int64_t T = N / repeat, width = swiglu ? M / 2 : M, rows = combined ? N / group : N;
          Buf<float> x(DType::F32, {T, K}, randomFloats(T * K, 11)),
              w(DType::F32, {E, M, K}, randomFloats(E * M * K, 12)),
              c(DType::F32, {N / group, group}, randomFloats(N, 13)), b(DType::F32, {E, M}, randomFloats(E * M, 14)),
              none(DType::F32, {0});
          Buf<int64_t> ids(DType::I64, {N, 1}, {2, 0, -1, 1, 2, -3});
          Buf<float> y(DType::F32, {rows, width});
          const AttrList at = attrs({intAttr("repeat", repeat), stringAttr("activation", activation),
                                     floatAttr("alpha", a), floatAttr("limit", limit),
                                     floatAttr("up_offset", upOffset)});
          std::vector<TensorRef> ins = {x.ref(), w.ref(), ids.ref()};
          if (combined || biased)
            ins.push_back(combined ? c.ref() : none.ref());
          if (biased)
            ins.push_back(b.ref());
          ASSERT_EQ(call("expert_linear", at, ins, {y.ref()}), "");
          std::vector<double> want(size_t(rows * width), 0.0);
          for (int64_t n = 0; n < N; ++n) {
            const int64_t e = ids.data[n] < 0 ? ids.data[n] + E : ids.data[n];
            auto product = [&](int64_t m) {
              double acc = biased ? b.data[e * M + m] : 0.0;
              for (int64_t k = 0; k < K; ++k)
                acc += double(w.data[(e * M + m) * K + k]) * x.data[(n / repeat) * K + k];
              return acc;
            };
            auto gated = [&](int64_t m) {
              if (!clamped)
                return product(m) / (1.0 + std::exp(-product(m))) * product(m + width);
              const double g = std::min(product(m), limit), u = std::clamp(product(m + width), -limit, limit);
              return (u + upOffset) * g / (1.0 + std::exp(-a * g));
            };
            for (int64_t m = 0; m < width; ++m) {
              const double v = swiglu ? gated(m) : product(m);
              want[size_t((combined ? n / group : n) * width + m)] += combined ? c.data[n] * v : v;
            }
          }
          for (size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(y.data[i], want[i], 1e-5) << i << " repeat " << repeat << " " << variant << " combined "
                                                  << combined << " biased " << biased;
        }
  Buf<float> x(DType::F32, {5, 7}), w(DType::F32, {3, 4, 7}), y(DType::F32, {5, 4}), half(DType::F32, {5, 2});
  Buf<int64_t> bad(DType::I64, {5}, {0, 1, 3, 0, 0}), good(DType::I64, {5}, {0, 1, 2, 0, 0});
  EXPECT_NE(call("expert_linear", {}, {x.ref(), w.ref(), bad.ref()}, {y.ref()}).find("out of range"), std::string::npos);
  EXPECT_NE(call("expert_linear", attrs({stringAttr("activation", "clamped_swiglu")}), {x.ref(), w.ref(), good.ref()},
                 {half.ref()}),
            "");
}

TEST(Kernels, Gemm) {
  const int64_t M = 4, N = 3, K = 5;
  for (int transA = 0; transA < 2; ++transA)
    for (int transB = 0; transB < 2; ++transB) {
      Buf<float> a(DType::F32, transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, randomFloats(M * K, 6));
      Buf<float> b(DType::F32, transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, randomFloats(K * N, 7));
      Buf<float> c(DType::F32, {N}, randomFloats(N, 8)), y(DType::F32, {M, N});
      auto at = attrs({intAttr("transA", transA), intAttr("transB", transB), floatAttr("alpha", 0.5),
                       floatAttr("beta", 2.0)});
      ASSERT_EQ(call("gemm", at, {a.ref(), b.ref(), c.ref()}, {y.ref()}), "");
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += double(transA ? a.data[k * M + m] : a.data[m * K + k]) * (transB ? b.data[n * K + k] : b.data[k * N + n]);
          EXPECT_NEAR(y.data[m * N + n], 0.5 * acc + 2.0 * c.data[n], 1e-4);
        }
    }
}

TEST(Kernels, SoftmaxAndLogSoftmax) {
  std::vector<int64_t> shape = {2, 3, 4};
  for (int axis : {-1, 1, 0}) {
    Buf<float> x(DType::F32, shape, randomFloats(24, 9)), y(DType::F32, shape), ly(DType::F32, shape);
    ASSERT_EQ(call("softmax", attrs({intAttr("axis", axis)}), {x.ref()}, {y.ref()}), "");
    ASSERT_EQ(call("log_softmax", attrs({intAttr("axis", axis)}), {x.ref()}, {ly.ref()}), "");
    const int ax = axis < 0 ? axis + 3 : axis;
    for (int64_t i = 0; i < 24; ++i) {
      auto idx = unravel(i, shape);
      double denom = 0;
      for (int64_t k = 0; k < shape[ax]; ++k) {
        auto j = idx;
        j[ax] = k;
        denom += std::exp(double(x.data[ravel(j, shape)]));
      }
      EXPECT_NEAR(y.data[i], std::exp(double(x.data[i])) / denom, 1e-6);
      EXPECT_NEAR(ly.data[i], double(x.data[i]) - std::log(denom), 1e-5);
    }
  }
}

TEST(Kernels, LayerNormAndRmsNorm) {
  const int64_t rows = 3, n = 8;
  Buf<float> x(DType::F32, {rows, n}, randomFloats(rows * n, 10)), g(DType::F32, {n}, randomFloats(n, 11));
  Buf<float> b(DType::F32, {n}, randomFloats(n, 12)), y(DType::F32, {rows, n}), r(DType::F32, {rows, n});
  auto at = attrs({intAttr("axis", -1), floatAttr("epsilon", 1e-5)});
  ASSERT_EQ(call("layer_norm", at, {x.ref(), g.ref(), b.ref()}, {y.ref()}), "");
  ASSERT_EQ(call("rms_norm", at, {x.ref(), g.ref()}, {r.ref()}), "");
  for (int64_t i = 0; i < rows; ++i) {
    double mean = 0, sq = 0;
    for (int64_t k = 0; k < n; ++k)
      mean += x.data[i * n + k];
    mean /= n;
    double var = 0;
    for (int64_t k = 0; k < n; ++k) {
      var += (x.data[i * n + k] - mean) * (x.data[i * n + k] - mean);
      sq += double(x.data[i * n + k]) * x.data[i * n + k];
    }
    var /= n;
    sq /= n;
    for (int64_t k = 0; k < n; ++k) {
      EXPECT_NEAR(y.data[i * n + k], (x.data[i * n + k] - mean) / std::sqrt(var + 1e-5) * g.data[k] + b.data[k], 1e-5);
      EXPECT_NEAR(r.data[i * n + k], x.data[i * n + k] / std::sqrt(sq + 1e-5) * g.data[k], 1e-5);
    }
  }
}

TEST(Kernels, LayerNormStats) {
  const int64_t rows = 2, n = 6;
  Buf<float> x(DType::F32, {rows, n}, randomFloats(rows * n, 16)), mean(DType::F32, {rows, 1}),
      inv(DType::F32, {rows, 1});
  ASSERT_EQ(call("layer_norm_stats", attrs({intAttr("axis", 1), floatAttr("epsilon", 1e-3)}), {x.ref()},
                 {mean.ref(), inv.ref()}),
            "");
  for (int64_t i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < n; ++k)
      m += x.data[i * n + k] / double(n);
    for (int64_t k = 0; k < n; ++k)
      v += (x.data[i * n + k] - m) * (x.data[i * n + k] - m) / double(n);
    EXPECT_NEAR(mean.data[i], m, 1e-6);
    EXPECT_NEAR(inv.data[i], 1 / std::sqrt(v + 1e-3), 1e-5);
  }
}

// Float kernels accept f16 through the widening adapter.
TEST(Kernels, HalfPrecision) {
  Buf<uint16_t> a(DType::F16, {3}), b(DType::F16, {3}), o(DType::F16, {3});
  const float av[3] = {1.5f, -2.0f, 0.25f}, bv[3] = {0.5f, 4.0f, -1.0f};
  for (int i = 0; i < 3; ++i) {
    a.data[i] = floatToHalf(av[i]);
    b.data[i] = floatToHalf(bv[i]);
  }
  ASSERT_EQ(call("mul", {}, {a.ref(), b.ref()}, {o.ref()}), "");
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(halfToFloat(o.data[i]), av[i] * bv[i]);
}

// bf16 (a bf16 model's values): f32 rounded to nearest even, beyond its range to infinity (not
// saturated, as a reduced-precision plan's narrowFloat is); cast both ways; float kernels through
// the widening adapter, their results rounded once.
TEST(Kernels, BFloat16) {
  auto bits = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16(bits(0x3f808000)), 0x3f80); // a tie to the even neighbour below
  EXPECT_EQ(floatToBFloat16(bits(0x3f818000)), 0x3f82); // a tie to the even neighbour above
  EXPECT_EQ(floatToBFloat16(bits(0x3f808001)), 0x3f81); // past the tie: up
  EXPECT_EQ(floatToBFloat16(bits(0x3fffffff)), 0x4000); // the carry into the exponent
  EXPECT_EQ(floatToBFloat16(-bits(0x7f7fffff)), 0xff80); // -FLT_MAX rounds to -infinity
  EXPECT_EQ(narrowFloat(-bits(0x7f7fffff), DType::BF16), 0xff7f); // which --precision saturates
  EXPECT_TRUE(std::isnan(widenFloat(floatToBFloat16(NAN), DType::BF16)));
  EXPECT_EQ(widenFloat(0xc0a0, DType::BF16), -5.0f);

  Buf<float> f(DType::F32, {4}, {-1.7f, 2.5f, 3.4e38f, 1.00390625f});
  Buf<uint16_t> h(DType::BF16, {4});
  Buf<double> back(DType::F64, {4});
  ASSERT_EQ(call("cast", {}, {f.ref()}, {h.ref()}), "");
  ASSERT_EQ(call("cast", {}, {h.ref()}, {back.ref()}), "");
  EXPECT_EQ(back.data[0], -1.703125);  // the nearest bf16
  EXPECT_EQ(back.data[1], 2.5);
  EXPECT_TRUE(std::isinf(back.data[2])); // 3.4e38 is past bf16's largest finite value after rounding
  EXPECT_EQ(back.data[3], 1.0);          // 1 + 2^-8, a tie, to even

  Buf<uint16_t> a(DType::BF16, {3}), b(DType::BF16, {3}), o(DType::BF16, {3});
  const float av[3] = {1.5f, -3.0f, 0.25f}, bv[3] = {1.0078125f, 4.0f, -1.0f};
  for (int i = 0; i < 3; ++i) {
    a.data[i] = floatToBFloat16(av[i]);
    b.data[i] = floatToBFloat16(bv[i]);
  }
  ASSERT_EQ(call("mul", {}, {a.ref(), b.ref()}, {o.ref()}), "");
  EXPECT_EQ(o.data[0], floatToBFloat16(1.51171875f)); // 1.5 * (1 + 2^-7), rounded once
  EXPECT_EQ(widenFloat(o.data[1], DType::BF16), -12.0f);
  EXPECT_EQ(widenFloat(o.data[2], DType::BF16), -0.25f);
}

// Doubles and integers cast to f16 and bf16 round once (through f32 rounded to odd), where f32
// rounded to nearest between makes ties of values just past them: each case is one of those.
TEST(Kernels, CastToHalfWidthRoundsOnce) {
  const double tiny = std::ldexp(1.0, -40);
  Buf<double> d(DType::F64, {6}, {1 + std::ldexp(1.0, -11) + tiny, -(1 + std::ldexp(1.0, -11) + tiny),
                                  1 + std::ldexp(1.0, -8) + tiny, 1 + std::ldexp(1.0, -11) - tiny, 70000.0, 1e300});
  Buf<uint16_t> h(DType::F16, {6}), b(DType::BF16, {6});
  ASSERT_EQ(call("cast", {}, {d.ref()}, {h.ref()}), "");
  ASSERT_EQ(call("cast", {}, {d.ref()}, {b.ref()}), "");
  EXPECT_EQ(halfToFloat(h.data[0]), 1 + std::ldexp(1.0f, -10)); // past the tie: up (through f32: 1)
  EXPECT_EQ(halfToFloat(h.data[1]), -(1 + std::ldexp(1.0f, -10)));
  EXPECT_EQ(halfToFloat(h.data[3]), 1.0f); // short of the tie: down
  EXPECT_TRUE(std::isinf(halfToFloat(h.data[4])));
  EXPECT_EQ(widenFloat(b.data[2], DType::BF16), 1 + std::ldexp(1.0f, -7)); // (through f32: 1)
  EXPECT_EQ(widenFloat(b.data[0], DType::BF16), 1.0f);
  EXPECT_TRUE(std::isinf(widenFloat(b.data[5], DType::BF16)));
  // 2^24 + 2^16 + 1: f32 holds 2^24 + 2^16, bf16's tie between 2^24 and 2^24 + 2^17.
  const int64_t past = (int64_t(1) << 24) + (int64_t(1) << 16) + 1;
  Buf<int64_t> i64(DType::I64, {2}, {past, -past});
  Buf<int32_t> i32(DType::I32, {1}, {int32_t(past)});
  Buf<uint16_t> b64(DType::BF16, {2}), b32(DType::BF16, {1});
  ASSERT_EQ(call("cast", {}, {i64.ref()}, {b64.ref()}), "");
  ASSERT_EQ(call("cast", {}, {i32.ref()}, {b32.ref()}), "");
  EXPECT_EQ(widenFloat(b64.data[0], DType::BF16), std::ldexp(1.0f, 24) + std::ldexp(1.0f, 17));
  EXPECT_EQ(widenFloat(b64.data[1], DType::BF16), -(std::ldexp(1.0f, 24) + std::ldexp(1.0f, 17)));
  EXPECT_EQ(b32.data[0], b64.data[0]);
  auto bitsOf = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  EXPECT_EQ(bitsOf(roundToOddFloat(1.0L)), 0x3f800000u);                         // exact: itself
  EXPECT_EQ(bitsOf(roundToOddFloat(1.0L + std::ldexp(1.0L, -30))), 0x3f800001u);  // toward zero, last bit set
  EXPECT_EQ(bitsOf(roundToOddFloat(-1.0L - std::ldexp(1.0L, -30))), 0xbf800001u);
  EXPECT_EQ(bitsOf(roundToOddFloat(1.0L - std::ldexp(1.0L, -40))), 0x3f7fffffu); // below 1, not rounded up to it
  EXPECT_EQ(bitsOf(roundToOddFloat(1e300L)), 0x7f7fffffu);                        // past f32: its largest, odd
  EXPECT_TRUE(std::isnan(roundToOddFloat(static_cast<long double>(NAN))));
}

TEST(Kernels, Reductions) {
  std::vector<int64_t> shape = {2, 3, 4};
  Buf<float> x(DType::F32, shape, randomFloats(24, 13, 0.5f, 1.5f));
  const std::vector<std::pair<std::string, std::function<double(const std::vector<double> &)>>> cases = {
      {"reduce_sum", [](const std::vector<double> &v) { double s = 0; for (double e : v) s += e; return s; }},
      {"reduce_mean", [](const std::vector<double> &v) { double s = 0; for (double e : v) s += e; return s / double(v.size()); }},
      {"reduce_max", [](const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); }},
      {"reduce_min", [](const std::vector<double> &v) { return *std::min_element(v.begin(), v.end()); }},
      {"reduce_prod", [](const std::vector<double> &v) { double s = 1; for (double e : v) s *= e; return s; }},
      {"reduce_sum_square", [](const std::vector<double> &v) { double s = 0; for (double e : v) s += e * e; return s; }},
      {"reduce_l2", [](const std::vector<double> &v) { double s = 0; for (double e : v) s += e * e; return std::sqrt(s); }},
  };
  for (const auto &[name, ref] : cases) {
    // Reduce axes {0, 2}, keepdims -> [1, 3, 1].
    Buf<float> y(DType::F32, {1, 3, 1});
    ASSERT_EQ(call(name, attrs({intsAttr("axes", {0, -1}), intAttr("keepdims", 1)}), {x.ref()}, {y.ref()}), "") << name;
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<double> group;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < 4; ++k)
          group.push_back(x.data[ravel({i, j, k}, shape)]);
      EXPECT_NEAR(y.data[j], ref(group), 1e-5 * (1 + std::fabs(ref(group)))) << name;
    }
    Buf<float> all(DType::F32, {});
    ASSERT_EQ(call(name, attrs({intAttr("keepdims", 0)}), {x.ref()}, {all.ref()}), "") << name;
    std::vector<double> every(x.data.begin(), x.data.end());
    EXPECT_NEAR(all.data[0], ref(every), 1e-4 * (1 + std::fabs(ref(every)))) << name;
  }
}

TEST(Kernels, CumSum) {
  Buf<float> x(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}), y(DType::F32, {2, 3});
  Buf<int64_t> axis(DType::I64, {}, {1});
  ASSERT_EQ(call("cumsum", {}, {x.ref(), axis.ref()}, {y.ref()}), "");
  EXPECT_EQ(y.data, (std::vector<float>{1, 3, 6, 4, 9, 15}));
  ASSERT_EQ(call("cumsum", attrs({intAttr("exclusive", 1), intAttr("reverse", 1)}), {x.ref(), axis.ref()}, {y.ref()}), "");
  EXPECT_EQ(y.data, (std::vector<float>{5, 3, 0, 11, 6, 0}));
}

TEST(Kernels, CopiesAndTranspose) {
  for (const char *name : {"reshape", "unsqueeze", "squeeze", "flatten", "identity"}) {
    Buf<float> x(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}), y(DType::F32, {3, 2});
    ASSERT_EQ(call(name, {}, {x.ref()}, {y.ref()}), "") << name;
    EXPECT_EQ(y.data, x.data) << name;
  }
  std::vector<int64_t> shape = {2, 3, 4}, perm = {2, 0, 1}, outShape = {4, 2, 3};
  Buf<float> x(DType::F32, shape, randomFloats(24, 14)), y(DType::F32, outShape);
  ASSERT_EQ(call("transpose", attrs({intsAttr("perm", perm)}), {x.ref()}, {y.ref()}), "");
  for (int64_t i = 0; i < 24; ++i) {
    auto o = unravel(i, outShape);
    std::vector<int64_t> in(3);
    for (int d = 0; d < 3; ++d)
      in[perm[d]] = o[d];
    EXPECT_EQ(y.data[i], x.data[ravel(in, shape)]);
  }
}

// transposeMovesNothing (the compiler's squeeze/unsqueeze rewrite, the CUDA executor's views)
// says yes exactly where the transpose kernel leaves every element where it was.
TEST(Kernels, TransposeMovesNothingWhereTheKernelMovesNothing) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 1, 3}, {1, 2, 3}, {2, 3, 1}, {1, 1, 4}, {3, 1, 1}, {2, 3, 4}};
  std::vector<int64_t> perm = {0, 1, 2};
  int movesNothing = 0, cases = 0;
  for (const std::vector<int64_t> &shape : shapes)
    do {
      std::vector<int64_t> outShape(3);
      for (int d = 0; d < 3; ++d)
        outShape[size_t(d)] = shape[size_t(perm[size_t(d)])];
      Buf<float> x(DType::F32, shape, randomFloats(size_t(shape[0] * shape[1] * shape[2]), 15)), y(DType::F32, outShape);
      ASSERT_EQ(call("transpose", attrs({intsAttr("perm", perm)}), {x.ref()}, {y.ref()}), "");
      const bool said = transposeMovesNothing(shape.data(), perm.data(), 3);
      EXPECT_EQ(said, y.data == x.data) << x.ref().shape.str() << " perm " << perm[0] << perm[1] << perm[2];
      movesNothing += said, ++cases;
    } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_EQ(cases, 36);
  EXPECT_EQ(movesNothing, 3 + 3 + 3 + 6 + 6 + 1); // the unit axes anywhere, the others in order
  const int64_t dims[] = {2, 3}, outOfRange[] = {0, 2};
  EXPECT_FALSE(transposeMovesNothing(dims, outOfRange, 2));
}

// stridesAfterReshape reads a reshape of a transposed tensor where the transpose kernel puts
// each element, or says it cannot: a KV cache's rows [S, B, H * D] seen as the [B, S, H * D]
// that a transpose of [S, B, H, D] makes (the CUDA executor writes a batch's new rows so).
TEST(Kernels, StridesAfterReshapeReadWhereTheTransposePutsEachElement) {
  struct Case {
    std::vector<int64_t> shape, perm, reshaped;
    bool possible;
  };
  const std::vector<Case> cases = {
      {{3, 2, 4}, {1, 0, 2}, {2, 3, 4}, true},          // no reshape
      {{3, 2, 2, 2}, {1, 0, 2, 3}, {2, 3, 4}, true},    // heads and their elements merged
      {{3, 2, 2, 2}, {1, 0, 2, 3}, {2, 3, 2, 2}, true}, // the same shape
      {{3, 2, 4}, {1, 0, 2}, {2, 1, 3, 1, 2, 2}, true}, // unit axes anywhere, the last axis split
      {{3, 2, 4}, {1, 0, 2}, {6, 4}, false},            // merges the transposed axes
      {{3, 2, 4}, {2, 1, 0}, {4, 6}, false},
      {{3, 2, 4}, {0, 2, 1}, {3, 2, 2, 2}, true},       // a moved axis split
      {{3, 2, 4}, {0, 2, 1}, {12, 2}, false},           // merges an axis with a moved one
      {{1, 5, 1}, {2, 1, 0}, {5}, true},
  };
  for (const Case &c : cases) {
    const int rank = int(c.shape.size());
    std::vector<int64_t> transposed(c.shape.size()), fromStrides(c.shape.size()), contiguous(c.shape.size());
    for (int d = rank - 1, stride = 1; d >= 0; stride *= int(c.shape[size_t(d)]), --d)
      contiguous[size_t(d)] = stride;
    for (int d = 0; d < rank; ++d)
      transposed[size_t(d)] = c.shape[size_t(c.perm[size_t(d)])], fromStrides[size_t(d)] = contiguous[size_t(c.perm[size_t(d)])];
    int64_t n = 1;
    for (int64_t dim : c.shape)
      n *= dim;
    std::vector<float> iota(static_cast<size_t>(n));
    for (size_t i = 0; i < iota.size(); ++i)
      iota[i] = float(i);
    Buf<float> x(DType::F32, c.shape, iota), y(DType::F32, transposed);
    ASSERT_EQ(call("transpose", attrs({intsAttr("perm", c.perm)}), {x.ref()}, {y.ref()}), "");
    Shape from, to;
    from.rank = rank, to.rank = int(c.reshaped.size());
    std::copy(transposed.begin(), transposed.end(), from.dims);
    std::copy(c.reshaped.begin(), c.reshaped.end(), to.dims);
    int64_t strides[kMaxRank];
    const bool found = stridesAfterReshape(from, fromStrides.data(), to, strides);
    EXPECT_EQ(found, c.possible) << from.str() << " to " << to.str();
    if (!found)
      continue;
    // The reshape's element i is the transpose's element i: it must be read where x has it.
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, at = 0;
      for (int d = to.rank - 1; d >= 0; --d)
        at += rest % to.dims[d] * strides[d], rest /= to.dims[d];
      EXPECT_EQ(x.data[size_t(at)], y.data[size_t(i)]) << from.str() << " to " << to.str() << " element " << i;
    }
  }
  Shape a, b;
  a.rank = 1, a.dims[0] = 6, b.rank = 1, b.dims[0] = 5;
  const int64_t one[] = {1};
  int64_t out[kMaxRank];
  EXPECT_FALSE(stridesAfterReshape(a, one, b, out)); // not as many elements
}

TEST(Kernels, ConcatAndSplit) {
  Buf<float> a(DType::F32, {2, 1}, {1, 2}), b(DType::F32, {2, 2}, {3, 4, 5, 6}), c(DType::F32, {2, 3});
  ASSERT_EQ(call("concat", attrs({intAttr("axis", 1)}), {a.ref(), b.ref()}, {c.ref()}), "");
  EXPECT_EQ(c.data, (std::vector<float>{1, 3, 4, 2, 5, 6}));
  Buf<float> p(DType::F32, {2, 1}), q(DType::F32, {2, 2});
  ASSERT_EQ(call("split", attrs({intAttr("axis", 1)}), {c.ref()}, {p.ref(), q.ref()}), "");
  EXPECT_EQ(p.data, a.data);
  EXPECT_EQ(q.data, b.data);
}

// A KV cache extended in place: the output's buffer holds the first input at its start, so only
// the second input is written (and the result is the same as a copying concatenation).
TEST(Kernels, ConcatIntoTheFirstInputsBuffer) {
  std::vector<float> buffer = {1, 2, 3, 4, 0, 0, 0, 0, -1, -1}; // [length 1, batch 2, 2] filled, room for more
  Buf<float> fresh(DType::F32, {1, 2, 2}, {5, 6, 7, 8});
  TensorRef past, out;
  past.dtype = out.dtype = DType::F32;
  past.shape.rank = out.shape.rank = 3;
  past.shape.dims[0] = 1;
  out.shape.dims[0] = 2;
  past.shape.dims[1] = out.shape.dims[1] = 2;
  past.shape.dims[2] = out.shape.dims[2] = 2;
  past.data = out.data = buffer.data();
  ASSERT_EQ(call("concat", attrs({intAttr("axis", 0)}), {past, fresh.ref()}, {out}), "");
  EXPECT_EQ(buffer, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, -1, -1}));
}

TEST(Kernels, Slice) {
  std::vector<int64_t> shape = {4, 5};
  Buf<float> x(DType::F32, shape, randomFloats(20, 15));
  // Rows 3,1 (step -2) and columns 1..4 (end clamped from 100).
  Buf<float> y(DType::F32, {2, 4});
  auto at = attrs({intsAttr("starts", {-1, 1}), intsAttr("ends", {0, 100}), intsAttr("axes", {0, 1}),
                   intsAttr("steps", {-2, 1})});
  ASSERT_EQ(call("slice", at, {x.ref()}, {y.ref()}), "");
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(y.data[i * 4 + j], x.data[(3 - 2 * i) * 5 + 1 + j]);
}

// dynamic_slice takes its starts from a tensor (i64 or i32) and agrees with slice.
TEST(Kernels, DynamicSlice) {
  Buf<float> x(DType::F32, {4, 5}, randomFloats(20, 16));
  auto at = attrs({intsAttr("axes", {0, 1}), intsAttr("steps", {1, 2})});
  Buf<int64_t> starts(DType::I64, {2}, {1, -4}), ends(DType::I64, {2}, {3, 5});
  Buf<float> y(DType::F32, {2, 2}), ref(DType::F32, {2, 2});
  ASSERT_EQ(call("dynamic_slice", at, {x.ref(), starts.ref(), ends.ref()}, {y.ref()}), "");
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(y.data[i * 2 + j], x.data[(1 + i) * 5 + 1 + 2 * j]);
  auto same = attrs({intsAttr("starts", {1, -4}), intsAttr("ends", {3, 5}), intsAttr("axes", {0, 1}),
                     intsAttr("steps", {1, 2})});
  ASSERT_EQ(call("slice", same, {x.ref()}, {ref.ref()}), "");
  EXPECT_EQ(y.data, ref.data);
  Buf<int32_t> starts32(DType::I32, {2}, {1, 1});
  ASSERT_EQ(call("dynamic_slice", at, {x.ref(), starts32.ref(), ends.ref()}, {y.ref()}), "");
  EXPECT_EQ(y.data, ref.data);
  // An output larger than the input allows is refused, not read out of bounds.
  Buf<float> big(DType::F32, {4, 3});
  EXPECT_NE(call("dynamic_slice", at, {x.ref(), starts.ref(), ends.ref()}, {big.ref()}), "");
  Buf<int64_t> wrong(DType::I64, {1}, {0});
  EXPECT_NE(call("dynamic_slice", at, {x.ref(), wrong.ref(), ends.ref()}, {y.ref()}), "");
}

TEST(Kernels, Gathers) {
  Buf<float> data(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Buf<int64_t> idx(DType::I64, {2}, {2, -3});
  Buf<float> g(DType::F32, {2, 2});
  ASSERT_EQ(call("gather", attrs({intAttr("axis", 0)}), {data.ref(), idx.ref()}, {g.ref()}), "");
  EXPECT_EQ(g.data, (std::vector<float>{5, 6, 1, 2}));
  Buf<int64_t> bad(DType::I64, {1}, {3});
  Buf<float> g1(DType::F32, {1, 2});
  EXPECT_NE(call("gather", {}, {data.ref(), bad.ref()}, {g1.ref()}), "") << "out-of-range index";

  Buf<int64_t> eidx(DType::I64, {3, 2}, {1, 0, 0, 0, 1, 1});
  Buf<float> e(DType::F32, {3, 2});
  ASSERT_EQ(call("gather_elements", attrs({intAttr("axis", 1)}), {data.ref(), eidx.ref()}, {e.ref()}), "");
  EXPECT_EQ(e.data, (std::vector<float>{2, 1, 3, 3, 6, 6}));

  Buf<int64_t> nidx(DType::I64, {2, 2}, {2, 1, 0, 0});
  Buf<float> nd(DType::F32, {2});
  ASSERT_EQ(call("gather_nd", {}, {data.ref(), nidx.ref()}, {nd.ref()}), "");
  EXPECT_EQ(nd.data, (std::vector<float>{6, 1}));
  // batch_dims = 1: data [2,3], indices [2,1] -> out [2].
  Buf<float> bdata(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buf<int64_t> bidx(DType::I64, {2, 1}, {2, 0});
  Buf<float> bout(DType::F32, {2});
  ASSERT_EQ(call("gather_nd", attrs({intAttr("batch_dims", 1)}), {bdata.ref(), bidx.ref()}, {bout.ref()}), "");
  EXPECT_EQ(bout.data, (std::vector<float>{3, 4}));
}

TEST(Kernels, ExpandRangeShapeFillTrilu) {
  Buf<float> x(DType::F32, {3, 1}, {1, 2, 3}), y(DType::F32, {2, 3, 2});
  ASSERT_EQ(call("expand", {}, {x.ref()}, {y.ref()}), "");
  EXPECT_EQ(y.data, (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));

  Buf<int64_t> s(DType::I64, {}, {2}), l(DType::I64, {}, {11}), d(DType::I64, {}, {3}), r(DType::I64, {3});
  ASSERT_EQ(call("range", {}, {s.ref(), l.ref(), d.ref()}, {r.ref()}), "");
  EXPECT_EQ(r.data, (std::vector<int64_t>{2, 5, 8}));

  Buf<int64_t> shp(DType::I64, {2});
  ASSERT_EQ(call("shape", attrs({intAttr("start", 1)}), {y.ref()}, {shp.ref()}), "");
  EXPECT_EQ(shp.data, (std::vector<int64_t>{3, 2}));

  Buf<float> fill(DType::F32, {2, 2});
  ASSERT_EQ(call("constant_of_shape", attrs({floatAttr("value", 7)}), {shp.ref()}, {fill.ref()}), "");
  EXPECT_EQ(fill.data, (std::vector<float>{7, 7, 7, 7}));

  Buf<float> m(DType::F32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), up(DType::F32, {3, 3}), lo(DType::F32, {3, 3});
  ASSERT_EQ(call("trilu", attrs({intAttr("upper", 1)}), {m.ref()}, {up.ref()}), "");
  EXPECT_EQ(up.data, (std::vector<float>{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  Buf<int64_t> k(DType::I64, {}, {-1});
  ASSERT_EQ(call("trilu", attrs({intAttr("upper", 0)}), {m.ref(), k.ref()}, {lo.ref()}), "");
  EXPECT_EQ(lo.data, (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
}

TEST(Kernels, ActivationsWithAttributes) {
  std::vector<float> v = randomFloats(21, 17, -4, 4);
  const std::vector<std::tuple<std::string, AttrList, std::function<double(double)>>> cases = {
      {"elu", attrs({floatAttr("alpha", 0.5)}), [](double x) { return x >= 0 ? x : 0.5 * (std::exp(x) - 1); }},
      {"leaky_relu", attrs({floatAttr("alpha", 0.1)}), [](double x) { return x >= 0 ? x : 0.1 * x; }},
      {"hard_sigmoid", attrs({floatAttr("alpha", 0.3), floatAttr("beta", 0.4)}),
       [](double x) { return std::min(1.0, std::max(0.0, 0.3 * x + 0.4)); }},
      {"hard_swish", {}, [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); }},
      {"softplus", {}, [](double x) { return std::log(1 + std::exp(x)); }},
      {"sign", {}, [](double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }},
  };
  for (const auto &[name, at, ref] : cases) {
    Buf<float> x(DType::F32, {21}, v), y(DType::F32, {21});
    ASSERT_EQ(call(name, at, {x.ref()}, {y.ref()}), "") << name;
    for (int i = 0; i < 21; ++i)
      EXPECT_NEAR(y.data[i], ref(v[i]), 1e-5) << name << " at " << v[i];
  }
  Buf<int64_t> a(DType::I64, {4}, {7, -7, 7, -7}), b(DType::I64, {4}, {3, 3, -3, -3}), m(DType::I64, {4});
  ASSERT_EQ(call("mod", {}, {a.ref(), b.ref()}, {m.ref()}), "");
  EXPECT_EQ(m.data, (std::vector<int64_t>{1, 2, -2, -1})); // Python's %
  ASSERT_EQ(call("mod", attrs({intAttr("fmod", 1)}), {a.ref(), b.ref()}, {m.ref()}), "");
  EXPECT_EQ(m.data, (std::vector<int64_t>{1, -1, 1, -1})); // C's fmod
}

// Direct (naive) 2-D convolution for checking the im2col kernel.
TEST(Kernels, Conv) {
  const int64_t N = 2, C = 4, H = 7, W = 6, M = 6, group = 2, KH = 3, KW = 2, SH = 2, SW = 1, DH = 1, DW = 2;
  const int64_t PT = 1, PL = 0, PB = 2, PR = 1;
  const int64_t OH = (H + PT + PB - DH * (KH - 1) - 1) / SH + 1, OW = (W + PL + PR - DW * (KW - 1) - 1) / SW + 1;
  Buf<float> x(DType::F32, {N, C, H, W}, randomFloats(N * C * H * W, 18));
  Buf<float> w(DType::F32, {M, C / group, KH, KW}, randomFloats(M * C / group * KH * KW, 19));
  Buf<float> b(DType::F32, {M}, randomFloats(M, 20)), y(DType::F32, {N, M, OH, OW});
  auto at = attrs({intsAttr("pads", {PT, PL, PB, PR}), intsAttr("strides", {SH, SW}), intsAttr("dilations", {DH, DW}),
                   intAttr("group", group)});
  ASSERT_EQ(call("conv", at, {x.ref(), w.ref(), b.ref()}, {y.ref()}), "");
  const int64_t Cg = C / group, Mg = M / group;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b.data[m];
          const int64_t g = m / Mg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * SH - PT + kh * DH, iw = ow * SW - PL + kw * DW;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                acc += double(x.data[((n * C + g * Cg + c) * H + ih) * W + iw]) * w.data[((m * Cg + c) * KH + kh) * KW + kw];
              }
          EXPECT_NEAR(y.data[((n * M + m) * OH + oh) * OW + ow], acc, 1e-4);
        }
}

TEST(Kernels, PoolingAndBatchNorm) {
  // 1x1x4x4, 3x3 windows, stride 2, padding 1 on every side -> 2x2.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i)
    v[i] = float(i);
  Buf<float> x(DType::F32, {1, 1, 4, 4}, v), mx(DType::F32, {1, 1, 2, 2}), avg(DType::F32, {1, 1, 2, 2}),
      avgPad(DType::F32, {1, 1, 2, 2});
  auto at = [](int64_t countPad) {
    return attrs({intsAttr("kernel_shape", {3, 3}), intsAttr("pads", {1, 1, 1, 1}), intsAttr("strides", {2, 2}),
                  intsAttr("dilations", {1, 1}), intAttr("count_include_pad", countPad)});
  };
  ASSERT_EQ(call("max_pool", at(0), {x.ref()}, {mx.ref()}), "");
  EXPECT_EQ(mx.data, (std::vector<float>{5, 7, 13, 15}));
  Buf<float> mx2(DType::F32, {1, 1, 2, 2});
  Buf<int64_t> where(DType::I64, {1, 1, 2, 2});
  ASSERT_EQ(call("max_pool_with_indices", at(0), {x.ref()}, {mx2.ref(), where.ref()}), "");
  EXPECT_EQ(mx2.data, mx.data);
  EXPECT_EQ(where.data, (std::vector<int64_t>{5, 7, 13, 15})); // x[i] == i
  ASSERT_EQ(call("average_pool", at(0), {x.ref()}, {avg.ref()}), "");
  EXPECT_FLOAT_EQ(avg.data[0], (0 + 1 + 4 + 5) / 4.f);
  EXPECT_FLOAT_EQ(avg.data[3], (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.f);
  ASSERT_EQ(call("average_pool", at(1), {x.ref()}, {avgPad.ref()}), "");
  EXPECT_FLOAT_EQ(avgPad.data[0], (0 + 1 + 4 + 5) / 9.f);

  Buf<float> bx(DType::F32, {2, 3, 2}, randomFloats(12, 21)), by(DType::F32, {2, 3, 2});
  Buf<float> s(DType::F32, {3}, {1, 2, 3}), bias(DType::F32, {3}, {0, 1, 2}), mean(DType::F32, {3}, {0.5f, 0, -1}),
      var(DType::F32, {3}, {1, 4, 0.25f});
  ASSERT_EQ(call("batch_norm", attrs({floatAttr("epsilon", 1e-5)}), {bx.ref(), s.ref(), bias.ref(), mean.ref(), var.ref()},
                 {by.ref()}),
            "");
  for (int64_t i = 0; i < 12; ++i) {
    const int64_t c = (i / 2) % 3;
    EXPECT_NEAR(by.data[i], (bx.data[i] - mean.data[c]) / std::sqrt(var.data[c] + 1e-5) * s.data[c] + bias.data[c], 1e-5);
  }
}

TEST(Kernels, Pad) {
  Buf<float> x(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto pad = [&](const char *mode, std::vector<int64_t> pads, std::vector<int64_t> outShape) {
    Buf<float> y(DType::F32, outShape);
    Buf<float> v(DType::F32, {}, {9});
    EXPECT_EQ(call("pad", attrs({intsAttr("pads", pads), stringAttr("mode", mode)}), {x.ref(), v.ref()}, {y.ref()}), "");
    return y.data;
  };
  EXPECT_EQ(pad("constant", {0, 1, 1, 0}, {3, 4}), (std::vector<float>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9}));
  EXPECT_EQ(pad("reflect", {0, 2, 0, 0}, {2, 5}), (std::vector<float>{3, 2, 1, 2, 3, 6, 5, 4, 5, 6}));
  EXPECT_EQ(pad("edge", {0, 0, 0, 2}, {2, 5}), (std::vector<float>{1, 2, 3, 3, 3, 4, 5, 6, 6, 6}));
  EXPECT_EQ(pad("wrap", {0, 1, 0, 1}, {2, 5}), (std::vector<float>{3, 1, 2, 3, 1, 6, 4, 5, 6, 4}));
  EXPECT_EQ(pad("constant", {0, -1, 0, 0}, {2, 2}), (std::vector<float>{2, 3, 5, 6})); // negative crops
}

TEST(Kernels, ArgAndTopK) {
  Buf<float> x(DType::F32, {2, 4}, {3, 1, 3, 2, -1, 5, 0, 5});
  Buf<int64_t> amax(DType::I64, {2, 1}), amin(DType::I64, {2}), last(DType::I64, {2, 1});
  ASSERT_EQ(call("arg_max", attrs({intAttr("axis", 1)}), {x.ref()}, {amax.ref()}), "");
  EXPECT_EQ(amax.data, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(call("arg_max", attrs({intAttr("axis", 1), intAttr("select_last_index", 1)}), {x.ref()}, {last.ref()}), "");
  EXPECT_EQ(last.data, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(call("arg_min", attrs({intAttr("axis", 1), intAttr("keepdims", 0)}), {x.ref()}, {amin.ref()}), "");
  EXPECT_EQ(amin.data, (std::vector<int64_t>{1, 0}));
  Buf<float> values(DType::F32, {2, 2});
  Buf<int64_t> indices(DType::I64, {2, 2});
  ASSERT_EQ(call("top_k", attrs({intAttr("k", 2), intAttr("axis", 1)}), {x.ref()}, {values.ref(), indices.ref()}), "");
  EXPECT_EQ(values.data, (std::vector<float>{3, 3, 5, 5}));
  EXPECT_EQ(indices.data, (std::vector<int64_t>{0, 2, 1, 3}));
  ASSERT_EQ(call("top_k", attrs({intAttr("k", 1), intAttr("axis", 1), intAttr("largest", 0)}), {x.ref()},
                 {Buf<float>(DType::F32, {2, 1}).ref(), Buf<int64_t>(DType::I64, {2, 1}).ref()}),
            "");
  // k = -1: counted from shapes, the outputs' size along the axis (3 here) is k.
  Buf<float> three(DType::F32, {2, 3});
  Buf<int64_t> threeIndices(DType::I64, {2, 3});
  ASSERT_EQ(call("top_k", attrs({intAttr("k", -1), intAttr("axis", 1)}), {x.ref()}, {three.ref(), threeIndices.ref()}),
            "");
  EXPECT_EQ(three.data, (std::vector<float>{3, 3, 2, 5, 5, 0}));
  EXPECT_EQ(threeIndices.data, (std::vector<int64_t>{0, 2, 3, 1, 3, 2}));
  EXPECT_NE(call("top_k", attrs({intAttr("k", -1), intAttr("axis", 1)}), {x.ref()},
                 {Buf<float>(DType::F32, {2, 5}).ref(), Buf<int64_t>(DType::I64, {2, 5}).ref()}),
            "")
      << "more than the axis holds";
}

// softmax_top_k is softmax, top_k over the last axis (and, with normalize, the weights divided
// by their reduce_sum) to the bit: rows of 3 dimensions, k 1 to 3, equal logits picked by index.
TEST(Kernels, SoftmaxTopKMatchesItsParts) {
  const int64_t A = 2, B = 3, n = 7;
  std::vector<float> logits = randomFloats(size_t(A * B * n), 30, -3, 3);
  logits[2] = logits[5] = 9.0f; // a tie at the top of the first row
  Buf<float> x(DType::F32, {A, B, n}, logits), probabilities(DType::F32, {A, B, n});
  ASSERT_EQ(call("softmax", {}, {x.ref()}, {probabilities.ref()}), "");
  for (int64_t k : {1, 2, 3})
    for (int normalize : {0, 1}) {
      SCOPED_TRACE("k " + std::to_string(k) + (normalize ? ", normalized" : ""));
      Buf<float> want(DType::F32, {A, B, k}), got(DType::F32, {A, B, k}), sum(DType::F32, {A, B, 1});
      Buf<int64_t> wantIds(DType::I64, {A, B, k}), gotIds(DType::I64, {A, B, k});
      ASSERT_EQ(call("top_k", attrs({intAttr("k", k)}), {probabilities.ref()}, {want.ref(), wantIds.ref()}), "");
      if (normalize) {
        ASSERT_EQ(call("reduce_sum", attrs({intsAttr("axes", {-1})}), {want.ref()}, {sum.ref()}), "");
        ASSERT_EQ(call("div", {}, {want.ref(), sum.ref()}, {want.ref()}), "");
      }
      ASSERT_EQ(call("softmax_top_k", attrs({intAttr("k", k), intAttr("normalize", normalize)}), {x.ref()},
                     {got.ref(), gotIds.ref()}),
                "");
      EXPECT_EQ(got.data, want.data);
      EXPECT_EQ(gotIds.data, wantIds.data);
      EXPECT_EQ(gotIds.data[0], 2);
      if (k > 1)
        EXPECT_EQ(gotIds.data[1], 5);
    }
  Buf<float> tooMany(DType::F32, {A, B, n + 1});
  Buf<int64_t> tooManyIds(DType::I64, {A, B, n + 1});
  EXPECT_NE(call("softmax_top_k", attrs({intAttr("k", n + 1)}), {x.ref()}, {tooMany.ref(), tooManyIds.ref()}), "");
}

// grouped_top_k (DeepSeek-V3's router) is the ops llmc-fuse-routing replaces, to the bit: sigmoid,
// add the bias, top_k in each group and reduce_sum, top_k of the groups, the other groups' scores
// filled, top_k, gather_elements of the sigmoid scores, reduce_sum, add epsilon, div, mul. 16
// experts in 4 groups of 4, 2 kept, k 1 to 8 (k 8: every kept expert, and with a fill of 0 the
// filled ones compete); two equal group sums in row 0 (the lower group kept).
TEST(Kernels, GroupedTopKMatchesItsParts) {
  const int64_t rows = 5, n = 16, groups = 4, size = 4, kept = 2;
  std::vector<float> logits = randomFloats(size_t(rows * n), 31, -3, 3), biasValues = randomFloats(size_t(n), 32, -0.2f, 0.2f);
  for (int64_t e = 0; e < size; ++e) { // groups 1 and 2 of row 0: the same scores, the best ones
    logits[size_t(size + e)] = logits[size_t(2 * size + e)] = 4.0f + float(e);
    biasValues[size_t(size + e)] = biasValues[size_t(2 * size + e)] = 0.0f;
  }
  Buf<float> x(DType::F32, {rows, n}, logits), bias(DType::F32, {n}, biasValues);
  Buf<float> scores(DType::F32, {rows, n}), choice(DType::F32, {rows, n});
  ASSERT_EQ(call("sigmoid", {}, {x.ref()}, {scores.ref()}), "");
  ASSERT_EQ(call("add", {}, {scores.ref(), bias.ref()}, {choice.ref()}), "");
  Buf<float> grouped(DType::F32, {rows, groups, size}, choice.data), best(DType::F32, {rows, groups, 2});
  Buf<int64_t> bestIds(DType::I64, {rows, groups, 2});
  ASSERT_EQ(call("top_k", attrs({intAttr("k", 2)}), {grouped.ref()}, {best.ref(), bestIds.ref()}), "");
  Buf<float> groupScores(DType::F32, {rows, groups}), keptScores(DType::F32, {rows, kept});
  ASSERT_EQ(call("reduce_sum", attrs({intsAttr("axes", {-1}), intAttr("keepdims", 0)}), {best.ref()}, {groupScores.ref()}),
            "");
  Buf<int64_t> keptIds(DType::I64, {rows, kept});
  ASSERT_EQ(call("top_k", attrs({intAttr("k", kept), intAttr("sorted", 0)}), {groupScores.ref()},
                 {keptScores.ref(), keptIds.ref()}),
            "");
  EXPECT_EQ(keptIds.data[0], 1);
  EXPECT_EQ(keptIds.data[1], 2);
  for (float fill : {-INFINITY, 0.0f})
    for (int64_t k : {1, 3, 8})
      for (int normalize : {0, 1}) {
        SCOPED_TRACE("fill " + std::to_string(fill) + ", k " + std::to_string(k) + (normalize ? ", normalized" : ""));
        Buf<float> masked(DType::F32, {rows, n}, std::vector<float>(size_t(rows * n), fill));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < kept; ++j)
            for (int64_t e = 0; e < size; ++e) {
              const int64_t at = r * n + keptIds.data[size_t(r * kept + j)] * size + e;
              masked.data[size_t(at)] = choice.data[size_t(at)];
            }
        Buf<float> chosen(DType::F32, {rows, k}), want(DType::F32, {rows, k}), sum(DType::F32, {rows, 1});
        Buf<int64_t> wantIds(DType::I64, {rows, k});
        ASSERT_EQ(call("top_k", attrs({intAttr("k", k), intAttr("sorted", 0)}), {masked.ref()}, {chosen.ref(), wantIds.ref()}),
                  "");
        ASSERT_EQ(call("gather_elements", attrs({intAttr("axis", 1)}), {scores.ref(), wantIds.ref()}, {want.ref()}), "");
        if (normalize) {
          Buf<float> epsilon(DType::F32, {}, {1e-20f});
          ASSERT_EQ(call("reduce_sum", attrs({intsAttr("axes", {-1})}), {want.ref()}, {sum.ref()}), "");
          ASSERT_EQ(call("add", {}, {sum.ref(), epsilon.ref()}, {sum.ref()}), "");
          ASSERT_EQ(call("div", {}, {want.ref(), sum.ref()}, {want.ref()}), "");
        }
        Buf<float> scale(DType::F32, {}, {2.5f});
        ASSERT_EQ(call("mul", {}, {want.ref(), scale.ref()}, {want.ref()}), "");
        Buf<float> got(DType::F32, {rows, k});
        Buf<int64_t> gotIds(DType::I64, {rows, k});
        ASSERT_EQ(call("grouped_top_k",
                       attrs({intAttr("k", k), intAttr("groups", groups), intAttr("kept_groups", kept),
                              floatAttr("fill", fill), intAttr("normalize", normalize),
                              floatAttr("epsilon", normalize ? 1e-20 : 0.0), floatAttr("scale", 2.5)}),
                       {x.ref(), bias.ref()}, {got.ref(), gotIds.ref()}),
                  "");
        EXPECT_EQ(gotIds.data, wantIds.data);
        EXPECT_EQ(got.data, want.data);
      }
  Buf<float> out(DType::F32, {rows, 2});
  Buf<int64_t> ids(DType::I64, {rows, 2});
  EXPECT_NE(call("grouped_top_k", attrs({intAttr("k", 2), intAttr("groups", 3), intAttr("kept_groups", 1)}),
                 {x.ref(), bias.ref()}, {out.ref(), ids.ref()}),
            ""); // 16 experts in 3 groups
  EXPECT_NE(call("grouped_top_k", attrs({intAttr("k", 2), intAttr("groups", 4), intAttr("kept_groups", 5)}),
                 {x.ref(), bias.ref()}, {out.ref(), ids.ref()}),
            "");
}

// grouped_top_k with softmax scores and one group (ERNIE 4.5's router) is the ops llmc-fuse-routing
// replaces, to the bit: softmax, add the bias, top_k, gather_elements of the softmax scores, then
// reduce_sum, max with norm_min and div (normalize 2), or reduce_sum and div (1), or nothing (0).
// 8 experts, k 2 and 3; a norm_min of 0.9 clamps most rows' sums, 1e-12 none.
TEST(Kernels, CorrectedSoftmaxTopKMatchesItsParts) {
  const int64_t rows = 5, n = 8;
  Buf<float> x(DType::F32, {rows, n}, randomFloats(size_t(rows * n), 33, -3, 3));
  Buf<float> bias(DType::F32, {n}, randomFloats(size_t(n), 34, -0.1f, 0.1f));
  Buf<float> scores(DType::F32, {rows, n}), choice(DType::F32, {rows, n});
  ASSERT_EQ(call("softmax", {}, {x.ref()}, {scores.ref()}), "");
  ASSERT_EQ(call("add", {}, {scores.ref(), bias.ref()}, {choice.ref()}), "");
  int clamped = 0;
  for (int64_t k : {2, 3})
    for (int normalize : {0, 1, 2})
      for (float normMin : {1e-12f, 0.9f}) {
        SCOPED_TRACE("k " + std::to_string(k) + ", normalize " + std::to_string(normalize) + ", norm_min " +
                     std::to_string(normMin));
        Buf<float> chosen(DType::F32, {rows, k}), want(DType::F32, {rows, k}), sum(DType::F32, {rows, 1});
        Buf<int64_t> wantIds(DType::I64, {rows, k});
        ASSERT_EQ(call("top_k", attrs({intAttr("k", k)}), {choice.ref()}, {chosen.ref(), wantIds.ref()}), "");
        ASSERT_EQ(call("gather_elements", attrs({intAttr("axis", -1)}), {scores.ref(), wantIds.ref()}, {want.ref()}), "");
        if (normalize) {
          ASSERT_EQ(call("reduce_sum", attrs({intsAttr("axes", {-1})}), {want.ref()}, {sum.ref()}), "");
          Buf<float> floor(DType::F32, {}, {normMin});
          for (int64_t r = 0; normalize == 2 && r < rows; ++r)
            clamped += sum.data[size_t(r)] < normMin;
          if (normalize == 2)
            ASSERT_EQ(call("max", {}, {sum.ref(), floor.ref()}, {sum.ref()}), "");
          ASSERT_EQ(call("div", {}, {want.ref(), sum.ref()}, {want.ref()}), "");
        }
        Buf<float> got(DType::F32, {rows, k});
        Buf<int64_t> gotIds(DType::I64, {rows, k});
        ASSERT_EQ(call("grouped_top_k",
                       attrs({intAttr("k", k), intAttr("groups", 1), intAttr("kept_groups", 1), intAttr("group_top", 1),
                              stringAttr("scores", "softmax"), intAttr("normalize", normalize),
                              floatAttr("epsilon", normalize == 2 ? normMin : 0.0f)}),
                       {x.ref(), bias.ref()}, {got.ref(), gotIds.ref()}),
                  "");
        EXPECT_EQ(gotIds.data, wantIds.data);
        EXPECT_EQ(got.data, want.data);
      }
  EXPECT_GT(clamped, 0); // the clamp took part
  Buf<float> out(DType::F32, {rows, 2});
  Buf<int64_t> ids(DType::I64, {rows, 2});
  EXPECT_NE(call("grouped_top_k",
                 attrs({intAttr("k", 2), intAttr("groups", 1), intAttr("kept_groups", 1), stringAttr("scores", "tanh")}),
                 {x.ref(), bias.ref()}, {out.ref(), ids.ref()}),
            "");
  EXPECT_NE(call("grouped_top_k",
                 attrs({intAttr("k", 2), intAttr("groups", 1), intAttr("kept_groups", 1), intAttr("normalize", 3)}),
                 {x.ref(), bias.ref()}, {out.ref(), ids.ref()}),
            "");
}

TEST(Kernels, TileScatterInstanceNorm) {
  Buf<float> x(DType::F32, {1, 2}, {1, 2}), t(DType::F32, {2, 4});
  ASSERT_EQ(call("tile", {}, {x.ref()}, {t.ref()}), "");
  EXPECT_EQ(t.data, (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));

  Buf<float> data(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}), upd(DType::F32, {1, 2}, {10, 20}), out(DType::F32, {2, 3});
  Buf<int64_t> idx(DType::I64, {1, 2}, {2, 0});
  ASSERT_EQ(call("scatter_elements", attrs({intAttr("axis", 1)}), {data.ref(), idx.ref(), upd.ref()}, {out.ref()}), "");
  EXPECT_EQ(out.data, (std::vector<float>{20, 2, 10, 4, 5, 6}));
  ASSERT_EQ(call("scatter_elements", attrs({intAttr("axis", 1), stringAttr("reduction", "add")}),
                 {data.ref(), idx.ref(), upd.ref()}, {out.ref()}),
            "");
  EXPECT_EQ(out.data, (std::vector<float>{21, 2, 13, 4, 5, 6}));

  Buf<int64_t> nidx(DType::I64, {1, 1}, {1});
  Buf<float> nupd(DType::F32, {1, 3}, {7, 8, 9});
  ASSERT_EQ(call("scatter_nd", {}, {data.ref(), nidx.ref(), nupd.ref()}, {out.ref()}), "");
  EXPECT_EQ(out.data, (std::vector<float>{1, 2, 3, 7, 8, 9}));

  Buf<float> img(DType::F32, {1, 2, 2}, {1, 3, 2, 2}), g(DType::F32, {2}, {1, 2}), b(DType::F32, {2}, {0, 1}),
      y(DType::F32, {1, 2, 2});
  ASSERT_EQ(call("instance_norm", attrs({floatAttr("epsilon", 1e-5)}), {img.ref(), g.ref(), b.ref()}, {y.ref()}), "");
  EXPECT_NEAR(y.data[0], -1, 1e-4);
  EXPECT_NEAR(y.data[1], 1, 1e-4);
  EXPECT_NEAR(y.data[2], 1, 1e-6); // a constant plane normalizes to 0, then * 2 + 1
}

TEST(Kernels, GroupNormEinsumQuantize) {
  Buf<float> x(DType::F32, {1, 4, 2}, randomFloats(8, 22)), g(DType::F32, {4}, {1, 2, 3, 4}),
      b(DType::F32, {4}, {0, 0, 1, 1}), y(DType::F32, {1, 4, 2});
  ASSERT_EQ(call("group_norm", attrs({intAttr("num_groups", 2), floatAttr("epsilon", 1e-5)}), {x.ref(), g.ref(), b.ref()},
                 {y.ref()}),
            "");
  for (int grp = 0; grp < 2; ++grp) {
    double m = 0, v = 0;
    for (int i = 0; i < 4; ++i)
      m += x.data[grp * 4 + i] / 4.0;
    for (int i = 0; i < 4; ++i)
      v += (x.data[grp * 4 + i] - m) * (x.data[grp * 4 + i] - m) / 4.0;
    for (int i = 0; i < 4; ++i) {
      const int c = grp * 2 + i / 2;
      EXPECT_NEAR(y.data[grp * 4 + i], (x.data[grp * 4 + i] - m) / std::sqrt(v + 1e-5) * g.data[c] + b.data[c], 1e-5);
    }
  }

  // "bij,bjk->bik" against the matmul of the same operands; "ij->" sums everything.
  Buf<float> p(DType::F32, {2, 3, 4}, randomFloats(24, 23)), q(DType::F32, {2, 4, 5}, randomFloats(40, 24));
  Buf<float> e(DType::F32, {2, 3, 5}), m(DType::F32, {2, 3, 5});
  ASSERT_EQ(call("einsum", attrs({stringAttr("equation", "bij, bjk -> bik")}), {p.ref(), q.ref()}, {e.ref()}), "");
  ASSERT_EQ(call("matmul", {}, {p.ref(), q.ref()}, {m.ref()}), "");
  for (int i = 0; i < 30; ++i)
    EXPECT_NEAR(e.data[i], m.data[i], 1e-5);
  Buf<float> total(DType::F32, {});
  ASSERT_EQ(call("einsum", attrs({stringAttr("equation", "bij->")}), {p.ref()}, {total.ref()}), "");
  double sum = 0;
  for (float v : p.data)
    sum += v;
  EXPECT_NEAR(total.data[0], sum, 1e-4);

  Buf<float> f(DType::F32, {4}, {-1.f, 0.5f, 1.5f, 300.f}), scale(DType::F32, {}, {0.5f});
  Buf<uint8_t> zero(DType::U8, {}, {10}), qv(DType::U8, {4});
  ASSERT_EQ(call("quantize_linear", {}, {f.ref(), scale.ref(), zero.ref()}, {qv.ref()}), "");
  EXPECT_EQ(qv.data, (std::vector<uint8_t>{8, 11, 13, 255})); // 0.5/0.5 = 1 and 1.5/0.5 = 3 exactly; saturates
  Buf<float> back(DType::F32, {4});
  ASSERT_EQ(call("dequantize_linear", {}, {qv.ref(), scale.ref(), zero.ref()}, {back.ref()}), "");
  EXPECT_EQ(back.data, (std::vector<float>{-1, 0.5f, 1.5f, 122.5f}));
}

// Causal grouped-query attention with a past, against a direct computation.
TEST(Kernels, Attention) {
  const int64_t B = 1, Hq = 4, Hkv = 2, Sq = 3, P = 2, D = 5, T = P + Sq;
  Buf<float> q(DType::F32, {B, Hq, Sq, D}, randomFloats(B * Hq * Sq * D, 25)),
      k(DType::F32, {B, Hkv, Sq, D}, randomFloats(B * Hkv * Sq * D, 26)),
      v(DType::F32, {B, Hkv, Sq, D}, randomFloats(B * Hkv * Sq * D, 27)),
      pk(DType::F32, {B, Hkv, P, D}, randomFloats(B * Hkv * P * D, 28)),
      pv(DType::F32, {B, Hkv, P, D}, randomFloats(B * Hkv * P * D, 29)), mask(DType::F32, {0});
  Buf<int64_t> nonpad(DType::I64, {0});
  Buf<float> y(DType::F32, {B, Hq, Sq, D}), presentK(DType::F32, {B, Hkv, T, D}), presentV(DType::F32, {B, Hkv, T, D}),
      qk(DType::F32, {B, Hq, Sq, T});
  ASSERT_EQ(call("attention", attrs({intAttr("is_causal", 1)}),
                 {q.ref(), k.ref(), v.ref(), mask.ref(), pk.ref(), pv.ref(), nonpad.ref()},
                 {y.ref(), presentK.ref(), presentV.ref(), qk.ref()}),
            "");
  auto keyAt = [&](const Buf<float> &past, const Buf<float> &now, int64_t h, int64_t t, int64_t d) {
    return t < P ? past.data[(h * P + t) * D + d] : now.data[(h * Sq + t - P) * D + d];
  };
  for (int64_t h = 0; h < Hq; ++h)
    for (int64_t i = 0; i < Sq; ++i) {
      const int64_t hk = h / (Hq / Hkv);
      std::vector<double> w(T, 0.0);
      double sum = 0, maxScore = -1e30;
      for (int64_t t = 0; t <= i + P; ++t) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d)
          s += double(q.data[(h * Sq + i) * D + d]) * keyAt(pk, k, hk, t, d);
        w[t] = s / std::sqrt(double(D));
        maxScore = std::max(maxScore, w[t]);
      }
      for (int64_t t = 0; t <= i + P; ++t)
        sum += (w[t] = std::exp(w[t] - maxScore));
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t t = 0; t <= i + P; ++t)
          acc += w[t] / sum * keyAt(pv, v, hk, t, d);
        EXPECT_NEAR(y.data[(h * Sq + i) * D + d], acc, 1e-5);
      }
    }
  EXPECT_EQ(presentK.data[0], pk.data[0]);
  EXPECT_EQ(presentK.data[P * D], k.data[0]);
}

TEST(Kernels, Rotary) {
  // One head of 4 features at position 1 with angle table rows [cos, sin] per pair.
  Buf<float> x(DType::F32, {1, 1, 1, 4}, {1, 2, 3, 4}), y(DType::F32, {1, 1, 1, 4});
  Buf<float> c(DType::F32, {2, 2}, {1, 1, 0.5f, 0}), s(DType::F32, {2, 2}, {0, 0, 0.5f, 1});
  Buf<int64_t> pos(DType::I64, {1, 1}, {1});
  ASSERT_EQ(call("rotary", {}, {x.ref(), c.ref(), s.ref(), pos.ref()}, {y.ref()}), "");
  // Halves: pairs (x0, x2) with (cos .5, sin .5) and (x1, x3) with (cos 0, sin 1).
  EXPECT_FLOAT_EQ(y.data[0], 1 * 0.5f - 3 * 0.5f);
  EXPECT_FLOAT_EQ(y.data[2], 3 * 0.5f + 1 * 0.5f);
  EXPECT_FLOAT_EQ(y.data[1], -4);
  EXPECT_FLOAT_EQ(y.data[3], 2);
  ASSERT_EQ(call("rotary", attrs({intAttr("interleaved", 1)}), {x.ref(), c.ref(), s.ref(), pos.ref()}, {y.ref()}), "");
  EXPECT_FLOAT_EQ(y.data[0], 1 * 0.5f - 2 * 0.5f); // pair (x0, x1)
  EXPECT_FLOAT_EQ(y.data[3], 3);                   // pair (x2, x3) rotated by 90 degrees
}

// Without position ids, tables [1, S, rot / 2] serve every batch (GPT-OSS's and Llama's tables,
// made from one row of positions, beside a dynamic batch): the same as the tables repeated.
TEST(Kernels, RotaryTablesOfOneBatchServeEveryBatch) {
  const int64_t B = 3, H = 2, S = 4, D = 8, half = D / 2;
  const std::vector<float> cosRows = randomFloats(S * half, 71), sinRows = randomFloats(S * half, 72);
  std::vector<float> cosRepeated, sinRepeated;
  for (int64_t b = 0; b < B; ++b) {
    cosRepeated.insert(cosRepeated.end(), cosRows.begin(), cosRows.end());
    sinRepeated.insert(sinRepeated.end(), sinRows.begin(), sinRows.end());
  }
  Buf<float> x(DType::F32, {B, H, S, D}, randomFloats(B * H * S * D, 70)), shared(DType::F32, {B, H, S, D}),
      repeated(DType::F32, {B, H, S, D}), c1(DType::F32, {1, S, half}, cosRows), s1(DType::F32, {1, S, half}, sinRows),
      cB(DType::F32, {B, S, half}, cosRepeated), sB(DType::F32, {B, S, half}, sinRepeated),
      c2(DType::F32, {2, S, half}, randomFloats(2 * S * half, 73));
  Buf<int64_t> none(DType::I64, {0});
  ASSERT_EQ(call("rotary", {}, {x.ref(), c1.ref(), s1.ref(), none.ref()}, {shared.ref()}), "");
  ASSERT_EQ(call("rotary", {}, {x.ref(), cB.ref(), sB.ref(), none.ref()}, {repeated.ref()}), "");
  EXPECT_EQ(shared.data, repeated.data);
  EXPECT_NE(shared.data, x.data);
  // Tables of another batch than x's or 1: refused.
  EXPECT_NE(call("rotary", {}, {x.ref(), c2.ref(), c2.ref(), none.ref()}, {shared.ref()}), "");
}

// Runs last (gtest runs tests in declaration order within a file): every registered kernel
// must have been exercised above.

} // namespace
