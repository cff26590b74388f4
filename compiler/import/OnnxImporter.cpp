// The importer's driver: parse the ModelProto, check it, build func.func @main.
#include "OnnxImporter.h"
#include "llmc/Dialect/SymbolicShapes.h"

#include "ImporterInternal.h"
#include "llmc/Dialect/KernelBridge.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

#include "onnx/defs/schema.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

using namespace mlir;
namespace fs = std::filesystem;

namespace llmc {

int64_t maxSupportedOpset() { return 28; }

std::vector<std::string> supportedOnnxOps() { return importer::supportedOpTypes(); }

std::string parseInputShapes(const std::string &spec, ImportOptions &options) {
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty())
      continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return "bad --input-shape item '" + item + "': expected NAME=DIMS (e.g. input_ids=1x16) or DIM=N";
    std::string name = item.substr(0, eq), dims = item.substr(eq + 1);
    std::vector<int64_t> shape;
    std::stringstream parts(dims);
    std::string part;
    while (std::getline(parts, part, 'x')) {
      try {
        size_t used = 0;
        long long v = std::stoll(part, &used);
        if (used != part.size() || v < 0)
          throw std::invalid_argument(part);
        shape.push_back(v);
      } catch (const std::exception &) {
        return "bad dimension '" + part + "' in --input-shape item '" + item + "'";
      }
    }
    options.inputShapes[name] = shape;
    if (shape.size() == 1)
      options.dimValues[name] = shape[0];
  }
  return {};
}

std::string parseMaxShapes(const std::string &spec, ImportOptions &options) {
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty())
      continue;
    auto eq = item.find('=');
    long long lo = 1, v = -1;
    try {
      if (eq != std::string::npos && eq > 0) {
        std::string range = item.substr(eq + 1);
        size_t used = 0, dots = range.find("..");
        if (dots != std::string::npos) {
          lo = std::stoll(range.substr(0, dots), &used);
          if (used != dots)
            lo = -1;
          range = range.substr(dots + 2);
        }
        v = std::stoll(range, &used);
        if (used != range.size())
          v = -1;
      }
    } catch (const std::exception &) {
      v = -1;
    }
    if (v < 1 || lo < 0 || lo > v)
      return "bad --max-shape item '" + item + "': expected SYMBOL=N or SYMBOL=MIN..N with 0 <= MIN <= N, N >= 1 "
             "(e.g. seq=512, past=0..512)";
    options.maxDims[item.substr(0, eq)] = v;
    if (lo != 1)
      options.minDims[item.substr(0, eq)] = lo;
  }
  return {};
}

namespace {

using importer::NodeContext;

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

struct GraphImporter {
  MLIRContext &ctx;
  const onnx::ModelProto &model;
  const ImportOptions &options;
  importer::TensorStore store;
  int64_t opset = 0;
  std::map<std::string, Value> values;
  std::string error;
  std::string dynamicInputs, dynamicExample; // for hints in error messages

  Location nodeLoc(const onnx::NodeProto &node, int index) {
    std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
    return NameLoc::get(StringAttr::get(&ctx, name));
  }

  // Names each dynamic input dimension after its dim_param (argument attribute llmc.dim_symbols)
  // and stores the --max-shape bounds on the function (see SymbolicShapes.h).
  bool recordSymbols(OpBuilder &builder, const onnx::GraphProto &graph, func::FuncOp func,
                     ArrayRef<std::string> argNames) {
    std::set<std::string> used;
    for (size_t i = 0; i < argNames.size(); ++i) {
      auto type = cast<RankedTensorType>(func.getArgument(unsigned(i)).getType());
      if (type.hasStaticShape())
        continue;
      const auto *info = &*std::find_if(graph.input().begin(), graph.input().end(),
                                        [&](const auto &in) { return in.name() == argNames[i]; });
      SmallVector<Attribute> names;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        std::string name;
        if (type.isDynamicDim(d) && d < info->type().tensor_type().shape().dim_size())
          name = info->type().tensor_type().shape().dim(int(d)).dim_param();
        used.insert(name);
        names.push_back(builder.getStringAttr(name));
      }
      func.setArgAttr(unsigned(i), kDimSymbolsAttr, builder.getArrayAttr(names));
    }
    SmallVector<NamedAttribute> bounds;
    for (const auto &[name, max] : options.maxDims) {
      if (!used.count(name)) {
        error = "--max-shape names '" + name + "', which is no dynamic dimension of a graph input";
        return false;
      }
      bounds.push_back(builder.getNamedAttr(name, builder.getI64IntegerAttr(max)));
    }
    if (!bounds.empty())
      func->setAttr(kSymbolBoundsAttr, builder.getDictionaryAttr(bounds));
    SmallVector<NamedAttribute> minima;
    for (const auto &[name, min] : options.minDims)
      minima.push_back(builder.getNamedAttr(name, builder.getI64IntegerAttr(min)));
    if (!minima.empty())
      func->setAttr(kSymbolMinimaAttr, builder.getDictionaryAttr(minima));
    return true;
  }

