// The CUDA executor's norms, linears, rotary and fused regions, prepared (PrepareOps.h).
#include "PrepareOps.h"
#include "Activation.h"
#include "Einsum.h"
#include "FusedElementwiseCuda.h"
#include "KernelUtil.h"
#include "Nvrtc.h"
#include "PlanShortcuts.h"

#include <algorithm>
#include <cmath>

namespace llmc::rt::cuda::exec {

namespace {

// The split after linear op `k` as smallLinear's output pieces, added to `a` where the kernel
// takes them (else `a` stays as it is, and the split launches itself).
void addOutputPieces(const Executor &e, int k, const std::vector<TensorRef> &t, Storage st, SmallLinearArgs &a) {
  const int index = e.splitOfLinear.empty() ? -1 : e.splitOfLinear[size_t(k)];
  if (index < 0)
    return;
  const PlanOp &split = e.plan->ops[size_t(index)];
  const Executor::SplitRotary fused = e.rotaryOfSplit.empty() ? Executor::SplitRotary() : e.rotaryOfSplit[size_t(index)];
  SmallLinearArgs with = a;
  for (int o : split.outputs) {
    LinearPiece &piece = with.piece[with.pieces++];
    piece.columns = lastDim(t[size_t(o)].shape);
    if (o != fused.piece) {
      piece.to = destinationOf(e, o, t);
    } else if (rotaryArgsOf(e, e.plan->ops[size_t(fused.rotary)], t, piece.rotary).empty()) {
      piece.to = piece.rotary.y;
    } else {
      return; // the split's own launch reports it
    }
  }
  if (smallLinearTakes(st, with))
    a = with;
}

} // namespace

// The smallLinear call of linear op `k` in this run, with the norm before it folded in where
// findNormsBeforeLinears paired them, and the split after it where findSplitsAfterLinears did;
// false when this run's linear does not take smallLinear (then cuBLASLt runs it, and the norm
// and the split their own kernels). The linear's, the norm's and the split's launches all ask,
// so that they agree.
bool smallLinearCall(const Executor &e, int k, const std::vector<TensorRef> &t, Storage st, SmallLinearArgs &a) {
  const PlanOp &op = e.plan->ops[size_t(k)];
  if (!e.useSmallLinear || op.attrs.getInt("transB", 0) == 0)
    return false;
  auto given = [&](size_t i) { return op.inputs.size() > i && op.inputs[i] >= 0 && t[size_t(op.inputs[i])].numel() > 0; };
  const Shape &w = t[size_t(op.inputs[1])].shape;
  const std::string activation(op.attrs.getString("activation"));
  a = SmallLinearArgs();
  a.K = w.dims[1], a.N = w.dims[0], a.M = t[size_t(op.inputs[0])].numel() / a.K, a.swiglu = activation == "swiglu";
  a.x = e.at(op.inputs[0]), a.w = e.at(op.inputs[1]), a.bias = given(2) ? e.at(op.inputs[2]) : nullptr;
  a.gate = given(3) ? e.at(op.inputs[3]) : nullptr, a.residual = given(4) ? e.at(op.inputs[4]) : nullptr;
  a.out = e.at(op.outputs[0]);
  a.overlapPrevious = e.overlapLaunches;
  a.blocks = e.gemvBlocks;
  if (const int n = e.normOfLinear.empty() ? -1 : e.normOfLinear[size_t(k)]; n >= 0) {
    const PlanOp &norm = e.plan->ops[size_t(n)];
    const bool add = norm.kernel == "add_rms_norm";
    a.x = e.at(norm.inputs[0]);
    a.normResidual = add ? e.at(norm.inputs[1]) : nullptr;
    a.normScale = e.at(norm.inputs[normScaleInput(norm)]);
    a.normSum = add && norm.outputs.size() > 1 ? e.at(norm.outputs[1]) : nullptr;
    a.normEpsilon = float(norm.attrs.getFloat("epsilon", 1e-5));
  }
  if (!smallLinearTakes(st, a))
    return false;
  addOutputPieces(e, k, t, st, a);
  return true;
}

// A queued step launched on its own (a chain of one).
static std::string launchStep(Storage st, const ChainStep &step, cudaStream_t stream) {
  return step.attention ? decodeAttention(st, step.attentionArgs, step.splits, step.workspace, stream)
                        : smallLinear(st, step.linear, step.activation, stream);
}

// Launches the queued steps, then `launch()`: a step the executor does not chain (no ChainStep
// is built for it: the default path of every GEMV and decode attention launch).
template <typename Launch> static std::string afterQueued(Executor &e, Launch launch) {
  if (std::string err = flushChainedLinears(e); !err.empty())
    return err;
  return launch();
}

// Queues `step` for the next chained launch, after launching the queued ones where it cannot
// join them (another storage type, a full chain, or an attention, which only starts one).
static std::string queueChained(Executor &e, Storage st, ChainStep step) {
  if (!e.chained.empty() && (e.chainStorage != st || e.chained.size() == size_t(kMaxChainSteps) || step.attention))
    if (std::string err = flushChainedLinears(e); !err.empty())
      return err;
  e.chained.push_back(std::move(step)), e.chainStorage = st;
  return {};
}

std::string launchOrChain(Executor &e, Storage st, const SmallLinearArgs &a, const std::string &activation) {
  if (e.gemvChain == 0 || !smallLinearChainTakes(st, a))
    return afterQueued(e, [&] { return smallLinear(st, a, activation, e.stream); });
  ChainStep step;
  step.linear = a, step.activation = activation;
  return queueChained(e, st, std::move(step));
}

std::string attentionOrChain(Executor &e, Storage st, const AttentionArgs &a, int splits) {
  if (e.gemvChain == 0 || !e.chainAttention || !decodeAttentionChainTakes(st, a, splits))
    return afterQueued(e, [&] { return decodeAttention(st, a, splits, e.attentionWorkspace, e.stream); });
  ChainStep step;
  step.attention = true, step.attentionArgs = a, step.splits = splits, step.workspace = e.attentionWorkspace;
  return queueChained(e, st, std::move(step));
}

std::string flushChainedLinears(Executor &e) {
  if (e.chained.empty())
    return {};
  std::string err = e.chained.size() > 1
                        ? decodeChain(e.chainStorage, e.chained.data(), int(e.chained.size()),
                                      std::max<int64_t>(0, e.gemvChain), e.chainBarrier, e.stream)
                        : launchStep(e.chainStorage, e.chained[0], e.stream);
  e.chained.clear();
  return err.empty() ? err : "chained launch: " + err;
}

std::string prepareNorm(Executor &ex, const PlanOp &op, int k, PreparedOp &out) {
  const bool fused = op.kernel == "add_rms_norm" || op.kernel == "add_layer_norm";
  const bool layer = op.kernel == "layer_norm" || op.kernel == "add_layer_norm";
  const int scaleAt = int(normScaleInput(op)), biasAt = scaleAt + 1;
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
  const int rank = x.shape.rank;
  // Normalized over the axes from `axis` on (ONNX's LayerNormalization and RMSNormalization): the
  // rows of the elements from there, contiguous.
  const int64_t axis = normalizeAxis(op.attrs.getInt("axis", -1), rank);
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const int type = commonFloatType(ex, op.inputs);
  if (!type || axis < 0 || axis >= rank)
    return "needs float operands of one type and an axis within the input's rank";
  const int64_t scales = ex.plan->values[size_t(op.inputs[size_t(scaleAt)])].shape.numel();
  // (A layer norm without a bias, OLMo's, Cohere's or MPT's, may hold an empty one.)
  const bool hasBias = layer && givenInput(*ex.plan, op, size_t(biasAt));
  if (hasBias && ex.plan->values[size_t(op.inputs[size_t(biasAt)])].shape.numel() != scales)
    return "needs as many biases as scales";
  const double eps = op.attrs.getFloat("epsilon", 1e-5);
  out.chainable = true;
  out.launch = [=, &op](Executor &e, const std::vector<TensorRef> &t) {
    SmallLinearArgs a;
    if (const int linear = e.linearOfNorm[size_t(k)]; linear >= 0 && smallLinearCall(e, linear, t, st, a))
      return std::string(); // the linear computes it (smallLinear's normScale)
    if (std::string err = flushChainedLinears(e); !err.empty())
      return err;
    const Shape &s = t[size_t(op.inputs[0])].shape;
    const int64_t cols = elementsFrom(s, int(axis));
    if (cols != scales)
      return "needs one scale per element normalized (" + std::to_string(cols) + "), not " + std::to_string(scales);
    return addNorm(type, layer, e.at(op.inputs[0]), fused ? e.at(op.inputs[1]) : nullptr,
                   e.at(op.inputs[size_t(scaleAt)]), hasBias ? e.at(op.inputs[size_t(biasAt)]) : nullptr,
                   e.at(op.outputs[0]), fused ? e.at(op.outputs[1]) : nullptr, rowsBefore(s, int(axis)), cols, eps,
                   e.stream);
  };
  return {};
}

// group_norm, instance_norm, layer_norm_stats and batch_norm (GroupNorm.cu): statistics over a
// group of channels, a channel, a row's trailing axes, or given per channel.
std::string prepareGroupNorm(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const bool stats = op.kernel == "layer_norm_stats", batch = op.kernel == "batch_norm";
  const size_t inputs = stats ? 1 : batch ? 5 : 3, outputs = stats ? 2 : 1;
  std::vector<int> operands(op.inputs);
  operands.insert(operands.end(), op.outputs.begin(), op.outputs.end());
  const int st = commonFloatType(ex, operands);
  if (op.inputs.size() != inputs || op.outputs.size() != outputs || !st)
    return "expects a float input" +
           std::string(stats ? "" : batch ? ", scale, bias, mean and variance" : ", scale and bias") + ", all of one type";
  for (int i : op.inputs)
    if (i < 0)
      return "an absent input";
  const double eps = op.attrs.getFloat("epsilon", 1e-5);
  const int64_t numGroups = op.attrs.getInt("num_groups", 0);
  out.launch = [&op, st, stats, batch, eps, numGroups](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    const void *x = e.at(op.inputs[0]);
    if (stats) {
      const int axis = normalizeAxis(op.attrs.getInt("axis", -1), s.rank);
      if (axis < 0 || axis >= s.rank)
        return std::string("axis out of range");
      return groupNorm(st, x, nullptr, nullptr, nullptr, e.at(op.outputs[0]), e.at(op.outputs[1]), rowsBefore(s, axis),
                       elementsFrom(s, axis), 1, 1, 1, eps, e.stream);
    }
    if (s.rank < (op.kernel == "instance_norm" ? 3 : 2))
      return std::string("the input's rank is too small");
    const int64_t N = s.dims[0], C = s.dims[1], spatial = elementsFrom(s, 2);
    for (size_t i = 1; i < op.inputs.size(); ++i)
      if (t[size_t(op.inputs[i])].numel() != C)
        return std::string("needs one scale, bias (mean, variance) per channel");
    const void *scale = e.at(op.inputs[1]), *bias = e.at(op.inputs[2]);
    if (batch)
      return batchNorm(st, x, e.at(op.outputs[0]), scale, bias, e.at(op.inputs[3]), e.at(op.inputs[4]), s.numel(), C,
                       spatial, eps, e.stream);
    const int64_t groups = op.kernel == "instance_norm" ? C : numGroups;
    if (groups < 1 || C % groups)
      return std::string("num_groups must divide the channels");
    return groupNorm(st, x, e.at(op.outputs[0]), scale, bias, nullptr, nullptr, N * groups, C / groups * spatial,
                     groups, C / groups, spatial, eps, e.stream);
  };
  return {};
}

std::string prepareSoftmax(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
  const int rank = x.shape.rank;
  const int64_t axis = normalizeAxis(op.attrs.getInt("axis", -1), rank);
  const int type = floatTypeOf(ex, op.inputs[0]);
  if (!type || type != floatTypeOf(ex, op.outputs[0]) || axis < 0 || axis >= rank)
    return "needs a float input, an output of its type and an axis within its rank";
  const bool log = op.kernel == "log_softmax";
  out.launch = [&op, type, log, axis](Executor &e, const std::vector<TensorRef> &t) {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    if (s.numel() == 0)
      return std::string();
    const int64_t inner = elementsFrom(s, int(axis) + 1);
    return softmax(type, e.at(op.inputs[0]), e.at(op.outputs[0]), rowsBefore(s, int(axis)) * inner, s.dims[axis],
                   e.stream, log, inner);
  };
  return {};
}

// An embedding lookup (gather along axis 0 of a 2-D float table by int64 ids) on gatherRows;
// any other gather (another axis or rank, integer data, int32 indices) on gatherAxis.
std::string prepareGather(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const PlanValue &table = ex.plan->values[size_t(op.inputs[0])], &ids = ex.plan->values[size_t(op.inputs[1])];
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const int indexBytes = indexTypeOf(ex, op.inputs[1]);
  if (!indexBytes)
    return "supports int32 and int64 indices";
  if (op.attrs.getInt("axis", 0) != 0 || table.shape.rank != 2 || !isFloat(table) || ids.dtype != DType::I64) {
    const int elem = int(dtypeSize(onDevice(table)));
    out.launch = [&op, elem, indexBytes](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &data = t[size_t(op.inputs[0])].shape;
      const int axis = normalizeAxis(op.attrs.getInt("axis", 0), data.rank);
      if (axis < 0 || axis >= data.rank)
        return std::string("axis out of range");
      return gatherAxis(e.at(op.inputs[0]), e.at(op.inputs[1]), indexBytes, e.at(op.outputs[0]), rowsBefore(data, axis),
                        data.dims[axis], t[size_t(op.inputs[1])].numel(), elementsFrom(data, axis + 1), elem,
                        e.errorFlag, e.stream);
    };
    return {};
  }
  out.launch = [&op, st](Executor &e, const std::vector<TensorRef> &t) {
    const TensorRef &tab = t[size_t(op.inputs[0])];
    return gatherRows(st, e.at(op.inputs[0]), tab.shape.dims[0], tab.shape.dims[1],
                      static_cast<const int64_t *>(e.at(op.inputs[1])), t[size_t(op.inputs[1])].numel(),
                      e.at(op.outputs[0]), e.errorFlag, e.stream);
  };
  return {};
}

// linear: cuBLASLt (bias in its epilogue), then our epilogue kernel for what cuBLASLt has no
// exact form of (SiLU, erf GELU, SwiGLU, gate, residual), through a scratch slot of the arena.
// A call of at most kSmallLinearMaxM rows (a decode step) with an [N, K] weight runs on
// smallLinear instead, epilogue included (and the RMS norm before it, smallLinearCall), unless
// the context turned it off.
std::string prepareLinear(Executor &ex, const PlanOp &op, int k, PreparedOp &out, size_t &scratchBytes) {
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])], &w = ex.plan->values[size_t(op.inputs[1])];
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  if (!isFloat(x) || !isFloat(w) || w.kind != fb::ValueKind_Weight || w.shape.rank != 2)
    return "needs a float input and a constant 2-D float weight";
  auto present = [&](size_t i) { return givenInput(*ex.plan, op, i); };
  const std::string activation(op.attrs.getString("activation").empty() ? "none" : op.attrs.getString("activation"));
  const bool transB = op.attrs.getInt("transB", 0) != 0, swiglu = activation == "swiglu";
  const bool bias = present(2), gate = present(3), residual = present(4);
  LinearSpec spec;
  spec.K = w.shape.dims[transB ? 1 : 0];
  spec.N = w.shape.dims[transB ? 0 : 1];
  spec.transB = transB, spec.bias = bias, spec.storage = st, spec.tf32 = ex.plan->tf32;
  // The bound of M: the input's capacity (in elements) over its row width.
  spec.maxM = std::max<int64_t>(1, int64_t(x.capacity / dtypeSize(x.dtype)) / spec.K);
  // ReLU and tanh-GELU alone are cuBLASLt epilogues; the rest takes our epilogue kernel.
  const bool ltActivation = (activation == "relu" || activation == "gelu_tanh") && !gate && !residual;
  if (ltActivation)
    spec.activation = activation;
  const bool epilogue = (activation != "none" && !ltActivation) || gate || residual;
  if (epilogue)
    scratchBytes = std::max(scratchBytes, aligned(size_t(spec.maxM * spec.N) * storageBytes(st)));
  if (ex.dry)
    return spec.N > 0 && spec.K > 0 ? std::string() : "an empty weight";
  std::unique_ptr<LtLinear> linear;
  if (std::string err = LtLinear::create(ex.lt, spec, ex.workspaceBytes, linear); !err.empty())
    return err;
  const LtLinear *l = linear.get();
  ex.linears.push_back(std::move(linear));
  const int64_t N = spec.N, K = spec.K;
  out.chainable = true;
  out.launch = [=, &op](Executor &e, const std::vector<TensorRef> &t) {
    const int64_t M = t[size_t(op.inputs[0])].numel() / K;
    if (SmallLinearArgs a; smallLinearCall(e, k, t, st, a))
      return launchOrChain(e, st, a, activation);
    if (std::string err = flushChainedLinears(e); !err.empty())
      return err;
    void *y = epilogue ? e.arena : e.at(op.outputs[0]); // the scratch slot opens the arena
    if (std::string err = l->run(e.at(op.inputs[0]), e.at(op.inputs[1]), bias ? e.at(op.inputs[2]) : nullptr, y, M,
                                 e.workspace, e.stream);
        !err.empty())
      return err;
    if (!epilogue)
      return std::string();
    return linearEpilogue(st, y, e.at(op.outputs[0]), gate ? e.at(op.inputs[3]) : nullptr,
                          residual ? e.at(op.inputs[4]) : nullptr, M, swiglu ? N / 2 : N, activation, swiglu, e.stream);
  };
  return {};
}

