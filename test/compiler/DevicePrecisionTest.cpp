// Which values a reduced-precision plan keeps in 16 bits (compiler/plan/DevicePrecision.h).
#include "DevicePrecision.h"

#include <gtest/gtest.h>

namespace {

using llmc::PrecisionOp;
using llmc::PrecisionValue;
using llmc::rt::DType;

PrecisionValue activation(DType d = DType::F32) { return {d, false, false, 0}; }
PrecisionValue weight(int64_t elements) { return {DType::F32, false, true, elements}; }

// A decoder layer's shape: positions (int) cast to float and multiplied by a small inv_freq
// weight, the angles concatenated and turned to cos/sin by a fused region; q from a linear with a
// big weight; attention reads q, the mask (f32 from an int mask) and the tables.
TEST(DevicePrecision, AnglesStayF32AndEverythingTheAttentionReadsIsReduced) {
  enum {
    Positions, InvFreq, PosF, Freqs, Angles, Cos, Hidden, Wq, Q, IntMask, Mask, Out, Norm, NormScale, Count
  };
  std::vector<PrecisionValue> v(Count);
  v[Positions] = activation(DType::I64);
  v[InvFreq] = weight(32);
  v[PosF] = v[Freqs] = v[Angles] = v[Cos] = v[Q] = v[Mask] = v[Out] = v[Norm] = activation();
  v[Hidden] = {DType::F32, true, false, 0}; // a float graph input
  v[Wq] = weight(4096);
  v[IntMask] = activation(DType::I64);
  v[NormScale] = weight(64);
  const std::vector<PrecisionOp> ops = {
      {"cast", {Positions}, {PosF}},
      {"mul", {PosF, InvFreq}, {Freqs}},
      {"concat", {Freqs, Freqs}, {Angles}},
      {"fused_elementwise", {Angles}, {Cos}},
      {"linear", {Hidden, Wq}, {Q}},
      {"cast", {IntMask}, {Mask}},
      {"fused_attention", {Q, Q, Q, Mask, Cos, Cos}, {Out}},
      {"rms_norm", {Out, NormScale}, {Norm}},
  };
  const std::vector<bool> r = llmc::reducedValues(v, ops);
  for (int f32 : {PosF, Freqs, Angles, InvFreq})
    EXPECT_FALSE(r[size_t(f32)]) << f32;
  for (int reduced : {Cos, Hidden, Wq, Q, Mask, Out, Norm, NormScale})
    EXPECT_TRUE(r[size_t(reduced)]) << reduced;
  for (int integer : {Positions, IntMask})
    EXPECT_FALSE(r[size_t(integer)]) << integer;
}

// An elementwise op does not make its weights reduced, nor its output from a reduced weight alone;
// a non-elementwise op does both.
TEST(DevicePrecision, OnlyNonElementwiseOpsPullTheirOperandsIn) {
  std::vector<PrecisionValue> v = {weight(2048), activation(), activation(), weight(16), activation()};
  const std::vector<PrecisionOp> ops = {
      {"gather", {0, -1}, {1}},   // a big table: its rows are reduced
      {"add", {1, 3}, {2}},       // reduced + small weight: reduced, the weight not
      {"softmax", {2}, {4}},      // follows its input
  };
  const std::vector<bool> r = llmc::reducedValues(v, ops);
  EXPECT_TRUE(r[0] && r[1] && r[2] && r[4]);
  EXPECT_FALSE(r[3]);
  const std::vector<PrecisionOp> alone = {{"add", {3, 3}, {2}}}; // small weights only: f32
  EXPECT_FALSE(llmc::reducedValues(v, alone)[2]);
}

// DeepSeek-V3.2's indexer: scores = weights . relu(q . kT) ranked by a top_k. The scores and
// what computes them from the 16-bit queries, keys and weights stay f32 (matmuls, elementwise ops
// and copies write f32 from 16-bit operands); the transpose (one storage type) and its copy stay
// reduced, as do the linears' outputs.
TEST(DevicePrecision, RankedScoresStayF32BackToOpsOfOneStorageType) {
  enum { Hidden, Wq, Q, K, KT, KT4, Scores, Relu, Wh, Heads, Weights, Weights4, Summed, Index, Top, TopIds, Count };
  std::vector<PrecisionValue> v(Count, activation());
  v[Hidden] = {DType::F32, true, false, 0};
  v[Wq] = v[Wh] = weight(4096);
  v[TopIds] = activation(DType::I64);
  const std::vector<PrecisionOp> ops = {
      {"linear", {Hidden, Wq}, {Q}},
      {"layer_norm", {Hidden, -1}, {K}},
      {"transpose", {K}, {KT}},
      {"unsqueeze", {KT}, {KT4}},
      {"matmul", {Q, KT4}, {Scores}},
      {"fused_elementwise", {Scores}, {Relu}},
      {"linear", {Hidden, Wh}, {Heads}},
      {"mul", {Heads}, {Weights}},
      {"unsqueeze", {Weights}, {Weights4}},
      {"matmul", {Weights4, Relu}, {Summed}},
      {"squeeze", {Summed}, {Index}},
      {"top_k", {Index, -1}, {Top, TopIds}},
  };
  const std::vector<bool> r = llmc::reducedValues(v, ops);
  for (int f32 : {Scores, Relu, Weights, Weights4, Summed, Index, Top})
    EXPECT_FALSE(r[size_t(f32)]) << f32;
  for (int reduced : {Hidden, Wq, Q, K, KT, KT4, Wh, Heads})
    EXPECT_TRUE(r[size_t(reduced)]) << reduced;
}

// A router's top_k of a linear's logits: the linear (one storage type) keeps them reduced. A top_k
// of a sigmoid whose values an op of one storage type reads with reduced operands: reduced too,
// the sigmoid's output and the top_k's values with them, as without the rule.
TEST(DevicePrecision, RankedScoresAreReducedWhereAKernelTakesOneType) {
  enum { Hidden, W, Logits, Vals, Ids, Probs, Top, Ids2, Mixed, Count };
  std::vector<PrecisionValue> v(Count, activation());
  v[Hidden] = {DType::F32, true, false, 0};
  v[W] = weight(4096);
  v[Ids] = v[Ids2] = activation(DType::I64);
  const std::vector<PrecisionOp> ops = {
      {"linear", {Hidden, W}, {Logits}},
      {"top_k", {Logits, -1}, {Vals, Ids}},
      {"sigmoid", {Logits}, {Probs}},
      {"top_k", {Probs, -1}, {Top, Ids2}},
      {"expert_linear", {Hidden, W, Ids2, Top}, {Mixed}},
  };
  const std::vector<bool> r = llmc::reducedValues(v, ops);
  for (int reduced : {Logits, Vals, Probs, Top, Mixed})
    EXPECT_TRUE(r[size_t(reduced)]) << reduced;
}

} // namespace
