// llmc-last-position (see Passes.td): named outputs cut to the last sequence position, and the
// cut moved up through the ops that compute each position from that position alone.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "llmc/Dialect/SymbolicShapes.h"

#include "mlir/IR/Builders.h"

#include <limits>
#include <optional>
#include <set>

namespace llmc {
#define GEN_PASS_DEF_LLMCLASTPOSITION
#include "Passes.h.inc"

namespace {

using namespace mlir;

// x[:, -1:]: [B, S, ...] -> [B, 1, ...]. `oneRow`: S is known to be at least 1, so the result type
// can say 1 where S is dynamic.
Value lastPosition(OpBuilder &b, Location loc, Value x, bool oneRow) {
  auto type = fusion::tensorType(x);
  SmallVector<int64_t> shape(type.getShape());
  if (!ShapedType::isDynamic(shape[1]))
    shape[1] = std::min<int64_t>(shape[1], 1);
  else if (oneRow)
    shape[1] = 1;
  OperationState state(loc, "llmc.slice");
  state.addOperands(x);
  state.addAttribute("starts", b.getDenseI64ArrayAttr({-1}));
  state.addAttribute("ends", b.getDenseI64ArrayAttr({std::numeric_limits<int64_t>::max()}));
  state.addAttribute("axes", b.getDenseI64ArrayAttr({1}));
  state.addAttribute("steps", b.getDenseI64ArrayAttr({1}));
  state.addTypes(RankedTensorType::get(shape, type.getElementType()));
  return b.create(state)->getResult(0);
}

// Whether `op` is such a cut (this pass's, or the same slice written otherwise).
bool isLastPosition(Operation *op) {
  if (!op || op->getName().getStringRef() != "llmc.slice")
    return false;
  auto one = [&](StringRef name, int64_t value) {
    auto a = op->getAttrOfType<DenseI64ArrayAttr>(name);
    return a && a.size() == 1 && a[0] == value;
  };
  return one("starts", -1) && one("ends", std::numeric_limits<int64_t>::max()) && one("axes", 1) &&
         (!op->hasAttr("steps") || one("steps", 1));
}

// The operands of `op` that hold its rows, when each position (axis 1) of its first result comes
// from the same position of those operands alone and no other result is read (`sumCut`: an
// add-norm's sum is read, but cut to the last position too); none otherwise.
std::optional<SmallVector<unsigned>> rowOperands(Operation *op, bool sumCut) {
  const int64_t rank = fusion::tensorType(op->getResult(0)).getRank();
  if (rank < 3) // axis 1 must not be the axis the op reduces or contracts
    return std::nullopt;
  auto sameRows = [&](ArrayRef<unsigned> operands) -> std::optional<SmallVector<unsigned>> {
    for (unsigned i : operands)
      if (fusion::tensorType(op->getOperand(i)).getShape() != fusion::tensorType(op->getResult(0)).getShape())
        return std::nullopt;
    return SmallVector<unsigned>(operands);
  };
  auto axis = op->getAttrOfType<IntegerAttr>("axis");
  const bool lastAxis = !axis || axis.getInt() == -1 || axis.getInt() == rank - 1;
  if (auto linear = dyn_cast<LinearOp>(op)) {
    if (!fusion::isEmpty(linear.getGate()) || !fusion::isEmpty(linear.getResidual()) ||
        fusion::tensorType(linear.getInput()).getRank() != rank)
      return std::nullopt;
    return SmallVector<unsigned>{0};
  }
  if (isa<RmsNormOp, LayerNormOp>(op) && lastAxis)
    return sameRows({0});
  if (isa<AddRmsNormOp, AddLayerNormOp>(op) && lastAxis && (sumCut || op->getResult(1).use_empty()))
    return sameRows({0, 1});
  return std::nullopt;
}

struct LastPosition : impl::LlmcLastPositionBase<LastPosition> {
  using impl::LlmcLastPositionBase<LastPosition>::LlmcLastPositionBase;
  RewriteCounter cut{"llmc-last-position", "outputs cut to the last position"};
  RewriteCounter moved{"llmc-last-position", "ops that now compute only the last position"};

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    std::string error;
    FailureOr<SymbolicShapes> shapes = SymbolicShapes::analyze(func, error);
    // Whether axis 1 of `v` (a value from before this pass) is at least 1 for every input size.
    auto atLeastOne = [&](Value v) {
      const int64_t dim = fusion::tensorType(v).getShape()[1];
      if (!ShapedType::isDynamic(dim))
        return dim >= 1;
      return succeeded(shapes) && shapes->atoms().range(shapes->shape(v).dims[1]).lo >= 1;
    };
    Operation *ret = func.getBody().front().getTerminator();
    std::set<std::string> found;
    SmallVector<Value> worklist;
    SmallVector<Type> results(func.getFunctionType().getResults());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "llmc.name");
      if (!name || !llvm::is_contained(outputs, name.str()))
        continue;
      found.insert(name.str());
      Value v = ret->getOperand(i);
      if (fusion::tensorType(v).getRank() < 2) {
        func.emitError() << "--last-position: output '" << name.str() << "' is " << v.getType()
                         << ", not [batch, seq, ...]";
        return signalPassFailure();
      }
      OpBuilder b(ret);
      Value last = lastPosition(b, ret->getLoc(), v, atLeastOne(v));
      ret->setOperand(i, last);
      results[i] = last.getType();
      worklist.push_back(last);
      ++cut;
    }
    for (const std::string &name : outputs)
      if (!found.count(name)) {
        func.emitError() << "--last-position: the model has no output named '" << name << "'";
        return signalPassFailure();
      }
    func.setType(FunctionType::get(func.getContext(), func.getFunctionType().getInputs(), results));
    while (!worklist.empty())
      moveAbove(worklist.pop_back_val().getDefiningOp(), atLeastOne, worklist);
  }

  // slice(op(rows)) -> op(slice(rows)), when the op computes each position alone and the slice
  // is its only reader; the new slices go on the worklist. An add-norm whose result and sum are
  // each cut (a decoder's last layer: the normed rows feed its MLP, the sum the residual after
  // it) has both cuts moved above it together, so that the norm stays right before its linear.
  template <typename Known>
  void moveAbove(Operation *slice, Known &atLeastOne, SmallVector<Value> &worklist) {
    Value v = slice->getOperand(0);
    Operation *op = v.getDefiningOp();
    if (!op || !v.hasOneUse())
      return;
    Operation *sibling = nullptr; // the other result's cut
    if (isa<AddRmsNormOp, AddLayerNormOp>(op)) {
      Value other = op->getResult(v == op->getResult(0) ? 1 : 0);
      if (!other.use_empty()) {
        if (!other.hasOneUse() || !isLastPosition(*other.getUsers().begin()))
          return;
        sibling = *other.getUsers().begin();
      }
    }
    if (v != op->getResult(0) && !sibling)
      return;
    std::optional<SmallVector<unsigned>> rows = rowOperands(op, sibling != nullptr);
    if (!rows)
      return;
    OpBuilder b(op);
    SmallVector<Value> operands(op->getOperands()), made;
    for (unsigned i : *rows) {
      operands[i] = lastPosition(b, op->getLoc(), operands[i], atLeastOne(operands[i]));
      made.push_back(operands[i]);
    }
    Operation *fresh = fusion::create(b, op->getLoc(), op->getName().getStringRef(), operands, op->getAttrs());
    // The cut of each result of op (none where a result is not read).
    SmallVector<Operation *, 2> cuts(op->getNumResults(), nullptr);
    cuts[cast<OpResult>(v).getResultNumber()] = slice;
    if (sibling)
      cuts[cast<OpResult>(sibling->getOperand(0)).getResultNumber()] = sibling;
    bool fits = fresh && fresh->getNumResults() == op->getNumResults();
    for (unsigned r = 0; fits && r < cuts.size(); ++r)
      fits = !cuts[r] || fresh->getResult(r).getType() == cuts[r]->getResult(0).getType();
    if (!fits) {
      if (fresh)
        fresh->erase();
      for (Value m : made)
        m.getDefiningOp()->erase();
      return;
    }
    for (unsigned r = 0; r < cuts.size(); ++r)
      if (cuts[r])
        cuts[r]->getResult(0).replaceAllUsesWith(fresh->getResult(r));
    if (sibling) {
      llvm::erase(worklist, sibling->getResult(0)); // it may still wait its turn
      sibling->erase();
    }
    slice->erase();
    op->erase();
    ++moved;
    worklist.append(made.begin(), made.end());
  }
};

} // namespace
} // namespace llmc
