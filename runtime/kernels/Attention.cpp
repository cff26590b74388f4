// ONNX Attention (opset 23+): scores, bias (mask, causal frontier, padding), softmax and the
// weighted sum, row by row. A reference-style kernel; the fast path belongs to fusion work.
#include "KernelUtil.h"

#include <algorithm>
#include <limits>

namespace llmc::rt {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Reads element (b, h, i, d) of a q/k/v tensor in 4-D [B, H, S, D] or 3-D [B, S, H*D] layout.
struct HeadView {
  const float *data;
  int64_t heads, seq, dim;
  bool flat; // the 3-D layout
  float at(int64_t b, int64_t h, int64_t i, int64_t d) const {
    return flat ? data[(b * seq + i) * heads * dim + h * dim + d] : data[((b * heads + h) * seq + i) * dim + d];
  }
};

std::string attentionKernel(const KernelArgs &args) {
  if (args.numInputs != 7 || args.numOutputs != 4)
    return "expects 7 operands and 4 results";
  const TensorRef &q = args.in(0), &k = args.in(1), &v = args.in(2), &mask = args.in(3), &pastK = args.in(4),
                  &pastV = args.in(5), &nonpad = args.in(6);
  for (int i = 0; i < 3; ++i)
    if (args.in(i).dtype != DType::F32)
      return "q, k and v must be f32 (f16 through conversion)";
  const int rank = q.shape.rank;
  if ((rank != 3 && rank != 4) || k.shape.rank != rank || v.shape.rank != rank)
    return "q, k and v must all be 3-D or all 4-D";
  const bool flat = rank == 3;
  const int64_t B = q.shape[0];
  int64_t Hq, Hkv, Sq, Skv, D, Dv;
  if (!flat) {
    Hq = q.shape[1], Hkv = k.shape[1], Sq = q.shape[2], Skv = k.shape[2], D = q.shape[3], Dv = v.shape[3];
  } else {
    Hq = args.attrs.getInt("q_num_heads", 0), Hkv = args.attrs.getInt("kv_num_heads", 0);
    if (Hq <= 0 || Hkv <= 0 || q.shape[2] % Hq || k.shape[2] % Hkv || v.shape[2] % Hkv)
      return "3-D attention needs head counts that divide the hidden sizes";
    Sq = q.shape[1], Skv = k.shape[1], D = q.shape[2] / Hq, Dv = v.shape[2] / Hkv;
  }
  if (Hkv <= 0 || Hq % Hkv || k.shape[0] != B || v.shape[0] != B || (flat ? k.shape[2] / Hkv : k.shape[3]) != D ||
      (flat ? v.shape[1] : v.shape[2]) != Skv)
    return "q, k and v shapes do not agree";
  const bool hasPast = pastK.numel() > 0;
  const int64_t P = hasPast ? pastK.shape[2] : 0, T = P + Skv;
  if (hasPast && (pastK.shape.rank != 4 || pastV.shape.rank != 4 || pastK.shape[0] != B || pastK.shape[1] != Hkv ||
                  pastK.shape[3] != D || pastV.shape[2] != P || pastV.shape[3] != Dv))
    return "past key/value shapes do not match";
  TensorRef &out = args.out(0), &presentK = args.out(1), &presentV = args.out(2), &qkOut = args.out(3);
  if (out.numel() != B * Hq * Sq * Dv || presentK.numel() != B * Hkv * T * D || presentV.numel() != B * Hkv * T * Dv ||
      qkOut.numel() != B * Hq * Sq * T)
    return "result sizes do not match the operands";
  if (nonpad.numel() > 0 && (nonpad.numel() != B || (nonpad.dtype != DType::I64 && nonpad.dtype != DType::I32)))
    return "nonpad_kv_seqlen must hold one integer per batch";
  // Present key/value: past then new, in [B, Hkv, T, D] layout; attention reads them.
  const HeadView kv{k.as<const float>(), Hkv, Skv, D, flat}, vv{v.as<const float>(), Hkv, Skv, Dv, flat};
  float *pk = presentK.as<float>(), *pv = presentV.as<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t d = 0; d < D; ++d)
          pk[((b * Hkv + h) * T + t) * D + d] =
              t < P ? pastK.as<const float>()[((b * Hkv + h) * P + t) * D + d] : kv.at(b, h, t - P, d);
        for (int64_t d = 0; d < Dv; ++d)
          pv[((b * Hkv + h) * T + t) * Dv + d] =
              t < P ? pastV.as<const float>()[((b * Hkv + h) * P + t) * Dv + d] : vv.at(b, h, t - P, d);
      }
  // The mask broadcasts to [B, Hq, Sq, T]; columns past its last dimension are masked.
  const bool hasMask = mask.numel() > 0;
  if (hasMask && (mask.shape.rank < 1 || mask.shape.rank > 4 || (mask.dtype != DType::Bool && mask.dtype != DType::F32)))
    return "the mask must be bool or f32 of rank 1 to 4";
  int64_t maskStrides[4] = {}, maskDims[4] = {1, 1, 1, 1};
  if (hasMask) {
    int64_t s[kMaxRank];
    rowMajorStrides(mask.shape, s);
    for (int d = 0; d < mask.shape.rank; ++d) {
      maskDims[4 - mask.shape.rank + d] = mask.shape.dims[d];
      maskStrides[4 - mask.shape.rank + d] = mask.shape.dims[d] == 1 ? 0 : s[d];
    }
    const int64_t want[3] = {B, Hq, Sq};
    for (int d = 0; d < 3; ++d)
      if (maskDims[d] != 1 && maskDims[d] != want[d])
        return "the mask does not broadcast to the attention scores";
    if (maskDims[3] > T)
      return "the mask is longer than the key sequence";
  }
  const double scaleAttr = args.attrs.getFloat("scale", 0.0);
  const float scale = float(args.attrs.find("scale") ? scaleAttr : 1.0 / std::sqrt(double(D)));
  const float softcap = float(args.attrs.getFloat("softcap", 0.0));
  const bool causal = args.attrs.getInt("is_causal", 0);
  const int64_t mode = args.attrs.getInt("qk_matmul_output_mode", 0);
  const int64_t left = args.attrs.getInt("left_window_size", -1), right = args.attrs.getInt("right_window_size", -1);
  const HeadView qv{q.as<const float>(), Hq, Sq, D, flat};
  std::vector<float> scores(static_cast<size_t>(T)), bias(static_cast<size_t>(T));
  float *y = out.as<float>(), *qk = qkOut.as<float>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t valid = nonpad.numel() ? (nonpad.dtype == DType::I64 ? nonpad.as<const int64_t>()[b]
                                                                          : nonpad.as<const int32_t>()[b])
                                         : T;
    const int64_t offset = hasPast ? P : nonpad.numel() ? valid - Sq : 0;
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      for (int64_t i = 0; i < Sq; ++i) {
        float rowMax = kNegInf, biasMax = kNegInf;
        for (int64_t j = 0; j < T; ++j) {
          float s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += qv.at(b, h, i, d) * pk[((b * Hkv + hk) * T + j) * D + d];
          s *= scale;
          if (softcap > 0)
            s = softcap * std::tanh(s / softcap);
          float bj = 0;
          if (hasMask) {
            if (j >= maskDims[3]) {
              bj = kNegInf;
            } else {
              const int64_t at = std::min(b, maskDims[0] - 1) * maskStrides[0] + std::min(h, maskDims[1] - 1) * maskStrides[1] +
                                 std::min(i, maskDims[2] - 1) * maskStrides[2] + j * maskStrides[3];
              bj = mask.dtype == DType::Bool ? (mask.as<const uint8_t>()[at] ? 0.f : kNegInf) : mask.as<const float>()[at];
            }
          }
          if (causal && j > i + offset)
            bj = kNegInf;
          // Sliding window around the query's absolute position.
          if ((left >= 0 && i + offset - j > left) || (right >= 0 && j - (i + offset) > right))
            bj = kNegInf;
          if (nonpad.numel() && j >= valid)
            bj = kNegInf;
          scores[size_t(j)] = s;
          bias[size_t(j)] = bj;
          rowMax = std::max(rowMax, s + bj);
          biasMax = std::max(biasMax, bj);
        }
        float *qkRow = qk + ((b * Hq + h) * Sq + i) * T;
        for (int64_t j = 0; j < T; ++j)
          qkRow[j] = mode == 2 ? scores[size_t(j)] + bias[size_t(j)] : scores[size_t(j)];
        const bool allMasked = std::isinf(biasMax) && biasMax < 0;
        const float safeMax = std::isinf(rowMax) ? 0.f : rowMax;
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          scores[size_t(j)] = std::exp(scores[size_t(j)] + bias[size_t(j)] - safeMax);
          sum += scores[size_t(j)];
        }
        for (int64_t j = 0; j < T; ++j)
          scores[size_t(j)] = allMasked ? 0.f : float(scores[size_t(j)] / (sum == 0 ? 1.0 : sum));
        if (mode == 3)
          std::copy(scores.begin(), scores.end(), qkRow);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            acc += double(scores[size_t(j)]) * pv[((b * Hkv + hk) * T + j) * Dv + d];
          const int64_t at = flat ? (b * Sq + i) * Hq * Dv + h * Dv + d : ((b * Hq + h) * Sq + i) * Dv + d;
          y[at] = float(acc);
        }
      }
    }
  }
  return {};
}

