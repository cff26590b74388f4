// llmc-merge-parallel-linears: linears with constant weights that read the same input become one
// linear over the concatenated weights (Q, K and V; any such group, of any widths, with or
// without biases), whose result is split; SwiGLU's gate and up projections become one linear
// with the "swiglu" epilogue, which needs no split.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCMERGEPARALLELLINEARS
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// Whether a linear's weight and bias (where it has one) are constants the pass can read: of f32,
// f16 or bf16, the one type of all a linear's operands (type inference), so of every linear that
// reads the same input.
bool constantParams(LinearOp op) {
  return fusion::isFloatConstant(op.getWeight()) &&
         (fusion::isEmpty(op.getBias()) || fusion::isFloatConstant(op.getBias()));
}

// A linear whose weight (and bias) are constants and that has no epilogue past its bias.
bool mergeable(LinearOp op) {
  return op.getActivation() == "none" && fusion::isEmpty(op.getGate()) && fusion::isEmpty(op.getResidual()) &&
         constantParams(op);
}

int64_t width(LinearOp op) {
  auto w = fusion::tensorType(op.getWeight());
  return op.getTransB() ? w.getDimSize(0) : w.getDimSize(1);
}

// The weights of `ops` side by side ([K, sum N], or [sum N, K] with transB), and their biases
// (zeros for a linear without one), moved byte for byte in their element type.
std::pair<Value, Value> concatenated(OpBuilder &b, Location loc, SmallVector<LinearOp> ops) {
  LinearOp first = ops.front();
  const bool transB = first.getTransB();
  const Type elem = fusion::tensorType(first.getWeight()).getElementType();
  const size_t size = fusion::elementSize(elem);
  const int64_t k = fusion::tensorType(first.getWeight()).getDimSize(transB ? 1 : 0);
  int64_t total = 0;
  for (LinearOp op : ops)
    total += width(op);
  std::vector<char> w(size_t(k * total) * size), bias(size_t(total) * size, 0); // (zero bits: 0.0 in each type)
  int64_t at = 0;
  bool anyBias = false;
  for (LinearOp op : ops) {
    const int64_t n = width(op);
    std::vector<char> storage; // (constantParams has checked that both read)
    const ArrayRef<char> weight = *fusion::floatBytes(op.getWeight(), storage);
    if (transB) // [n, K] rows below those before
      std::memcpy(w.data() + size_t(at * k) * size, weight.data(), weight.size());
    else // each of the K rows' n columns beside those before
      for (int64_t r = 0; r < k; ++r)
        std::memcpy(w.data() + size_t(r * total + at) * size, weight.data() + size_t(r * n) * size, size_t(n) * size);
    if (!fusion::isEmpty(op.getBias())) {
      anyBias = true;
      const ArrayRef<char> values = *fusion::floatBytes(op.getBias(), storage);
      std::memcpy(bias.data() + size_t(at) * size, values.data(), values.size());
    }
    at += n;
  }
  auto wType = RankedTensorType::get(transB ? ArrayRef<int64_t>{total, k} : ArrayRef<int64_t>{k, total}, elem);
  Value weight = fusion::bytesConstant(b, loc, wType, w);
  Value biasValue = fusion::emptyTensor(b, loc, elem);
  if (anyBias)
    biasValue = fusion::bytesConstant(b, loc, RankedTensorType::get({total}, elem), bias);
  return {weight, biasValue};
}

Value buildLinear(OpBuilder &b, Location loc, Value input, std::pair<Value, Value> params, StringRef activation,
                  bool transB) {
  Value none = fusion::emptyTensor(b, loc, fusion::tensorType(input).getElementType());
  return fusion::create(b, loc, "llmc.linear", {input, params.first, params.second, none, none},
                        {b.getNamedAttr("activation", b.getStringAttr(activation)),
                         b.getNamedAttr("transB", b.getI64IntegerAttr(transB))})
      ->getResult(0);
}

struct MergeParallelLinears : impl::LlmcMergeParallelLinearsBase<MergeParallelLinears> {
  RewriteCounter swiglus{"llmc-merge-parallel-linears", "gate/up pairs merged into a swiglu linear"};
  RewriteCounter groups{"llmc-merge-parallel-linears", "groups of parallel linears merged"};
  RewriteCounter merged{"llmc-merge-parallel-linears", "linears merged into groups"};

  RewriteCounter packed{"llmc-merge-parallel-linears", "attentions reading a merged QKV projection directly"};

