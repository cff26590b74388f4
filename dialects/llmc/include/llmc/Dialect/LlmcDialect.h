// The llmc dialect: ops, plus the two hooks every op dispatches to.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace llmc {

// Infers the result types of the op named `opName` (TypeInference.cpp). Emits an error at
// `location` (when given) and fails on operands the op does not accept.
llvm::LogicalResult inferResultTypes(llvm::StringRef opName, mlir::MLIRContext *context,
                                     std::optional<mlir::Location> location, mlir::ValueRange operands,
                                     mlir::DictionaryAttr attributes,
                                     llvm::SmallVectorImpl<mlir::Type> &inferred);

// Same element types and shapes that agree wherever both are static.
bool areCompatibleTypes(mlir::TypeRange lhs, mlir::TypeRange rhs);

// Folds an op whose operands are all constants by running its CPU kernel (ConstantFolding.cpp).
llvm::LogicalResult foldWithKernels(mlir::Operation *op, llvm::ArrayRef<mlir::Attribute> operands,
                                    llvm::SmallVectorImpl<mlir::OpFoldResult> &results);
mlir::OpFoldResult foldSingleResult(mlir::Operation *op, llvm::ArrayRef<mlir::Attribute> operands);

// The integer values of `v` when a constant defines it (bools as 0/1), else nullopt. Shape
// inference and the importer read constant shapes, axes and sizes through it.
std::optional<llvm::SmallVector<int64_t>> constantInts(mlir::Value v);

// The element types of the fused kernels (linear, the residual norms, fused_attention, rotary):
// f32, f16 and bf16. Their type inference refuses any other, and the raising and fusion passes
// leave a model in doubles unfused, so that it computes in doubles.
inline bool isFusedFloatType(mlir::Type t) {
  return mlir::isa<mlir::Float32Type, mlir::Float16Type, mlir::BFloat16Type>(t);
}

// Limit on the elements of a folded result; larger results stay computed at run time.
inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;

} // namespace llmc

#include "llmc/Dialect/LlmcDialect.h.inc"

#define GET_OP_CLASSES
#include "llmc/Dialect/LlmcOps.h.inc"
