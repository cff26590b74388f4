// What the attention kernels share: the mask broadcast to [B, H, Sq, Sk] through strides, and
// the masked softmax of one head's block of score rows.
#pragma once

#include "KernelUtil.h"

#include <string>

namespace llmc::rt {

class ScoreMask {
public:
  // `mask` null or empty: no mask. Fails when it is not f32/bool/i64 or does not broadcast.
  std::string init(const TensorRef *mask, int64_t B, int64_t H, int64_t Sq, int64_t Sk);
  // Adds (f32) or applies (bool, i64: non-zero keeps) the mask to row i of head (b, h); `row`
  // holds the scores of keys firstKey .. firstKey + Sk - 1.
  void apply(float *row, int64_t b, int64_t h, int64_t i, int64_t Sk, int64_t firstKey = 0) const;

private:
  const TensorRef *mask_ = nullptr;
  int64_t strides_[kMaxRank] = {};
};

// Softmax over each of the Sq rows of `scores` (row length Sk) after the mask and, with `causal`,
// hiding the keys after each query (bottom-right aligned: query i is at position i + Sk - Sq);
// with `window` > 0, hiding the keys `window` or more positions before the query (a sliding
// window: a query sees at most `window` keys up to itself). A fully masked row becomes zeros.
// Rows of Sk - firstKey scores hold keys firstKey .. Sk - 1 only (those a window leaves).
// `sink` (or null): a logit that joins each row's softmax with no score of its own, so that the
// row's weights sum to less than 1 (an attention sink).
void maskedSoftmaxRows(float *scores, int64_t Sq, int64_t Sk, const ScoreMask &mask, int64_t b, int64_t h,
                       bool causal, int64_t window = 0, int64_t firstKey = 0, const float *sink = nullptr);

} // namespace llmc::rt