namespace {
// The one element type of a matmul's or gemm's operands and result, a float or an integer
// (Matmul.cu); 0 where they differ or are of another type.
int productTypeOf(const Executor &ex, const PlanOp &op) {
  std::vector<int> operands(op.inputs);
  operands.push_back(op.outputs[0]);
  const int type = commonType(ex, operands, numericTypeOf);
  return type == int(DType::Bool) ? 0 : type;
}
} // namespace

// matmul (numpy's, of two activations): its operands' batch dims broadcast against each other, a
// rank-1 operand promoted ([K] to [1, K] in front, [K, 1] behind), on our tiled kernel. Floats
// of different types (an f32 product of 16-bit operands: DevicePrecision.h) on its mixed form.
std::string prepareMatmul(Executor &ex, const PlanOp &op, PreparedOp &out) {
  if (op.inputs.size() != 2 || op.inputs[0] < 0 || op.inputs[1] < 0 || op.outputs.size() != 1)
    return "expects two operands and a result";
  const int type = productTypeOf(ex, op);
  const int aType = floatTypeOf(ex, op.inputs[0]), bType = floatTypeOf(ex, op.inputs[1]),
            cType = floatTypeOf(ex, op.outputs[0]);
  if (!type && !mixedMatmulTakes(aType, bType, cType))
    return "supports two float or integer operands of the result's type, or floats of f32 and one 16-bit type";
  out.launch = [&op, type, aType, bType, cType](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &a = t[size_t(op.inputs[0])].shape, &b = t[size_t(op.inputs[1])].shape;
    MatmulArgs m;
    if (std::string err = matmulArgsOf(a.rank, a.dims, b.rank, b.dims, m); !err.empty())
      return err;
    const void *x = e.at(op.inputs[0]), *y = e.at(op.inputs[1]);
    return type ? matmul(type, x, y, e.at(op.outputs[0]), m, e.stream)
                : mixedMatmul(aType, bType, cType, x, y, e.at(op.outputs[0]), m, e.stream);
  };
  return {};
}

