// The fused kernels against the unfused kernels they replace (each tested on its own against a
// naive reference in KernelTest.cpp), run on the same random data.
#include "KernelTestUtil.h"
#include "LatentAttentionCost.h"

#include <limits>

using namespace llmc::rt;
using namespace llmc::rt::test;

namespace {

void expectNear(const std::vector<float> &got, const std::vector<float> &want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(Kernels, Silu) {
  Buf<float> x(DType::F32, {7}, {-30, -2, -0.5f, 0, 0.5f, 2, 30}), y(DType::F32, {7});
  ASSERT_EQ(call("silu", {}, {x.ref()}, {y.ref()}), "");
  for (size_t i = 0; i < x.data.size(); ++i)
    EXPECT_NEAR(y.data[i], x.data[i] / (1 + std::exp(-double(x.data[i]))), 1e-6);
}

// linear = matmul, then bias, activation, gate multiply and residual add, each its own kernel.
TEST(Kernels, LinearMatchesItsUnfusedParts) {
  const int64_t M = 6, K = 5, N = 4;
  Buf<float> x(DType::F32, {2, 3, K}, randomFloats(M * K, 1)), w(DType::F32, {K, N}, randomFloats(K * N, 2)),
      bias(DType::F32, {N}, randomFloats(N, 3)), gate(DType::F32, {2, 3, N}, randomFloats(M * N, 4)),
      residual(DType::F32, {2, 3, N}, randomFloats(M * N, 5)), none(DType::F32, {0});
  for (const char *activation : {"none", "relu", "silu", "gelu", "gelu_tanh"}) {
    Buf<float> mm(DType::F32, {2, 3, N}), biased(DType::F32, {2, 3, N}), act(DType::F32, {2, 3, N}),
        gated(DType::F32, {2, 3, N}), want(DType::F32, {2, 3, N}), got(DType::F32, {2, 3, N});
    ASSERT_EQ(call("matmul", {}, {x.ref(), w.ref()}, {mm.ref()}), "");
    ASSERT_EQ(call("add", {}, {mm.ref(), bias.ref()}, {biased.ref()}), "");
    const std::string a = activation;
    if (a == "none")
      act.data = biased.data;
    else if (a == "gelu" || a == "gelu_tanh")
      ASSERT_EQ(call("gelu", attrs({stringAttr("approximate", a == "gelu" ? "none" : "tanh")}), {biased.ref()},
                     {act.ref()}),
                "");
    else
      ASSERT_EQ(call(a, {}, {biased.ref()}, {act.ref()}), "");
    ASSERT_EQ(call("mul", {}, {act.ref(), gate.ref()}, {gated.ref()}), "");
    ASSERT_EQ(call("add", {}, {gated.ref(), residual.ref()}, {want.ref()}), "");
    ASSERT_EQ(call("linear", attrs({stringAttr("activation", a)}),
                   {x.ref(), w.ref(), bias.ref(), gate.ref(), residual.ref()}, {got.ref()}),
              "");
    expectNear(got.data, want.data, 1e-5f);
  }
  // Without the optional operands it is the matmul; transB takes W as [N, K].
  Buf<float> plain(DType::F32, {2, 3, N}), mm(DType::F32, {2, 3, N});
  ASSERT_EQ(call("matmul", {}, {x.ref(), w.ref()}, {mm.ref()}), "");
  ASSERT_EQ(call("linear", {}, {x.ref(), w.ref(), none.ref(), none.ref(), none.ref()}, {plain.ref()}), "");
  expectNear(plain.data, mm.data, 1e-6f);
  Buf<float> wt(DType::F32, {N, K});
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      wt.data[size_t(n * K + k)] = w.data[size_t(k * N + n)];
  ASSERT_EQ(call("linear", attrs({intAttr("transB", 1)}), {x.ref(), wt.ref(), none.ref(), none.ref(), none.ref()},
                 {plain.ref()}),
            "");
  expectNear(plain.data, mm.data, 1e-6f);
  EXPECT_NE(call("linear", attrs({stringAttr("activation", "swish")}),
                 {x.ref(), w.ref(), none.ref(), none.ref(), none.ref()}, {plain.ref()}),
            "");
}

// The swiglu linear over [Wg | Wu] = linear(Wu) gated by linear(Wg, silu).
TEST(Kernels, SwigluLinearMatchesGateAndUp) {
  const int64_t M = 4, K = 3, N = 2;
  Buf<float> x(DType::F32, {M, K}, randomFloats(M * K, 20)), wg(DType::F32, {K, N}, randomFloats(K * N, 21)),
      wu(DType::F32, {K, N}, randomFloats(K * N, 22)), both(DType::F32, {K, 2 * N}), none(DType::F32, {0});
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      both.data[size_t(k * 2 * N + n)] = wg.data[size_t(k * N + n)];
      both.data[size_t(k * 2 * N + N + n)] = wu.data[size_t(k * N + n)];
    }
  Buf<float> g(DType::F32, {M, N}), want(DType::F32, {M, N}), got(DType::F32, {M, N});
  ASSERT_EQ(call("linear", attrs({stringAttr("activation", "silu")}), {x.ref(), wg.ref(), none.ref(), none.ref(), none.ref()},
                 {g.ref()}),
            "");
  ASSERT_EQ(call("linear", {}, {x.ref(), wu.ref(), none.ref(), g.ref(), none.ref()}, {want.ref()}), "");
  ASSERT_EQ(call("linear", attrs({stringAttr("activation", "swiglu")}),
                 {x.ref(), both.ref(), none.ref(), none.ref(), none.ref()}, {got.ref()}),
            "");
  expectNear(got.data, want.data, 1e-5f);
}

TEST(Kernels, AddNormsMatchAddThenNorm) {
  const std::vector<int64_t> shape = {2, 3, 8};
  Buf<float> x(DType::F32, shape, randomFloats(48, 6)), r(DType::F32, shape, randomFloats(48, 7)),
      g(DType::F32, {8}, randomFloats(8, 8)), b(DType::F32, {8}, randomFloats(8, 9));
  Buf<float> sum(DType::F32, shape), want(DType::F32, shape), got(DType::F32, shape), gotSum(DType::F32, shape);
  ASSERT_EQ(call("add", {}, {x.ref(), r.ref()}, {sum.ref()}), "");
  auto eps = floatAttr("epsilon", 1e-5);
  ASSERT_EQ(call("layer_norm", attrs({eps}), {sum.ref(), g.ref(), b.ref()}, {want.ref()}), "");
  ASSERT_EQ(call("add_layer_norm", attrs({eps}), {x.ref(), r.ref(), g.ref(), b.ref()}, {got.ref(), gotSum.ref()}), "");
  expectNear(got.data, want.data, 1e-5f);
  expectNear(gotSum.data, sum.data, 0.0f);
  ASSERT_EQ(call("rms_norm", attrs({eps}), {sum.ref(), g.ref()}, {want.ref()}), "");
  ASSERT_EQ(call("add_rms_norm", attrs({eps}), {x.ref(), r.ref(), g.ref()}, {got.ref(), gotSum.ref()}), "");
  expectNear(got.data, want.data, 1e-5f);
  Buf<float> wrong(DType::F32, {2, 3, 7});
  EXPECT_NE(call("add_rms_norm", attrs({eps}), {x.ref(), wrong.ref(), g.ref()}, {got.ref(), gotSum.ref()}), "");
}

// fused_attention = rotary (ONNX RotaryEmbedding, half tables) on q and k, then attention on
// [batch, seq, heads * head] with grouped-query heads, a mask and the causal frontier.
TEST(Kernels, FusedAttentionMatchesRotaryThenAttention) {
  const int64_t B = 2, S = 5, Hq = 4, Hkv = 2, D = 6;
  Buf<float> q(DType::F32, {B, S, Hq * D}, randomFloats(B * S * Hq * D, 10)),
      k(DType::F32, {B, S, Hkv * D}, randomFloats(B * S * Hkv * D, 11)),
      v(DType::F32, {B, S, Hkv * D}, randomFloats(B * S * Hkv * D, 12));
  std::vector<float> angles = randomFloats(size_t(S * D / 2), 13, 0, 3);
  Buf<float> cosHalf(DType::F32, {B, S, D / 2}), sinHalf(DType::F32, {B, S, D / 2}), cosFull(DType::F32, {1, S, D}),
      sinFull(DType::F32, {1, S, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i < D / 2; ++i) {
        const float a = angles[size_t(s * D / 2 + i)];
        cosHalf.data[size_t((b * S + s) * D / 2 + i)] = std::cos(a);
        sinHalf.data[size_t((b * S + s) * D / 2 + i)] = std::sin(a);
        for (int64_t half : {int64_t(0), D / 2}) {
          cosFull.data[size_t(s * D + i + half)] = std::cos(a);
          sinFull.data[size_t(s * D + i + half)] = std::sin(a);
        }
      }
  // An additive mask over keys per batch (padding of the last key in batch 1).
  Buf<float> mask(DType::F32, {B, 1, 1, S}, std::vector<float>(size_t(B * S), 0.0f));
  mask.data[size_t(2 * S - 1)] = -1e9f;
  Buf<int64_t> noPositions(DType::I64, {0});
  Buf<float> qr(DType::F32, {B, S, Hq * D}), kr(DType::F32, {B, S, Hkv * D}), empty(DType::F32, {0});
  Buf<int64_t> emptyI(DType::I64, {0});
  ASSERT_EQ(call("rotary", attrs({intAttr("num_heads", Hq)}), {q.ref(), cosHalf.ref(), sinHalf.ref(), noPositions.ref()},
                 {qr.ref()}),
            "");
  ASSERT_EQ(call("rotary", attrs({intAttr("num_heads", Hkv)}),
                 {k.ref(), cosHalf.ref(), sinHalf.ref(), noPositions.ref()}, {kr.ref()}),
            "");
  for (int causal : {0, 1}) {
    Buf<float> want(DType::F32, {B, S, Hq * D}), pk(DType::F32, {B, Hkv, S, D}), pv(DType::F32, {B, Hkv, S, D}),
        qk(DType::F32, {B, Hq, S, S}), got(DType::F32, {B, S, Hq * D});
    auto at = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", causal)});
    ASSERT_EQ(call("attention", at, {qr.ref(), kr.ref(), v.ref(), mask.ref(), empty.ref(), empty.ref(), emptyI.ref()},
                   {want.ref(), pk.ref(), pv.ref(), qk.ref()}),
              "");
    ASSERT_EQ(call("fused_attention", at, {q.ref(), k.ref(), v.ref(), mask.ref(), cosFull.ref(), sinFull.ref()},
                   {got.ref()}),
              "");
    expectNear(got.data, want.data, 1e-5f);
    // Without rotary tables it is plain attention on the given q and k.
    ASSERT_EQ(call("fused_attention", at, {qr.ref(), kr.ref(), v.ref(), mask.ref(), empty.ref(), empty.ref()},
                   {got.ref()}),
              "");
    expectNear(got.data, want.data, 1e-5f);
  }
  // The cache layout [B, Hkv, S, D]: the same attention (keys already rotated, so only q turns).
  Buf<float> kc(DType::F32, {B, Hkv, S, D}), vc(DType::F32, {B, Hkv, S, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t d = 0; d < D; ++d) {
          kc.data[size_t(((b * Hkv + h) * S + s) * D + d)] = kr.data[size_t((b * S + s) * Hkv * D + h * D + d)];
          vc.data[size_t(((b * Hkv + h) * S + s) * D + d)] = v.data[size_t((b * S + s) * Hkv * D + h * D + d)];
        }
  for (int causal : {0, 1}) {
    auto at = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", causal)});
    Buf<float> want(DType::F32, {B, S, Hq * D}), got(DType::F32, {B, S, Hq * D});
    ASSERT_EQ(call("fused_attention", at, {q.ref(), k.ref(), v.ref(), mask.ref(), cosFull.ref(), sinFull.ref()},
                   {want.ref()}),
              "");
    ASSERT_EQ(call("fused_attention", at, {q.ref(), kc.ref(), vc.ref(), mask.ref(), cosFull.ref(), sinFull.ref()},
                   {got.ref()}),
              "");
    expectNear(got.data, want.data, 1e-5f);
  }
  // packed_qkv: Q, K and V side by side in one [B, S, (Hq + 2 Hkv) * D] tensor.
  {
    const int64_t W = (Hq + 2 * Hkv) * D;
    Buf<float> packed(DType::F32, {B, S, W});
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t c = 0; c < W; ++c)
        packed.data[size_t(r * W + c)] = c < Hq * D            ? q.data[size_t(r * Hq * D + c)]
                                         : c < (Hq + Hkv) * D ? k.data[size_t(r * Hkv * D + c - Hq * D)]
                                                              : v.data[size_t(r * Hkv * D + c - (Hq + Hkv) * D)];
    Buf<float> want(DType::F32, {B, S, Hq * D}), got(DType::F32, {B, S, Hq * D});
    auto at = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1)});
    ASSERT_EQ(call("fused_attention", at, {q.ref(), k.ref(), v.ref(), mask.ref(), cosFull.ref(), sinFull.ref()},
                   {want.ref()}),
              "");
    auto packedAttrs = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1),
                              intAttr("packed_qkv", 1)});
    ASSERT_EQ(call("fused_attention", packedAttrs,
                   {packed.ref(), empty.ref(), empty.ref(), mask.ref(), cosFull.ref(), sinFull.ref()}, {got.ref()}),
              "");
    expectNear(got.data, want.data, 1e-6f);
  }
  // The length-major layout [S, B, Hkv*D] (kv_time_major): the same again.
  Buf<float> kt(DType::F32, {S, B, Hkv * D}), vt(DType::F32, {S, B, Hkv * D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t c = 0; c < Hkv * D; ++c) {
        kt.data[size_t((s * B + b) * Hkv * D + c)] = kr.data[size_t((b * S + s) * Hkv * D + c)];
        vt.data[size_t((s * B + b) * Hkv * D + c)] = v.data[size_t((b * S + s) * Hkv * D + c)];
      }
  {
    auto at = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1),
                     intAttr("kv_time_major", 1)});
    Buf<float> want(DType::F32, {B, S, Hq * D}), got(DType::F32, {B, S, Hq * D});
    ASSERT_EQ(call("fused_attention", attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1)}),
                   {q.ref(), k.ref(), v.ref(), mask.ref(), cosFull.ref(), sinFull.ref()}, {want.ref()}),
              "");
    ASSERT_EQ(call("fused_attention", at, {q.ref(), kt.ref(), vt.ref(), mask.ref(), cosFull.ref(), sinFull.ref()},
                   {got.ref()}),
              "");
    expectNear(got.data, want.data, 1e-5f);
  }
  Buf<float> bad(DType::F32, {B, S, 3 * D});
  EXPECT_NE(call("fused_attention", attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv)}),
                 {q.ref(), k.ref(), v.ref(), empty.ref(), empty.ref(), empty.ref()}, {bad.ref()}),
            "");
}

