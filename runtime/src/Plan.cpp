// Loading and verifying plan files. Nothing from the file is trusted before it is checked:
// the header, both checksums, the FlatBuffers verifier, then every index, shape and range.
#include "Plan.h"

#include "PlanFormat.h"
#include "../kernels/KernelUtil.h"
#include "plan_generated.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fb = llmc::plan;

llmc_plan_t::~llmc_plan_t() {
  if (mapping)
    munmap(mapping, mappingSize);
}

std::string llmc_plan_t::widenWeights() {
  std::call_once(widenOnce, [this] {
    for (llmc::rt::PlanValue &pv : values) {
      if (!pv.narrow || pv.weight)
        continue;
      const size_t count = size_t(pv.shape.numel());
      void *memory = std::aligned_alloc(64, std::max<size_t>((count * sizeof(float) + 63) / 64 * 64, 64));
      if (!memory) {
        widenError = "out of memory widening weight '" + pv.name + "' to f32";
        return;
      }
      filledWeights.emplace_back(static_cast<uint8_t *>(memory), std::free);
      const auto *from = static_cast<const uint16_t *>(pv.narrow);
      for (size_t k = 0; k < count; ++k)
        static_cast<float *>(memory)[k] = llmc::rt::widenFloat(from[k], pv.deviceDType);
      pv.weight = memory;
    }
  });
  return widenError;
}

namespace llmc::rt {
namespace {

llmc_status invalid(const std::string &message) { return makeStatus(LLMC_INVALID_PLAN, "invalid plan: " + message); }

llmc_status convertAttr(const fb::Attr &a, Attr &out) {
  out.name = a.name()->str();
  out.kind = static_cast<Attr::Kind>(a.kind());
  switch (a.kind()) {
  case fb::AttrKind_Int: out.i = a.i(); break;
  case fb::AttrKind_Float: out.f = a.f(); break;
  case fb::AttrKind_Ints:
    if (a.ints())
      out.ints.assign(a.ints()->begin(), a.ints()->end());
    break;
  case fb::AttrKind_Floats:
    if (a.floats())
      out.floats.assign(a.floats()->begin(), a.floats()->end());
    break;
  case fb::AttrKind_String:
    if (a.s())
      out.s = a.s()->str();
    break;
  default: return invalid("attribute '" + out.name + "' has an unknown kind");
  }
  return nullptr;
}

// Reads the symbols and dimension expressions and bounds every expression from the symbols'
// maxima; `upper` receives each node's upper bound.
llmc_status parseSymbols(const fb::Program &p, llmc_plan_t &plan, std::vector<int64_t> &upper) {
  if (p.symbols())
    for (const fb::Symbol *s : *p.symbols()) {
      if (s->max() < 1 || s->max() > (int64_t(1) << 40) || s->min() < 0 || s->min() > s->max())
        return invalid("symbol '" + s->name()->str() + "' has bad bounds");
      plan.symbols.push_back({s->name()->str(), s->max(), s->min()});
    }
  if (p.dim_nodes())
    for (const fb::DimNode *n : *p.dim_nodes())
      plan.dimNodes.push_back({static_cast<fb::DimOp>(n->op()), n->a(), n->b(), n->value()});
  if (std::string err = fb::checkDimExprs(plan.dimNodes, plan.symbols.size()); !err.empty())
    return invalid(err);
  std::vector<int64_t> minima, maxima;
  for (const PlanSymbol &s : plan.symbols) {
    minima.push_back(s.min);
    maxima.push_back(s.max);
  }
  if (std::string err = fb::boundDimExprs(plan.dimNodes, minima.data(), maxima.data(), upper); !err.empty())
    return invalid(err);
  return nullptr;
}

} // namespace

// A weight the plan does not hold (llmc --random-weights): uniform values in +-1/sqrt(rows) from
// a splitmix64 stream, so that every load of the plan gets the same numbers. Element k is drawn
// from seed + (k + 1) * gamma alone, so large weights are filled by several threads, with the
// numbers one thread would draw.
static std::string fillRandomWeight(llmc_plan_t &plan, PlanValue &pv, uint64_t seed) {
  const size_t count = size_t(pv.shape.numel());
  const size_t bytes = count * dtypeSize(pv.deviceDType != DType::None ? pv.deviceDType : pv.dtype);
  void *memory = std::aligned_alloc(64, std::max<size_t>((bytes + 63) / 64 * 64, 64));
  if (!memory)
    return "out of memory filling weight '" + pv.name + "' (" + std::to_string(bytes) + " bytes)";
  plan.filledWeights.emplace_back(static_cast<uint8_t *>(memory), std::free);
  const double scale = 1.0 / std::sqrt(double(std::max<int64_t>(pv.shape.rank ? pv.shape.dims[0] : 1, 1)));
  auto fill = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      uint64_t z = seed + (uint64_t(k) + 1) * 0x9e3779b97f4a7c15ull;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      const float x = float((double(z >> 11) / double(1ull << 53) * 2.0 - 1.0) * scale);
      if (pv.deviceDType != DType::None)
        static_cast<uint16_t *>(memory)[k] = narrowFloat(x, pv.deviceDType);
      else if (pv.dtype == DType::F32)
        static_cast<float *>(memory)[k] = x;
      else // f16 or bf16
        static_cast<uint16_t *>(memory)[k] = narrowFloat(x, pv.dtype);
    }
  };
  const size_t threads =
      count < (size_t(1) << 20) ? 1 : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> helpers;
  const size_t share = (count + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t)
    helpers.emplace_back(fill, std::min(count, t * share), std::min(count, (t + 1) * share));
  fill(0, std::min(count, share));
  for (std::thread &helper : helpers)
    helper.join();
  (pv.deviceDType != DType::None ? pv.narrow : pv.weight) = memory;
  return {};
}