namespace {

// The most scratch one grouped expert_linear may take (its f32 rows before they are combined, the
// grouping): more ids than it holds go in chunks. GPT-OSS-20B's 2880 outputs hold 5800 ids (1450
// tokens of 4 experts each) in it.
constexpr size_t kExpertScratchCap = size_t(64) << 20;

// The scratch for expert_linear `op`'s ids on the grouped kernel: as many as the plan's ids value
// may hold, up to the cap; 0 where the grouped kernel is not for it (not 16-bit, matrices that
// are not a weight of known shape, fewer than 256 ids within the cap).
size_t groupedExpertScratch(const Executor &ex, const PlanOp &op, int type, bool halves, bool combined) {
  const PlanValue &w = ex.plan->values[size_t(op.inputs[1])], &ids = ex.plan->values[size_t(op.inputs[2])];
  if ((type != int(DType::F16) && type != int(DType::BF16)) || w.kind != fb::ValueKind_Weight || w.shape.rank != 3)
    return 0;
  ExpertLinearArgs a;
  a.E = w.shape.dims[0], a.M = w.shape.dims[1], a.K = w.shape.dims[2], a.swiglu = halves;
  if (a.E < 1 || a.M < 1 || (halves && a.M % 2))
    return 0;
  a.N = int64_t(ids.capacity / sizeof(int64_t)); // the most ids the plan's value holds
  const int64_t rows = groupedExpertRowsWithin(a, combined, kExpertScratchCap);
  return rows > 0 && (rows >= 256 || rows == a.N) ? groupedExpertScratchBytes(a, rows, combined) : 0;
}

} // namespace

