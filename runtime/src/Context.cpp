// Execution contexts: per-context buffers for inputs, activations and outputs; weights are
// read in place from the plan's mapping. The CPU executor runs the ops in program order.
#include "Plan.h"

#include "plan_generated.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace fb = llmc::plan;
using llmc::rt::makeStatus;

// The C API's dtype values are the plan's.
static_assert(int(LLMC_DTYPE_F32) == int(llmc::rt::DType::F32) && int(LLMC_DTYPE_F16) == int(llmc::rt::DType::F16) &&
                  int(LLMC_DTYPE_F64) == int(llmc::rt::DType::F64) && int(LLMC_DTYPE_I64) == int(llmc::rt::DType::I64) &&
                  int(LLMC_DTYPE_I32) == int(llmc::rt::DType::I32) && int(LLMC_DTYPE_I8) == int(llmc::rt::DType::I8) &&
                  int(LLMC_DTYPE_U8) == int(llmc::rt::DType::U8) && int(LLMC_DTYPE_BOOL) == int(llmc::rt::DType::Bool),
              "llmc_dtype and llmc::rt::DType must agree");

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};

struct llmc_context_t {
  llmc_plan_t *plan;
  std::vector<llmc::rt::TensorRef> tensors; // one per plan value
  std::vector<std::unique_ptr<void, AlignedFree>> buffers;
  std::vector<bool> inputSet;
  int numThreads = 0;
  std::vector<double> kernelMs; // per launch, when collecting times

  ~llmc_context_t() { plan->release(); }
};

extern "C" void llmc_context_options_init(llmc_context_options *options) {
  if (!options)
    return;
  options->struct_size = sizeof *options;
  options->num_threads = 0;
  options->collect_times = 0;
}

extern "C" llmc_status llmc_context_create(llmc_plan plan, const llmc_context_options *options,
                                          llmc_context *out_context) {
  if (!plan || !out_context)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan and out_context must not be NULL");
  *out_context = nullptr;
  auto ctx = std::make_unique<llmc_context_t>();
  plan->retain();
  ctx->plan = plan;
  ctx->numThreads = options ? options->num_threads : 0;
  if (options && options->collect_times)
    ctx->kernelMs.assign(plan->ops.size(), 0.0);
  ctx->tensors.resize(plan->values.size());
  ctx->buffers.resize(plan->values.size());
  ctx->inputSet.assign(plan->inputs.size(), false);
  for (size_t i = 0; i < plan->values.size(); ++i) {
    const llmc::rt::PlanValue &v = plan->values[i];
    llmc::rt::TensorRef &t = ctx->tensors[i];
    t.dtype = v.dtype;
    t.shape = v.shape;
    if (v.kind == fb::ValueKind_Weight) {
      t.data = const_cast<void *>(v.weight); // kernels never write their inputs
      continue;
    }
    const size_t bytes = std::max<size_t>(t.bytes(), 1);
    void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      return makeStatus(LLMC_OUT_OF_MEMORY, "out of memory allocating '" + v.name + "'");
    ctx->buffers[i].reset(p);
    t.data = p;
  }
  *out_context = ctx.release();
  return nullptr;
}

extern "C" void llmc_context_release(llmc_context context) { delete context; }

static std::string describe(const llmc_tensor &t) {
  llmc::rt::Shape s;
  s.rank = t.rank;
  for (int d = 0; d < t.rank && d < LLMC_MAX_RANK; ++d)
    s.dims[d] = t.dims[d];
  return std::string(llmc::rt::dtypeName(static_cast<llmc::rt::DType>(t.dtype))) + "[" + s.str() + "]";
}

