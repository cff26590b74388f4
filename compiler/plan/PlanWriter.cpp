#include "PlanWriter.h"

#include "DevicePrecision.h"
#include "Kernels.h"
#include "DimExprs.h"
#include "PlanFormat.h"
#include "llmc/Dialect/KernelBridge.h"
#include "llmc/Dialect/LlmcDialect.h"
#include "llmc/Dialect/SymbolicShapes.h"
#include "plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <cerrno>
#include <map>
#include <optional>
#include <tuple>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
namespace fb = llmc::plan;

namespace llmc {
namespace {

struct ValueEntry {
  mlir::ElementsAttr weight; // weights only: written straight from the attribute to the file
  std::string name;
  fb::ValueKind kind = fb::ValueKind_Activation;
  rt::DType dtype = rt::DType::None;
  std::vector<int64_t> shape;  // -1 for a dynamic dimension
  std::vector<int32_t> dims;   // dynamic values: the DimExprNode of each dimension, -1 when static
  uint64_t weightOffset = 0, weightSize = 0;
  bool randomFill = false; // not stored: filled at load
  rt::DType deviceDType = rt::DType::None; // a reduced-precision plan's 16-bit type for this f32 value
};

struct OpEntry {
  std::string kernel, location;
  std::vector<int32_t> inputs, outputs;
  rt::AttrList attrs;
  int32_t segment = -1; // llmc.graph_segment
};

std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = locationName(inner); !name.empty())
        return name;
  return {};
}

// Lowers DimExprs to the plan's dimension-expression nodes, sharing equal subexpressions.
struct DimNodeEmitter {
  const SymbolicShapes &shapes;
  std::vector<plan::DimExprNode> nodes;
  std::map<std::tuple<int, int32_t, int32_t, int64_t>, int32_t> byKey;
  std::map<int, int32_t> atomNodes;

  int32_t node(plan::DimOp op, int32_t a, int32_t b, int64_t value) {
    auto key = std::make_tuple(int(op), a, b, value);
    auto it = byKey.find(key);
    if (it != byKey.end())
      return it->second;
    nodes.push_back({op, a, b, value});
    return byKey[key] = int32_t(nodes.size() - 1);
  }
  int32_t constant(int64_t v) { return node(plan::DimOp::Const, -1, -1, v); }

  int32_t atom(int id) {
    if (auto it = atomNodes.find(id); it != atomNodes.end())
      return it->second;
    const DimAtoms::Atom &a = shapes.atoms().atom(id);
    static const plan::DimOp ops[] = {plan::DimOp::FloorDiv, plan::DimOp::CeilDiv, plan::DimOp::Mod,
                                      plan::DimOp::Min,      plan::DimOp::Max,     plan::DimOp::Broadcast};
    const int32_t n = a.isSymbol ? node(plan::DimOp::Symbol, -1, -1, a.symbol)
                                 : node(ops[int(a.op)], expr(a.lhs), expr(a.rhs), 0);
    return atomNodes[id] = n;
  }

  int32_t expr(const DimExpr &e) {
    int32_t sum = -1;
    for (const auto &[monomial, coefficient] : e.terms()) {
      int32_t t = monomial.empty() || coefficient != 1 ? constant(coefficient) : -1;
      for (int id : monomial)
        t = t < 0 ? atom(id) : node(plan::DimOp::Mul, t, atom(id), 0);
      sum = sum < 0 ? t : node(plan::DimOp::Add, sum, t, 0);
    }
    return sum < 0 ? constant(0) : sum;
  }
};

struct Emitter {
  std::optional<SymbolicShapes> shapes;
  std::optional<DimNodeEmitter> dimNodes;
  std::vector<ValueEntry> values;
  std::vector<OpEntry> ops;
  std::vector<int32_t> inputs, outputs;
  uint64_t weightsSize = 0;
  const RandomWeights *random = nullptr;
  rt::DType precision = rt::DType::F32;
  bool tf32 = false;
  int64_t reducedCount = 0;
  llvm::DenseMap<Value, int32_t> index;
  std::string error;

