// Kernels for the ops the fusion passes create: a linear layer with its epilogue, residual add
// fused with layer/RMS normalization, and attention with rotary embedding. Float32 (f16 through
// withHalf). An operand given as an empty tensor (0 elements) is absent.
#include "Activation.h"
#include "AttentionRows.h"
#include "KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace llmc::rt {
namespace {

inline float activate(Activation a, float x) {
  switch (a) {
  case Activation::None: return x;
  case Activation::Relu: return x > 0 ? x : 0.0f;
  case Activation::Silu: return x / (1.0f + fastExp(-x));
  case Activation::Gelu: return 0.5f * x * (1.0f + fastErf(x * 0.7071067811865476f));
  case Activation::GeluTanh:
    return 0.5f * x * (1.0f + fastTanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

bool allF32(const KernelArgs &args) {
  for (int i = 0; i < args.numInputs; ++i)
    if (!absent(args, i) && args.in(i).dtype != DType::F32)
      return false;
  for (int i = 0; i < args.numOutputs; ++i)
    if (args.out(i).dtype != DType::F32)
      return false;
  return true;
}

// The "swiglu" linear: y = x · W + bias over [Wg | Wu], result silu(y[:, :N/2]) * y[:, N/2:].
std::string swigluLinear(const KernelArgs &args, int64_t M, int64_t N, int64_t K, bool transB) {
  TensorRef &out = args.out(0);
  const int64_t half = N / 2;
  if (N % 2 != 0 || out.numel() != M * half || !absent(args, 3) || !absent(args, 4))
    return "a swiglu linear needs an even width, a [..., N/2] output and no gate or residual";
  if (!absent(args, 2) && args.in(2).numel() != N)
    return "bias must have N elements";
  std::vector<float> y(size_t(M * N));
  gemmF32(false, transB, M, N, K, 1.0f, args.in(0).as<const float>(), K, args.in(1).as<const float>(), transB ? K : N,
          0.0f, y.data(), N);
  const float *bias = absent(args, 2) ? nullptr : args.in(2).as<const float>();
  float *o = out.as<float>();
  for (int64_t m = 0; m < M; ++m) {
    float *row = y.data() + m * N;
    if (bias)
      for (int64_t n = 0; n < N; ++n)
        row[n] += bias[n];
    for (int64_t n = 0; n < half; ++n)
      o[m * half + n] = swigluOf(row[n], row[half + n]);
  }
  return {};
}

// linear: y = act(x · W + bias) * gate + residual, x [..., K], W [K, N] (or [N, K] with transB),
// bias [N], gate and residual shaped like y.
std::string linearKernel(const KernelArgs &args) {
  if (args.numInputs != 5 || args.numOutputs != 1)
    return "expects 5 inputs (x, w, bias, gate, residual) and 1 output";
  if (!allF32(args))
    return "expects f32 tensors";
  const TensorRef &x = args.in(0), &w = args.in(1);
  TensorRef &y = args.out(0);
  Activation act;
  if (!parseActivation(args.attrs.getString("activation"), act))
    return "unknown activation '" + std::string(args.attrs.getString("activation")) + "'";
  const bool transB = args.attrs.getInt("transB", 0) != 0;
  if (x.shape.rank < 1 || w.shape.rank != 2)
    return "x must have rank >= 1 and w rank 2";
  const int64_t K = x.shape.dims[x.shape.rank - 1];
  const int64_t N = transB ? w.shape.dims[0] : w.shape.dims[1];
  if ((transB ? w.shape.dims[1] : w.shape.dims[0]) != K)
    return "contracting dimensions differ";
  const int64_t M = K == 0 ? 0 : x.numel() / K;
  if (args.attrs.getString("activation") == "swiglu")
    return swigluLinear(args, M, N, K, transB);
  if (y.numel() != M * N || y.shape.dims[y.shape.rank - 1] != N)
    return "output shape does not match";
  gemmF32(false, transB, M, N, K, 1.0f, x.as<const float>(), K, w.as<const float>(), transB ? K : N, 0.0f,
          y.as<float>(), N);
  const float *bias = absent(args, 2) ? nullptr : args.in(2).as<const float>();
  const float *gate = absent(args, 3) ? nullptr : args.in(3).as<const float>();
  const float *residual = absent(args, 4) ? nullptr : args.in(4).as<const float>();
  if (bias && args.in(2).numel() != N)
    return "bias must have N elements";
  if ((gate && args.in(3).numel() != y.numel()) || (residual && args.in(4).numel() != y.numel()))
    return "gate and residual must be shaped like the output";
  if (!bias && !gate && !residual && act == Activation::None)
    return {};
  float *out = y.as<float>();
  auto epilogue = [&](auto activation) {
    for (int64_t m = 0; m < M; ++m) {
      float *row = out + m * N;
      const float *g = gate ? gate + m * N : nullptr, *r = residual ? residual + m * N : nullptr;
      if (bias)
        for (int64_t n = 0; n < N; ++n)
          row[n] += bias[n];
      for (int64_t n = 0; n < N; ++n)
        row[n] = activation(row[n]);
      if (g)
        for (int64_t n = 0; n < N; ++n)
          row[n] *= g[n];
      if (r)
        for (int64_t n = 0; n < N; ++n)
          row[n] += r[n];
    }
  };
  // One instantiation per activation, so that each inner loop is branch-free.
  switch (act) {
  case Activation::None: epilogue([](float x) { return x; }); break;
  case Activation::Relu: epilogue([](float x) { return activate(Activation::Relu, x); }); break;
  case Activation::Silu: epilogue([](float x) { return activate(Activation::Silu, x); }); break;
  case Activation::Gelu: epilogue([](float x) { return activate(Activation::Gelu, x); }); break;
  case Activation::GeluTanh: epilogue([](float x) { return activate(Activation::GeluTanh, x); }); break;
  }
  return {};
}

// add_layer_norm / add_rms_norm: sum = x + residual (same shape), normalized over the last
// dimensions from `axis`; outputs (normalized, sum).
std::string addNorm(const KernelArgs &args, bool rms) {
  const int expected = rms ? 3 : 4;
  if (args.numInputs != expected || args.numOutputs != 2)
    return rms ? "expects 3 inputs (x, residual, scale) and 2 outputs" : "expects 4 inputs (x, residual, scale, bias) and 2 outputs";
  if (!allF32(args))
    return "expects f32 tensors";
  const TensorRef &x = args.in(0), &r = args.in(1), &scale = args.in(2);
  if (!(r.shape == x.shape) || !(args.out(0).shape == x.shape) || !(args.out(1).shape == x.shape))
    return "x, residual and both outputs must have one shape";
  const int axis = normalizeAxis(args.attrs.getInt("axis", -1), x.shape.rank);
  if (axis < 0 || axis >= x.shape.rank)
    return "axis out of range";
  int64_t inner = 1;
  for (int d = axis; d < x.shape.rank; ++d)
    inner *= x.shape.dims[d];
  if (scale.numel() != inner || (!rms && !absent(args, 3) && args.in(3).numel() != inner))
    return "scale and bias must cover the normalized dimensions";
  const float eps = float(args.attrs.getFloat("epsilon", 1e-5));
  const float *px = x.as<const float>(), *pr = r.as<const float>(), *g = scale.as<const float>();
  const float *b = rms || absent(args, 3) ? nullptr : args.in(3).as<const float>();
  float *norm = args.out(0).as<float>(), *sum = args.out(1).as<float>();
  const int64_t rows = inner == 0 ? 0 : x.numel() / inner;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t o = row * inner;
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      const float s = px[o + i] + pr[o + i];
      sum[o + i] = s;
      mean += s;
      sq += double(s) * s;
    }
    mean /= double(inner);
    const double var = rms ? sq / double(inner) : std::max(0.0, sq / double(inner) - mean * mean);
    const float inv = float(1.0 / std::sqrt(var + eps));
    const float center = rms ? 0.0f : float(mean);
    for (int64_t i = 0; i < inner; ++i)
      norm[o + i] = (sum[o + i] - center) * inv * g[i] + (b ? b[i] : 0.0f);
  }
  return {};
}

std::string addLayerNormKernel(const KernelArgs &args) { return addNorm(args, false); }
std::string addRmsNormKernel(const KernelArgs &args) { return addNorm(args, true); }

// Rotary embedding in the rotate-half form on [B, S, H*D] rows: x' = x * cos + rotate_half(x) * sin,
// with cos/sin [B or 1, S, D].
void rotateHalf(const float *x, float *out, int64_t B, int64_t S, int64_t H, int64_t D, const float *cos,
                const float *sin, bool tablesPerBatch) {
  const int64_t half = D / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = ((tablesPerBatch ? b : 0) * S + s) * D;
      for (int64_t h = 0; h < H; ++h) {
        const float *in = x + ((b * S + s) * H + h) * D;
        float *o = out + ((b * S + s) * H + h) * D;
        for (int64_t i = 0; i < D; ++i) {
          const float rotated = i < half ? -in[i + half] : in[i - half];
          o[i] = in[i] * cos[t + i] + rotated * sin[t + i];
        }
      }
    }
}

// llmc.rotary's rotation (no position ids) on [B, S, H*D] rows: the first R features of each head
// in pairs (i, i + R/2), or (2i, 2i + 1) with `interleaved`, by cos/sin [B or 1, S, R/2]; the rest
// as they are.
void rotateLikeRotary(const float *x, float *out, int64_t B, int64_t S, int64_t H, int64_t D, int64_t R,
                      bool interleaved, const float *cos, const float *sin, bool tablesPerBatch) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = ((tablesPerBatch ? b : 0) * S + s) * (R / 2);
      for (int64_t h = 0; h < H; ++h)
        rotateHeadRow(x + ((b * S + s) * H + h) * D, out + ((b * S + s) * H + h) * D, D, R, interleaved, cos + t,
                      sin + t);
    }
}

