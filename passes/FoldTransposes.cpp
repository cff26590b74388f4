// llmc-fold-transposes (see Passes.td): transposes that compose, and transposes that move only
// unit dimensions.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/IR/Builders.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFOLDTRANSPOSES
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// The permutation of a transpose (an empty one reverses the dimensions).
SmallVector<int64_t> permutationOf(TransposeOp t) {
  const int64_t rank = fusion::tensorType(t.getInput()).getRank();
  SmallVector<int64_t> perm(t.getPerm().begin(), t.getPerm().end());
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  return perm;
}

Value transposed(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  Operation *op = fusion::create(b, loc, "llmc.transpose", {x}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
  return op ? op->getResult(0) : Value();
}

// When `perm` keeps the order of the dimensions of `shape` that are not 1, the transpose moves no
// data: squeeze those unit dimensions, unsqueeze them where the result has them.
Value withoutDataMovement(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  ArrayRef<int64_t> shape = fusion::tensorType(x).getShape();
  int64_t last = -1;
  SmallVector<int64_t> squeeze, unsqueeze;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (shape[size_t(perm[i])] == 1) {
      unsqueeze.push_back(int64_t(i));
      continue;
    }
    if (perm[i] < last)
      return {};
    last = perm[i];
  }
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 1)
      squeeze.push_back(int64_t(d));
  Operation *squeezed =
      fusion::create(b, loc, "llmc.squeeze", {x}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(squeeze))});
  if (!squeezed || unsqueeze.empty())
    return squeezed ? squeezed->getResult(0) : Value();
  Operation *out = fusion::create(b, loc, "llmc.unsqueeze", {squeezed->getResult(0)},
                                  {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(unsqueeze))});
  return out ? out->getResult(0) : Value();
}

struct FoldTransposes : impl::LlmcFoldTransposesBase<FoldTransposes> {
  RewriteCounter composed{"llmc-fold-transposes", "transpose pairs composed"};
  RewriteCounter moved{"llmc-fold-transposes", "transposes of unit dimensions turned into squeeze/unsqueeze"};

  void runOnOperation() override {
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp t) { transposes.push_back(t); });
    for (TransposeOp t : transposes) {
      OpBuilder b(t);
      Value input = t.getInput();
      SmallVector<int64_t> perm = permutationOf(t);
      auto inner = def<TransposeOp>(input);
      if (inner) { // x -> inner -> t: one transpose of x
        const SmallVector<int64_t> first = permutationOf(inner);
        SmallVector<int64_t> both;
        for (int64_t p : perm)
          both.push_back(first[size_t(p)]);
        input = inner.getInput(), perm = both;
      }
      bool identity = true;
      for (size_t i = 0; i < perm.size(); ++i)
        identity &= perm[i] == int64_t(i);
      Value replacement = identity ? input : withoutDataMovement(b, t.getLoc(), input, perm);
      if (!replacement && inner)
        replacement = transposed(b, t.getLoc(), input, perm);
      if (!replacement || replacement.getType() != t.getType()) {
        // Undo what was made (squeeze and unsqueeze, or a transpose) back to the input.
        for (Value v = replacement; v && v != input && v.use_empty();) {
          Operation *made = v.getDefiningOp();
          v = made->getOperand(0);
          made->erase();
        }
        continue;
      }
      composed += inner ? 1 : 0;
      if (!identity && !replacement.getDefiningOp<TransposeOp>())
        ++moved;
      t.getResult().replaceAllUsesWith(replacement);
      t->erase();
      if (inner && inner->use_empty())
        inner->erase();
    }
  }
};

} // namespace
} // namespace llmc
