// Which f32 values of a reduced-precision plan (llmc --precision f16|bf16) the GPU keeps in 16
// bits. Not all of them: positions, angles and masks computed from integer inputs stay f32 (a
// position of 300 is not a bf16 number), as PyTorch computes rotary angles in f32 in a bf16 model.
#pragma once

#include "Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

struct PrecisionValue {
  rt::DType dtype = rt::DType::None;
  bool input = false, weight = false;
  int64_t elements = 0;
};

struct PrecisionOp {
  std::string kernel;
  std::vector<int32_t> inputs, outputs; // -1: an absent input
};

// Per value: true where the value is kept reduced. The reduced values are
//  - f32 graph inputs and f32 weights of at least `minWeightElements` elements (the parameters);
//  - the f32 outputs of an op reading a reduced value: an elementwise op (each of whose inputs may
//    have its own type) when a non-weight input is reduced, any other op when any input is;
//  - every f32 input of a non-elementwise op with a reduced output (its kernels take one storage
//    type for all float operands: a norm's scale, a linear's bias, an attention's mask and
//    rotary tables), to a fixed point;
// but not the scores a top_k ranks, nor what computes them back to the nearest op that cannot
// write f32 from 16-bit operands (elementwise ops, copies and matmuls are followed): PyTorch's
// bf16 DeepSeek-V3.2 computes its indexer's scores in f32 from bf16 queries and keys. Where a
// kernel of one storage type would read or write such a value and a reduced one, it is reduced.
// Ops are in program order.
std::vector<bool> reducedValues(const std::vector<PrecisionValue> &values, const std::vector<PrecisionOp> &ops,
                                int64_t minWeightElements = 1024);

} // namespace llmc