// sliding_window W hides the keys W or more positions before the query, bottom-right aligned as
// is_causal: ONNX Attention's left window of W - 1 keys, over a past (its frontier then
// bottom-right too) and without one (one length: both alignments agree).
TEST(Kernels, FusedAttentionSlidingWindowMatchesOnnxLeftWindow) {
  const int64_t B = 2, P = 5, Sq = 3, Hq = 4, Hkv = 2, D = 4;
  Buf<float> q(DType::F32, {B, Sq, Hq * D}, randomFloats(B * Sq * Hq * D, 20)),
      k(DType::F32, {B, Sq, Hkv * D}, randomFloats(B * Sq * Hkv * D, 21)),
      v(DType::F32, {B, Sq, Hkv * D}, randomFloats(B * Sq * Hkv * D, 22)),
      pastK(DType::F32, {B, Hkv, P, D}, randomFloats(B * Hkv * P * D, 23)),
      pastV(DType::F32, {B, Hkv, P, D}, randomFloats(B * Hkv * P * D, 24)), empty(DType::F32, {0});
  Buf<int64_t> emptyI(DType::I64, {0});
  // Padding: the second sequence's first key hidden.
  Buf<uint8_t> keep(DType::Bool, {B, 1, 1, P + Sq}, std::vector<uint8_t>(size_t(B * (P + Sq)), 1));
  keep.data[size_t(P + Sq)] = 0;
  Buf<uint8_t> keepNew(DType::Bool, {B, 1, 1, Sq}, std::vector<uint8_t>(size_t(B * Sq), 1));
  for (int causal : {0, 1})
    for (int64_t window : {1, 2, 4, 8}) {
      auto onnx = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", causal),
                         intAttr("left_window_size", window - 1)});
      auto fused = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", causal),
                          intAttr("sliding_window", window)});
      SCOPED_TRACE("causal " + std::to_string(causal) + ", window " + std::to_string(window));
      Buf<float> want(DType::F32, {B, Sq, Hq * D}), presentK(DType::F32, {B, Hkv, P + Sq, D}),
          presentV(DType::F32, {B, Hkv, P + Sq, D}), qk(DType::F32, {B, Hq, Sq, P + Sq}),
          got(DType::F32, {B, Sq, Hq * D});
      ASSERT_EQ(call("attention", onnx, {q.ref(), k.ref(), v.ref(), keep.ref(), pastK.ref(), pastV.ref(), emptyI.ref()},
                     {want.ref(), presentK.ref(), presentV.ref(), qk.ref()}),
                "");
      // Over the present keys and values (the cache layout), Sq < Sk.
      ASSERT_EQ(call("fused_attention", fused,
                     {q.ref(), presentK.ref(), presentV.ref(), keep.ref(), empty.ref(), empty.ref()}, {got.ref()}),
                "");
      expectNear(got.data, want.data, 1e-5f);
      // Without a past.
      Buf<float> wantNew(DType::F32, {B, Sq, Hq * D}), pk(DType::F32, {B, Hkv, Sq, D}), pv(DType::F32, {B, Hkv, Sq, D}),
          qkNew(DType::F32, {B, Hq, Sq, Sq});
      ASSERT_EQ(call("attention", onnx, {q.ref(), k.ref(), v.ref(), keepNew.ref(), empty.ref(), empty.ref(), emptyI.ref()},
                     {wantNew.ref(), pk.ref(), pv.ref(), qkNew.ref()}),
                "");
      ASSERT_EQ(call("fused_attention", fused, {q.ref(), k.ref(), v.ref(), keepNew.ref(), empty.ref(), empty.ref()},
                     {got.ref()}),
                "");
      expectNear(got.data, wantNew.data, 1e-5f);
    }
  EXPECT_NE(call("fused_attention", attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv),
                                           intAttr("sliding_window", -1)}),
                 {q.ref(), k.ref(), v.ref(), empty.ref(), empty.ref(), empty.ref()}, {Buf<float>(DType::F32, {B, Sq, Hq * D}).ref()}),
            "");
}

