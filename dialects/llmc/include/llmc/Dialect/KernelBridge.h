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
// The same, its bytes written by `fill` straight into the attribute's storage when large (no
// copy of a weight that may be gigabytes).
mlir::ElementsAttr makeElements(mlir::RankedTensorType type, size_t bytes,
                                llvm::function_ref<void(llvm::MutableArrayRef<char>)> fill);

// Frees the bytes of `value`, the attribute of a large constant that a pass replaced and erased
// in `scope` (its function), when no op there holds it any more: they would stay allocated until
// the compiler exits, and a model's weights are gigabytes. Only in a module of one function
// (function passes may run in parallel on several).
void releaseUnusedElements(mlir::Operation *scope, mlir::Attribute value);

} // namespace llmc