  // The input's type with the user's static shape or symbol values applied.
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info) {
    if (!info.type().has_tensor_type()) {
      error = "graph input '" + info.name() + "' is not a tensor (sequence/optional/map inputs are unsupported)";
      return failure();
    }
    const auto &tt = info.type().tensor_type();
    Type elem = importer::elementType(&ctx, tt.elem_type());
    if (!elem) {
      error = "graph input '" + info.name() + "' has unsupported element type " + importer::onnxTypeName(tt.elem_type());
      return failure();
    }
    SmallVector<int64_t> dims;
    for (const auto &d : tt.shape().dim()) {
      if (d.has_dim_value())
        dims.push_back(d.dim_value());
      else if (d.has_dim_param() && options.dimValues.count(d.dim_param()) && !options.maxDims.count(d.dim_param()))
        dims.push_back(options.dimValues.at(d.dim_param()));
      else
        dims.push_back(ShapedType::kDynamic);
    }
    auto given = options.inputShapes.find(info.name());
    if (given != options.inputShapes.end()) {
      if (tt.has_shape() && given->second.size() != dims.size()) {
        error = "--input-shape gives " + std::to_string(given->second.size()) + " dimensions for input '" +
                info.name() + "', which has rank " + std::to_string(dims.size());
        return failure();
      }
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] != ShapedType::kDynamic && dims[i] != given->second[i]) {
          error = "--input-shape sets dimension " + std::to_string(i) + " of input '" + info.name() + "' to " +
                  std::to_string(given->second[i]) + ", but the model fixes it to " + std::to_string(dims[i]);
          return failure();
        }
      }
      dims.assign(given->second.begin(), given->second.end());
    }
    return RankedTensorType::get(dims, elem);
  }

  // The opset whose semantics a node of `opType` has: the model's opset from 13 on; for older
  // models, 13 when the op's definition did not change between the model's opset and 13 (per the
  // ONNX library's schemas), else 0 (unsupported).
  int64_t effectiveOpset(const std::string &opType) const {
    if (opset >= 13)
      return opset;
    const onnx::OpSchema *old = onnx::OpSchemaRegistry::Schema(opType, int(opset));
    const onnx::OpSchema *at13 = onnx::OpSchemaRegistry::Schema(opType, 13);
    return old && at13 && old->since_version() == at13->since_version() ? 13 : 0;
  }

  // Every node's op must have an importer; report all that do not, at once.
  bool checkSupported(const onnx::GraphProto &graph) {
    std::string unsupported;
    int count = 0;
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto &node = graph.node(i);
      const bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
      const int64_t version = defaultDomain ? effectiveOpset(node.op_type()) : 0;
      if (!defaultDomain || !version || !importer::findImporter(node.op_type(), version)) {
        ++count;
        unsupported += "\n  " + node.op_type() + (node.domain().empty() ? "" : " (domain " + node.domain() + ")") +
                       " in node '" + node.name() + "', opset " + std::to_string(opset);
        if (defaultDomain && !version)
          unsupported += " (its definition at this opset differs from opset 13; older opsets are supported only "
                         "for ops unchanged since)";
      }
    }
    if (count)
      error = std::to_string(count) + " unsupported op" + (count > 1 ? "s" : "") + ":" + unsupported;
    return count == 0;
  }

  OwningOpRef<ModuleOp> run() {
    const onnx::GraphProto &graph = model.graph();
    for (const auto &imp : model.opset_import())
      if (imp.domain().empty() || imp.domain() == "ai.onnx")
        opset = imp.version();
    if (opset > maxSupportedOpset()) {
      error = "the model uses opset " + std::to_string(opset) + ", newer than the newest this importer knows (" +
              std::to_string(maxSupportedOpset()) + ")";
      return nullptr;
    }
    if (model.functions_size() > 0) {
      error = "the model has " + std::to_string(model.functions_size()) +
              " model-local functions; inlining them is not supported yet";
      return nullptr;
    }
    if (!checkSupported(graph))
      return nullptr; // also reports models whose ops are all in other domains
    if (opset == 0) {
      error = "the model imports no default-domain opset";
      return nullptr;
    }

    OpBuilder builder(&ctx);
    auto module = ModuleOp::create(UnknownLoc::get(&ctx));
    std::set<std::string> initializerNames;
    for (const auto &init : graph.initializer())
      initializerNames.insert(init.name());
    SmallVector<Type> argTypes;
    SmallVector<std::string> argNames;
    std::vector<std::pair<std::string, RankedTensorType>> frozen;
    for (const auto &in : graph.input()) {
      if (initializerNames.count(in.name()))
        continue; // an initializer listed as an input (old exporters): a constant
      if (auto f = options.frozenInputs.find(in.name()); f != options.frozenInputs.end()) {
        auto declared = inputType(in);
        if (failed(declared))
          return nullptr;
        auto type = RankedTensorType::get(f->second.shape, declared->getElementType());
        if (rt::dtypeSize(toKernelDType(type.getElementType())) * size_t(type.getNumElements()) !=
                f->second.bytes.size() ||
            int(toKernelDType(type.getElementType())) != f->second.dtype ||
            failed(verifyCompatibleShape(*declared, type))) {
          error = "--freeze-input '" + in.name() + "': the data does not match the input's type " + typeString(*declared);
          return nullptr;
        }
        frozen.emplace_back(in.name(), type);
        continue;
      }
      auto type = inputType(in);
      if (failed(type))
        return nullptr;
      argTypes.push_back(*type);
      argNames.push_back(in.name());
      if (!type->hasStaticShape()) {
        dynamicInputs += (dynamicInputs.empty() ? "" : ", ") + in.name();
        if (dynamicExample.empty()) {
          dynamicExample = in.name() + "=";
          for (int64_t i = 0; i < type->getRank(); ++i)
            dynamicExample += (i ? "x" : "") + std::to_string(type->isDynamicDim(i) ? 1 : type->getDimSize(i));
        }
      }
    }
    for (const auto &[name, data] : options.frozenInputs)
      if (std::none_of(graph.input().begin(), graph.input().end(), [&](const auto &i) { return i.name() == name; })) {
        error = "--freeze-input names '" + name + "', which is not a graph input";
        return nullptr;
      }
    for (const auto &[name, shape] : options.inputShapes)
      if (std::find(argNames.begin(), argNames.end(), name) == argNames.end() && shape.size() != 1 &&
          !options.frozenInputs.count(name)) {
        error = "--input-shape names '" + name + "', which is not a graph input";
        return nullptr;
      }
    builder.setInsertionPointToEnd(module.getBody());
    auto func = func::FuncOp::create(builder, UnknownLoc::get(&ctx), "main", builder.getFunctionType(argTypes, {}));
    Block *body = func.addEntryBlock();
    for (size_t i = 0; i < argNames.size(); ++i) {
      func.setArgAttr(i, "llmc.name", builder.getStringAttr(argNames[i]));
      values[argNames[i]] = body->getArgument(i);
    }
    if (!recordSymbols(builder, graph, func, argNames))
      return nullptr;
    builder.setInsertionPointToEnd(body);
    for (const auto &[name, type] : frozen) {
      const FrozenInput &f = options.frozenInputs.at(name);
      values[name] = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(name)), type,
                                        makeElements(type, ArrayRef<char>(f.bytes.data(), f.bytes.size())));
    }
    for (const auto &init : graph.initializer()) {
      ElementsAttr attr = importer::tensorToAttr(&ctx, init, store, error);
      if (!attr)
        return nullptr;
      values[init.name()] = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(init.name())),
                                               cast<RankedTensorType>(attr.getType()), attr);
    }
    for (int i = 0; i < graph.node_size(); ++i)
      if (!importNode(builder, graph.node(i), i))
        return nullptr;
    SmallVector<Value> results;
    SmallVector<Type> resultTypes;
    for (const auto &out : graph.output()) {
      auto it = values.find(out.name());
      if (it == values.end() || !it->second) {
        error = "graph output '" + out.name() + "' is never produced";
        return nullptr;
      }
      results.push_back(it->second);
      resultTypes.push_back(it->second.getType());
    }
    func::ReturnOp::create(builder, UnknownLoc::get(&ctx), results);
    func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
    for (int i = 0; i < graph.output_size(); ++i)
      func.setResultAttr(i, "llmc.name", builder.getStringAttr(graph.output(i).name()));
    return module;
  }

  // Required inputs present and input/output counts within the op's schema (where the ONNX
  // library knows the op), so that no importer sees a node with missing operands.
  std::string checkArity(const onnx::NodeProto &node) {
    // The ONNX library's schemas stop at the opset it was released with (1.12: opset 17); past
    // that an op may have gained inputs, so the check would be wrong.
    const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto known = ranges.find(onnx::ONNX_DOMAIN);
    if (known == ranges.end() || opset > known->second.second)
      return {};
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(node.op_type(), int(opset));
    if (!schema)
      return {};
    for (int i = 0; i < schema->min_input(); ++i)
      if (i >= node.input_size() || node.input(i).empty())
        return "has " + std::to_string(node.input_size()) + " inputs; " + node.op_type() + " needs at least " +
               std::to_string(schema->min_input());
    if (node.input_size() > schema->max_input())
      return "has " + std::to_string(node.input_size()) + " inputs; " + node.op_type() + " takes at most " +
             std::to_string(schema->max_input());
    if (node.output_size() < schema->min_output() || node.output_size() > schema->max_output())
      return "has " + std::to_string(node.output_size()) + " outputs, outside what " + node.op_type() + " allows";
    return {};
  }

  bool importNode(OpBuilder &builder, const onnx::NodeProto &node, int index) {
    Location loc = nodeLoc(node, index);
    NodeContext nc{builder, loc, node, effectiveOpset(node.op_type()), {}, store, {}};
    const std::string where = "node '" + cast<NameLoc>(loc).getName().str() + "' (" + node.op_type() + ")";
    if (std::string arity = checkArity(node); !arity.empty()) {
      error = where + " " + arity;
      return false;
    }
    if (node.op_type() != "Constant" && (node.input_size() == 0 || node.input(0).empty())) {
      error = where + " has no first input";
      return false;
    }
    for (const std::string &name : node.input()) {
      if (name.empty()) {
        nc.inputs.push_back(Value());
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) {
        error = where + " reads '" + name + "', which no node, graph input or initializer produces";
        return false;
      }
      if (!it->second) {
        error = where + " reads '" + name + "', an output its producer does not support";
        return false;
      }
      nc.inputs.push_back(it->second);
    }
    for (int i = 0, n = importer::requiredInputs(node.op_type(), nc.opset); i < n; ++i)
      if (!nc.input(size_t(i))) {
        error = where + " has no input " + std::to_string(i) + "; " + node.op_type() + " needs at least " +
                std::to_string(n);
        return false;
      }
    // Type-inference diagnostics from op creation become this node's error.
    std::string diagnostic;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && diagnostic.empty())
        diagnostic = diag.str();
      return success();
    });
    auto outputs = importer::findImporter(node.op_type(), nc.opset)(nc);
    if (failed(outputs)) {
      error = where + ": " + (!nc.error.empty() ? nc.error : diagnostic.empty() ? "import failed" : diagnostic);
      if (!dynamicInputs.empty())
        error += " (inputs with dynamic dimensions: " + dynamicInputs +
                 "; give them static shapes with --input-shape, e.g. --input-shape " + dynamicExample + ")";
      return false;
    }
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty())
        continue;
      values[node.output(i)] = size_t(i) < outputs->size() ? (*outputs)[i] : Value();
    }
    return true;
  }
};

} // namespace

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, const std::string &path, const ImportOptions &options,
                                     std::string &error, ImportStats *stats) {
  context.loadDialect<LlmcDialect, func::FuncDialect>();
  // Parse straight from the file: the model's bytes are held once, in the ModelProto, whose
  // raw_data the weight blobs then point into.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    error = "cannot open '" + path + "'";
    return nullptr;
  }
  auto parsed = std::make_shared<onnx::ModelProto>();
  bool ok = st.st_size > 0;
  {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream stream(&file);
    stream.SetTotalBytesLimit(INT32_MAX);
    ok = ok && parsed->ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
  }
  close(fd);
  if (!ok) {
    error = "'" + path + "' is not a valid ONNX model (protobuf parsing failed: truncated or not ONNX)";
    return nullptr;
  }
  const onnx::ModelProto &model = *parsed;
  if (model.ir_version() <= 0 || !model.has_graph() || model.graph().output_size() == 0) {
    error = "'" + path + "' is not an ONNX model (no IR version or no graph with outputs)";
    return nullptr;
  }
  GraphImporter importer{context, model, options, {fs::absolute(path).parent_path(), parsed, {}}, 0, {}, {}, {}, {}};
  OwningOpRef<ModuleOp> module = importer.run();
  if (stats) {
    stats->opset = importer.opset;
    stats->initializers = model.graph().initializer_size();
    for (const auto &node : model.graph().node())
      ++stats->nodesByOpType[node.op_type()];
  }
  if (!module)
    error = importer.error;
  return module;
}

} // namespace llmc