// sinks [Hq]: a logit per head in each row's softmax with no value behind it, as GPT-OSS writes
// it (softmax(concat(scores, sink)) less the sink's column), written out here: grouped-query,
// causal, with and without a sliding window, over keys [B, S, Hkv * D] and packed QKV; a sink
// far above the scores (the row gives the keys almost nothing), one far below (an attention
// without sinks), and a row whose every key is masked (zeros).
TEST(Kernels, FusedAttentionWithSinksMatchesTheSinksColumnSoftmax) {
  const int64_t B = 2, S = 5, Hq = 4, Hkv = 2, D = 4;
  Buf<float> q(DType::F32, {B, S, Hq * D}, randomFloats(B * S * Hq * D, 60)),
      k(DType::F32, {B, S, Hkv * D}, randomFloats(B * S * Hkv * D, 61)),
      v(DType::F32, {B, S, Hkv * D}, randomFloats(B * S * Hkv * D, 62)), empty(DType::F32, {0});
  Buf<float> sinks(DType::F32, {Hq}, {0.5f, -1.0f, 40.0f, -60.0f});
  // The first sequence's first query sees no key: the mask hides key 0 there.
  Buf<uint8_t> keep(DType::Bool, {B, 1, S, S}, std::vector<uint8_t>(size_t(B * S * S), 1));
  keep.data[0] = 0;
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t window : {0, 2}) {
    SCOPED_TRACE("window " + std::to_string(window));
    std::vector<float> want(size_t(B * S * Hq * D), 0.0f);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < S; ++i) {
          std::vector<double> score(size_t(S), -INFINITY);
          double best = sinks.data[size_t(h)];
          bool any = false;
          for (int64_t j = 0; j <= i; ++j) {
            if ((window > 0 && i - j >= window) || !keep.data[size_t((b * S + i) * S + j)])
              continue;
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d)
              dot += double(q.data[size_t((b * S + i) * Hq * D + h * D + d)]) *
                     k.data[size_t((b * S + j) * Hkv * D + (h / 2) * D + d)];
            score[size_t(j)] = dot * scale, best = std::max(best, dot * scale), any = true;
          }
          if (!any)
            continue; // zeros
          double total = std::exp(sinks.data[size_t(h)] - best);
          for (double x : score)
            total += std::exp(x - best);
          for (int64_t j = 0; j <= i; ++j)
            for (int64_t d = 0; d < D; ++d)
              want[size_t((b * S + i) * Hq * D + h * D + d)] +=
                  float(std::exp(score[size_t(j)] - best) / total * v.data[size_t((b * S + j) * Hkv * D + (h / 2) * D + d)]);
        }
    auto at = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1),
                     intAttr("sliding_window", window)});
    Buf<float> got(DType::F32, {B, S, Hq * D});
    ASSERT_EQ(call("fused_attention", at, {q.ref(), k.ref(), v.ref(), keep.ref(), empty.ref(), empty.ref(), sinks.ref()},
                   {got.ref()}),
              "");
    expectNear(got.data, want, 1e-5f);
    // Packed QKV carries the sinks through.
    Buf<float> packed(DType::F32, {B, S, (Hq + 2 * Hkv) * D}), gotPacked(DType::F32, {B, S, Hq * D});
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t c = 0; c < (Hq + 2 * Hkv) * D; ++c)
        packed.data[size_t(r * (Hq + 2 * Hkv) * D + c)] =
            c < Hq * D ? q.data[size_t(r * Hq * D + c)]
            : c < (Hq + Hkv) * D ? k.data[size_t(r * Hkv * D + c - Hq * D)]
                                 : v.data[size_t(r * Hkv * D + c - (Hq + Hkv) * D)];
    auto packedAttrs = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1),
                              intAttr("sliding_window", window), intAttr("packed_qkv", 1)});
    ASSERT_EQ(call("fused_attention", packedAttrs,
                   {packed.ref(), empty.ref(), empty.ref(), keep.ref(), empty.ref(), empty.ref(), sinks.ref()},
                   {gotPacked.ref()}),
              "");
    expectNear(gotPacked.data, want, 1e-5f);
  }
  // Sinks of another length: refused.
  Buf<float> three(DType::F32, {3}, {0.0f, 0.0f, 0.0f}), got(DType::F32, {B, S, Hq * D});
  EXPECT_NE(call("fused_attention", attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv)}),
                 {q.ref(), k.ref(), v.ref(), empty.ref(), empty.ref(), empty.ref(), three.ref()}, {got.ref()}),
            "");
}

