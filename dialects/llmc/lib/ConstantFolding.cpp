// Folds any llmc op whose operands are all constants by running the runtime's CPU kernel for
// it: one implementation of each op's semantics serves compile time and run time.
#include "Kernels.h"
#include "llmc/Dialect/KernelBridge.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace llmc {

LogicalResult foldWithKernels(Operation *op, ArrayRef<Attribute> operands, SmallVectorImpl<OpFoldResult> &results) {
  rt::KernelFn kernel = rt::findKernel(op->getName().stripDialect());
  if (!kernel)
    return failure();
  int64_t total = 0;
  SmallVector<RankedTensorType> resultTypes;
  for (Type t : op->getResultTypes()) {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt || !rt.hasStaticShape() || toKernelDType(rt.getElementType()) == rt::DType::None)
      return failure();
    total += rt.getNumElements();
    resultTypes.push_back(rt);
  }
  if (total > kMaxFoldedElements)
    return failure();
  std::vector<std::vector<char>> storage(operands.size());
  std::vector<rt::TensorRef> inputs(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    auto attr = dyn_cast_or_null<ElementsAttr>(operands[i]);
    if (!attr)
      return failure();
    auto type = cast<RankedTensorType>(attr.getType());
    if (type.getRank() > rt::kMaxRank)
      return failure();
    auto bytes = elementsBytes(attr, storage[i]);
    if (failed(bytes))
      return failure();
    rt::TensorRef &t = inputs[i];
    t.dtype = toKernelDType(type.getElementType());
    t.shape.rank = int(type.getRank());
    for (int d = 0; d < t.shape.rank; ++d)
      t.shape.dims[d] = type.getDimSize(d);
    t.data = const_cast<char *>(bytes->data());
  }
  std::vector<std::vector<char>> outBytes(resultTypes.size());
  std::vector<rt::TensorRef> outputs(resultTypes.size());
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    rt::TensorRef &t = outputs[i];
    t.dtype = toKernelDType(resultTypes[i].getElementType());
    if (resultTypes[i].getRank() > rt::kMaxRank)
      return failure();
    t.shape.rank = int(resultTypes[i].getRank());
    for (int d = 0; d < t.shape.rank; ++d)
      t.shape.dims[d] = resultTypes[i].getDimSize(d);
    outBytes[i].resize(std::max<size_t>(t.bytes(), 1));
    t.data = outBytes[i].data();
  }
  rt::AttrList attrs = toKernelAttrs(op);
  rt::KernelArgs args{attrs, inputs.data(), int(inputs.size()), outputs.data(), int(outputs.size())};
  if (!kernel(args).empty())
    return failure(); // left for run time, where the error is reported with its inputs
  for (size_t i = 0; i < resultTypes.size(); ++i)
    results.push_back(makeElements(resultTypes[i], ArrayRef<char>(outBytes[i].data(), outputs[i].bytes())));
  return success();
}

OpFoldResult foldSingleResult(Operation *op, ArrayRef<Attribute> operands) {
  // Structural folds that need no constant data.
  StringRef name = op->getName().stripDialect();
  Value input = op->getNumOperands() ? op->getOperand(0) : Value();
  if ((name == "identity" || name == "reshape" || name == "expand" || name == "squeeze" || name == "unsqueeze" ||
       name == "flatten" || name == "cast") &&
      input && input.getType() == op->getResult(0).getType() && cast<RankedTensorType>(input.getType()).hasStaticShape())
    return input;
  // transpose(transpose(x)) whose permutations cancel is x (layout converters leave such pairs).
  if (name == "transpose" && input && input.getDefiningOp() &&
      input.getDefiningOp()->getName().getStringRef() == "llmc.transpose") {
    Operation *inner = input.getDefiningOp();
    auto outer = op->getAttrOfType<DenseI64ArrayAttr>("perm");
    auto first = inner->getAttrOfType<DenseI64ArrayAttr>("perm");
    Value source = inner->getOperand(0);
    if (outer && first && outer.size() == first.size() && source.getType() == op->getResult(0).getType()) {
      bool identity = true;
      for (int64_t i = 0; i < outer.size(); ++i)
        identity = identity && first[outer[i]] == i;
      if (identity)
        return source;
    }
  }
  if (name == "shape") {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    auto inType = cast<RankedTensorType>(input.getType());
    if (type.hasStaticShape()) {
      int64_t rank = inType.getRank();
      int64_t start = 0, end = rank;
      if (auto a = op->getAttrOfType<IntegerAttr>("start"))
        start = a.getInt();
      if (auto a = op->getAttrOfType<IntegerAttr>("end"))
        end = a.getInt();
      start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
      end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
      SmallVector<int64_t> dims;
      for (int64_t d = start; d < end; ++d) {
        if (inType.isDynamicDim(d))
          return {};
        dims.push_back(inType.getDimSize(d));
      }
      return DenseElementsAttr::get(type, ArrayRef<int64_t>(dims));
    }
  }
  SmallVector<OpFoldResult> results;
  if (failed(foldWithKernels(op, operands, results)))
    return {};
  return results.front();
}

} // namespace llmc