// expert_linear (a mixture of experts' projection, llmc-fuse-linear): rows [T, K], matrices
// [E, M, K], int64 ids of T * repeat elements and perhaps combine weights [R, g], each id's row
// times the matrix it picks, with a swiglu or none, weighed and summed by groups of g where
// combined (Matmul.cu). Many ids (a prompt's) of 16-bit types go to the grouped kernel
// (GroupedExperts.cu) through a scratch slot of the arena, `scratchBytes` at least its size.
std::string prepareExpertLinear(Executor &ex, const PlanOp &op, PreparedOp &out, size_t &scratchBytes) {
  // (An empty combine: none, before a bias.)
  const bool combined = givenInput(*ex.plan, op, 3), biased = givenInput(*ex.plan, op, 4);
  if (op.inputs.size() < 3 || op.inputs.size() > 5 || op.outputs.size() != 1 ||
      std::count(op.inputs.begin(), op.inputs.begin() + 3, -1))
    return "takes rows, matrices, ids and perhaps combine weights and a bias";
  std::vector<int> floats = {op.inputs[0], op.inputs[1], op.outputs[0]};
  if (combined)
    floats.push_back(op.inputs[3]);
  if (biased)
    floats.push_back(op.inputs[4]);
  const int type = commonFloatType(ex, floats);
  if (!type || type == int(DType::F64) || ex.plan->values[size_t(op.inputs[2])].dtype != DType::I64)
    return "supports f32, f16 or bf16 rows, matrices and weights of one type and int64 ids";
  const int64_t repeat = op.attrs.getInt("repeat", 1);
  ExpertGating gating;
  if (!parseExpertGating(op.attrs.getString("activation"), op.attrs.getFloat("alpha", 1.0),
                         op.attrs.getFloat("limit", 0.0), op.attrs.getFloat("up_offset", 1.0), gating) ||
      repeat < 1)
    return std::string("takes an activation ") + kExpertGatings + " and a repeat of 1 or more";
  const size_t groupedBytes = ex.groupedExperts ? groupedExpertScratch(ex, op, type, gating.halves, combined) : 0;
  scratchBytes = std::max(scratchBytes, groupedBytes);
  out.launch = [&op, type, repeat, combined, biased, gating,
                groupedBytes](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &x = t[size_t(op.inputs[0])].shape, &w = t[size_t(op.inputs[1])].shape;
    ExpertLinearArgs a;
    a.N = t[size_t(op.inputs[2])].numel(), a.repeat = repeat, a.swiglu = gating.halves;
    a.clamped = gating.clamped, a.alpha = gating.alpha, a.limit = gating.limit, a.upOffset = gating.upOffset;
    if (x.rank != 2 || w.rank != 3 || w.dims[2] != x.dims[1] || a.N != x.dims[0] * repeat)
      return "operands do not agree: input " + x.str() + ", weight " + w.str();
    if (biased) {
      const Shape &b = t[size_t(op.inputs[4])].shape;
      if (b.rank != 2 || b.dims[0] != w.dims[0] || b.dims[1] != w.dims[1])
        return "bias " + b.str() + " is not [E, M] of weight " + w.str();
      a.bias = e.at(op.inputs[4]);
    }
    if (combined) {
      const Shape &c = t[size_t(op.inputs[3])].shape;
      if (c.rank != 2 || c.numel() != a.N)
        return "combine weights " + c.str() + " do not have a weight per id";
      a.group = c.dims[1];
    }
    a.M = w.dims[1], a.K = w.dims[2], a.E = w.dims[0];
    // (A group of ids that the scratch cannot hold, with the most ids it may, takes the warp kernel.)
    if (groupedBytes && groupedExpertsPay(type, a) &&
        groupedExpertScratchBytes(a, combined ? a.group : 1, combined) <= groupedBytes)
      return groupedExpertLinear(type, e.at(op.inputs[0]), e.at(op.inputs[1]),
                                 static_cast<const int64_t *>(e.at(op.inputs[2])),
                                 combined ? e.at(op.inputs[3]) : nullptr, e.at(op.outputs[0]), a, e.arena, groupedBytes,
                                 e.errorFlag, e.stream); // the scratch slot opens the arena
    return expertLinear(type, e.at(op.inputs[0]), e.at(op.inputs[1]), static_cast<const int64_t *>(e.at(op.inputs[2])),
                        combined ? e.at(op.inputs[3]) : nullptr, e.at(op.outputs[0]), a, e.errorFlag, e.stream);
  };
  return {};
}

