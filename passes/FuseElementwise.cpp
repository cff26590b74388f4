// llmc-fuse-elementwise: groups of float/bool elementwise ops become one llmc.fused_elementwise
// whose region computes one element (the CPU executor interprets it in one pass over memory;
// the CUDA backend generates a kernel from it). A group grows from its last op towards the
// producers that only the group reads; where a producer's other readers are elementwise ops of
// the same shape (the sin and cos of one angle), they join as more results of the same region,
// each with the chain of its sole elementwise readers (cos(angle) * scale).
// Casts of integers to floats join too (position ids into rotary angles). Before grouping, an
// elementwise op on a concatenation of one value with itself (cos(concat(x, x)), the rotary
// tables of a Hugging Face export) becomes the concatenation of that op on the value, which the
// value's other readers may already compute.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "llmc/Dialect/SymbolicShapes.h"
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
  return e.isF32() || e.isF16() || e.isBF16() || e.isInteger(1);
}

// An integer tensor that a cast turns into floats: its region argument holds the integer.
bool castFromInteger(Operation &op, Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return op.getName().stripDialect() == "cast" && type &&
         (type.getElementType().isInteger(64) || type.getElementType().isInteger(32));
}

bool isElementwise(Operation &op) {
  static const llvm::StringSet<> names = {
      "add", "sub", "mul", "div", "pow", "max", "min", "equal", "less", "less_equal", "greater", "greater_equal",
      "and", "or", "xor", "where", "neg", "abs", "sqrt", "reciprocal", "exp", "log", "tanh", "erf", "sigmoid",
      "silu", "relu", "cos", "sin", "floor", "ceil", "sign", "softplus", "round", "not", "is_nan", "gelu",
      "leaky_relu", "elu", "hard_sigmoid", "hard_swish", "identity", "cast"};
  return isa<LlmcDialect>(op.getDialect()) && op.getNumResults() == 1 && names.contains(op.getName().stripDialect()) &&
         !isa<FusedElementwiseOp>(op.getParentOp());
}

bool isFusable(Operation &op) {
  if (!isElementwise(op))
    return false;
  for (Value v : op.getOperands())
    if (!fusableType(v.getType()) && !castFromInteger(op, v))
      return false;
  return fusableType(op.getResult(0).getType());
}

// unary(concat(x, x, ...)) -> concat(unary(x), unary(x), ...), reusing an identical unary(x)
// that x's readers have: the rotary tables of a Hugging Face export take cos and sin of the
// angles concatenated with themselves, next to (after llmc-raise-attention) cos and sin of the
// angles alone. Returns the ops it rewrote.
int distributeOverRepeats(func::FuncOp func) {
  int rewritten = 0;
  SmallVector<Operation *> unaries;
  func.walk([&](Operation *op) {
    auto concat = op->getNumOperands() == 1 ? fusion::def<ConcatOp>(op->getOperand(0)) : ConcatOp();
    if (concat && isFusable(*op) && op->getBlock() == concat->getBlock() &&
        llvm::all_equal(concat->getOperands()) && fusableType(concat->getOperand(0).getType()))
      unaries.push_back(op);
  });
  for (Operation *op : unaries) {
    auto concat = cast<ConcatOp>(op->getOperand(0).getDefiningOp());
    Value x = concat->getOperand(0);
    Operation *same = nullptr; // unary(x) already, before `op`
    for (Operation *user : x.getUsers())
      if (user != op && user->getName() == op->getName() && user->getAttrDictionary() == op->getAttrDictionary() &&
          user->getBlock() == op->getBlock() && user->isBeforeInBlock(op))
        same = same && same->isBeforeInBlock(user) ? same : user;
    // The piece goes where the concatenation is, the joined concatenation where `op` is: the
    // pieces of one value (its cos and sin) then come before either concatenation reads them,
    // so that they can share one region (an outer reader between them would keep them apart).
    OpBuilder atConcat(concat), b(op);
    Value piece = same ? same->getResult(0)
                       : fusion::createValue(atConcat, op->getLoc(), op->getName().getStringRef(), ValueRange{x},
                                             SmallVector<NamedAttribute>(op->getAttrs()));
    Value joined = piece ? fusion::createValue(b, op->getLoc(), concat->getName().getStringRef(),
                                               SmallVector<Value>(concat->getNumOperands(), piece),
                                               SmallVector<NamedAttribute>(concat->getAttrs()))
                         : Value();
    if (!joined || joined.getType() != op->getResult(0).getType()) {
      for (Value made : {joined, same ? Value() : piece})
        if (made)
          made.getDefiningOp()->erase();
      continue;
    }
    op->getResult(0).replaceAllUsesWith(joined);
    op->erase();
    if (concat->use_empty())
      concat->erase();
    ++rewritten;
  }
  return rewritten;
}

bool isScalarConstant(Value v) {
  auto c = fusion::def<ConstantOp>(v);
  return c && isa<DenseElementsAttr>(c.getValue()) && fusion::tensorType(v).hasStaticShape() &&
         fusion::tensorType(v).getNumElements() == 1;
}