llmc_status parsePlan(const void *data, size_t size, bool verifyWeights, llmc_plan_t &plan) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  if (size < sizeof(fb::Header))
    return invalid("file is " + std::to_string(size) + " bytes, smaller than the header (truncated?)");
  fb::Header h;
  std::memcpy(&h, bytes, sizeof h);
  if (std::memcmp(h.magic, fb::kMagic, sizeof h.magic) != 0)
    return invalid("not an llmc plan (bad magic)");
  if (h.formatVersion > fb::kFormatVersion)
    return makeStatus(LLMC_UNSUPPORTED, "plan format version " + std::to_string(h.formatVersion) +
                                            " is newer than this runtime supports (" +
                                            std::to_string(fb::kFormatVersion) + "); upgrade the runtime");
  if (h.formatVersion == 0 || h.headerSize < sizeof(fb::Header))
    return invalid("bad format version or header size");
  if (h.target != uint32_t(fb::Target::Cpu) && h.target != uint32_t(fb::Target::Cuda))
    return makeStatus(LLMC_UNSUPPORTED, "plan was compiled for an unknown target " + std::to_string(h.target));
  auto inFile = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  if (!inFile(h.programOffset, h.programSize) || !inFile(h.weightsOffset, h.weightsSize))
    return invalid("a section extends past the end of the file (" + std::to_string(size) +
                   " bytes; truncated?)");
  const uint8_t *program = bytes + h.programOffset;
  const uint8_t *weights = bytes + h.weightsOffset;
  if (fb::checksum(program, h.programSize) != h.programChecksum)
    return invalid("program section checksum mismatch (the file is corrupt)");
  if (verifyWeights && fb::checksum(weights, h.weightsSize) != h.weightsChecksum)
    return invalid("weights section checksum mismatch (the file is corrupt)");
  flatbuffers::Verifier verifier(program, h.programSize);
  if (!fb::VerifyProgramBuffer(verifier))
    return invalid("program section fails structural verification");
  const fb::Program *p = fb::GetProgram(program);

  std::vector<int64_t> upper;
  if (llmc_status s = parseSymbols(*p, plan, upper))
    return s;
  const auto *values = p->values();
  const int numValues = int(values->size());
  plan.values.resize(numValues);
  for (int i = 0; i < numValues; ++i) {
    const fb::Value *v = values->Get(i);
    PlanValue &pv = plan.values[i];
    pv.name = v->name()->str();
    pv.kind = uint8_t(v->kind());
    pv.dtype = static_cast<DType>(v->dtype());
    if (dtypeSize(pv.dtype) == 0)
      return invalid("value '" + pv.name + "' has an unknown element type");
    pv.deviceDType = static_cast<DType>(v->device_dtype());
    if (pv.deviceDType != DType::None &&
        (pv.dtype != DType::F32 || (pv.deviceDType != DType::F16 && pv.deviceDType != DType::BF16)))
      return invalid("value '" + pv.name + "' has a device element type other than f16 or bf16 for an f32 value");
    if (v->shape()->size() > size_t(kMaxRank))
      return invalid("value '" + pv.name + "' has rank above " + std::to_string(kMaxRank));
    pv.shape.rank = int(v->shape()->size());
    if (v->dims() && v->dims()->size() != v->shape()->size())
      return invalid("value '" + pv.name + "' has dimension expressions for another rank");
    uint64_t elements = 1;
    for (int d = 0; d < pv.shape.rank; ++d) {
      const int32_t node = v->dims() ? v->dims()->Get(d) : -1;
      int64_t dim = v->shape()->Get(d);
      pv.dimNode[d] = node;
      if (node >= 0) {
        if (size_t(node) >= plan.dimNodes.size() || dim != -1)
          return invalid("value '" + pv.name + "' has a bad dynamic dimension");
        pv.dynamic = true;
        pv.shape.dims[d] = -1;
        dim = upper[size_t(node)];
      } else {
        pv.shape.dims[d] = dim;
      }
      if (dim < 0 || dim > (int64_t(1) << 40) || node < -1)
        return invalid("value '" + pv.name + "' has a bad dimension");
      elements = dim == 0 ? 0 : elements;
      if (elements > (uint64_t(1) << 44) / uint64_t(std::max<int64_t>(dim, 1)))
        return invalid("value '" + pv.name + "' is impossibly large");
      elements *= uint64_t(dim);
    }
    pv.capacity = size_t(elements) * dtypeSize(pv.dtype);
    if (pv.dynamic && pv.kind == fb::ValueKind_Weight)
      return invalid("weight '" + pv.name + "' has a dynamic dimension");
    if (pv.kind == fb::ValueKind_Input)
      for (int d = 0; d < pv.shape.rank; ++d)
        if (pv.dimNode[d] >= 0 && plan.dimNodes[size_t(pv.dimNode[d])].op != fb::DimOp::Symbol)
          return invalid("input '" + pv.name + "' has a dimension that is not a plain symbol");
    if (pv.kind == fb::ValueKind_Weight && v->random_fill()) {
      if ((pv.dtype != DType::F32 && pv.dtype != DType::F16 && pv.dtype != DType::BF16) || v->weight_size() != 0)
        return invalid("weight '" + pv.name + "' is to be filled at load but is not a float weight without data");
      if (std::string err = fillRandomWeight(plan, pv, p->random_weights_seed() ^ (uint64_t(i) * 0x9e3779b97f4a7c15ull));
          !err.empty())
        return makeStatus(LLMC_OUT_OF_MEMORY, err);
    } else if (pv.kind == fb::ValueKind_Weight) {
      const DType stored = pv.deviceDType != DType::None ? pv.deviceDType : pv.dtype;
      const uint64_t expected = uint64_t(pv.shape.numel()) * dtypeSize(stored);
      if (v->weight_size() != expected || v->weight_offset() > h.weightsSize ||
          v->weight_size() > h.weightsSize - v->weight_offset())
        return invalid("weight '" + pv.name + "' lies outside the weights section or has the wrong size");
      (stored != pv.dtype ? pv.narrow : pv.weight) = weights + v->weight_offset();
    } else if (pv.kind > fb::ValueKind_Weight) {
      return invalid("value '" + pv.name + "' has an unknown kind");
    }
  }
  auto checkIndex = [&](int index, bool allowAbsent) {
    return (allowAbsent && index == -1) || (index >= 0 && index < numValues);
  };
  std::vector<bool> defined(numValues, false);
  for (int i = 0; i < numValues; ++i)
    defined[i] = plan.values[i].kind == fb::ValueKind_Input || plan.values[i].kind == fb::ValueKind_Weight;
  for (int index : *p->inputs()) {
    if (!checkIndex(index, false) || plan.values[index].kind != fb::ValueKind_Input)
      return invalid("bad graph input index");
    plan.inputs.push_back(index);
  }
  for (const fb::Op *op : *p->ops()) {
    PlanOp po;
    po.kernel = op->kernel()->str();
    po.location = op->location() ? op->location()->str() : std::string();
    po.segment = op->graph_segment();
    po.fn = findKernel(po.kernel);
    if (!po.fn)
      return makeStatus(LLMC_UNSUPPORTED, "plan uses kernel '" + po.kernel + "' that this runtime does not have");
    for (int index : *op->inputs()) {
      if (!checkIndex(index, true) || (index >= 0 && !defined[index]))
        return invalid("op '" + po.kernel + "' reads a value that is not defined before it");
      po.inputs.push_back(index);
    }
    for (int index : *op->outputs()) {
      if (!checkIndex(index, false) || defined[index])
        return invalid("op '" + po.kernel + "' writes a value that is already defined");
      defined[index] = true;
      po.outputs.push_back(index);
    }
    if (op->attrs())
      for (const fb::Attr *a : *op->attrs()) {
        Attr attr;
        if (llmc_status s = convertAttr(*a, attr))
          return s;
        po.attrs.add(std::move(attr));
      }
    plan.ops.push_back(std::move(po));
  }
  for (int index : *p->outputs()) {
    if (!checkIndex(index, false) || !defined[index])
      return invalid("a graph output is never computed");
    plan.outputs.push_back(index);
  }
  if (p->cuda_archs())
    for (const flatbuffers::String *arch : *p->cuda_archs()) {
      plan.cudaArchs.push_back(arch->str());
      plan.cudaArchList += (plan.cudaArchList.empty() ? "" : ", ") + arch->str();
    }
  if ((h.target == uint32_t(fb::Target::Cuda)) != !plan.cudaArchs.empty())
    return invalid("the header's target and the plan's CUDA architectures disagree");
  switch (p->precision()) {
  case fb::Precision_F32: plan.precision = DType::F32; break;
  case fb::Precision_F16: plan.precision = DType::F16; break;
  case fb::Precision_BF16: plan.precision = DType::BF16; break;
  case fb::Precision_TF32: plan.precision = DType::F32, plan.tf32 = true; break;
  default: return makeStatus(LLMC_UNSUPPORTED, "the plan has a precision this runtime does not know");
  }
  if (p->cuda_kernels())
    for (const fb::CudaKernel *k : *p->cuda_kernels()) {
      if (k->op() < 0 || size_t(k->op()) >= plan.ops.size() || k->cubin()->size() == 0)
        return invalid("a CUDA kernel names an op that does not exist, or is empty");
      plan.cudaKernels.push_back({k->op(), k->arch()->str(), k->name()->str(), k->cubin()->data(), k->cubin()->size()});
    }
  if (p->tokenizer()) {
    plan.tokenizer = std::make_unique<Tokenizer>();
    if (std::string err = plan.tokenizer->load(*p->tokenizer()); !err.empty())
      return invalid(err);
  }
  return nullptr;
}

} // namespace llmc::rt

