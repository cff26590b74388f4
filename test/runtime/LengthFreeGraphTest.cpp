// The split of a plan around one CUDA graph for every cache length (LengthFreeGraph.h), on a
// decode step in miniature: a mask built from the cache's shape and the attention mask, a cache
// concatenation and an attention. And the arena's lifetimes in the order the ops then run.
#include "LengthFreeGraph.h"
#include "MemoryPlan.h"
#include "Plan.h"
#include "plan_generated.h"

#include <gtest/gtest.h>

using llmc::plan::DimExprNode;
using llmc::plan::DimOp;
using llmc::rt::LengthFreeSplit;
using llmc::rt::PlanOp;
using llmc::rt::PlanValue;
using llmc::rt::splitForLengths;

namespace {

enum Symbol { Seq, Past, Total };
enum Node { SeqNode, PastNode, TotalNode, PastPlusSeq };

// Dimensions: a number is static, Node values (as -1 - node) are the symbolic ones.
constexpr int64_t dyn(Node n) { return -1 - int64_t(n); }

struct MiniPlan {
  llmc_plan_t plan;

  MiniPlan() {
    plan.symbols = {{"seq", 16, 1}, {"past", 64, 0}, {"total", 80, 1}};
    plan.dimNodes = {{DimOp::Symbol, -1, -1, Seq}, {DimOp::Symbol, -1, -1, Past}, {DimOp::Symbol, -1, -1, Total},
                     {DimOp::Add, PastNode, SeqNode, 0}};
  }
  int value(std::initializer_list<int64_t> dims, uint8_t kind = llmc::plan::ValueKind_Activation) {
    PlanValue v;
    v.name = "v" + std::to_string(plan.values.size());
    v.kind = kind, v.dtype = llmc::rt::DType::F32, v.capacity = 64;
    for (int64_t d : dims) {
      v.dimNode[v.shape.rank] = d < 0 ? int32_t(-1 - d) : -1;
      v.shape.dims[v.shape.rank++] = d < 0 ? -1 : d;
    }
    plan.values.push_back(v);
    if (kind == llmc::plan::ValueKind_Input)
      plan.inputs.push_back(int(plan.values.size()) - 1);
    if (kind == llmc::plan::ValueKind_Output)
      plan.outputs.push_back(int(plan.values.size()) - 1);
    return int(plan.values.size()) - 1;
  }
  int op(const std::string &kernel, std::vector<int> inputs, std::vector<int> outputs, int segment = 0) {
    PlanOp o;
    o.kernel = kernel, o.inputs = std::move(inputs), o.outputs = std::move(outputs), o.segment = segment;
    plan.ops.push_back(std::move(o));
    return int(plan.ops.size()) - 1;
  }
};

// A decode step: ops 0-3 build the mask from the cache's shape and the attention mask, op 4
// makes the new keys, op 5 appends them to the cache, op 6 attends, op 7 follows. The plan order
// interleaves them, as llmc's plans do (the mask's last op after the keys).
struct DecodeStep : MiniPlan {
  int shapeOp, scalarOp, rangeOp, maskOp, keysOp, appendOp, attentionOp, lastOp;
  DecodeStep() {
    const int q = value({1, dyn(SeqNode), 8}, llmc::plan::ValueKind_Input);
    const int past = value({dyn(PastNode), 1, 8}, llmc::plan::ValueKind_Input);
    const int keep = value({1, dyn(TotalNode)}, llmc::plan::ValueKind_Input);
    const int one = value({1}, llmc::plan::ValueKind_Weight);
    const int pastLength = value({1}), start = value({1}), positions = value({dyn(TotalNode)});
    const int mask = value({1, 1, dyn(SeqNode), dyn(TotalNode)}), keys = value({dyn(SeqNode), 1, 8});
    const int present = value({dyn(PastPlusSeq), 1, 8}, llmc::plan::ValueKind_Output);
    const int attended = value({1, dyn(SeqNode), 8}), out = value({1, dyn(SeqNode), 8}, llmc::plan::ValueKind_Output);
    shapeOp = op("shape", {past}, {pastLength});
    scalarOp = op("add", {pastLength, one}, {start});
    keysOp = op("relu", {q}, {keys});
    rangeOp = op("range", {start}, {positions});
    appendOp = op("concat", {past, keys}, {present});
    maskOp = op("where", {keep, positions}, {mask});
    attentionOp = op("fused_attention", {q, present, present, mask}, {attended});
    lastOp = op("relu", {attended}, {out});
  }
  bool readsOnDevice(int k) const { return k == appendOp || k == attentionOp; }
};

TEST(LengthFreeGraph, MaskOpsRunBeforeTheGraph) {
  DecodeStep step;
  const LengthFreeSplit split = splitForLengths(step.plan, [&](int k) { return step.readsOnDevice(k); });
  ASSERT_EQ(split.whyNot, "");
  EXPECT_EQ(split.lengthSymbol, (std::vector<bool>{false, true, true})); // past and total, not seq
  EXPECT_EQ(split.lengthNode, (std::vector<bool>{false, true, true, true}));
  // The shape, the scalar from it (needed by the range), the range and the mask; then the rest.
  ASSERT_EQ(split.before, 4u);
  EXPECT_EQ(split.order, (std::vector<int>{step.shapeOp, step.scalarOp, step.rangeOp, step.maskOp, step.keysOp,
                                           step.appendOp, step.attentionOp, step.lastOp}));
}

TEST(LengthFreeGraph, ACacheCopiedEveryRunRunsBeforeTheGraphWithWhatItCopies) {
  // Without a linked cache the concatenation copies the past: it and the keys it appends run
  // before the graph; the attention still reads its key count on the device.
  DecodeStep step;
  const LengthFreeSplit split = splitForLengths(step.plan, [&](int k) { return k == step.attentionOp; });
  ASSERT_EQ(split.whyNot, "");
  EXPECT_EQ(split.before, 6u);
  EXPECT_EQ(split.order.back(), step.lastOp);
}

TEST(LengthFreeGraph, RefusedWhereAnOpBeforeTheGraphNeedsOneInIt) {
  // One more op with the length in its shapes, made from the attention's result: it cannot run
  // before the graph.
  DecodeStep step;
  const int positions = step.value({dyn(TotalNode)});
  step.op("range", {step.plan.ops[size_t(step.attentionOp)].outputs[0]}, {positions});
  const LengthFreeSplit split = splitForLengths(step.plan, [&](int k) { return k == step.appendOp || k == step.attentionOp; });
  EXPECT_NE(split.whyNot.find("reads its length on the device, but an op with a length in its shapes needs its result"),
            std::string::npos)
      << split.whyNot;
}

TEST(LengthFreeGraph, RefusedWithoutOneGraphSegment) {
  DecodeStep step;
  step.plan.ops[size_t(step.lastOp)].segment = -1; // an op a graph cannot hold
  const LengthFreeSplit split = splitForLengths(step.plan, [&](int k) { return step.readsOnDevice(k); });
  EXPECT_EQ(split.whyNot, "the ops after the mask are not one graph segment");
}

TEST(LengthFreeGraph, NothingToSplitWithoutAnAttentionOverACache) {
  MiniPlan plain;
  const int x = plain.value({1, dyn(SeqNode), 8}, llmc::plan::ValueKind_Input);
  const int y = plain.value({1, dyn(SeqNode), 8}, llmc::plan::ValueKind_Output);
  plain.op("fused_attention", {x, x, x}, {y});
  const LengthFreeSplit split = splitForLengths(plain.plan, [](int) { return true; });
  EXPECT_EQ(split.whyNot, "no attention over a dynamic key length");
  EXPECT_TRUE(split.order.empty());
}

TEST(LengthFreeGraph, LifetimesFollowTheRunOrder) {
  // In the split's order the mask is made fourth and read by the attention (seventh): live
  // over positions 3..6; in the plan's order it is made sixth.
  DecodeStep step;
  const LengthFreeSplit split = splitForLengths(step.plan, [&](int k) { return step.readsOnDevice(k); });
  const int mask = step.plan.ops[size_t(step.maskOp)].outputs[0];
  const auto planned = llmc::rt::planLifetimes(step.plan), reordered = llmc::rt::planLifetimes(step.plan, split.order);
  EXPECT_EQ(planned[size_t(mask)].first, step.maskOp);
  EXPECT_EQ(reordered[size_t(mask)].first, 3);
  EXPECT_EQ(reordered[size_t(mask)].last, 6);
}

} // namespace