// einsum: the equation parsed once, its loops for this run's shapes (as the CPU kernel's).
std::string prepareEinsum(Executor &ex, const PlanOp &op, PreparedOp &out) {
  std::vector<int> operands(op.inputs);
  operands.push_back(op.outputs[0]);
  const int type = commonType(ex, operands, numericTypeOf);
  if (op.inputs.empty() || !type || std::count(op.inputs.begin(), op.inputs.end(), -1))
    return "supports operands of one type (a float, an integer or bool) as its result";
  std::vector<int> ranks;
  for (int i : op.inputs)
    ranks.push_back(ex.plan->values[size_t(i)].shape.rank);
  EinsumSpec spec;
  if (std::string err = parseEinsum(std::string(op.attrs.getString("equation")), ranks, spec); !err.empty())
    return err;
  std::string labels; // every label of the equation (the output's are among the operands')
  for (const std::string &term : spec.inputs)
    for (char c : term)
      if (labels.find(c) == std::string::npos)
        labels += c;
  if (std::string err = einsumFits(int(op.inputs.size()), int(labels.size())); !err.empty())
    return err;
  out.launch = [&op, type, spec](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    std::vector<std::vector<int64_t>> dims;
    std::vector<const void *> in;
    for (int i : op.inputs) {
      dims.emplace_back(t[size_t(i)].shape.dims, t[size_t(i)].shape.dims + t[size_t(i)].shape.rank);
      in.push_back(e.at(i));
    }
    EinsumLoops loops;
    if (std::string err = einsumLoops(spec, dims, loops); !err.empty())
      return err;
    if (t[size_t(op.outputs[0])].numel() != loops.outCount)
      return std::string("the output's shape does not match the equation");
    EinsumArgs a;
    if (std::string err = einsumArgsOf(loops, int(spec.output.size()), in, a); !err.empty())
      return err;
    return einsum(type, a, e.at(op.outputs[0]), e.stream);
  };
  return {};
}