// fused_attention: q [B, Sq, Hq*D], k/v [B, Sk, Hkv*D] (Hq a multiple of Hkv: grouped-query
// attention), an optional mask broadcastable to [B, Hq, Sq, Sk] (additive float, or bool where
// true keeps), optional rotary tables cos/sin [B or 1, S, D] applied to q and k, `is_causal`
// (bottom-right aligned), `scale` (0: 1/sqrt(D)), `softcap` (> 0: each scaled score s becomes
// softcap * tanh(s / softcap) before the mask), `sliding_window` (> 0: keys that many positions or
// more before the query hidden), `rotary_dim` R > 0 (q alone turns as llmc.rotary turns it, its
// first R features, `rotary_interleaved` or not, by tables [B or 1, S, R/2]). Output [B, Sq,
// Hq*D]; a fully masked row is 0. An optional seventh input, sinks [Hq], joins each row of head
// h's softmax with the logit sinks[h] and no value (GPT-OSS).
std::string fusedAttentionUnpacked(const KernelArgs &args);

// packed_qkv: Q, K and V side by side in input 0 ([B, S, (Hq + 2 Hkv) * D], a merged QKV
// projection) are copied apart, then attention runs as usual. The copies are rows of one
// projection; the launch (and the split it replaces) goes away.
std::string fusedAttentionKernel(const KernelArgs &args) {
  if ((args.numInputs != 6 && args.numInputs != 7) || args.numOutputs != 1)
    return "expects 6 or 7 inputs (q, k, v, mask, cos, sin[, sinks]) and 1 output";
  if (args.attrs.getInt("packed_qkv", 0) == 0)
    return fusedAttentionUnpacked(args);
  const TensorRef &packed = args.in(0);
  const int64_t Hq = args.attrs.getInt("q_num_heads", 0), Hkv = args.attrs.getInt("kv_num_heads", 0);
  if (packed.dtype != DType::F32 || packed.shape.rank != 3 || Hq <= 0 || Hkv <= 0 ||
      packed.shape.dims[2] % (Hq + 2 * Hkv) != 0)
    return "packed q must be f32 [batch, seq, (q_num_heads + 2 * kv_num_heads) * head]";
  const int64_t rows = packed.shape.dims[0] * packed.shape.dims[1], width = packed.shape.dims[2];
  const int64_t D = width / (Hq + 2 * Hkv);
  const int64_t widths[3] = {Hq * D, Hkv * D, Hkv * D};
  std::vector<float> parts[3];
  TensorRef refs[7] = {args.in(0), args.in(0), args.in(0), args.in(3), args.in(4), args.in(5), {}};
  if (args.numInputs > 6)
    refs[6] = args.in(6);
  for (int p = 0, offset = 0; p < 3; offset += int(widths[p]), ++p) {
    parts[p].resize(size_t(rows * widths[p]));
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(parts[p].data() + r * widths[p], packed.as<const float>() + r * width + offset,
                  size_t(widths[p]) * sizeof(float));
    refs[p].shape.dims[2] = widths[p];
    refs[p].data = parts[p].data();
  }
  KernelArgs unpacked{args.attrs, refs, args.numInputs, args.outputs, args.numOutputs};
  return fusedAttentionUnpacked(unpacked);
}

