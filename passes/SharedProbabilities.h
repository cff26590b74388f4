// Attention probabilities that several weighted sums read, given one chain each, so that
// llmc-raise-attention raises each as an attention (SharedProbabilities.cpp).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace llmc {

// Where softmax(scores) (or its NaN guard, where(is_nan(p), 0, p)) is the left operand of several
// matmuls and nothing else, each matmul after the first gets its own copy of the chain from the
// product of the queries and keys to the probabilities (DiffLlama: its two attention calls share
// queries, keys and mask and differ in their values, and CSE merged their probabilities). Returns
// the number of copies made.
int untieSharedProbabilities(mlir::func::FuncOp func);

} // namespace llmc