  FailureOr<int32_t> addValue(Value v, std::string name, fb::ValueKind kind, Operation *where) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || (!type.hasStaticShape() && !shapes)) {
      error = "value '" + name + "' has no static shape (" + (type ? "dynamic" : "unranked") +
              "); give static input shapes with --input-shape";
      return failure();
    }
    ValueEntry e;
    e.name = std::move(name);
    e.kind = kind;
    e.dtype = toKernelDType(type.getElementType());
    if (e.dtype == rt::DType::None) {
      std::string t;
      llvm::raw_string_ostream os(t);
      os << type.getElementType();
      error = "value '" + e.name + "' has element type " + t + ", which the runtime does not support";
      return failure();
    }
    if (type.getRank() > rt::kMaxRank) {
      error = "value '" + e.name + "' has rank " + std::to_string(type.getRank()) + ", above the runtime's " +
              std::to_string(rt::kMaxRank);
      return failure();
    }
    e.shape.assign(type.getShape().begin(), type.getShape().end());
    if (shapes) {
      const ValueShape &symbolic = shapes->shape(v);
      bool dynamic = false;
      for (size_t d = 0; d < e.shape.size(); ++d) {
        auto c = symbolic.dims[d].asConstant();
        e.shape[d] = c ? *c : -1;
        e.dims.push_back(c ? -1 : dimNodes->expr(symbolic.dims[d]));
        dynamic |= !c;
      }
      if (!dynamic)
        e.dims.clear();
    }
    (void)where;
    values.push_back(std::move(e));
    int32_t i = int32_t(values.size() - 1);
    index[v] = i;
    return i;
  }

  LogicalResult addWeight(ConstantOp op) {
    std::string name = locationName(op.getLoc());
    auto id = addValue(op.getResult(), name.empty() ? "const" + std::to_string(values.size()) : name,
                       fb::ValueKind_Weight, op);
    if (failed(id))
      return failure();
    std::vector<char> storage;
    auto bytes = elementsBytes(op.getValue(), storage);
    if (failed(bytes)) {
      error = "constant '" + values[*id].name + "' has data the plan cannot store";
      return failure();
    }
    auto type = cast<RankedTensorType>(op.getResult().getType());
    if (random && (type.getElementType().isF32() || type.getElementType().isF16() || type.getElementType().isBF16()) &&
        type.getNumElements() >= random->minElements) {
      values[*id].randomFill = true; // no bytes in the file
      return success();
    }
    values[*id].weight = op.getValue();
    values[*id].weightSize = bytes->size();
    return success();
  }

  // Chooses which f32 values a reduced-precision plan keeps in 16 bits (DevicePrecision.h).
  void assignPrecision(rt::DType precision) {
    if (precision == rt::DType::F32)
      return;
    std::vector<PrecisionValue> pv;
    for (const ValueEntry &v : values) {
      int64_t elements = 1;
      for (int64_t d : v.shape)
        elements *= d < 0 ? 1 : d;
      pv.push_back({v.dtype, v.kind == fb::ValueKind_Input, v.kind == fb::ValueKind_Weight, elements});
    }
    std::vector<PrecisionOp> po;
    for (const OpEntry &op : ops)
      po.push_back({op.kernel, op.inputs, op.outputs});
    const std::vector<bool> reduced = reducedValues(pv, po);
    for (size_t v = 0; v < values.size(); ++v)
      if (reduced[v]) {
        values[v].deviceDType = precision;
        if (values[v].kind == fb::ValueKind_Weight)
          values[v].weightSize /= 2; // stored as 16-bit numbers
        ++reducedCount;
      }
  }

  // Places the stored weights in the weights section, each aligned.
  void layoutWeights() {
    for (ValueEntry &v : values)
      if (v.kind == fb::ValueKind_Weight && !v.randomFill) {
        v.weightOffset = (weightsSize + fb::kTensorAlignment - 1) / fb::kTensorAlignment * fb::kTensorAlignment;
        weightsSize = v.weightOffset + v.weightSize;
      }
  }

  LogicalResult addOp(Operation *op) {
    OpEntry e;
    e.kernel = op->getName().stripDialect().str();
    e.location = locationName(op->getLoc());
    if (!rt::findKernel(e.kernel)) {
      error = "op '" + op->getName().getStringRef().str() + "' has no runtime kernel";
      return failure();
    }
    for (Value operand : op->getOperands()) {
      auto it = index.find(operand);
      if (it == index.end()) {
        error = "op '" + e.kernel + "' reads a value defined outside the program";
        return failure();
      }
      e.inputs.push_back(it->second);
    }
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      std::string name = (e.location.empty() ? e.kernel + std::to_string(ops.size()) : e.location) +
                         (op->getNumResults() > 1 ? ":" + std::to_string(i) : "");
      auto id = addValue(op->getResult(i), name, fb::ValueKind_Activation, op);
      if (failed(id))
        return failure();
      e.outputs.push_back(*id);
    }
    e.attrs = toKernelAttrs(op);
    if (auto segment = op->getAttrOfType<IntegerAttr>("llmc.graph_segment"))
      e.segment = int32_t(segment.getInt());
    ops.push_back(std::move(e));
    return success();
  }

  LogicalResult addOutputs(func::FuncOp func, func::ReturnOp ret) {
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      Value v = ret.getOperand(i);
      auto nameAttr = func.getResultAttrOfType<StringAttr>(i, "llmc.name");
      std::string name = nameAttr ? nameAttr.str() : "output" + std::to_string(i);
      int32_t id = index.lookup(v);
      ValueEntry &entry = values[id];
      if (entry.kind == fb::ValueKind_Activation) {
        entry.kind = fb::ValueKind_Output;
        entry.name = name;
        outputs.push_back(id);
        continue;
      }
      // An input, a weight or an output already: copy it into a fresh output value.
      ValueEntry copy = entry;
      copy.name = name;
      copy.kind = fb::ValueKind_Output;
      copy.weightOffset = copy.weightSize = 0;
      values.push_back(copy);
      const int32_t out = int32_t(values.size() - 1);
      // A copy is capturable: it joins the run of the op before it.
      ops.push_back(OpEntry{"identity", name, {id}, {out}, {}, ops.empty() ? 0 : ops.back().segment});
      outputs.push_back(out);
    }
    return success();
  }

  LogicalResult run(ModuleOp module) {
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || func.getBody().getBlocks().size() != 1) {
      error = "the module has no single-block func.func @main";
      return failure();
    }
    if (func->hasAttr(kSymbolBoundsAttr)) {
      auto analyzed = SymbolicShapes::analyze(func, error);
      if (failed(analyzed))
        return failure();
      shapes.emplace(std::move(*analyzed));
      dimNodes.emplace(DimNodeEmitter{*shapes, {}, {}, {}});
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto nameAttr = func.getArgAttrOfType<StringAttr>(i, "llmc.name");
      auto id = addValue(func.getArgument(i), nameAttr ? nameAttr.str() : "input" + std::to_string(i),
                         fb::ValueKind_Input, nullptr);
      if (failed(id))
        return failure();
      inputs.push_back(*id);
    }
    for (Operation &op : func.getBody().front()) {
      if (auto c = dyn_cast<ConstantOp>(op)) {
        if (failed(addWeight(c)))
          return failure();
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (failed(addOutputs(func, ret)))
          return failure();
      } else if (isa<LlmcDialect>(op.getDialect())) {
        if (failed(addOp(&op)))
          return failure();
      } else {
        error = "op '" + op.getName().getStringRef().str() + "' cannot be lowered to the plan";
        return failure();
      }
    }
    return success();
  }

  static flatbuffers::Offset<fb::Tokenizer> tokenizerTable(flatbuffers::FlatBufferBuilder &b, const TokenizerData &t) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> vocab;
    for (const std::string &token : t.vocab)
      vocab.push_back(b.CreateString(token));
    std::vector<flatbuffers::Offset<fb::AddedToken>> added;
    for (const TokenizerData::Added &a : t.added)
      added.push_back(fb::CreateAddedToken(b, a.id, b.CreateString(a.content), a.special));
    return fb::CreateTokenizer(b, static_cast<fb::PreTokenizer>(t.preTokenizer), b.CreateVector(vocab),
                               b.CreateVector(t.merges), b.CreateVector(added));
  }

  // The fused elementwise regions compiled for every CUDA architecture of the target.
  std::string cudaKernels(flatbuffers::FlatBufferBuilder &b, const CudaTarget &cuda,
                          std::vector<flatbuffers::Offset<fb::CudaKernel>> &out) const {
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].kernel != "fused_elementwise")
        continue;
      std::vector<rt::DType> ins, outs;
      auto onDevice = [&](int32_t v) {
        return values[size_t(v)].deviceDType != rt::DType::None ? values[size_t(v)].deviceDType : values[size_t(v)].dtype;
      };
      for (int32_t i : ops[k].inputs)
        ins.push_back(onDevice(i));
      for (int32_t o : ops[k].outputs)
        outs.push_back(onDevice(o));
      const std::string name = "llmc_fused_" + std::to_string(k);
      for (const std::string &arch : cuda.archs) {
        std::vector<char> cubin;
        if (std::string err = cuda.compileFused(ops[k].attrs, ins, outs, name, arch, cubin); !err.empty())
          return "compiling the fused region of op " + std::to_string(k) + " (" + ops[k].location + ") for " + arch +
                 ": " + err;
        out.push_back(fb::CreateCudaKernel(b, int32_t(k), b.CreateString(arch), b.CreateString(name),
                                           b.CreateVector(reinterpret_cast<const uint8_t *>(cubin.data()), cubin.size())));
      }
    }
    return {};
  }

  mutable int64_t cudaKernelCount = 0;

  std::vector<uint8_t> program(const TokenizerData *tokenizer, const CudaTarget *cuda, std::string &error) const {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fb::Value>> fbValues;
    for (const ValueEntry &v : values)
      fbValues.push_back(fb::CreateValue(b, b.CreateString(v.name), v.kind, uint8_t(v.dtype),
                                         b.CreateVector(v.shape), v.weightOffset, v.weightSize,
                                         v.dims.empty() ? 0 : b.CreateVector(v.dims), v.randomFill,
                                         uint8_t(v.deviceDType)));
    std::vector<flatbuffers::Offset<fb::Op>> fbOps;
    for (const OpEntry &op : ops) {
      std::vector<flatbuffers::Offset<fb::Attr>> attrs;
      for (const rt::Attr &a : op.attrs.all())
        attrs.push_back(fb::CreateAttr(b, b.CreateString(a.name), static_cast<fb::AttrKind>(a.kind), a.i, a.f,
                                       a.kind == rt::Attr::Kind::Ints ? b.CreateVector(a.ints) : 0,
                                       a.kind == rt::Attr::Kind::Floats ? b.CreateVector(a.floats) : 0,
                                       a.kind == rt::Attr::Kind::String ? b.CreateString(a.s) : 0));
      fbOps.push_back(fb::CreateOp(b, b.CreateString(op.kernel), b.CreateVector(op.inputs), b.CreateVector(op.outputs),
                                   b.CreateVector(attrs), b.CreateString(op.location), op.segment));
    }
    std::vector<flatbuffers::Offset<fb::Symbol>> symbols;
    std::vector<fb::DimNode> nodes;
    if (shapes) {
      for (const SymbolInfo &s : shapes->symbols())
        symbols.push_back(fb::CreateSymbol(b, b.CreateString(s.name), s.max, s.min));
      for (const plan::DimExprNode &n : dimNodes->nodes)
        nodes.emplace_back(n.value, n.a, n.b, static_cast<fb::DimNodeOp>(n.op));
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> archs;
    std::vector<flatbuffers::Offset<fb::CudaKernel>> kernels;
    if (cuda) {
      for (const std::string &arch : cuda->archs)
        archs.push_back(b.CreateString(arch));
      if (error = cudaKernels(b, *cuda, kernels); !error.empty())
        return {};
      cudaKernelCount = int64_t(kernels.size());
    }
    auto root = fb::CreateProgram(b, b.CreateString("llmc " LLMC_VERSION_STRING), b.CreateVector(fbValues),
                                  b.CreateVector(fbOps), b.CreateVector(inputs), b.CreateVector(outputs),
                                  shapes ? b.CreateVector(symbols) : 0, shapes ? b.CreateVectorOfStructs(nodes) : 0,
                                  tokenizer ? tokenizerTable(b, *tokenizer) : 0, cuda ? b.CreateVector(archs) : 0,
                                  cuda ? b.CreateVector(kernels) : 0, random ? random->seed : 0,
                                  precision == rt::DType::BF16  ? fb::Precision_BF16
                                  : precision == rt::DType::F16 ? fb::Precision_F16
                                  : tf32                        ? fb::Precision_TF32
                                                                : fb::Precision_F32);
    fb::FinishProgramBuffer(b, root);
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }
};

