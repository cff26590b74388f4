// llmc-fuse-elementwise: groups of float/bool elementwise ops become one llmc.fused_elementwise
// whose region computes one element (the CPU executor interprets it in one pass over memory;
// the CUDA backend will generate a kernel from it).
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFUSEELEMENTWISE
#include "Passes.h.inc"

namespace {

using namespace mlir;

bool fusableType(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type)
    return false;
  Type e = type.getElementType();
  return e.isF32() || e.isF16() || e.isInteger(1);
}

bool isFusable(Operation &op) {
  static const llvm::StringSet<> names = {
      "add", "sub", "mul", "div", "pow", "max", "min", "equal", "less", "less_equal", "greater", "greater_equal",
      "and", "or", "xor", "where", "neg", "abs", "sqrt", "reciprocal", "exp", "log", "tanh", "erf", "sigmoid",
      "silu", "relu", "cos", "sin", "floor", "ceil", "sign", "softplus", "round", "not", "is_nan", "gelu",
      "leaky_relu", "elu", "hard_sigmoid", "hard_swish", "identity", "cast"};
  if (!isa<LlmcDialect>(op.getDialect()) || op.getNumResults() != 1 || !names.contains(op.getName().stripDialect()))
    return false;
  if (isa<FusedElementwiseOp>(op.getParentOp()))
    return false;
  for (Value v : op.getOperands())
    if (!fusableType(v.getType()))
      return false;
  return fusableType(op.getResult(0).getType());
}

bool isScalarConstant(Value v) {
  auto c = fusion::def<ConstantOp>(v);
  return c && isa<DenseElementsAttr>(c.getValue()) && fusion::tensorType(v).hasStaticShape() &&
         fusion::tensorType(v).getNumElements() == 1;
}

struct FuseElementwise : impl::LlmcFuseElementwiseBase<FuseElementwise> {
  RewriteCounter groups{"llmc-fuse-elementwise", "fused_elementwise ops created"};
  RewriteCounter fusedOps{"llmc-fuse-elementwise", "elementwise ops fused"};
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    llvm::DenseSet<Operation *> grouped;
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      Operation *root = *it;
      if (grouped.contains(root) || !isFusable(*root))
        continue;
      // Grow towards producers whose every use is already in the group.
      llvm::SetVector<Operation *> group;
      group.insert(root);
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < group.size(); ++i)
          for (Value operand : group[i]->getOperands()) {
            Operation *producer = operand.getDefiningOp();
            if (!producer || group.contains(producer) || grouped.contains(producer) || !isFusable(*producer) ||
                producer->getBlock() != root->getBlock())
              continue;
            if (llvm::all_of(producer->getUsers(), [&](Operation *u) { return group.contains(u); })) {
              group.insert(producer);
              grew = true;
            }
          }
      }
      if (group.size() < 2)
        continue;
      build(root, group);
      for (Operation *op : group)
        grouped.insert(op);
    }
    // The group's ops are dead now.
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      if (grouped.contains(*it) && (*it)->use_empty())
        (*it)->erase();
  }

  void build(Operation *root, const llvm::SetVector<Operation *> &group) {
    SmallVector<Operation *> order(group.begin(), group.end());
    llvm::sort(order, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::SetVector<Value> inputs;
    for (Operation *op : order)
      for (Value v : op->getOperands())
        if (!group.contains(v.getDefiningOp()) && !isScalarConstant(v))
          inputs.insert(v);
    OpBuilder b(root);
    auto fused = FusedElementwiseOp::create(b, root->getLoc(), root->getResultTypes(), inputs.getArrayRef());
    Block *body = new Block();
    fused.getBody().push_back(body);
    IRMapping map;
    for (Value v : inputs)
      map.map(v, body->addArgument(RankedTensorType::get({}, fusion::tensorType(v).getElementType()), v.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    for (Operation *op : order) {
      SmallVector<Value> operands;
      for (Value v : op->getOperands()) {
        if (!map.contains(v)) { // a scalar constant, copied into the region
          auto attr = cast<DenseElementsAttr>(cast<ConstantOp>(v.getDefiningOp()).getValue());
          auto type = RankedTensorType::get({}, attr.getElementType());
          map.map(v, ConstantOp::create(inner, v.getLoc(), type, attr.reshape(type)));
        }
        operands.push_back(map.lookup(v));
      }
      SmallVector<NamedAttribute> attrs(op->getAttrs());
      Operation *clone = fusion::create(inner, op->getLoc(), op->getName().getStringRef(), operands, attrs);
      map.map(op->getResult(0), clone->getResult(0));
      ++fusedOps;
    }
    YieldOp::create(inner, root->getLoc(), ValueRange{map.lookup(root->getResult(0))});
    root->getResult(0).replaceAllUsesWith(fused.getResult(0));
    ++groups;
  }
};

} // namespace
} // namespace llmc
