// The copies cost no more than the shared form on the executor: a raised attention computes its
// scores inside its kernel, where the shared form writes and reads [B, H, Sq, Sk] probabilities.
#include "SharedProbabilities.h"

#include "PatternUtil.h"

#include "mlir/IR/IRMapping.h"

namespace llmc {

using namespace mlir;
using fusion::def;

namespace {

// The probabilities of `softmax` as its readers take them: its result, or where(is_nan(p), 0, p)
// where that and the is_nan are its only readers (the guard's ops appended to `guard`).
Value probabilitiesOf(SoftmaxOp softmax, SmallVectorImpl<Operation *> &guard) {
  Value p = softmax.getResult();
  if (p.hasOneUse() && !isa<IsNanOp>(*p.getUsers().begin()))
    return p;
  WhereOp where;
  IsNanOp isNan;
  for (Operation *user : p.getUsers()) {
    if (WhereOp w = fusion::nanGuardOf(user, p); w && !where)
      where = w;
    else if (auto n = dyn_cast<IsNanOp>(user); n && !isNan && n.getResult().hasOneUse())
      isNan = n;
    else
      return {};
  }
  if (!where || !isNan || where.getCondition() != isNan.getResult())
    return {};
  guard.append({isNan, where});
  return where.getResult();
}

// The ops from the product of queries and keys to `scores` (the softmax's input), in program
// order: the matmul, then scales, masks and caps (elementwise ops of which one operand has the
// scores' type), each read by the next only. Empty where the chain is of another form.
SmallVector<Operation *> scoresChainOf(Value scores) {
  SmallVector<Operation *> chain;
  for (Value v = scores; chain.size() < 8;) {
    Operation *op = v.getDefiningOp();
    if (!op || op->getNumResults() != 1 || !v.hasOneUse())
      return {};
    chain.push_back(op);
    if (isa<MatMulOp>(op)) {
      std::reverse(chain.begin(), chain.end());
      return chain;
    }
    if (!isa<AddOp, SubOp, MulOp, DivOp, WhereOp, TanhOp>(op))
      return {};
    Value next;
    for (Value operand : op->getOperands())
      if (operand.getType() == v.getType()) {
        if (next)
          return {}; // two operands of the scores' type: which one is them is not clear
        next = operand;
      }
    if (!next)
      return {};
    v = next;
  }
  return {};
}

} // namespace

int untieSharedProbabilities(func::FuncOp func) {
  SmallVector<SoftmaxOp> softmaxes;
  func.walk([&](SoftmaxOp softmax) { softmaxes.push_back(softmax); });
  int copies = 0;
  for (SoftmaxOp softmax : softmaxes) {
    SmallVector<Operation *> guard;
    Value p = probabilitiesOf(softmax, guard);
    if (!p || p.hasOneUse() || !llvm::all_of(p.getUses(), [](OpOperand &use) {
          return isa<MatMulOp>(use.getOwner()) && use.getOperandNumber() == 0;
        }))
      continue;
    SmallVector<Operation *> chain = scoresChainOf(softmax.getInput());
    if (chain.empty())
      continue;
    chain.push_back(softmax);
    chain.append(guard);
    SmallVector<OpOperand *> readers;
    for (OpOperand &use : p.getUses())
      readers.push_back(&use);
    for (OpOperand *reader : llvm::drop_begin(readers)) {
      OpBuilder b(reader->getOwner());
      IRMapping copy;
      for (Operation *op : chain)
        b.clone(*op, copy);
      reader->set(copy.lookup(p));
      ++copies;
    }
  }
  return copies;
}

} // namespace llmc
