// Dimension expressions: evaluation per run, upper bounds for buffer sizes, and the checks that
// keep a damaged plan from indexing outside the node list.
#include "DimExprs.h"

#include <gtest/gtest.h>

namespace {

using llmc::plan::DimExprNode;
using llmc::plan::DimOp;

// seq, 1, seq - 1 (as seq + -1), ceil((seq - 1) / 4), min(seq, 6), broadcast(1, seq), seq mod 4
std::vector<DimExprNode> sample() {
  return {{DimOp::Symbol, -1, -1, 0}, {DimOp::Const, -1, -1, -1},   {DimOp::Add, 0, 1, 0},
          {DimOp::Const, -1, -1, 4},  {DimOp::CeilDiv, 2, 3, 0},     {DimOp::Const, -1, -1, 6},
          {DimOp::Min, 0, 5, 0},      {DimOp::Const, -1, -1, 1},     {DimOp::Broadcast, 7, 0, 0},
          {DimOp::Mod, 0, 3, 0}};
}

TEST(DimExprs, EvaluatesEveryNode) {
  std::vector<int64_t> out;
  for (int64_t seq : {1, 7, 64}) {
    ASSERT_EQ(llmc::plan::evaluateDimExprs(sample(), &seq, out), "");
    EXPECT_EQ(out[2], seq - 1);
    EXPECT_EQ(out[4], (seq - 1 + 3) / 4);
    EXPECT_EQ(out[6], std::min<int64_t>(seq, 6));
    EXPECT_EQ(out[8], seq);
    EXPECT_EQ(out[9], seq % 4);
  }
}

// The upper bound of each node is at least its value for every symbol value within the bound.
TEST(DimExprs, BoundsCoverEveryValue) {
  const int64_t min = 1, max = 50;
  std::vector<int64_t> upper, out;
  ASSERT_EQ(llmc::plan::boundDimExprs(sample(), &min, &max, upper), "");
  for (int64_t seq = 1; seq <= max; ++seq) {
    ASSERT_EQ(llmc::plan::evaluateDimExprs(sample(), &seq, out), "");
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_LE(out[i], upper[i]) << "node " << i << " at seq " << seq;
  }
  EXPECT_EQ(upper[0], max);
  EXPECT_EQ(upper[6], 6);
}

TEST(DimExprs, RejectsForwardReferencesUnknownSymbolsAndDivisionByZero) {
  EXPECT_NE(llmc::plan::checkDimExprs({{DimOp::Add, 0, 1, 0}}, 1), "");
  EXPECT_NE(llmc::plan::checkDimExprs({{DimOp::Symbol, -1, -1, 3}}, 1), "");
  EXPECT_NE(llmc::plan::checkDimExprs({{static_cast<DimOp>(42), -1, -1, 0}}, 1), "");
  EXPECT_EQ(llmc::plan::checkDimExprs(sample(), 1), "");
  const std::vector<DimExprNode> byZero = {{DimOp::Symbol, -1, -1, 0}, {DimOp::Const, -1, -1, 0},
                                           {DimOp::FloorDiv, 0, 1, 0}};
  std::vector<int64_t> out;
  const int64_t seq = 3, one = 1;
  EXPECT_NE(llmc::plan::evaluateDimExprs(byZero, &seq, out), "");
  EXPECT_NE(llmc::plan::boundDimExprs(byZero, &one, &seq, out), "");
}

} // namespace