bool writeAll(int fd, const void *data, size_t size);

// Writes the weights section in order, each weight at its offset, zero padding between; the
// bytes go from each attribute to the file without a copy of the whole section in memory.
bool writeWeights(int fd, const std::vector<ValueEntry> &values, fb::Checksum &checksum) {
  static const char zeros[fb::kTensorAlignment] = {};
  uint64_t at = 0;
  for (const ValueEntry &v : values) {
    if (v.kind != fb::ValueKind_Weight || v.randomFill)
      continue;
    std::vector<char> storage;
    auto bytes = elementsBytes(v.weight, storage);
    if (failed(bytes) || v.weightOffset < at || v.weightOffset - at > fb::kTensorAlignment)
      return false;
    std::vector<uint16_t> narrow;
    if (v.deviceDType != rt::DType::None) { // f32 stored as f16 or bf16
      const size_t count = bytes->size() / sizeof(float);
      narrow.resize(count);
      for (size_t k = 0; k < count; ++k) {
        float f;
        std::memcpy(&f, bytes->data() + k * sizeof f, sizeof f);
        narrow[k] = rt::narrowFloat(f, v.deviceDType);
      }
      bytes = llvm::ArrayRef<char>(reinterpret_cast<const char *>(narrow.data()), count * sizeof(uint16_t));
    }
    const size_t pad = size_t(v.weightOffset - at);
    checksum.update(zeros, pad);
    checksum.update(bytes->data(), bytes->size());
    if (!writeAll(fd, zeros, pad) || !writeAll(fd, bytes->data(), bytes->size()))
      return false;
    at = v.weightOffset + bytes->size();
  }
  return true;
}

bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

} // namespace

std::string writePlan(ModuleOp module, const std::string &path, const PlanOptions &options, PlanStats *stats) {
  Emitter emitter;
  emitter.random = options.random;
  emitter.precision = options.precision;
  emitter.tf32 = options.tf32;
  if (options.tf32 && options.precision != rt::DType::F32)
    return "TF32 GEMMs are an option of f32 plans";
  if (options.precision != rt::DType::F32 && options.precision != rt::DType::F16 &&
      options.precision != rt::DType::BF16)
    return "the precision of a plan must be f32, f16 or bf16";
  if (failed(emitter.run(module)))
    return emitter.error;
  emitter.assignPrecision(options.precision);
  emitter.layoutWeights();
  const TokenizerData *tokenizer = options.tokenizer;
  const CudaTarget *cuda = options.cuda;
  if (cuda && cuda->archs.empty())
    return "a CUDA plan needs at least one architecture";
  std::string error;
  const std::vector<uint8_t> program = emitter.program(tokenizer, cuda, error);
  if (!error.empty())
    return error;

  fb::Header header{};
  std::memcpy(header.magic, fb::kMagic, sizeof header.magic);
  // A later version only where an older reader would misread the plan, the attention's attributes
  // that it would skip: 3 for a softcap, 4 for a sliding window, 5 for a query's own rotation, 6
  // for sinks (an input that a reader of 5 would not read).
  uint32_t version = 2;
  module.walk([&](FusedAttentionOp op) {
    if (op.getSoftcap().convertToDouble() != 0.0)
      version = std::max<uint32_t>(version, 3);
    if (op.getSlidingWindow() != 0)
      version = std::max<uint32_t>(version, 4);
    if (op.getRotaryDim() != 0)
      version = std::max<uint32_t>(version, 5);
    if (op.getSinks())
      version = std::max<uint32_t>(version, 6);
  });
  header.formatVersion = version;
  header.headerSize = sizeof header;
  header.target = uint32_t(cuda ? fb::Target::Cuda : fb::Target::Cpu);
  if (cuda) // the preferred architecture's compute capability times 10 ("sm_90a" -> 90)
    header.targetArch = uint32_t(std::atoi(cuda->archs.front().c_str() + 3));
  header.programOffset = sizeof header;
  header.programSize = program.size();
  header.weightsOffset =
      (header.programOffset + program.size() + fb::kWeightsAlignment - 1) / fb::kWeightsAlignment * fb::kWeightsAlignment;
  header.weightsSize = emitter.weightsSize;
  header.programChecksum = fb::checksum(program.data(), program.size());

  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    return "cannot create '" + tmp + "': " + strerror(errno);
  const std::vector<char> padding(header.weightsOffset - header.programOffset - program.size(), 0);
  fb::Checksum weightsChecksum;
  // The header goes last, once the weights checksum is known.
  bool ok = lseek(fd, off_t(sizeof header), SEEK_SET) == off_t(sizeof header) &&
            writeAll(fd, program.data(), program.size()) && writeAll(fd, padding.data(), padding.size()) &&
            writeWeights(fd, emitter.values, weightsChecksum);
  header.weightsChecksum = weightsChecksum.finish();
  ok = ok && pwrite(fd, &header, sizeof header, 0) == ssize_t(sizeof header) && fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string message = "cannot write '" + path + "': " + strerror(errno);
    ::unlink(tmp.c_str());
    return message;
  }
  ::chmod(path.c_str(), 0644);
  if (stats) {
    stats->kernels = int64_t(emitter.ops.size());
    stats->weights = 0;
    for (const ValueEntry &v : emitter.values)
      stats->weights += v.kind == fb::ValueKind_Weight;
    stats->weightBytes = emitter.weightsSize;
    stats->fileBytes = header.weightsOffset + header.weightsSize;
    stats->cudaKernels = emitter.cudaKernelCount;
    stats->reducedValues = emitter.reducedCount;
  }
  return {};
}

} // namespace llmc