  // Erases linears merged into one (`ops` in block order), and their weights and biases that
  // nothing else reads, whose bytes are freed at once: the merged copy is what the plan keeps.
  static void eraseMerged(func::FuncOp func, ArrayRef<LinearOp> ops) {
    llvm::SetVector<Value> params; // once each: linears may share a constant (an empty bias)
    for (LinearOp op : ops)
      params.insert_range(ValueRange{op.getWeight(), op.getBias()});
    for (LinearOp op : llvm::reverse(ops)) // users first: SwiGLU's up projection reads its gate's
      op.erase();
    for (Value v : params) {
      auto constant = def<ConstantOp>(v);
      if (!constant || !v.use_empty())
        continue;
      Attribute bytes = constant.getValue();
      constant.erase();
      releaseUnusedElements(func, bytes);
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    mergeSwiGlu(func);
    mergeGroups(func);
    packAttention(func);
  }

  // fused_attention(split#0, split#1, split#2) of a merged QKV projection reads the projection
  // itself (packed_qkv): no split launch.
  void packAttention(func::FuncOp func) {
    SmallVector<FusedAttentionOp> attentions;
    func.walk([&](FusedAttentionOp op) { attentions.push_back(op); });
    for (FusedAttentionOp op : attentions) {
      auto split = def<SplitOp>(op.getQ());
      if (!split || split->getNumResults() != 3 || op.getQ() != split->getResult(0) ||
          op.getK() != split->getResult(1) || op.getV() != split->getResult(2) || op.getKvTimeMajor() ||
          !op.getRotateKeys())
        continue;
      auto type = fusion::tensorType(split.getInput());
      if (type.getRank() != 3 || split.getAxis() != 2 ||
          !llvm::all_of(split->getResults(), [](Value r) { return r.hasOneUse(); }))
        continue;
      OpBuilder b(op);
      Value none = fusion::emptyTensor(b, op.getLoc(), type.getElementType());
      NamedAttrList attrs(op->getAttrs()); // set, not append: the op may hold the default already
      attrs.set("packed_qkv", b.getI64IntegerAttr(1));
      Operation *fused = fusion::create(b, op.getLoc(), "llmc.fused_attention",
                                        fusion::attentionOperands(op, split.getInput(), none, none, op.getMask(),
                                                                  op.getCos(), op.getSin()),
                                        attrs.getAttrs());
      if (!fused || fused->getResult(0).getType() != op.getType()) {
        if (fused)
          fused->erase();
        continue;
      }
      op.getResult().replaceAllUsesWith(fused->getResult(0));
      op.erase();
      split.erase();
      ++packed;
    }
  }

  // linear(x, Wu, gate = linear(x, Wg, silu))  ->  linear(x, [Wg | Wu], swiglu)
  void mergeSwiGlu(func::FuncOp func) {
    SmallVector<LinearOp> ups;
    func.walk([&](LinearOp op) { ups.push_back(op); });
    for (LinearOp up : ups) {
      auto gate = def<LinearOp>(up.getGate());
      if (!gate || up.getActivation() != "none" || !fusion::isEmpty(up.getResidual()) || gate.getActivation() != "silu" ||
          !gate.getResult().hasOneUse() || !fusion::isEmpty(gate.getGate()) || !fusion::isEmpty(gate.getResidual()) ||
          gate.getInput() != up.getInput() || gate.getTransB() != up.getTransB() || width(gate) != width(up) ||
          !constantParams(up) || !constantParams(gate))
        continue;
      OpBuilder b(up);
      // Same shapes, so concatenating the two as "plain" linears gives [Wg | Wu].
      SmallVector<LinearOp> pair = {gate, up};
      Value result = buildLinear(b, up.getLoc(), up.getInput(), concatenated(b, up.getLoc(), pair), "swiglu",
                                 up.getTransB());
      up.getResult().replaceAllUsesWith(result);
      eraseMerged(func, pair);
      ++swiglus;
    }
  }

  void mergeGroups(func::FuncOp func) {
    llvm::MapVector<Value, SmallVector<LinearOp>> byInput;
    func.walk([&](LinearOp op) {
      if (mergeable(op))
        byInput[op.getInput()].push_back(op);
    });
    for (auto &[input, members] : byInput) {
      // One group per transB setting (sorted out before either is merged: merging erases its
      // linears); a lone linear stays as it is.
      SmallVector<LinearOp> byTransB[2];
      for (LinearOp op : members)
        byTransB[op.getTransB() ? 1 : 0].push_back(op);
      for (int64_t transB : {0, 1}) {
        SmallVector<LinearOp> &group = byTransB[transB];
        if (group.size() < 2)
          continue;
        llvm::sort(group, [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
        OpBuilder b(group.front());
        Location loc = group.front().getLoc();
        Value all = buildLinear(b, loc, input, concatenated(b, loc, group), "none", transB);
        SmallVector<int64_t> sizes;
        for (LinearOp op : group)
          sizes.push_back(width(op));
        const int64_t rank = fusion::tensorType(all).getRank();
        Operation *split = fusion::create(b, loc, "llmc.split", {all},
                                          {b.getNamedAttr("axis", b.getI64IntegerAttr(rank - 1)),
                                           b.getNamedAttr("split", b.getDenseI64ArrayAttr(sizes))});
        for (auto [op, part] : llvm::zip(group, split->getResults()))
          op.getResult().replaceAllUsesWith(part);
        eraseMerged(func, group);
        ++groups;
        merged += int64_t(group.size());
      }
    }
  }
};

} // namespace
} // namespace llmc
