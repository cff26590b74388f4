// Conversions between MLIR and the runtime's kernel types, shared by the constant folder and
// the plan emitter.
#pragma once

#include "Attrs.h"
#include "Tensor.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Operation.h"

#include <vector>

namespace llmc {

// DType::None for element types the runtime does not have.
rt::DType toKernelDType(mlir::Type elementType);

// The op's attributes (all are inherent and live in the dictionary) as kernel attributes.
// Type attributes become the integer DType of the type.
rt::AttrList toKernelAttrs(mlir::Operation *op);

// The bytes of `attr` in kernel layout (row major, bool as one byte, splats expanded). Points
// at the attribute's own storage where possible, else into `storage`. Fails for element types
// the runtime does not have.
mlir::FailureOr<llvm::ArrayRef<char>> elementsBytes(mlir::ElementsAttr attr, std::vector<char> &storage);

// An elements attribute holding `bytes` (kernel layout) of `type`: a dense attribute when small,
// a heap-backed dense_resource otherwise, so that large folded tensors never become IR text.
mlir::ElementsAttr makeElements(mlir::RankedTensorType type, llvm::ArrayRef<char> bytes);

} // namespace llmc
