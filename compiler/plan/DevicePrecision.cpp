#include "DevicePrecision.h"

#include "Kernels.h"

namespace llmc {

std::vector<bool> reducedValues(const std::vector<PrecisionValue> &values, const std::vector<PrecisionOp> &ops,
                                int64_t minWeightElements) {
  std::vector<bool> reduced(values.size(), false);
  auto isF32 = [&](int32_t v) { return v >= 0 && values[size_t(v)].dtype == rt::DType::F32; };
  for (size_t v = 0; v < values.size(); ++v)
    reduced[v] = isF32(int32_t(v)) &&
                 (values[v].input || (values[v].weight && values[v].elements >= minWeightElements));
  std::vector<bool> elementwise;
  for (const PrecisionOp &op : ops)
    elementwise.push_back(rt::isElementwiseKernel(op.kernel));
  // Marking only ever turns values on, so this reaches a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    auto mark = [&](int32_t v) {
      if (isF32(v) && !reduced[size_t(v)])
        reduced[size_t(v)] = changed = true;
    };
    for (size_t k = 0; k < ops.size(); ++k) {
      const PrecisionOp &op = ops[k];
      bool fromInputs = false;
      for (int32_t i : op.inputs)
        fromInputs |= isF32(i) && reduced[size_t(i)] && !(elementwise[k] && values[size_t(i)].weight);
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

} // namespace llmc