// rotary_dim: the query turns inside the attention as llmc.rotary turns it (its first R
// features, halves or neighbours, tables [B, S, R/2]), the keys not at all: the same as the
// rotary op and then the attention, over keys [B, S, Hkv * D] and over a cache [B, Hkv, S, D].
TEST(Kernels, FusedAttentionTurnsItsQueryAsRotaryDoes) {
  const int64_t B = 2, S = 5, Hq = 4, Hkv = 2, D = 8;
  Buf<float> q(DType::F32, {B, S, Hq * D}, randomFloats(B * S * Hq * D, 40)),
      k(DType::F32, {B, S, Hkv * D}, randomFloats(B * S * Hkv * D, 41)),
      v(DType::F32, {B, S, Hkv * D}, randomFloats(B * S * Hkv * D, 42)), empty(DType::F32, {0});
  Buf<float> kc(DType::F32, {B, Hkv, S, D}), vc(DType::F32, {B, Hkv, S, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t c = 0; c < Hkv * D; ++c) {
        const size_t flat = size_t((b * S + s) * Hkv * D + c), cache = size_t(((b * Hkv + c / D) * S + s) * D + c % D);
        kc.data[cache] = k.data[flat], vc.data[cache] = v.data[flat];
      }
  Buf<int64_t> noPositions(DType::I64, {0});
  for (int64_t R : {D, D / 2})
    for (int interleaved : {0, 1}) {
      SCOPED_TRACE("rotary_dim " + std::to_string(R) + (interleaved ? ", interleaved" : ""));
      Buf<float> cos(DType::F32, {B, S, R / 2}, randomFloats(size_t(B * S * R / 2), 43, -1, 1)),
          sin(DType::F32, {B, S, R / 2}, randomFloats(size_t(B * S * R / 2), 44, -1, 1)), qr(DType::F32, {B, S, Hq * D});
      ASSERT_EQ(call("rotary", attrs({intAttr("num_heads", Hq), intAttr("rotary_embedding_dim", R),
                                      intAttr("interleaved", interleaved)}),
                     {q.ref(), cos.ref(), sin.ref(), noPositions.ref()}, {qr.ref()}),
                "");
      for (bool cached : {false, true}) {
        const TensorRef keys = cached ? kc.ref() : k.ref(), values = cached ? vc.ref() : v.ref();
        Buf<float> want(DType::F32, {B, S, Hq * D}), got(DType::F32, {B, S, Hq * D});
        auto plain = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1)});
        ASSERT_EQ(call("fused_attention", plain, {qr.ref(), keys, values, empty.ref(), empty.ref(), empty.ref()},
                       {want.ref()}),
                  "");
        auto turning = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("is_causal", 1),
                              intAttr("rotary_dim", R), intAttr("rotary_interleaved", interleaved),
                              intAttr("rotate_keys", 0)});
        ASSERT_EQ(call("fused_attention", turning, {q.ref(), keys, values, empty.ref(), cos.ref(), sin.ref()},
                       {got.ref()}),
                  "");
        expectNear(got.data, want.data, 1e-6f);
      }
      // Keys [B, S, Hkv * D] that the attention would turn too: refused.
      Buf<float> got(DType::F32, {B, S, Hq * D});
      EXPECT_NE(call("fused_attention",
                     attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), intAttr("rotary_dim", R)}),
                     {q.ref(), k.ref(), v.ref(), empty.ref(), cos.ref(), sin.ref()}, {got.ref()}),
                "");
    }
}

