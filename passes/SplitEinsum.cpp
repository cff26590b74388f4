// llmc-split-einsum: an einsum of more operands than `max-operands` becomes a chain of einsums
// of two, left to right, each keeping the labels a later operand or the output still needs.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "Einsum.h"
#include "Tensor.h"
#include "llmc/Dialect/LlmcDialect.h"

#include <algorithm>

namespace llmc {
#define GEN_PASS_DEF_LLMCSPLITEINSUM
#include "Passes.h.inc"

namespace {

constexpr const char *kPass = "llmc-split-einsum";

bool isEllipsisLabel(char c) { return c >= '0' && c <= '9'; }

// A term of an equation from labels as parseEinsum expands them: its run of broadcast labels
// (the digits that count an operand's "..." dimensions from the right) written back as "...".
std::string termOf(const std::string &labels) {
  std::string term;
  bool dotsWritten = false;
  for (char c : labels) {
    if (!isEllipsisLabel(c))
      term += c;
    else if (!dotsWritten)
      term += "...", dotsWritten = true;
  }
  return term;
}

// The labels of the product of two operands (a's, then b's) that `later` names. Every broadcast
// label is kept (summing one early would change no value, but "..." must stay whole): the
// largest of them first, as parseEinsum numbers a "..." of that many dimensions.
std::string keptLabels(const std::string &a, const std::string &b, const std::string &later) {
  char broadcast = '0';
  std::string kept;
  for (char c : a + b) {
    if (isEllipsisLabel(c))
      broadcast = std::max(broadcast, c);
    else if (later.find(c) != std::string::npos && kept.find(c) == std::string::npos)
      kept += c;
  }
  std::string digits;
  for (char c = broadcast; c > '0'; --c)
    digits += c;
  return digits + kept;
}

struct SplitEinsum : impl::LlmcSplitEinsumBase<SplitEinsum> {
  using Base::Base;

  void runOnOperation() override {
    if (maxOperands < 2) {
      getOperation().emitError("llmc-split-einsum: max-operands must be at least 2");
      return signalPassFailure();
    }
    llvm::SmallVector<EinsumOp> wide;
    getOperation().walk([&](EinsumOp op) {
      if (op.getInputs().size() > maxOperands)
        wide.push_back(op);
    });
    RewriteCounter count(kPass, "einsums split into einsums of two operands");
    for (EinsumOp op : wide)
      if (splitOne(op))
        ++count;
  }

  // Replaces `op` by its chain; false (and `op` left as it is, for type inference or the
  // executors to report) when its operands or equation are not ones the chain can be built from,
  // or a product in it would have more dimensions than a plan's values may (rt::kMaxRank).
  static bool splitOne(EinsumOp op) {
    std::vector<int> ranks;
    for (mlir::Value v : op.getInputs()) {
      auto type = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
      if (!type)
        return false;
      ranks.push_back(int(type.getRank()));
    }
    rt::EinsumSpec spec;
    if (!rt::parseEinsum(op.getEquation().str(), ranks, spec).empty())
      return false;
    mlir::OpBuilder b(op);
    llvm::SmallVector<mlir::Operation *> chain;
    mlir::Value acc = op.getInputs()[0];
    std::string accLabels = spec.inputs[0];
    const size_t n = spec.inputs.size();
    for (size_t i = 1; i < n && acc; ++i) {
      std::string later = spec.output;
      for (size_t j = i + 1; j < n; ++j)
        later += spec.inputs[j];
      const std::string out = i + 1 == n ? spec.output : keptLabels(accLabels, spec.inputs[i], later);
      if (out.size() > size_t(rt::kMaxRank)) { // a product a plan cannot hold: the einsum stays whole
        acc = mlir::Value();
        break;
      }
      const std::string equation = termOf(accLabels) + "," + termOf(spec.inputs[i]) + "->" + termOf(out);
      mlir::Operation *step = fusion::create(b, op.getLoc(), "llmc.einsum", {acc, op.getInputs()[i]},
                                             {b.getNamedAttr("equation", b.getStringAttr(equation))});
      acc = step ? step->getResult(0) : mlir::Value();
      if (step)
        chain.push_back(step);
      accLabels = out;
    }
    // A step refused or a product too wide; or (not expected: each step infers its dimensions as
    // the whole einsum did) another result type.
    if (!acc || acc.getType() != op.getType()) {
      for (mlir::Operation *step : llvm::reverse(chain))
        step->erase();
      return false;
    }
    op.getResult().replaceAllUsesWith(acc);
    op.erase();
    return true;
  }
};

} // namespace
} // namespace llmc
