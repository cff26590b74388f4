#include "DevicePrecision.h"

#include "Kernels.h"

namespace llmc {
namespace {

class Precision {
public:
  Precision(const std::vector<PrecisionValue> &values, const std::vector<PrecisionOp> &ops, int64_t minWeightElements)
      : values(values), ops(ops), minWeightElements(minWeightElements), pinned(values.size(), false),
        producer(values.size(), -1) {
    for (size_t k = 0; k < ops.size(); ++k) {
      for (int32_t o : ops[k].outputs)
        if (o >= 0)
          producer[size_t(o)] = int32_t(k);
      elementwise.push_back(rt::isElementwiseKernel(ops[k].kernel));
      // (Their CUDA kernels take each float operand and result in its own type.)
      mixedTypes.push_back(elementwise.back() || ops[k].kernel == "matmul");
    }
  }

  std::vector<bool> solve() {
    pinRankedScores();
    for (;;) {
      std::vector<bool> reduced = markReduced();
      if (!unpinConflicts(reduced))
        return reduced;
    }
  }

private:
  bool isF32(int32_t v) const { return v >= 0 && values[size_t(v)].dtype == rt::DType::F32; }
  bool isWeight(int32_t v) const { return values[size_t(v)].weight; }

  // The scores a top_k ranks stay f32, as PyTorch's bf16 DeepSeek-V3.2 computes its indexer's
  // scores from bf16 queries and keys (near ties rounded to bf16 choose other keys), with what
  // computes them back to the nearest op that cannot write f32 from 16-bit operands:
  // elementwise ops, copies and matmuls are followed to their operands. What a kernel cannot
  // take so is given back by unpinConflicts.
  void pinRankedScores() {
    std::vector<int32_t> work;
    for (const PrecisionOp &op : ops)
      if (op.kernel == "top_k" && !op.inputs.empty())
        work.push_back(op.inputs[0]);
    while (!work.empty()) {
      const int32_t v = work.back();
      work.pop_back();
      if (!isF32(v) || isWeight(v) || values[size_t(v)].input || pinned[size_t(v)])
        continue;
      pinned[size_t(v)] = true;
      const int32_t k = producer[size_t(v)];
      if (k < 0)
        continue;
      const PrecisionOp &op = ops[size_t(k)];
      if (mixedTypes[size_t(k)])
        work.insert(work.end(), op.inputs.begin(), op.inputs.end());
      else if (rt::isCopyKernel(op.kernel) && !op.inputs.empty()) // (one storage type on both sides)
        work.push_back(op.inputs[0]);
    }
  }

  // The reduced values (DevicePrecision.h), never a pinned one; ops are in program order.
  std::vector<bool> markReduced() const {
    std::vector<bool> reduced(values.size(), false);
    for (size_t v = 0; v < values.size(); ++v)
      reduced[v] = isF32(int32_t(v)) && !pinned[v] &&
                   (values[v].input || (values[v].weight && values[v].elements >= minWeightElements));
    // Marking only ever turns values on, so this reaches a fixed point.
    for (bool changed = true; changed;) {
      changed = false;
      auto mark = [&](int32_t v) {
        if (isF32(v) && !reduced[size_t(v)] && !pinned[size_t(v)])
          reduced[size_t(v)] = changed = true;
      };
      for (size_t k = 0; k < ops.size(); ++k) {
        const PrecisionOp &op = ops[k];
        bool fromInputs = false;
        for (int32_t i : op.inputs)
          fromInputs |= isF32(i) && reduced[size_t(i)] && !(elementwise[k] && isWeight(i));
        if (fromInputs)
          for (int32_t o : op.outputs)
            mark(o);
        if (elementwise[k])
          continue;
        bool anyOutput = false;
        for (int32_t o : op.outputs)
          anyOutput |= isF32(o) && reduced[size_t(o)];
        if (anyOutput)
          for (int32_t i : op.inputs)
            mark(i);
      }
    }
    return reduced;
  }

  // Unpins the pinned operands of each op that takes one storage type for its float operands and
  // results but was left some pinned and some reduced; false where there is none.
  bool unpinConflicts(const std::vector<bool> &reduced) {
    bool any = false;
    for (size_t k = 0; k < ops.size(); ++k) {
      const PrecisionOp &op = ops[k];
      if (mixedTypes[k])
        continue;
      std::vector<int32_t> operands(op.inputs);
      operands.insert(operands.end(), op.outputs.begin(), op.outputs.end());
      bool somePinned = false, someReduced = false;
      for (int32_t v : operands)
        if (isF32(v))
          somePinned |= pinned[size_t(v)], someReduced |= reduced[size_t(v)];
      if (somePinned && someReduced)
        for (int32_t v : operands)
          if (v >= 0 && pinned[size_t(v)])
            pinned[size_t(v)] = false, any = true;
    }
    return any;
  }

  const std::vector<PrecisionValue> &values;
  const std::vector<PrecisionOp> &ops;
  const int64_t minWeightElements;
  std::vector<bool> pinned;
  std::vector<int32_t> producer; // the op writing each value; -1 for inputs and weights
  std::vector<bool> elementwise, mixedTypes; // per op
};

} // namespace

std::vector<bool> reducedValues(const std::vector<PrecisionValue> &values, const std::vector<PrecisionOp> &ops,
                                int64_t minWeightElements) {
  return Precision(values, ops, minWeightElements).solve();
}

} // namespace llmc