// fused_elementwise runs a serialized region: here gelu_tanh written out, and a where/cast tree.
TEST(Kernels, FusedElementwiseMatchesTheOpsItFuses) {
  Buf<float> x(DType::F32, {3, 4}, randomFloats(12, 14)), c(DType::F32, {4}, randomFloats(4, 15));
  // y = tanh(x * c) + 1, z = where(x > c, y, 0.5) cast to f16 and back: two outputs.
  Buf<float> t0(DType::F32, {3, 4}), t1(DType::F32, {3, 4}), y(DType::F32, {3, 4}), half(DType::F32, {});
  Buf<float> one(DType::F32, {}, {1.0f});
  half.data = {0.5f};
  ASSERT_EQ(call("mul", {}, {x.ref(), c.ref()}, {t0.ref()}), "");
  ASSERT_EQ(call("tanh", {}, {t0.ref()}, {t1.ref()}), "");
  ASSERT_EQ(call("add", {}, {t1.ref(), one.ref()}, {y.ref()}), "");
  Buf<uint8_t> gt(DType::Bool, {3, 4});
  Buf<float> z(DType::F32, {3, 4});
  ASSERT_EQ(call("greater", {}, {x.ref(), c.ref()}, {gt.ref()}), "");
  ASSERT_EQ(call("where", {}, {gt.ref(), y.ref(), half.ref()}, {z.ref()}), "");
  // registers: 0 x, 1 c; 2 mul, 3 tanh, 4 constant 1, 5 add, 6 greater, 7 constant 0.5, 8 where, 9 cast f16
  auto program = attrs({stringAttr("ops", "mul;tanh;constant;add;greater;constant;where;cast"),
                        intsAttr("operands", {0, 1, -1, 2, -1, -1, -1, -1, -1, 3, 4, -1, 0, 1, -1, -1, -1, -1,
                                              6, 5, 7, 8, -1, -1}),
                        [] {
                          Attr a;
                          a.name = "params";
                          a.kind = Attr::Kind::Floats;
                          a.floats = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0.5, 0, 0, 0, double(int(DType::F16)), 0};
                          return a;
                        }(),
                        intsAttr("results", {5, 9})});
  Buf<float> gotY(DType::F32, {3, 4});
  Buf<uint16_t> gotZ(DType::F16, {3, 4});
  ASSERT_EQ(call("fused_elementwise", program, {x.ref(), c.ref()}, {gotY.ref(), gotZ.ref()}), "");
  expectNear(gotY.data, y.data, 1e-6f);
  for (size_t i = 0; i < z.data.size(); ++i)
    EXPECT_NEAR(halfToFloat(gotZ.data[i]), z.data[i], 1e-3f);
  // A register read before it is written, an unknown op: errors, not crashes.
  auto bad = attrs({stringAttr("ops", "add"), intsAttr("operands", {0, 5, -1}),
                    [] {
                      Attr a;
                      a.name = "params";
                      a.kind = Attr::Kind::Floats;
                      a.floats = {0, 0};
                      return a;
                    }(),
                    intsAttr("results", {2})});
  EXPECT_NE(call("fused_elementwise", bad, {x.ref(), c.ref()}, {gotY.ref()}), "");
  auto unknown = attrs({stringAttr("ops", "frobnicate"), intsAttr("operands", {0, -1, -1}), intsAttr("results", {2})});
  EXPECT_NE(call("fused_elementwise", unknown, {x.ref(), c.ref()}, {gotY.ref()}), "");
}