// A gemm the compiler left as it is (llmc-fuse-linear makes linears of those with a constant B,
// alpha 1, no transA and a bias for C): on the matmul kernel.
std::string prepareGemm(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const int type = productTypeOf(ex, op);
  if (op.inputs.size() < 2 || op.inputs[0] < 0 || op.inputs[1] < 0 || !type)
    return "supports float or integer operands of the result's type";
  const double alpha = op.attrs.getFloat("alpha", 1.0), beta = op.attrs.getFloat("beta", 1.0);
  const bool transA = op.attrs.getInt("transA", 0) != 0, transB = op.attrs.getInt("transB", 0) != 0;
  const int c = op.inputs.size() > 2 && beta != 0.0 ? op.inputs[2] : -1;
  out.launch = [&op, type, alpha, beta, transA, transB, c](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &a = t[size_t(op.inputs[0])].shape, &b = t[size_t(op.inputs[1])].shape;
    if (a.rank != 2 || b.rank != 2)
      return std::string("operands must be matrices");
    MatmulArgs m;
    const Shape none;
    const Shape &add = c >= 0 ? t[size_t(c)].shape : none;
    if (std::string err = gemmArgsOf(a.dims, b.dims, transA, transB, add.rank, add.dims, m); !err.empty())
      return err;
    m.alpha = alpha, m.beta = beta;
    return matmul(type, e.at(op.inputs[0]), e.at(op.inputs[1]), e.at(op.outputs[0]), m, e.stream,
                  c >= 0 ? e.at(c) : nullptr);
  };
  return {};
}

