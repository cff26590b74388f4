// Attention sinks applied as a scale of the attention's output, rewritten into the form
// llmc-raise-attention raises (ScaledSinks.cpp).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace llmc {

// Rewrites every matmul(softmax(S), V) * unsqueeze(sigmoid(logsumexp(S) - sinks), -1) into
// matmul(slice(softmax(concat(S, sink column)), keys), V) (Granite SWA's attention sinks).
void sinksOfScaledOutputs(mlir::func::FuncOp func);

} // namespace llmc