extern "C" llmc_status llmc_context_set_input(llmc_context ctx, int32_t index, const llmc_tensor *tensor) {
  if (!ctx || !tensor)
    return makeStatus(LLMC_INVALID_ARGUMENT, "context and tensor must not be NULL");
  if (index < 0 || size_t(index) >= ctx->plan->inputs.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "input index " + std::to_string(index) + " out of range (" +
                                                 std::to_string(ctx->plan->inputs.size()) + " inputs)");
  const int vi = ctx->plan->inputs[index];
  const llmc::rt::PlanValue &v = ctx->plan->values[vi];
  llmc::rt::TensorRef &t = ctx->tensors[vi];
  bool same = tensor->rank == v.shape.rank && uint8_t(tensor->dtype) == uint8_t(v.dtype);
  for (int d = 0; same && d < v.shape.rank; ++d)
    same = tensor->dims[d] == v.shape.dims[d];
  if (!same) {
    llmc_tensor expected{static_cast<llmc_dtype>(v.dtype), v.shape.rank, {}, nullptr};
    for (int d = 0; d < v.shape.rank; ++d)
      expected.dims[d] = v.shape.dims[d];
    return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + v.name + "' expects " + describe(expected) + ", got " +
                                                 describe(*tensor));
  }
  if (t.bytes() && !tensor->data)
    return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + v.name + "' has no data");
  if (t.bytes())
    std::memcpy(t.data, tensor->data, t.bytes());
  ctx->inputSet[index] = true;
  return nullptr;
}

extern "C" llmc_status llmc_context_input_index(llmc_context ctx, const char *name, int32_t *out_index) {
  if (!ctx || !name || !out_index)
    return makeStatus(LLMC_INVALID_ARGUMENT, "arguments must not be NULL");
  for (size_t i = 0; i < ctx->plan->inputs.size(); ++i)
    if (ctx->plan->values[ctx->plan->inputs[i]].name == name) {
      *out_index = int32_t(i);
      return nullptr;
    }
  return makeStatus(LLMC_NOT_FOUND, std::string("the plan has no input named '") + name + "'");
}

extern "C" llmc_status llmc_context_run(llmc_context ctx) {
  if (!ctx)
    return makeStatus(LLMC_INVALID_ARGUMENT, "context must not be NULL");
  const llmc_plan_t &plan = *ctx->plan;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (!ctx->inputSet[i])
      return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + plan.values[plan.inputs[i]].name + "' was not set");
  llmc::rt::setGemmThreads(ctx->numThreads);
  std::vector<llmc::rt::TensorRef> ins, outs;
  const bool timed = !ctx->kernelMs.empty();
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const llmc::rt::PlanOp &op = plan.ops[k];
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    ins.clear();
    outs.clear();
    for (int i : op.inputs)
      ins.push_back(i >= 0 ? ctx->tensors[i] : llmc::rt::TensorRef{});
    for (int i : op.outputs)
      outs.push_back(ctx->tensors[i]);
    llmc::rt::KernelArgs args{op.attrs, ins.data(), int(ins.size()), outs.data(), int(outs.size())};
    std::string err = op.fn(args);
    if (timed)
      ctx->kernelMs[k] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!err.empty())
      return makeStatus(LLMC_RUNTIME_ERROR, "kernel '" + op.kernel + "'" +
                                                (op.location.empty() ? "" : " (" + op.location + ")") + ": " + err);
  }
  return nullptr;
}

extern "C" llmc_status llmc_context_kernel_time(llmc_context ctx, int32_t index, const char **out_kernel,
                                              const char **out_node, double *out_total_ms) {
  if (!ctx || !out_total_ms)
    return makeStatus(LLMC_INVALID_ARGUMENT, "arguments must not be NULL");
  if (ctx->kernelMs.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, "the context was created without collect_times");
  if (index < 0 || size_t(index) >= ctx->kernelMs.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "kernel index " + std::to_string(index) + " out of range");
  const llmc::rt::PlanOp &op = ctx->plan->ops[size_t(index)];
  if (out_kernel)
    *out_kernel = op.kernel.c_str();
  if (out_node)
    *out_node = op.location.c_str();
  *out_total_ms = ctx->kernelMs[size_t(index)];
  return nullptr;
}

extern "C" llmc_status llmc_context_output(llmc_context ctx, int32_t index, llmc_tensor *out_tensor) {
  if (!ctx || !out_tensor)
    return makeStatus(LLMC_INVALID_ARGUMENT, "arguments must not be NULL");
  if (index < 0 || size_t(index) >= ctx->plan->outputs.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "output index " + std::to_string(index) + " out of range");
  const llmc::rt::TensorRef &t = ctx->tensors[ctx->plan->outputs[index]];
  out_tensor->dtype = static_cast<llmc_dtype>(t.dtype);
  out_tensor->rank = t.shape.rank;
  for (int d = 0; d < t.shape.rank; ++d)
    out_tensor->dims[d] = t.shape.dims[d];
  out_tensor->data = t.data;
  return nullptr;
}