// Where an op writes value `v`: its own bytes, or, for a linked cache's new rows (inPlaceOf),
// the cache itself after the rows already there (their count read from the length table), so
// that the concatenation has nothing left to copy; rows that come to it through transposes
// where those put them (chooseInPlace).
ShiftedOutput destinationOf(const Executor &e, int v, const std::vector<TensorRef> &t) {
  const int concat = e.cacheRows.empty() ? -1 : e.cacheRows[size_t(v)];
  if (concat < 0)
    return {e.at(v)};
  const int present = e.plan->ops[size_t(concat)].outputs[0];
  const Shape &rows = t[size_t(present)].shape;
  int64_t row = 1;
  for (int d = 1; d < rows.rank; ++d)
    row *= rows.dims[d];
  const RowStrides placed = e.rowStridesThisRun.empty() ? RowStrides() : e.rowStridesThisRun[size_t(concat)];
  return {e.at(present), e.lengths + e.ops[size_t(concat)].lengthSlot, row, placed.batch, placed.token};
}

// A rotary op's kernel arguments for this run's shapes (its input where the plan has it).
std::string rotaryArgsOf(const Executor &e, const PlanOp &op, const std::vector<TensorRef> &t, RotaryArgs &a) {
  const Shape &x = t[size_t(op.inputs[0])].shape, &table = t[size_t(op.inputs[1])].shape;
  const bool byPosition = op.inputs.size() > 3 && op.inputs[3] >= 0 && t[size_t(op.inputs[3])].numel() > 0;
  a.flat = x.rank == 3;
  a.H = a.flat ? op.attrs.getInt("num_heads", 0) : x.dims[1];
  if (a.H <= 0 || (a.flat && x.dims[2] % a.H))
    return "3-D input needs num_heads dividing the hidden size";
  a.B = x.dims[0], a.S = a.flat ? x.dims[1] : x.dims[2], a.D = a.flat ? x.dims[2] / a.H : x.dims[3];
  a.rotaryDim = op.attrs.getInt("rotary_embedding_dim", 0) ? op.attrs.getInt("rotary_embedding_dim", 0) : a.D;
  if (table.dims[table.rank - 1] * 2 != a.rotaryDim ||
      (!byPosition && ((table.dims[0] != a.B && table.dims[0] != 1) || table.dims[1] != a.S)))
    return "cos/sin tables must have rotary_dim / 2 columns (and be [batch or 1, seq, .] without ids)";
  a.x = e.at(op.inputs[0]), a.y = destinationOf(e, op.outputs[0], t);
  a.cos = e.at(op.inputs[1]), a.sin = e.at(op.inputs[2]);
  a.tableRows = byPosition ? table.dims[0] : table.dims[0] * table.dims[1];
  a.positions = byPosition ? static_cast<const int64_t *>(e.at(op.inputs[3])) : nullptr;
  a.sharedTables = !byPosition && table.dims[0] == 1;
  a.interleaved = op.attrs.getInt("interleaved", 0) != 0;
  a.error = e.errorFlag;
  return {};
}

