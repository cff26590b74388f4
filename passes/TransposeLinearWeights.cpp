// llmc-transpose-linear-weights: the constant weights of linears stored [N, K] (transB), each
// output's weights in one contiguous row, which is what a decode step's GEMV streams best (one
// warp per output, SmallLinear.cu); cuBLASLt takes either layout for the larger GEMMs.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "llvm/ADT/SetVector.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCTRANSPOSELINEARWEIGHTS
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// True when every use of the constant `weight` is the weight of a linear without transB: the
// constant can then change layout without a copy for anything else.
bool onlyPlainLinearWeight(Value weight) {
  return llvm::all_of(weight.getUses(), [](OpOperand &use) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    return linear && use.getOperandNumber() == 1 && linear.getTransB() == 0;
  });
}

struct TransposeLinearWeights : impl::LlmcTransposeLinearWeightsBase<TransposeLinearWeights> {
  RewriteCounter transposed{"llmc-transpose-linear-weights", "linear weights stored [N, K]"};
  RewriteCounter kept{"llmc-transpose-linear-weights", "linear weights kept [K, N] (shared with other ops)"};

  void runOnOperation() override {
    llvm::SetVector<Value> weights; // each [K, N] weight once, in order
    getOperation().walk([&](LinearOp op) {
      if (op.getTransB() == 0 && def<ConstantOp>(op.getWeight()) && fusion::tensorType(op.getWeight()).getRank() == 2)
        weights.insert(op.getWeight());
    });
    for (Value weight : weights) {
      if (!onlyPlainLinearWeight(weight)) {
        ++kept;
        continue;
      }
      auto constant = def<ConstantOp>(weight);
      auto type = fusion::tensorType(weight);
      std::vector<char> storage; // a splat's values (a weight of any size is read in place)
      FailureOr<ArrayRef<char>> bytes = fusion::floatBytes(weight, storage);
      if (failed(bytes))
        continue; // not f32, f16 or bf16 data the pass can read
      const int64_t k = type.getDimSize(0), n = type.getDimSize(1);
      auto newType = RankedTensorType::get({n, k}, type.getElementType());
      ElementsAttr values = makeElements(newType, bytes->size(), [&](MutableArrayRef<char> out) {
        fusion::transposeMatrix(bytes->data(), out.data(), k, n, fusion::elementSize(type.getElementType()));
      });
      OpBuilder b(constant);
      Value result = ConstantOp::create(b, constant.getLoc(), newType, values);
      for (OpOperand &use : llvm::make_early_inc_range(weight.getUses())) {
        auto linear = cast<LinearOp>(use.getOwner());
        use.set(result);
        linear.setTransB(1);
      }
      Attribute old = constant.getValue();
      constant.erase();
      releaseUnusedElements(getOperation(), old);
      ++transposed;
    }
  }
};

} // namespace
} // namespace llmc
