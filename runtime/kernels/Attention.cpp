// ONNX Attention (opset 23+): scores, bias (mask, causal frontier, padding), softmax and the
// weighted sum, row by row. A reference-style kernel; the fast path belongs to fusion work.
#include "KernelUtil.h"

#include <algorithm>
#include <limits>

namespace llmc::rt {
namespace {

// Reads element (b, h, i, d) of a q/k/v tensor in 4-D [B, H, S, D] or 3-D [B, S, H*D] layout.
template <typename T> struct HeadView {
  const T *data;
  int64_t heads, seq, dim;
  bool flat; // the 3-D layout
  T at(int64_t b, int64_t h, int64_t i, int64_t d) const {
    return flat ? data[(b * seq + i) * heads * dim + h * dim + d] : data[((b * heads + h) * seq + i) * dim + d];
  }
};

// The sizes of one ONNX Attention, checked: batch, query and key heads, query and new key
// lengths, head sizes of keys and values, past and present key lengths.
struct AttentionSizes {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv, P, keys;
  bool flat;
  int64_t maskStrides[4] = {}, maskDims[4] = {1, 1, 1, 1};
};

// The attention in T (f32 or f64: the scores, their softmax and the weighted sums, as the
// model's type; sums of exponentials and of weighted values in double).
template <typename T> void attend(const KernelArgs &args, const AttentionSizes &z) {
  const TensorRef &q = args.in(0), &k = args.in(1), &v = args.in(2), &mask = args.in(3), &pastK = args.in(4),
                  &pastV = args.in(5), &nonpad = args.in(6);
  const int64_t B = z.B, Hq = z.Hq, Hkv = z.Hkv, Sq = z.Sq, Skv = z.Skv, D = z.D, Dv = z.Dv, P = z.P, keys = z.keys;
  const bool flat = z.flat, hasPast = pastK.numel() > 0, hasMask = mask.numel() > 0;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  // Present key/value: past then new, in [B, Hkv, keys, D] layout; attention reads them.
  const HeadView<T> kv{k.as<const T>(), Hkv, Skv, D, flat}, vv{v.as<const T>(), Hkv, Skv, Dv, flat};
  T *pk = args.out(1).as<T>(), *pv = args.out(2).as<T>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t t = 0; t < keys; ++t) {
        for (int64_t d = 0; d < D; ++d)
          pk[((b * Hkv + h) * keys + t) * D + d] =
              t < P ? pastK.as<const T>()[((b * Hkv + h) * P + t) * D + d] : kv.at(b, h, t - P, d);
        for (int64_t d = 0; d < Dv; ++d)
          pv[((b * Hkv + h) * keys + t) * Dv + d] =
              t < P ? pastV.as<const T>()[((b * Hkv + h) * P + t) * Dv + d] : vv.at(b, h, t - P, d);
      }
  const double scaleAttr = args.attrs.getFloat("scale", 0.0);
  const T scale = T(args.attrs.find("scale") ? scaleAttr : 1.0 / std::sqrt(double(D)));
  const T softcap = T(args.attrs.getFloat("softcap", 0.0));
  const bool causal = args.attrs.getInt("is_causal", 0);
  const int64_t mode = args.attrs.getInt("qk_matmul_output_mode", 0);
  const int64_t left = args.attrs.getInt("left_window_size", -1), right = args.attrs.getInt("right_window_size", -1);
  const HeadView<T> qv{q.as<const T>(), Hq, Sq, D, flat};
  std::vector<T> scores(static_cast<size_t>(keys)), bias(static_cast<size_t>(keys));
  T *y = args.out(0).as<T>(), *qk = args.out(3).as<T>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t valid = nonpad.numel() ? (nonpad.dtype == DType::I64 ? nonpad.as<const int64_t>()[b]
                                                                          : nonpad.as<const int32_t>()[b])
                                         : keys;
    const int64_t offset = hasPast ? P : nonpad.numel() ? valid - Sq : 0;
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      for (int64_t i = 0; i < Sq; ++i) {
        T rowMax = kNegInf, biasMax = kNegInf;
        for (int64_t j = 0; j < keys; ++j) {
          T s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += qv.at(b, h, i, d) * pk[((b * Hkv + hk) * keys + j) * D + d];
          s *= scale;
          if (softcap > 0)
            s = softcap * std::tanh(s / softcap);
          T bj = 0;
          if (hasMask) {
            if (j >= z.maskDims[3]) {
              bj = kNegInf;
            } else {
              const int64_t at = std::min(b, z.maskDims[0] - 1) * z.maskStrides[0] +
                                 std::min(h, z.maskDims[1] - 1) * z.maskStrides[1] +
                                 std::min(i, z.maskDims[2] - 1) * z.maskStrides[2] + j * z.maskStrides[3];
              bj = mask.dtype == DType::Bool ? (mask.as<const uint8_t>()[at] ? T(0) : kNegInf) : mask.as<const T>()[at];
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
        T *qkRow = qk + ((b * Hq + h) * Sq + i) * keys;
        for (int64_t j = 0; j < keys; ++j)
          qkRow[j] = mode == 2 ? scores[size_t(j)] + bias[size_t(j)] : scores[size_t(j)];
        const bool allMasked = std::isinf(biasMax) && biasMax < 0;
        const T safeMax = std::isinf(rowMax) ? T(0) : rowMax;
        double sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          scores[size_t(j)] = std::exp(scores[size_t(j)] + bias[size_t(j)] - safeMax);
          sum += scores[size_t(j)];
        }
        for (int64_t j = 0; j < keys; ++j)
          scores[size_t(j)] = allMasked ? T(0) : T(scores[size_t(j)] / (sum == 0 ? 1.0 : sum));
        if (mode == 3)
          std::copy(scores.begin(), scores.end(), qkRow);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < keys; ++j)
            acc += double(scores[size_t(j)]) * pv[((b * Hkv + hk) * keys + j) * Dv + d];
          const int64_t at = flat ? (b * Sq + i) * Hq * Dv + h * Dv + d : ((b * Hq + h) * Sq + i) * Dv + d;
          y[at] = T(acc);
        }
      }
    }
  }
}