std::string fusedAttentionUnpacked(const KernelArgs &args) {
  const TensorRef &q = args.in(0), &k = args.in(1), &v = args.in(2);
  for (int i : {0, 1, 2, 4, 5, 6})
    if (!absent(args, i) && args.in(i).dtype != DType::F32)
      return "expects f32 q, k, v, rotary tables and sinks";
  // K and V are [B, Sk, Hkv*D] like q, or [B, Hkv, Sk, D] as a KV cache holds them.
  const bool cacheLayout = k.shape.rank == 4;
  const bool timeMajor = args.attrs.getInt("kv_time_major", 0) != 0; // [Sk, B, Hkv*D]
  if (q.shape.rank != 3 || k.shape.rank != v.shape.rank || (k.shape.rank != 3 && !cacheLayout))
    return "q must be [batch, seq, heads * head_size], k and v the same or [batch, kv_heads, seq, head_size]";
  const int64_t Hq = args.attrs.getInt("q_num_heads", 0), Hkv = args.attrs.getInt("kv_num_heads", 0);
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv != 0)
    return "q_num_heads must be a positive multiple of kv_num_heads";
  if (timeMajor && cacheLayout)
    return "kv_time_major needs 3-D k and v";
  const int64_t B = q.shape.dims[0], Sq = q.shape.dims[1];
  const int64_t Sk = cacheLayout ? k.shape.dims[2] : timeMajor ? k.shape.dims[0] : k.shape.dims[1];
  const int64_t D = q.shape.dims[2] / Hq, Dv = cacheLayout ? v.shape.dims[3] : v.shape.dims[2] / Hkv;
  const int64_t kvBatch = cacheLayout || !timeMajor ? k.shape.dims[0] : k.shape.dims[1];
  const bool kvAgree = cacheLayout ? k.shape.dims[1] == Hkv && v.shape.dims[1] == Hkv && k.shape.dims[3] == D &&
                                         v.shape.dims[2] == Sk && v.shape.dims[0] == B
                                   : k.shape.dims[2] == Hkv * D && v.shape.dims[2] == Hkv * Dv &&
                                         v.shape.dims[timeMajor ? 0 : 1] == Sk && v.shape.dims[timeMajor ? 1 : 0] == B;
  if (q.shape.dims[2] != Hq * D || !kvAgree || kvBatch != B)
    return "q, k and v shapes do not agree";
  // Where row j of head h of batch b starts, and the distance between rows.
  const int64_t kRowStride = cacheLayout ? D : timeMajor ? B * Hkv * D : Hkv * D;
  const int64_t vRowStride = cacheLayout ? Dv : timeMajor ? B * Hkv * Dv : Hkv * Dv;
  auto kBase = [&](int64_t b, int64_t h) {
    return cacheLayout ? (b * Hkv + h) * Sk * D : timeMajor ? (b * Hkv + h) * D : b * Sk * Hkv * D + h * D;
  };
  auto vBase = [&](int64_t b, int64_t h) {
    return cacheLayout ? (b * Hkv + h) * Sk * Dv : timeMajor ? (b * Hkv + h) * Dv : b * Sk * Hkv * Dv + h * Dv;
  };
  const TensorRef &out = args.out(0);
  if (out.shape.rank != 3 || out.shape.dims[0] != B || out.shape.dims[1] != Sq || out.shape.dims[2] != Hq * Dv)
    return "output must be [batch, seq, q_num_heads * v_head_size]";
  double scale = args.attrs.getFloat("scale", 0.0);
  if (scale == 0.0)
    scale = 1.0 / std::sqrt(double(D));
  const bool causal = args.attrs.getInt("is_causal", 0) != 0;
  const float softcap = float(args.attrs.getFloat("softcap", 0.0));
  const int64_t window = args.attrs.getInt("sliding_window", 0);
  if (window < 0)
    return "sliding_window must be 0 (none) or positive";

  // Rotary embedding into copies of q and k.
  const float *qp = q.as<const float>(), *kp = k.as<const float>();
  std::vector<float> qr, kr;
  const int64_t rotaryDim = args.attrs.getInt("rotary_dim", 0);
  if (rotaryDim != 0 && !absent(args, 4)) { // llmc.rotary's rotation of the queries alone
    const TensorRef &cos = args.in(4), &sin = args.in(5);
    const bool perBatch = B > 1 && cos.numel() == B * Sq * (rotaryDim / 2);
    if (rotaryDim < 0 || rotaryDim % 2 || rotaryDim > D || !(cos.shape == sin.shape) ||
        cos.numel() != (perBatch ? B : 1) * Sq * (rotaryDim / 2))
      return "rotary_dim needs an even size up to the head and tables [batch or 1, seq, rotary_dim / 2]";
    if (!cacheLayout && !timeMajor && args.attrs.getInt("rotate_keys", 1) != 0)
      return "rotary_dim turns the queries only: rotate_keys must be 0";
    qr.resize(size_t(q.numel()));
    rotateLikeRotary(qp, qr.data(), B, Sq, Hq, D, rotaryDim, args.attrs.getInt("rotary_interleaved", 0) != 0,
                     cos.as<const float>(), sin.as<const float>(), perBatch);
    qp = qr.data();
  } else if (!absent(args, 4)) {
    const TensorRef &cos = args.in(4), &sin = args.in(5);
    // With the cache layout the keys were rotated when they were cached: only q turns here.
    const bool rotateKeys = !cacheLayout && !timeMajor && args.attrs.getInt("rotate_keys", 1) != 0;
    if (D % 2 != 0 || !(cos.shape == sin.shape) || cos.numel() % (Sq * D) != 0 || (rotateKeys && Sq != Sk))
      return "rotary tables must be [batch or 1, seq, head_size] and q/k have one length";
    const bool perBatch = cos.numel() == B * Sq * D && B > 1;
    if (!perBatch && cos.numel() != Sq * D)
      return "rotary tables must be [batch or 1, seq, head_size]";
    qr.resize(size_t(q.numel()));
    rotateHalf(qp, qr.data(), B, Sq, Hq, D, cos.as<const float>(), sin.as<const float>(), perBatch);
    qp = qr.data();
    if (rotateKeys) {
      kr.resize(size_t(k.numel()));
      rotateHalf(kp, kr.data(), B, Sk, Hkv, D, cos.as<const float>(), sin.as<const float>(), perBatch);
      kp = kr.data();
    }
  }

  ScoreMask mask;
  if (std::string err = mask.init(absent(args, 3) ? nullptr : &args.in(3), B, Hq, Sq, Sk); !err.empty())
    return err;
  const float *sinks = absent(args, 6) ? nullptr : args.in(6).as<const float>();
  if (sinks && args.in(6).numel() != Hq)
    return "sinks must be [q_num_heads]";
  // With a sliding window no query sees a key before the first query's window: the scores and
  // the weighted sums take keys firstKey .. Sk - 1 (a decode step's window, not its whole cache).
  const int64_t firstKey = window > 0 ? std::clamp<int64_t>(Sk - Sq - window + 1, 0, Sk) : 0, seen = Sk - firstKey;
  std::vector<float> scores(size_t(Sq * seen));
  const int64_t group = Hq / Hkv, qRow = Hq * D, oRow = Hq * Dv;
  float *o = args.out(0).as<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = h / group;
      gemmF32(false, true, Sq, seen, D, float(scale), qp + b * Sq * qRow + h * D, qRow,
              kp + kBase(b, kvh) + firstKey * kRowStride, kRowStride, 0.0f, scores.data(), seen);
      if (softcap > 0.0f)
        for (float &score : scores)
          score = softcap * std::tanh(score / softcap);
      maskedSoftmaxRows(scores.data(), Sq, Sk, mask, b, h, causal, window, firstKey, sinks ? sinks + h : nullptr);
      gemmF32(false, false, Sq, Dv, seen, 1.0f, scores.data(), seen,
              args.in(2).as<const float>() + vBase(b, kvh) + firstKey * vRowStride, vRowStride, 0.0f,
              o + b * Sq * oRow + h * Dv, oRow);
    }
  return {};
}

} // namespace

extern const KernelEntry kFusedKernels[] = {
    {"linear", withHalf<linearKernel>},
    {"add_layer_norm", withHalf<addLayerNormKernel>},
    {"add_rms_norm", withHalf<addRmsNormKernel>},
    {"fused_attention", withHalf<fusedAttentionKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