namespace {

llmc_status loadFile(const char *path, bool verifyWeights, llmc_plan_t &plan) {
  using llmc::rt::makeStatus;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeStatus(LLMC_NOT_FOUND, std::string("cannot open plan '") + path + "': " + strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return makeStatus(LLMC_INVALID_ARGUMENT, std::string("'") + path + "' is not a regular file");
  }
  const size_t size = size_t(st.st_size);
  if (size == 0) {
    close(fd);
    return makeStatus(LLMC_INVALID_PLAN, std::string("invalid plan: '") + path + "' is empty");
  }
  void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return makeStatus(LLMC_RUNTIME_ERROR, std::string("cannot map '") + path + "': " + strerror(errno));
  plan.mapping = map;
  plan.mappingSize = size;
  return llmc::rt::parsePlan(map, size, verifyWeights, plan);
}

} // namespace

extern "C" llmc_status llmc_plan_load(const char *path, const llmc_plan_options *options, llmc_plan *out_plan) {
  if (!path || !out_plan)
    return llmc::rt::makeStatus(LLMC_INVALID_ARGUMENT, "path and out_plan must not be NULL");
  *out_plan = nullptr;
  llmc_plan_options defaults;
  llmc_plan_options_init(&defaults);
  const llmc_plan_options &o = options ? *options : defaults;
  auto *plan = new (std::nothrow) llmc_plan_t;
  if (!plan)
    return llmc::rt::makeStatus(LLMC_OUT_OF_MEMORY, "out of memory");
  if (llmc_status s = loadFile(path, o.verify_weights != 0, *plan)) {
    plan->release();
    return s;
  }
  *out_plan = plan;
  return nullptr;
}

extern "C" void llmc_plan_options_init(llmc_plan_options *options) {
  if (!options)
    return;
  options->struct_size = sizeof *options;
  options->verify_weights = 1;
}