std::string attentionKernel(const KernelArgs &args) {
  if (args.numInputs != 7 || args.numOutputs != 4)
    return "expects 7 operands and 4 results";
  const TensorRef &q = args.in(0), &k = args.in(1), &v = args.in(2), &mask = args.in(3), &pastK = args.in(4),
                  &pastV = args.in(5), &nonpad = args.in(6);
  const DType type = q.dtype;
  bool sameType = (type == DType::F32 || type == DType::F64) && k.dtype == type && v.dtype == type;
  const TensorRef *others[] = {&pastK, &pastV, &args.out(0), &args.out(1), &args.out(2), &args.out(3)};
  for (const TensorRef *t : others)
    sameType = sameType && (t->numel() == 0 || t->dtype == type);
  if (!sameType)
    return "q, k, v, the past keys and values and the results must all be f32 or all f64 (f16 through conversion)";
  AttentionSizes z;
  const int rank = q.shape.rank;
  if ((rank != 3 && rank != 4) || k.shape.rank != rank || v.shape.rank != rank)
    return "q, k and v must all be 3-D or all 4-D";
  z.flat = rank == 3;
  z.B = q.shape[0];
  if (!z.flat) {
    z.Hq = q.shape[1], z.Hkv = k.shape[1], z.Sq = q.shape[2], z.Skv = k.shape[2], z.D = q.shape[3], z.Dv = v.shape[3];
  } else {
    z.Hq = args.attrs.getInt("q_num_heads", 0), z.Hkv = args.attrs.getInt("kv_num_heads", 0);
    if (z.Hq <= 0 || z.Hkv <= 0 || q.shape[2] % z.Hq || k.shape[2] % z.Hkv || v.shape[2] % z.Hkv)
      return "3-D attention needs head counts that divide the hidden sizes";
    z.Sq = q.shape[1], z.Skv = k.shape[1], z.D = q.shape[2] / z.Hq, z.Dv = v.shape[2] / z.Hkv;
  }
  if (z.Hkv <= 0 || z.Hq % z.Hkv || k.shape[0] != z.B || v.shape[0] != z.B ||
      (z.flat ? k.shape[2] / z.Hkv : k.shape[3]) != z.D || (z.flat ? v.shape[1] : v.shape[2]) != z.Skv)
    return "q, k and v shapes do not agree";
  const bool hasPast = pastK.numel() > 0;
  z.P = hasPast ? pastK.shape[2] : 0, z.keys = z.P + z.Skv;
  if (hasPast && (pastK.shape.rank != 4 || pastV.shape.rank != 4 || pastK.shape[0] != z.B || pastK.shape[1] != z.Hkv ||
                  pastK.shape[3] != z.D || pastV.shape[2] != z.P || pastV.shape[3] != z.Dv))
    return "past key/value shapes do not match";
  if (args.out(0).numel() != z.B * z.Hq * z.Sq * z.Dv || args.out(1).numel() != z.B * z.Hkv * z.keys * z.D ||
      args.out(2).numel() != z.B * z.Hkv * z.keys * z.Dv || args.out(3).numel() != z.B * z.Hq * z.Sq * z.keys)
    return "result sizes do not match the operands";
  if (nonpad.numel() > 0 && (nonpad.numel() != z.B || (nonpad.dtype != DType::I64 && nonpad.dtype != DType::I32)))
    return "nonpad_kv_seqlen must hold one integer per batch";
  // The mask broadcasts to [B, Hq, Sq, keys]; columns past its last dimension are masked.
  if (mask.numel() > 0) {
    if (mask.shape.rank < 1 || mask.shape.rank > 4 || (mask.dtype != DType::Bool && mask.dtype != type))
      return "the mask must be bool or of q's type, of rank 1 to 4";
    int64_t s[kMaxRank];
    rowMajorStrides(mask.shape, s);
    for (int d = 0; d < mask.shape.rank; ++d) {
      z.maskDims[4 - mask.shape.rank + d] = mask.shape.dims[d];
      z.maskStrides[4 - mask.shape.rank + d] = mask.shape.dims[d] == 1 ? 0 : s[d];
    }
    const int64_t want[3] = {z.B, z.Hq, z.Sq};
    for (int d = 0; d < 3; ++d)
      if (z.maskDims[d] != 1 && z.maskDims[d] != want[d])
        return "the mask does not broadcast to the attention scores";
    if (z.maskDims[3] > z.keys)
      return "the mask is longer than the key sequence";
  }
  if (type == DType::F64)
    attend<double>(args, z);
  else
    attend<float>(args, z);
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
  if (!byPosition && (cosT.shape.rank != 3 || (cosT.shape[0] != B && cosT.shape[0] != 1) || cosT.shape[1] != S))
    return "without position_ids the caches must be [batch or 1, seq, rotary_dim / 2]";
  const bool sharedTables = !byPosition && cosT.shape[0] == 1; // one table for every batch
  const float *px = x.as<const float>();
  float *py = y.as<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      int64_t row = (sharedTables ? 0 : b) * S + s;
      if (byPosition) {
        row = pos.dtype == DType::I64 ? pos.as<const int64_t>()[b * S + s] : pos.as<const int32_t>()[b * S + s];
        if (row < 0 || row >= cosT.shape[0])
          return "position id " + std::to_string(row) + " is outside the caches";
      }
      const float *c = cosT.as<const float>() + row * half, *sn = sinT.as<const float>() + row * half;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = flat ? (b * S + s) * H * D + h * D : ((b * H + h) * S + s) * D;
        rotateHeadRow(px + base, py + base, D, rot, interleaved, c, sn);
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
