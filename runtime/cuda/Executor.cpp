// The CUDA executor's small questions about a plan's values (Executor.h).
#include "Executor.h"
#include "PlanShortcuts.h"

#include <algorithm>

namespace llmc::rt::cuda::exec {

void destroyGraphs(Segment &segment) {
  for (auto &entry : segment.graphs)
    cudaGraphExecDestroy(entry.second);
  segment.graphs.clear();
  segment.last = nullptr;
}

// Starts an executor for `plan`, before its ops are prepared: the bounds of the plan's
// dimensions (checked when the plan was loaded; left at 0, which no kernel takes as a bound, if
// not), and the norms that linears may compute.
void attachPlan(Executor &ex, const llmc_plan_t &plan) {
  ex.plan = &plan;
  ex.halfOf = repeatedHalves(plan);
  ex.unneeded = unneededOnDevice(plan, ex.halfOf);
  findNormsBeforeLinears(ex, {});
  std::vector<int64_t> minima, maxima;
  for (const PlanSymbol &symbol : plan.symbols)
    minima.push_back(symbol.min), maxima.push_back(symbol.max);
  if (!fb::boundDimExprs(plan.dimNodes, minima.data(), maxima.data(), ex.dimBounds).empty())
    ex.dimBounds.assign(plan.dimNodes.size(), 0);
}

// The element type a value has on the device: its 16-bit type in a reduced-precision plan.
DType onDevice(const PlanValue &v) { return v.deviceDType != DType::None ? v.deviceDType : v.dtype; }

bool isFloat(const PlanValue &v) { return v.dtype == DType::F32 || isHalfWidth(v.dtype); }

bool givenInput(const llmc_plan_t &plan, const PlanOp &op, size_t i) {
  return i < op.inputs.size() && op.inputs[i] >= 0 && plan.values[size_t(op.inputs[i])].shape.numel() != 0;
}

Storage storageOf(DType d) { return d == DType::F16 ? Storage::F16 : d == DType::BF16 ? Storage::BF16 : Storage::F32; }

// The one storage type of an op's float operands (the compiler gives every float operand of a
// non-elementwise op the same one, DevicePrecision.h); an error when they differ.
std::string floatStorage(const Executor &ex, const PlanOp &op, Storage &out) {
  DType found = DType::None;
  auto visit = [&](int v) {
    if (v < 0 || !isFloat(ex.plan->values[size_t(v)]))
      return true;
    const DType d = onDevice(ex.plan->values[size_t(v)]);
    if (found != DType::None && d != found)
      return false;
    found = d;
    return true;
  };
  for (int i : op.inputs)
    if (!visit(i))
      return "float operands in different storage types (" + std::string(dtypeName(found)) + " and " +
             dtypeName(onDevice(ex.plan->values[size_t(i)])) + ")";
  for (int o : op.outputs)
    if (!visit(o))
      return "float operands in different storage types";
  out = storageOf(found);
  return {};
}

// Bytes of a value at its bound on the device (capacity is counted in the plan's element type).
size_t deviceCapacity(const PlanValue &v) { return v.capacity / dtypeSize(v.dtype) * dtypeSize(onDevice(v)); }

// Bytes of a value of this run's shape on the device.
size_t deviceBytesOf(const Executor &ex, int value, const Shape &shape) {
  return size_t(shape.numel()) * dtypeSize(onDevice(ex.plan->values[size_t(value)]));
}

int64_t lastDim(const Shape &s) { return s.rank ? s.dims[s.rank - 1] : 1; }

int64_t rowsBefore(const Shape &s, int axis) {
  int64_t n = 1;
  for (int d = 0; d < axis; ++d)
    n *= s.dims[d];
  return n;
}

int floatTypeOf(const Executor &ex, int v) {
  const DType d = v < 0 ? DType::None : onDevice(ex.plan->values[size_t(v)]);
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64 ? int(d) : 0;
}

int commonType(const Executor &ex, const std::vector<int> &vs, int (*typeOf)(const Executor &, int)) {
  int type = 0;
  for (int v : vs) {
    if (v < 0)
      continue;
    const int t = typeOf(ex, v);
    if (!t || (type && t != type))
      return 0;
    type = t;
  }
  return type;
}

int numericTypeOf(const Executor &ex, int v) {
  if (const int type = floatTypeOf(ex, v))
    return type;
  const DType d = v < 0 ? DType::None : onDevice(ex.plan->values[size_t(v)]);
  return d == DType::I64 || d == DType::I32 || d == DType::I8 || d == DType::U8 || d == DType::Bool ? int(d) : 0;
}

int indexTypeOf(const Executor &ex, int v) {
  const DType d = v < 0 ? DType::None : ex.plan->values[size_t(v)].dtype;
  return d == DType::I64 ? 8 : d == DType::I32 ? 4 : 0;
}

int64_t elementsFrom(const Shape &s, int axis) {
  int64_t n = 1;
  for (int d = axis; d < s.rank; ++d)
    n *= s.dims[d];
  return n;
}

// The largest value of dimension `d` of value `v`.
int64_t dimBound(const Executor &ex, int v, int d) {
  const PlanValue &pv = ex.plan->values[size_t(v)];
  return pv.dimNode[d] >= 0 ? ex.dimBounds[size_t(pv.dimNode[d])] : pv.shape.dims[d];
}

ValueUses usesOf(const llmc_plan_t &plan) {
  ValueUses u{std::vector<int>(plan.values.size(), -1), std::vector<int>(plan.values.size(), 0)};
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    for (int v : plan.ops[k].inputs)
      if (v >= 0)
        ++u.readers[size_t(v)];
    for (int v : plan.ops[k].outputs)
      u.producer[size_t(v)] = int(k);
  }
  for (int v : plan.outputs)
    ++u.readers[size_t(v)];
  return u;
}