// A region with an integer input: rotary tables from int64 position ids [1, S, 1] (cast to
// floats, times the frequencies [F]) as sin and cos [1, S, F], against the ops one by one.
TEST(Kernels, FusedElementwiseTakesIntegerIds) {
  const int64_t S = 5, F = 4;
  Buf<int64_t> ids(DType::I64, {1, S, 1}, {0, 3, 7, 100, 1535});
  Buf<float> freq(DType::F32, {F}, {1.0f, 0.1f, 0.01f, 0.001f}), angles(DType::F32, {1, S, 1}), product(DType::F32, {1, S, F});
  Buf<float> sinWant(DType::F32, {1, S, F}), cosWant(DType::F32, {1, S, F});
  ASSERT_EQ(call("cast", {}, {ids.ref()}, {angles.ref()}), "");
  ASSERT_EQ(call("mul", {}, {angles.ref(), freq.ref()}, {product.ref()}), "");
  ASSERT_EQ(call("sin", {}, {product.ref()}, {sinWant.ref()}), "");
  ASSERT_EQ(call("cos", {}, {product.ref()}, {cosWant.ref()}), "");
  // registers: 0 ids, 1 freq; 2 cast, 3 mul, 4 sin, 5 cos
  auto program = attrs({stringAttr("ops", "cast;mul;sin;cos"),
                        intsAttr("operands", {0, -1, -1, 2, 1, -1, 3, -1, -1, 3, -1, -1}),
                        [] {
                          Attr a;
                          a.name = "params";
                          a.kind = Attr::Kind::Floats;
                          a.floats = {double(int(DType::F32)), 0, 0, 0, 0, 0, 0, 0};
                          return a;
                        }(),
                        intsAttr("results", {4, 5})});
  Buf<float> sinGot(DType::F32, {1, S, F}), cosGot(DType::F32, {1, S, F});
  ASSERT_EQ(call("fused_elementwise", program, {ids.ref(), freq.ref()}, {sinGot.ref(), cosGot.ref()}), "");
  expectNear(sinGot.data, sinWant.data, 1e-6f);
  expectNear(cosGot.data, cosWant.data, 1e-6f);
}

} // namespace

