// NodeContext: attribute access and op creation with folding for the op importers.
#include "ImporterInternal.h"
#include "llmc/Dialect/LlmcDialect.h"


using namespace mlir;

namespace llmc::importer {

const onnx::AttributeProto *NodeContext::attr(const std::string &name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::attrInt(const std::string &name, int64_t fallback) const {
  const auto *a = attr(name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

float NodeContext::attrFloat(const std::string &name, float fallback) const {
  const auto *a = attr(name);
  return a && a->type() == onnx::AttributeProto::FLOAT ? a->f() : fallback;
}

std::optional<std::vector<int64_t>> NodeContext::attrInts(const std::string &name) const {
  const auto *a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::INTS)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string NodeContext::attrString(const std::string &name, const std::string &fallback) const {
  const auto *a = attr(name);
  return a && a->type() == onnx::AttributeProto::STRING ? a->s() : fallback;
}

FailureOr<SmallVector<Value>> NodeContext::create(StringRef name, ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  for (Value v : operands)
    if (!v)
      return fail("a required input is missing");
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  SmallVector<Type> types;
  if (failed(inferResultTypes(name, ctx(), loc, operands, state.attributes.getDictionary(ctx()), types)))
    return failure();
  state.addTypes(types);
  Operation *op = builder.create(state);
  SmallVector<Value> results(op->getResults());
  SmallVector<OpFoldResult> folded;
  if (succeeded(op->fold(folded)) && folded.size() == results.size()) {
    for (size_t i = 0; i < folded.size(); ++i) {
      if (auto v = dyn_cast<Value>(folded[i])) {
        results[i] = v;
        continue;
      }
      Operation *c = op->getDialect()->materializeConstant(builder, cast<Attribute>(folded[i]),
                                                           op->getResult(i).getType(), loc);
      if (!c)
        return SmallVector<Value>(op->getResults());
      results[i] = c->getResult(0);
    }
    op->erase();
  }
  return results;
}

FailureOr<Value> NodeContext::create1(StringRef name, ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  auto results = create(name, operands, attrs);
  if (failed(results))
    return failure();
  return results->front();
}

} // namespace llmc::importer