// Per op, its position in `order` (empty: the plan's order).
std::vector<int> positionsIn(const std::vector<int> &order, size_t ops) {
  std::vector<int> position(ops);
  for (size_t k = 0; k < ops; ++k)
    position[order.empty() ? k : size_t(order[k])] = int(k);
  return position;
}

int axisOf(const PlanOp &op, int rank) {
  const int64_t a = op.attrs.getInt("axis", 0);
  return int(a < 0 ? a + rank : a);
}

// The values of an integer constant of the plan (a weight with host data), or false.
bool constantInts(const llmc_plan_t &plan, int value, std::vector<int64_t> &out) {
  if (value < 0)
    return false;
  const PlanValue &v = plan.values[size_t(value)];
  if (v.kind != fb::ValueKind_Weight || !v.weight || (v.dtype != DType::I64 && v.dtype != DType::I32))
    return false;
  out.resize(size_t(v.shape.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.dtype == DType::I64 ? static_cast<const int64_t *>(v.weight)[i] : static_cast<const int32_t *>(v.weight)[i];
  return true;
}

bool constantScalar(const PlanValue &v, double &out) {
  if (v.kind != fb::ValueKind_Weight || v.shape.numel() != 1 || (!v.weight && !v.narrow))
    return false;
  if (v.narrow) { // a float weight the plan keeps in 16 bits
    out = widenFloat(*static_cast<const uint16_t *>(v.narrow), v.deviceDType);
    return true;
  }
  const void *p = v.weight;
  switch (v.dtype) {
  case DType::F32: out = *static_cast<const float *>(p); return true;
  case DType::F16:
  case DType::BF16: out = widenFloat(*static_cast<const uint16_t *>(p), v.dtype); return true;
  case DType::F64: out = *static_cast<const double *>(p); return true;
  case DType::I64: out = double(*static_cast<const int64_t *>(p)); return true;
  case DType::I32: out = *static_cast<const int32_t *>(p); return true;
  case DType::I8: out = *static_cast<const int8_t *>(p); return true;
  case DType::U8:
  case DType::Bool: out = *static_cast<const uint8_t *>(p); return true;
  default: return false;
  }
}

void contiguousStrides(const Shape &s, int64_t *out) {
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    out[d] = stride;
    stride *= s.dims[d];
  }
}

std::vector<int64_t> permOf(const PlanOp &transpose, int rank) {
  std::vector<int64_t> perm = transpose.attrs.getInts("perm");
  if (perm.empty())
    for (int d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  return perm;
}

// Strides of `in` read at the indices of `out` (numpy broadcasting, right-aligned): 0 where it broadcasts.
void broadcastStridesTo(const Shape &in, const Shape &out, int64_t *strides) {
  int64_t inStrides[kMaxRank];
  contiguousStrides(in, inStrides);
  for (int d = 0; d < out.rank; ++d) {
    const int id = in.rank - (out.rank - d);
    strides[d] = id < 0 || in.dims[id] == 1 ? 0 : inStrides[id];
  }
}

} // namespace llmc::rt::cuda::exec