std::string rotaryKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0), &cosT = args.in(1), &sinT = args.in(2), &pos = args.in(3);
  TensorRef &y = args.out(0);
  if (x.dtype != DType::F32 || cosT.dtype != DType::F32 || sinT.dtype != DType::F32 || y.numel() != x.numel())
    return "input and caches must be f32 (f16 through conversion)";
  const bool flat = x.shape.rank == 3;
  if (!flat && x.shape.rank != 4)
    return "input must be 3-D or 4-D";
  const int64_t B = x.shape[0];
  int64_t H, S, D;
  if (flat) {
    H = args.attrs.getInt("num_heads", 0);
    if (H <= 0 || x.shape[2] % H)
      return "3-D input needs num_heads dividing the hidden size";
    S = x.shape[1], D = x.shape[2] / H;
  } else {
    H = x.shape[1], S = x.shape[2], D = x.shape[3];
  }
  const int64_t rot = args.attrs.getInt("rotary_embedding_dim", 0) ? args.attrs.getInt("rotary_embedding_dim", 0) : D;
  const int64_t half = rot / 2;
  const bool interleaved = args.attrs.getInt("interleaved", 0);
  if (rot % 2 || rot > D || cosT.shape.rank < 2 || cosT.shape.dims[cosT.shape.rank - 1] != half || !(cosT.shape == sinT.shape))
    return "cos/sin caches must have rotary_dim / 2 columns";
  const bool byPosition = pos.numel() > 0;
  if (byPosition && (pos.numel() != B * S || cosT.shape.rank != 2 || (pos.dtype != DType::I64 && pos.dtype != DType::I32)))
    return "position_ids must be [batch, seq] with 2-D caches";
  if (!byPosition && (cosT.shape.rank != 3 || cosT.shape[0] != B || cosT.shape[1] != S))
    return "without position_ids the caches must be [batch, seq, rotary_dim / 2]";
  const float *px = x.as<const float>();
  float *py = y.as<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      int64_t row = b * S + s;
      if (byPosition) {
        row = pos.dtype == DType::I64 ? pos.as<const int64_t>()[b * S + s] : pos.as<const int32_t>()[b * S + s];
        if (row < 0 || row >= cosT.shape[0])
          return "position id " + std::to_string(row) + " is outside the caches";
      }
      const float *c = cosT.as<const float>() + row * half, *sn = sinT.as<const float>() + row * half;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = flat ? (b * S + s) * H * D + h * D : ((b * H + h) * S + s) * D;
        for (int64_t d = rot; d < D; ++d)
          py[base + d] = px[base + d];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = interleaved ? 2 * i : i, bIdx = interleaved ? 2 * i + 1 : i + half;
          const float x1 = px[base + a], x2 = px[base + bIdx];
          py[base + a] = x1 * c[i] - x2 * sn[i];
          py[base + bIdx] = x2 * c[i] + x1 * sn[i];
        }
      }
    }
  return {};
}

} // namespace

extern const KernelEntry kAttentionKernels[] = {
    {"attention", withHalf<attentionKernel>},
    {"rotary", withHalf<rotaryKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
