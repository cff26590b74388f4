#include "llmc/Dialect/KernelBridge.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace llmc {

rt::DType toKernelDType(Type t) {
  if (t.isF32())
    return rt::DType::F32;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isF64())
    return rt::DType::F64;
  if (t.isInteger(1))
    return rt::DType::Bool;
  if (auto i = dyn_cast<IntegerType>(t)) {
    if (i.getWidth() == 64 && !i.isUnsigned())
      return rt::DType::I64;
    if (i.getWidth() == 32 && !i.isUnsigned())
      return rt::DType::I32;
    if (i.getWidth() == 8)
      return i.isUnsigned() ? rt::DType::U8 : rt::DType::I8;
  }
  return rt::DType::None;
}

namespace {
// A fused_elementwise region as the instruction list its kernel runs (see
// runtime/kernels/FusedElementwise.cpp): op names, operand registers, parameters, results.
rt::AttrList fusedRegionAttrs(FusedElementwiseOp op) {
  Block &body = op.getBody().front();
  llvm::DenseMap<Value, int64_t> reg;
  for (BlockArgument arg : body.getArguments())
    reg[arg] = int64_t(arg.getArgNumber());
  rt::Attr names{"ops", rt::Attr::Kind::String}, operands{"operands", rt::Attr::Kind::Ints},
      params{"params", rt::Attr::Kind::Floats}, results{"results", rt::Attr::Kind::Ints};
  int64_t next = int64_t(body.getNumArguments());
  for (Operation &inner : body.without_terminator()) {
    std::string name = inner.getName().stripDialect().str();
    double p0 = 0, p1 = 0;
    if (auto c = dyn_cast<ConstantOp>(inner)) {
      auto value = cast<DenseElementsAttr>(c.getValue());
      Type t = value.getElementType();
      p0 = isa<FloatType>(t) ? (*value.getValues<APFloat>().begin()).convertToDouble()
                             : double((*value.getValues<APInt>().begin()).getSExtValue());
      if (t.isInteger(1))
        p0 = double((*value.getValues<APInt>().begin()).getZExtValue());
    } else if (name == "cast") {
      p0 = double(int(toKernelDType(cast<RankedTensorType>(inner.getResult(0).getType()).getElementType())));
    } else if (name == "gelu") {
      auto approximate = inner.getAttrOfType<StringAttr>("approximate");
      if (approximate && approximate.getValue() == "tanh")
        name = "gelu_tanh";
    }
    if (auto alpha = inner.getAttrOfType<FloatAttr>("alpha"))
      p0 = alpha.getValueAsDouble();
    if (auto beta = inner.getAttrOfType<FloatAttr>("beta"))
      p1 = beta.getValueAsDouble();
    names.s += (names.s.empty() ? "" : ";") + name;
    for (unsigned i = 0; i < 3; ++i)
      operands.ints.push_back(i < inner.getNumOperands() ? reg.lookup(inner.getOperand(i)) : -1);
    params.floats.push_back(p0);
    params.floats.push_back(p1);
    reg[inner.getResult(0)] = next++;
  }
  for (Value v : body.getTerminator()->getOperands())
    results.ints.push_back(reg.lookup(v));
  rt::AttrList list;
  for (rt::Attr *a : {&names, &operands, &params, &results})
    list.add(std::move(*a));
  return list;
}
} // namespace

rt::AttrList toKernelAttrs(Operation *op) {
  if (auto fused = dyn_cast<FusedElementwiseOp>(op))
    return fusedRegionAttrs(fused);
  rt::AttrList list;
  for (NamedAttribute named : op->getAttrs()) {
    rt::Attr a;
    a.name = named.getName().str();
    if (a.name.rfind("llmc.", 0) == 0)
      continue; // a compiler annotation (llmc.graph_segment), not a kernel attribute
    Attribute v = named.getValue();
    if (auto i = dyn_cast<IntegerAttr>(v)) {
      a.kind = rt::Attr::Kind::Int;
      a.i = i.getType().isInteger(1) ? int64_t(i.getValue().getZExtValue()) : i.getInt();
    } else if (auto f = dyn_cast<FloatAttr>(v)) {
      a.kind = rt::Attr::Kind::Float;
      a.f = f.getValueAsDouble();
    } else if (auto arr = dyn_cast<DenseI64ArrayAttr>(v)) {
      a.kind = rt::Attr::Kind::Ints;
      a.ints.assign(arr.asArrayRef().begin(), arr.asArrayRef().end());
    } else if (auto s = dyn_cast<StringAttr>(v)) {
      a.kind = rt::Attr::Kind::String;
      a.s = s.str();
    } else if (auto t = dyn_cast<TypeAttr>(v)) {
      a.kind = rt::Attr::Kind::Int;
      a.i = int64_t(toKernelDType(t.getValue()));
    } else {
      continue; // e.g. a constant's value: not a kernel attribute
    }
    list.add(std::move(a));
  }
  return list;
}

FailureOr<ArrayRef<char>> elementsBytes(ElementsAttr attr, std::vector<char> &storage) {
  auto type = cast<ShapedType>(attr.getType());
  Type elem = type.getElementType();
  rt::DType dtype = toKernelDType(elem);
  if (dtype == rt::DType::None)
    return failure();
  const size_t n = size_t(type.getNumElements()), size = rt::dtypeSize(dtype);
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    const AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != n * size)
      return failure();
    return blob->getData();
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return failure();
  if (!dense.isSplat() && dtype != rt::DType::Bool)
    return dense.getRawData();
  storage.resize(n * size);
  if (dtype == rt::DType::Bool) {
    size_t i = 0;
    for (bool b : dense.getValues<bool>())
      storage[i++] = char(b);
    return ArrayRef<char>(storage);
  }
  ArrayRef<char> one = dense.getRawData(); // a splat stores one element
  for (size_t i = 0; i < n; ++i)
    std::memcpy(storage.data() + i * size, one.data(), size);
  return ArrayRef<char>(storage);
}

ElementsAttr makeElements(RankedTensorType type, ArrayRef<char> bytes) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> values(bytes.begin(), bytes.end());
    return DenseElementsAttr::get(type, values);
  }
  if (type.getNumElements() <= 1024)
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  return DenseResourceElementsAttr::get(type, "folded", HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, 64));
}

ElementsAttr makeElements(RankedTensorType type, size_t bytes, function_ref<void(MutableArrayRef<char>)> fill) {
  if (type.getElementType().isInteger(1) || type.getNumElements() <= 1024) {
    std::vector<char> staged(bytes);
    fill(staged);
    return makeElements(type, ArrayRef<char>(staged));
  }
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes, 64);
  fill(blob.getMutableData());
  return DenseResourceElementsAttr::get(type, "folded", std::move(blob));
}

void releaseUnusedElements(Operation *scope, Attribute value) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  auto module = scope->getParentOfType<ModuleOp>();
  if (!resource || !module || !llvm::hasSingleElement(module.getBody()->getOperations()))
    return;
  const bool held = scope
                        ->walk([&](Operation *op) {
                          for (NamedAttribute a : op->getAttrs())
                            if (a.getValue() == value)
                              return WalkResult::interrupt();
                          return WalkResult::advance();
                        })
                        .wasInterrupted();
  if (auto *entry = resource.getRawHandle().getResource(); entry && !held)
    entry->setBlob(AsmResourceBlob());
}

} // namespace llmc
