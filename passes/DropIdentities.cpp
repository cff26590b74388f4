// llmc-drop-identities (see Passes.td): ops that hand their input on unchanged.
#include "Passes.h"

#include "llmc/Dialect/LlmcDialect.h"
#include "llmc/Dialect/SymbolicShapes.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace llmc {
#define GEN_PASS_DEF_LLMCDROPIDENTITIES
#include "Passes.h.inc"

namespace {

using namespace mlir;

// A slice whose every result dimension is its input's, for every input size up to the bounds:
// with positive steps it keeps all elements in order. Hugging Face's sliding-window caches slice
// the last `window - 1` keys, which is all of them when the plan's bounds are below the window.
bool keepsEverything(SliceOp slice, const std::optional<SymbolicShapes> &shapes) {
  if (llvm::any_of(slice.getSteps(), [](int64_t s) { return s <= 0; }))
    return false;
  auto in = cast<RankedTensorType>(slice.getInput().getType());
  if (in != slice.getType())
    return false;
  if (in.hasStaticShape())
    return true;
  // (The analysis covers the function's own ops, not those of nested regions.)
  return shapes && isa<func::FuncOp>(slice->getParentOp()) &&
         shapes->shape(slice.getInput()).dims == shapes->shape(slice.getResult()).dims;
}

// The axes of a squeeze or unsqueeze of result or input rank `rank`, non-negative and sorted.
SmallVector<int64_t> normalizedAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes)
    out.push_back(a < 0 ? a + rank : a);
  llvm::sort(out);
  return out;
}

// The value a squeeze hands on unchanged: x where it takes out the axes that an unsqueeze of x
// put in (torch's exports of GPT-OSS's experts view each [N, M] result as [N, 1, M] and back),
// or any size-1 axes where x's static shape comes back; else null.
Value unsqueezedBefore(SqueezeOp squeeze) {
  auto unsqueeze = squeeze.getInput().getDefiningOp<UnsqueezeOp>();
  if (!unsqueeze || squeeze.getAxes().empty())
    return {};
  const int64_t rank = cast<RankedTensorType>(unsqueeze.getType()).getRank();
  // (Views keep the elements' order: a static shape that comes back is the same tensor.)
  const bool sameAxes = normalizedAxes(squeeze.getAxes(), rank) == normalizedAxes(unsqueeze.getAxes(), rank);
  if (unsqueeze.getInput().getType() != squeeze.getType() ||
      !(sameAxes || cast<RankedTensorType>(squeeze.getType()).hasStaticShape()))
    return {};
  return unsqueeze.getInput();
}

struct DropIdentities : impl::LlmcDropIdentitiesBase<DropIdentities> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Symbolic shapes only where a dynamic slice asks for them (the analysis may fail: then
    // such slices stay).
    std::optional<SymbolicShapes> shapes;
    bool dynamicSlice = false;
    func.walk([&](SliceOp s) { dynamicSlice |= !cast<RankedTensorType>(s.getType()).hasStaticShape(); });
    if (dynamicSlice) {
      std::string error;
      if (FailureOr<SymbolicShapes> analyzed = SymbolicShapes::analyze(func, error); succeeded(analyzed))
        shapes = std::move(*analyzed);
    }
    func.walk([&](Operation *op) {
      if (auto squeeze = dyn_cast<SqueezeOp>(op))
        if (Value x = unsqueezedBefore(squeeze)) {
          squeeze.getResult().replaceAllUsesWith(x);
          squeeze->erase(); // (the unsqueeze goes with the dead code, where nothing else reads it)
          return;
        }
      bool drop = isa<IdentityOp>(op);
      if (auto cast = dyn_cast<CastOp>(op))
        drop = cast.getInput().getType() == cast.getType();
      if (auto slice = dyn_cast<SliceOp>(op))
        drop = keepsEverything(slice, shapes);
      if (drop && op->getOperand(0).getType() == op->getResult(0).getType()) {
        op->getResult(0).replaceAllUsesWith(op->getOperand(0));
        op->erase();
      }
    });
  }
};

} // namespace
} // namespace llmc
