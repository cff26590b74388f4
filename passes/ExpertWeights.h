// The experts' matrices in the layout llmc.expert_linear reads, shared by llmc-fuse-linear's
// expert patterns (FuseLinear.cpp, DenseExperts.cpp).
#pragma once

#include "RewriteStats.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"

namespace llmc {

// The [E, M, K] bytes of each [E, K, M] expert weight that a pattern turned, by the weight's
// attribute (uniqued: never dangling), so that every use of a weight shares one (CSE merges the
// constants) and the pass can release the old bytes once nothing reads them.
using TransposedWeights = llvm::DenseMap<mlir::Attribute, mlir::ElementsAttr>;

// The [E, M, K] layout of a constant [E, K, M] of a fused float type (each expert's matrix on the
// right of its rows: GPT-OSS's and Llama 4's), made once per weight.
mlir::ElementsAttr turnedExperts(mlir::Value w, TransposedWeights &transposed);

// Llama 4's experts as transformers computes them, every expert on every token, turned into
// llmc.expert_linear on the tokens' chosen experts (DenseExperts.cpp).
void addDenseExpertPatterns(mlir::RewritePatternSet &patterns, RewriteCounter &count, TransposedWeights &transposed);

} // namespace llmc