// latent_attention against attention written out: keys [latent · w_uk[h]ᵀ, rope key] and values
// latent · w_uv[h] per head, softmax(scale · q · kᵀ + mask) · v, with and without sinks.
// Decode-shaped calls run absorbed, prompt-shaped ones expanded (both checked to occur); absent
// factors leave q or the result in the latent space.
TEST(Kernels, LatentAttentionMatchesExpandedAttention) {
  const int64_t B = 2, H = 3, n = 4, R = 2, L = 8, v = 3;
  const float scale = 0.4f;
  const llmc::rt::mla::Dims dims{n, R, L, v};
  bool sawAbsorbed = false, sawExpanded = false;
  for (auto [Sq, Sk] : {std::pair<int64_t, int64_t>{1, 9}, {6, 6}, {3, 11}}) {
    (mla::expandIsCheaper(dims, Sq, Sk) ? sawExpanded : sawAbsorbed) = true;
    Buf<float> q(DType::F32, {B, H, Sq, n + R}, randomFloats(B * H * Sq * (n + R), 11)),
        cache(DType::F32, {Sk, B, L + R}, randomFloats(Sk * B * (L + R), 12)),
        wuk(DType::F32, {H, n, L}, randomFloats(H * n * L, 13)), wuv(DType::F32, {H, L, v}, randomFloats(H * L * v, 14)),
        mask(DType::F32, {B, 1, Sq, Sk}, randomFloats(B * Sq * Sk, 15)), none(DType::F32, {0});
    mask.data[1] = -std::numeric_limits<float>::infinity();
    // With sinks, a logit per head joins each row's softmax (the first above every score).
    Buf<float> sinks(DType::F32, {H}, {9.0f, -1.5f, 0.25f});
    for (bool withSinks : {false, true}) {
    SCOPED_TRACE(withSinks ? "with sinks" : "without sinks");
    auto c = [&](int64_t t, int64_t b, int64_t i) { return double(cache.data[size_t((t * B + b) * (L + R) + i)]); };
    std::vector<float> want(size_t(B * H * Sq * v)), wantLatent(size_t(B * H * Sq * L)), qLatent(size_t(B * H * Sq * (L + R)));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Sq; ++i) {
          const float *qi = q.data.data() + ((b * H + h) * Sq + i) * (n + R);
          for (int64_t l = 0; l < L; ++l) { // the query in the latent space, for the absent-w_uk case
            double s = 0;
            for (int64_t d = 0; d < n; ++d)
              s += double(qi[d]) * wuk.data[size_t((h * n + d) * L + l)];
            qLatent[size_t(((b * H + h) * Sq + i) * (L + R) + l)] = float(s);
          }
          for (int64_t r = 0; r < R; ++r)
            qLatent[size_t(((b * H + h) * Sq + i) * (L + R) + L + r)] = qi[n + r];
          std::vector<double> p(static_cast<size_t>(Sk));
          double best = -1e300, sum = 0;
          for (int64_t t = 0; t < Sk; ++t) {
            double s = 0;
            for (int64_t d = 0; d < n; ++d) {
              double key = 0;
              for (int64_t l = 0; l < L; ++l)
                key += c(t, b, l) * wuk.data[size_t((h * n + d) * L + l)];
              s += qi[d] * key;
            }
            for (int64_t r = 0; r < R; ++r)
              s += qi[n + r] * c(t, b, L + r);
            p[size_t(t)] = scale * s + mask.data[size_t((b * Sq + i) * Sk + t)];
            best = std::max(best, p[size_t(t)]);
          }
          if (withSinks)
            best = std::max(best, double(sinks.data[size_t(h)]));
          for (double &x : p)
            sum += (x = std::exp(x - best));
          if (withSinks)
            sum += std::exp(double(sinks.data[size_t(h)]) - best);
          for (int64_t l = 0; l < L; ++l) {
            double o = 0;
            for (int64_t t = 0; t < Sk; ++t)
              o += p[size_t(t)] / sum * c(t, b, l);
            wantLatent[size_t(((b * H + h) * Sq + i) * L + l)] = float(o);
          }
          for (int64_t j = 0; j < v; ++j) {
            double o = 0;
            for (int64_t l = 0; l < L; ++l)
              o += double(wantLatent[size_t(((b * H + h) * Sq + i) * L + l)]) * wuv.data[size_t((h * L + l) * v + j)];
            want[size_t(((b * H + h) * Sq + i) * v + j)] = float(o);
          }
        }
    const auto a = attrs({floatAttr("scale", scale), intAttr("rope_dim", R)});
    Buf<float> got(DType::F32, {B, H, Sq, v}), gotLatent(DType::F32, {B, H, Sq, L});
    auto operands = [&](std::vector<TensorRef> refs) {
      if (withSinks)
        refs.push_back(sinks.ref());
      return refs;
    };
    ASSERT_EQ(
        call("latent_attention", a, operands({q.ref(), cache.ref(), wuk.ref(), wuv.ref(), mask.ref()}), {got.ref()}),
        "");
    expectNear(got.data, want, 1e-4f);
    Buf<float> qa(DType::F32, {B, H, Sq, L + R}, qLatent);
    ASSERT_EQ(call("latent_attention", a, operands({qa.ref(), cache.ref(), none.ref(), none.ref(), mask.ref()}),
                   {gotLatent.ref()}),
              "");
    expectNear(gotLatent.data, wantLatent, 1e-4f);
    // Refused: widths that do not agree; sinks of another count than the heads'.
    Buf<float> badCache(DType::F32, {Sk, B, L + R + 1}), badSinks(DType::F32, {H + 1});
    EXPECT_NE(call("latent_attention", a, {q.ref(), badCache.ref(), wuk.ref(), wuv.ref(), mask.ref()}, {got.ref()}), "");
    EXPECT_EQ(call("latent_attention", a, {q.ref(), cache.ref(), wuk.ref(), wuv.ref(), mask.ref(), badSinks.ref()},
                   {got.ref()}),
              "expects sinks of f32 [H]");
    }
  }
  EXPECT_TRUE(sawAbsorbed && sawExpanded);
}