// Whether `ops` can be one region with `results` as its results: nothing outside the group reads
// a result before the last of the ops, where the fused op takes their place (then no outside op
// lies between two of the group's ops on a path, and the fused op's inputs are all defined
// before it).
bool fitsOneRegion(const llvm::SetVector<Operation *> &ops, ArrayRef<Operation *> results) {
  Operation *last = results.front();
  for (Operation *op : ops)
    if (last->isBeforeInBlock(op))
      last = op;
  for (Operation *r : results)
    for (Operation *user : r->getUsers())
      if (!ops.contains(user) && !last->isBeforeInBlock(user))
        return false;
  return true;
}

struct FuseElementwise : impl::LlmcFuseElementwiseBase<FuseElementwise> {
  RewriteCounter groups{"llmc-fuse-elementwise", "fused_elementwise ops created"};
  RewriteCounter fusedOps{"llmc-fuse-elementwise", "elementwise ops fused"};
  RewriteCounter siblings{"llmc-fuse-elementwise", "extra results (readers of a shared producer)"};
  RewriteCounter distributed{"llmc-fuse-elementwise", "ops moved in front of a concatenation of one value"};
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    distributed += distributeOverRepeats(func);
    // One op per distinct value first (the per-layer copies of a rotary table's cos and sin):
    // a region computes it once, and has one result for it.
    IRRewriter rewriter(func.getContext());
    DominanceInfo dominance(func);
    eliminateCommonSubExpressions(rewriter, dominance, func);
    // Results of one region share one shape: a dynamic one too, symbol for symbol.
    std::string error;
    const FailureOr<SymbolicShapes> shapes = SymbolicShapes::analyze(func, error);
    auto sameShape = [&](Value a, Value b) {
      if (a.getType() != b.getType())
        return false;
      if (fusion::tensorType(a).hasStaticShape())
        return true;
      return succeeded(shapes) && shapes->shape(a).dims == shapes->shape(b).dims;
    };
    llvm::DenseSet<Operation *> grouped;
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      Operation *root = *it;
      if (grouped.contains(root) || !isFusable(*root))
        continue;
      // Grow towards producers whose every reader is in the group, or is an elementwise op of
      // the root's shape that can join it as another result.
      llvm::SetVector<Operation *> group;
      SmallVector<Operation *> results = {root};
      group.insert(root);
      auto joins = [&](Operation *user) {
        return group.contains(user) || (!grouped.contains(user) && isFusable(*user) &&
                                        user->getBlock() == root->getBlock() &&
                                        sameShape(user->getResult(0), root->getResult(0)));
      };
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < group.size(); ++i)
          for (Value operand : group[i]->getOperands()) {
            Operation *producer = operand.getDefiningOp();
            if (!producer || group.contains(producer) || grouped.contains(producer) || !isFusable(*producer) ||
                producer->getBlock() != root->getBlock() || !llvm::all_of(producer->getUsers(), joins))
              continue;
            llvm::SetVector<Operation *> wider = group;
            SmallVector<Operation *> widerResults = results;
            wider.insert(producer);
            for (Operation *user : producer->getUsers()) {
              if (!wider.insert(user))
                continue;
              // A joining reader brings its chain of sole elementwise readers of the same shape
              // (GPT-OSS's cos(angle) * scale beside sin(angle) * scale): the chain's end is the
              // result, where the reader alone would be one whose reader needs its own kernel.
              Operation *tail = user;
              while (tail->getResult(0).hasOneUse()) {
                Operation *next = *tail->getUsers().begin();
                if (wider.contains(next) || !joins(next))
                  break;
                wider.insert(next);
                tail = next;
              }
              widerResults.push_back(tail);
            }
            if (!fitsOneRegion(wider, widerResults))
              continue;
            group = std::move(wider), results = std::move(widerResults);
            grew = true;
          }
      }
      if (group.size() < 2)
        continue;
      build(group, results);
      for (Operation *op : group)
        grouped.insert(op);
    }
    // The group's ops are dead now.
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      if (grouped.contains(*it) && (*it)->use_empty())
        (*it)->erase();
  }

  void build(const llvm::SetVector<Operation *> &group, SmallVector<Operation *> results) {
    SmallVector<Operation *> order(group.begin(), group.end());
    llvm::sort(order, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::sort(results, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::SetVector<Value> inputs;
    for (Operation *op : order)
      for (Value v : op->getOperands())
        if (!group.contains(v.getDefiningOp()) && !isScalarConstant(v))
          inputs.insert(v);
    OpBuilder b(order.back()); // the last of the group: every input is defined before it
    SmallVector<Type> types;
    for (Operation *r : results)
      types.push_back(r->getResult(0).getType());
    auto fused = FusedElementwiseOp::create(b, order.back()->getLoc(), types, inputs.getArrayRef());
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
    SmallVector<Value> yielded;
    for (Operation *r : results)
      yielded.push_back(map.lookup(r->getResult(0)));
    YieldOp::create(inner, order.back()->getLoc(), yielded);
    for (auto [r, result] : llvm::zip(results, fused.getResults()))
      r->getResult(0).replaceAllUsesWith(result);
    ++groups;
    siblings += int(results.size()) - 1;
  }
};

} // namespace
} // namespace llmc