// rotary (ONNX RotaryEmbedding; llmc-raise-attention's key rotations): int64 position ids into
// 2-D cos/sin tables, or no ids and tables [B or 1, S, rot / 2]. A key rotation of a merged QKV
// projection's piece may be done by its split instead (inPlaceOf).
std::string prepareRotary(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const PlanValue &x = ex.plan->values[size_t(op.inputs[0])], &cosT = ex.plan->values[size_t(op.inputs[1])];
  const bool byPosition = givenInput(*ex.plan, op, 3);
  if ((byPosition && (ex.plan->values[size_t(op.inputs[3])].dtype != DType::I64 || cosT.shape.rank != 2)) ||
      (!byPosition && cosT.shape.rank != 3) || (x.shape.rank != 3 && x.shape.rank != 4))
    return "supports int64 position ids into 2-D cos/sin tables, or 3-D tables by row, on 3-D or 4-D input";
  out.launch = [&op, st, index](Executor &e, const std::vector<TensorRef> &t) {
    if (!e.splitOfRotary.empty() && e.splitOfRotary[size_t(index)] >= 0) // its split did it
      return std::string();
    RotaryArgs a;
    if (std::string err = rotaryArgsOf(e, op, t, a); !err.empty())
      return err;
    return rotary(st, a, e.stream);
  };
  return {};
}

// fused_elementwise: the region's CUDA C, compiled by NVRTC for this device when the context is
// created (the plan does not carry CUBINs yet), launched with this run's broadcast strides.
std::string prepareFusedElementwise(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  std::vector<fused::Instruction> program;
  std::vector<int> results;
  if (std::string err = fused::parseProgram(op.attrs, int(op.inputs.size()), int(op.outputs.size()), program, results);
      !err.empty())
    return err;
  std::vector<DType> ins, outs;
  for (int i : op.inputs)
    ins.push_back(onDevice(ex.plan->values[size_t(i)]));
  for (int o : op.outputs)
    outs.push_back(onDevice(ex.plan->values[size_t(o)]));
  std::string name = "llmc_fused_" + std::to_string(index);
  std::vector<char> compiled;
  const void *code = nullptr;
#ifndef LLMC_CUDA_EMULATION // the tests' CPU emulation runs no CUBIN: it compiles every region
  for (const PlanCudaKernel &k : ex.plan->cudaKernels) // the plan's own CUBIN for this device
    if (k.op == index && k.arch == ex.arch)
      code = k.cubin, name = k.name;
#endif
  if (!code) { // a CPU plan: compile the region for this device now
    std::string error;
    const std::string source = fusedElementwiseSource(program, results, ins, outs, name, error);
    if (!error.empty() || ex.dry)
      return error;
    if (std::string err = compileToCubin(source, name, ex.arch, compiled); !err.empty())
      return err;
    code = compiled.data();
  }
  if (ex.dry)
    return {};
  cudaLibrary_t library;
  if (cudaError_t e = cudaLibraryLoadData(&library, code, nullptr, nullptr, 0, nullptr, nullptr, 0); e != cudaSuccess)
    return cudaError("loading a generated kernel", e);
  ex.libraries.push_back(library);
  cudaKernel_t kernel;
  if (cudaError_t e = cudaLibraryGetKernel(&kernel, library, name.c_str()); e != cudaSuccess)
    return cudaError("finding a generated kernel", e);
  out.launch = [kernel, &op](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &shape = t[size_t(op.outputs[0])].shape;
    FusedShape fs{};
    fs.count = shape.numel(), fs.rank = shape.rank;
    for (int d = 0; d < shape.rank; ++d)
      fs.dims[d] = shape.dims[d];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Shape &in = t[size_t(op.inputs[i])].shape;
      int64_t stride = 1;
      for (int d = shape.rank - 1; d >= 0; --d) {
        const int id = in.rank - (shape.rank - d);
        const int64_t dim = id >= 0 ? in.dims[id] : 1;
        fs.strides[i][d] = dim == 1 ? 0 : stride;
        stride *= dim;
      }
    }
    if (fs.count == 0)
      return std::string();
    std::vector<void *> pointers;
    for (int i : op.inputs)
      pointers.push_back(e.at(i));
    for (int o : op.outputs)
      pointers.push_back(e.at(o));
    std::vector<void *> args;
    for (void *&p : pointers)
      args.push_back(&p);
    args.push_back(&fs);
    const unsigned blocks = unsigned(std::min<int64_t>((fs.count + 255) / 256, 65535 * 4));
    if (cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(blocks), dim3(256), args.data(), 0,
                                           e.stream);
        err != cudaSuccess)
      return cudaError("fused_elementwise launch", err);
    return std::string();
  };
  return {};
}

} // namespace llmc::rt::cuda::exec
