#include "AttentionRows.h"

#include <algorithm>
#include <limits>

namespace llmc::rt {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

std::string ScoreMask::init(const TensorRef *mask, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
  mask_ = mask && mask->numel() > 0 ? mask : nullptr;
  if (!mask_)
    return {};
  if (mask_->dtype != DType::F32 && mask_->dtype != DType::Bool && mask_->dtype != DType::I64)
    return "mask must be f32 (additive), bool or i64 (non-zero keeps: an attention_mask input)";
  Shape full;
  full.rank = 4;
  full.dims[0] = B, full.dims[1] = H, full.dims[2] = Sq, full.dims[3] = Sk;
  if (mask_->shape.rank > 4 || !broadcastsTo(mask_->shape, full))
    return "mask " + mask_->shape.str() + " does not broadcast to " + full.str();
  Shape padded;
  padded.rank = 4;
  for (int d = 0; d < 4; ++d)
    padded.dims[d] = d < 4 - mask_->shape.rank ? 1 : mask_->shape.dims[d - (4 - mask_->shape.rank)];
  broadcastStrides(padded, full, strides_);
  return {};
}

void ScoreMask::apply(float *row, int64_t b, int64_t h, int64_t i, int64_t Sk, int64_t firstKey) const {
  if (!mask_)
    return;
  const int64_t step = strides_[3], base = b * strides_[0] + h * strides_[1] + i * strides_[2] + firstKey * step;
  if (mask_->dtype == DType::Bool) {
    const uint8_t *keep = mask_->as<const uint8_t>() + base;
    for (int64_t j = 0; j < Sk; ++j)
      row[j] = keep[j * step] ? row[j] : kMinusInf;
  } else if (mask_->dtype == DType::I64) {
    const int64_t *keep = mask_->as<const int64_t>() + base;
    for (int64_t j = 0; j < Sk; ++j)
      row[j] = keep[j * step] ? row[j] : kMinusInf;
  } else {
    const float *add = mask_->as<const float>() + base;
    for (int64_t j = 0; j < Sk; ++j)
      row[j] += add[j * step];
  }
}

void maskedSoftmaxRows(float *scores, int64_t Sq, int64_t Sk, const ScoreMask &mask, int64_t b, int64_t h,
                       bool causal, int64_t window, int64_t firstKey, const float *sink) {
  const int64_t n = Sk - firstKey; // a row's scores: keys firstKey .. Sk - 1
  for (int64_t i = 0; i < Sq; ++i) {
    float *row = scores + i * n;
    mask.apply(row, b, h, i, n, firstKey);
    const int64_t at = i + (Sk - Sq); // the query's position among the keys
    if (causal) // keys after the frontier are hidden
      for (int64_t j = std::max<int64_t>(firstKey, at + 1); j < Sk; ++j)
        row[j - firstKey] = kMinusInf;
    if (window > 0) // and those the window has left behind
      for (int64_t j = firstKey; j < std::min(Sk, at - window + 1); ++j)
        row[j - firstKey] = kMinusInf;
    const float keysBest = rowMax(row, n);
    if (keysBest == kMinusInf) { // every key masked: the row attends to nothing (a sink takes all)
      std::fill(row, row + n, 0.0f);
      continue;
    }
    const float best = sink ? std::max(keysBest, *sink) : keysBest;
    for (int64_t j = 0; j < n; ++j) // separate from the sum, so that it vectorizes
      row[j] = row[j] == kMinusInf ? 0.0f : fastExp(row[j] - best);
    const float inv = 1.0f / (rowSum(row, n) + (sink ? fastExp(*sink - best) : 0.0f));
    for (int64_t j = 0; j < n; ++j)
      row[j] *= inv;
  }
}

} // namespace llmc::rt
