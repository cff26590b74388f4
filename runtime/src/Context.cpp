// Execution contexts: per-context buffers for inputs, activations and outputs; weights are
// read in place from the plan's mapping. The CPU executor runs the ops in program order.
#include "CudaBackend.h"
#include "GreedyOutput.h"
#include "Plan.h"

#include "plan_generated.h"

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <dlfcn.h>
#include <cstring>
#include <limits>
#include <deque>
#include <memory>

namespace fb = llmc::plan;
using llmc::rt::makeStatus;

// The C API's dtype values are the plan's.
static_assert(int(LLMC_DTYPE_F32) == int(llmc::rt::DType::F32) && int(LLMC_DTYPE_F16) == int(llmc::rt::DType::F16) &&
                  int(LLMC_DTYPE_F64) == int(llmc::rt::DType::F64) && int(LLMC_DTYPE_I64) == int(llmc::rt::DType::I64) &&
                  int(LLMC_DTYPE_I32) == int(llmc::rt::DType::I32) && int(LLMC_DTYPE_I8) == int(llmc::rt::DType::I8) &&
                  int(LLMC_DTYPE_U8) == int(llmc::rt::DType::U8) &&
                  int(LLMC_DTYPE_BOOL) == int(llmc::rt::DType::Bool) && int(LLMC_DTYPE_BF16) == int(llmc::rt::DType::BF16),
              "llmc_dtype and llmc::rt::DType must agree");

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};

struct llmc_context_t {
  llmc_plan_t *plan;
  std::vector<llmc::rt::TensorRef> tensors; // one per plan value
  std::vector<std::unique_ptr<void, AlignedFree>> buffers;
  std::vector<bool> inputSet;
  std::vector<bool> linkedInput; // a past cache read on the device (llmc_context_link_cache)
  std::vector<bool> linkedValue;  // per value: a linked cache's input or output (never copied)
  std::vector<bool> pinned;       // per value: its own buffer page-locked by the CUDA backend
  int greedyValue = -1;           // the output that runs leave on the device (GreedyOutput.h)
  std::vector<int32_t> greedy;    // its last rows' argmax after a run
  // Runs started and not finished yet (startRun): per run, its batch (CUDA) or, on the CPU,
  // which runs them whole at once, its argmax.
  std::deque<int64_t> startedBatch;
  std::deque<std::vector<int32_t>> startedGreedy;
  std::vector<int64_t> symbols;  // this run's symbol values, bound from the inputs
  std::vector<int64_t> dimValues; // this run's value of every dimension expression
  int numThreads = 0;
  std::vector<double> kernelMs; // per launch, when collecting times
  const llmc::rt::CudaBackend *cuda = nullptr; // a CUDA context: the backend and its state
  void *cudaState = nullptr;

  ~llmc_context_t() {
    if (cuda)
      cuda->destroy(cudaState);
    plan->release();
  }
};

// The backend a loaded plugin exports, if it is of this build's interface.
static const llmc::rt::CudaBackend *backendOf(void *lib, std::string &error) {
  auto entry = reinterpret_cast<const llmc::rt::CudaBackend *(*)()>(dlsym(lib, "llmc_cuda_backend"));
  const llmc::rt::CudaBackend *b = entry ? entry() : nullptr;
  if (!b || b->abi != llmc::rt::kCudaBackendAbi) {
    error = "libllmc_cuda.so is from another build of llmc (interface version mismatch)";
    return nullptr;
  }
  return b;
}

// libllmc_cuda.so, from the directory libllmc was loaded from (else the loader's search path),
// or the file LLMC_CUDA_BACKEND names (the tests' CPU emulation of CUDA: docs/cuda.md); loaded
// once. Null with `error` set when it cannot be had.
static const llmc::rt::CudaBackend *cudaBackend(std::string &error) {
  static std::string loadError;
  static const llmc::rt::CudaBackend *backend = [] () -> const llmc::rt::CudaBackend * {
    Dl_info self{};
    std::string path = "libllmc_cuda.so";
    if (const char *chosen = std::getenv("LLMC_CUDA_BACKEND"); chosen && *chosen) {
      void *lib = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        loadError = std::string("the CUDA backend LLMC_CUDA_BACKEND names could not be loaded: ") + dlerror();
        return nullptr;
      }
      return backendOf(lib, loadError);
    }
    if (dladdr(reinterpret_cast<void *>(&cudaBackend), &self) && self.dli_fname) {
      const std::string here = self.dli_fname;
      const size_t slash = here.rfind('/');
      if (slash != std::string::npos)
        path = here.substr(0, slash + 1) + path;
    }
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      lib = dlopen("libllmc_cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      loadError = std::string("the CUDA backend (libllmc_cuda.so) could not be loaded: ") + dlerror() +
                  " (a build without the CUDA toolkit has none)";
      return nullptr;
    }
    return backendOf(lib, loadError);
  }();
  error = loadError;
  return backend;
}

// The context's own buffer for value `i`, at the bound's size; allocated on first use. Null when
// out of memory. Inputs and outputs get whole pages, which a CUDA context page-locks (pinCopied)
// without two buffers sharing one.
static void *ownBuffer(llmc_context_t &ctx, size_t i) {
  if (!ctx.buffers[i]) {
    const llmc::rt::PlanValue &v = ctx.plan->values[i];
    const size_t align = v.kind == fb::ValueKind_Input || v.kind == fb::ValueKind_Output ? 4096 : 64;
    const size_t bytes = std::max<size_t>(v.capacity, 1);
    ctx.buffers[i].reset(std::aligned_alloc(align, (bytes + align - 1) / align * align));
  }
  return ctx.buffers[i].get();
}

// A CUDA context's own buffer of an input or output goes back to pageable memory, before it is
// freed or when runs stop copying it.
static void unpin(llmc_context_t &ctx, size_t i) {
  if (ctx.cuda && ctx.pinned[i])
    ctx.cuda->unpinHost(ctx.cudaState, ctx.buffers[i].get());
  ctx.pinned[i] = false;
}

// Before a CUDA run: the context's own buffers of the inputs and outputs that runs copy are
// page-locked (once each), so that the copies are DMA transfers (a decode step's logits).
static void pinCopied(llmc_context_t &ctx) {
  auto pin = [&](int vi) {
    const size_t i = size_t(vi);
    if (ctx.pinned[i] || ctx.linkedValue[i] || !ctx.buffers[i] || ctx.tensors[i].data != ctx.buffers[i].get())
      return;
    ctx.cuda->pinHost(ctx.cudaState, ctx.buffers[i].get(), std::max<size_t>(ctx.plan->values[i].capacity, 1));
    ctx.pinned[i] = true;
  };
  for (int vi : ctx.plan->inputs)
    pin(vi);
  for (int vi : ctx.plan->outputs)
    pin(vi);
}

// Per batch, the index of the largest value of its last row of `t` [batch, ..., vocab] (the first
// of equal ones; NaN counts as -inf, as in the CUDA kernel): greedy decoding's token.
static std::vector<int32_t> lastRowArgmax(const llmc::rt::TensorRef &t) {
  const int64_t B = t.shape.dims[0], V = t.shape.dims[t.shape.rank - 1];
  std::vector<int32_t> tokens(size_t(B), 0);
  if (!B || !V)
    return tokens;
  const int64_t rows = t.numel() / (B * V);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t row = (b * rows + rows - 1) * V;
    int64_t best = 0;
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < V; ++j) { // (scores of any float type: doubles as they are)
      const double x = t.dtype == llmc::rt::DType::F64 ? t.as<const double>()[row + j]
                                                       : llmc::rt::floatAt(t.data, t.dtype, row + j);
      if (x > top) // false for NaN
        top = x, best = j;
    }
    tokens[size_t(b)] = int32_t(best);
  }
  return tokens;
}

extern "C" llmc_status llmc_plan_check_cuda(llmc_plan plan) {
  if (!plan)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan must not be NULL");
  std::string error;
  const llmc::rt::CudaBackend *backend = cudaBackend(error);
  if (!backend)
    return makeStatus(LLMC_UNSUPPORTED, error);
  const std::string report = backend->check(*plan);
  return report.empty() ? nullptr : makeStatus(LLMC_UNSUPPORTED, "the CUDA executor cannot run:\n" + report);
}

extern "C" size_t llmc_plan_cuda_device_bytes(llmc_plan plan, size_t *weight_bytes, size_t *activation_bytes,
                                               size_t *other_bytes) {
  size_t weights = 0, activations = 0, other = 0;
  std::string error;
  const llmc::rt::CudaBackend *backend = plan ? cudaBackend(error) : nullptr;
  if (!backend || !backend->plannedMemory(*plan, &weights, &activations, &other))
    weights = activations = other = 0;
  if (weight_bytes)
    *weight_bytes = weights;
  if (activation_bytes)
    *activation_bytes = activations;
  if (other_bytes)
    *other_bytes = other;
  return weights + activations + other;
}

extern "C" size_t llmc_plan_cuda_graph_report(llmc_plan plan, char *out, size_t capacity) {
  std::string error;
  const llmc::rt::CudaBackend *backend = plan ? cudaBackend(error) : nullptr;
  const std::string report = backend ? backend->describeDecodeGraphs(*plan) : std::string();
  if (out && capacity) {
    const size_t n = std::min(report.size(), capacity - 1);
    std::memcpy(out, report.data(), n);
    out[n] = '\0';
  }
  return report.size();
}

extern "C" void llmc_context_options_init(llmc_context_options *options) {
  if (!options)
    return;
  options->struct_size = sizeof *options;
  options->num_threads = 0;
  options->collect_times = 0;
  options->device = LLMC_DEVICE_CPU;
  options->cuda_graphs = 1;
  options->cuda_gemv = 1;
  options->cuda_overlap = 1;
  options->decode_ahead = -1;
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
  // `device` came with the struct's third version; older callers' structs end before it.
  const bool hasDevice = options && options->struct_size >= offsetof(llmc_context_options, device) + sizeof(int32_t);
  const int32_t device = hasDevice ? options->device : LLMC_DEVICE_CPU;
  if (device != LLMC_DEVICE_CPU && device != LLMC_DEVICE_CUDA)
    return makeStatus(LLMC_INVALID_ARGUMENT, "unknown device " + std::to_string(device));
  if (options && options->collect_times)
    ctx->kernelMs.assign(plan->ops.size(), 0.0);
  if (device == LLMC_DEVICE_CPU) // the CPU kernels compute a reduced-precision plan in f32
    if (std::string err = plan->widenWeights(); !err.empty())
      return makeStatus(LLMC_OUT_OF_MEMORY, err);
  ctx->tensors.resize(plan->values.size());
  ctx->buffers.resize(plan->values.size());
  ctx->inputSet.assign(plan->inputs.size(), false);
  ctx->linkedInput.assign(plan->inputs.size(), false);
  ctx->linkedValue.assign(plan->values.size(), false);
  ctx->pinned.assign(plan->values.size(), false);
  for (size_t i = 0; i < plan->values.size(); ++i) {
    const llmc::rt::PlanValue &v = plan->values[i];
    llmc::rt::TensorRef &t = ctx->tensors[i];
    t.dtype = v.dtype;
    t.shape = v.shape;
    if (v.kind == fb::ValueKind_Weight) {
      t.data = const_cast<void *>(v.weight); // kernels never write their inputs
      continue;
    }
    if (v.kind == fb::ValueKind_Input)
      continue; // allocated by the first set_input: an input that is always bound never needs one
    if (!ownBuffer(*ctx, i))
      return makeStatus(LLMC_OUT_OF_MEMORY, "out of memory allocating '" + v.name + "'");
    t.data = ctx->buffers[i].get();
  }
  if (device == LLMC_DEVICE_CUDA) {
    // The host buffers above stay: inputs are copied from them and outputs to them.
    if (options->collect_times)
      return makeStatus(LLMC_UNSUPPORTED, "collect_times is not supported on the CUDA device yet");
    std::string error;
    const llmc::rt::CudaBackend *backend = cudaBackend(error);
    if (!backend)
      return makeStatus(LLMC_UNSUPPORTED, error);
    llmc::rt::CudaOptions cudaOptions;
    // Fields past an older caller's struct_size keep their defaults.
    auto given = [&](size_t offset) { return options->struct_size >= offset + sizeof(int32_t); };
    cudaOptions.graphs = !given(offsetof(llmc_context_options, cuda_graphs)) || options->cuda_graphs != 0;
    cudaOptions.smallLinear = !given(offsetof(llmc_context_options, cuda_gemv)) || options->cuda_gemv != 0;
    cudaOptions.overlap = !given(offsetof(llmc_context_options, cuda_overlap)) || options->cuda_overlap != 0;
    if (std::string err = backend->create(*plan, cudaOptions, &ctx->cudaState); !err.empty())
      return makeStatus(LLMC_UNSUPPORTED, "CUDA: " + err);
    ctx->cuda = backend;
  }
  *out_context = ctx.release();
  return nullptr;
}

extern "C" void llmc_context_release(llmc_context context) { delete context; }

extern "C" size_t llmc_context_device_bytes(llmc_context context) {
  return context && context->cuda ? context->cuda->deviceBytes(context->cudaState) : 0;
}

extern "C" size_t llmc_context_cuda_graph_nodes(llmc_context context) {
  return context && context->cuda ? context->cuda->graphNodes(context->cudaState) : 0;
}

extern "C" size_t llmc_context_cuda_graph_count(llmc_context context) {
  return context && context->cuda ? context->cuda->graphCount(context->cudaState) : 0;
}

extern "C" llmc_status llmc_context_link_cache(llmc_context ctx, int32_t input, int32_t output) {
  if (!ctx)
    return makeStatus(LLMC_INVALID_ARGUMENT, "context must not be NULL");
  const llmc_plan_t &plan = *ctx->plan;
  if (input < 0 || size_t(input) >= plan.inputs.size() || output < 0 || size_t(output) >= plan.outputs.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "input or output index out of range");
  if (!ctx->cuda)
    return makeStatus(LLMC_UNSUPPORTED, "a cache kept on the device needs a CUDA context (on the CPU, bind one "
                                        "host buffer to the input and the output)");
  const llmc::rt::PlanValue &past = plan.values[size_t(plan.inputs[size_t(input)])];
  const llmc::rt::PlanValue &present = plan.values[size_t(plan.outputs[size_t(output)])];
  if (past.dtype != present.dtype || past.deviceDType != present.deviceDType || past.shape.rank != 3 ||
      present.shape.rank != 3 || past.shape.dims[2] != present.shape.dims[2] || past.shape.dims[2] < 0)
    return makeStatus(LLMC_INVALID_ARGUMENT, "'" + past.name + "' and '" + present.name +
                                                 "' are not a past and present cache [length, batch, width] of one type");
  if (std::string err = ctx->cuda->linkCache(ctx->cudaState, plan.inputs[size_t(input)], plan.outputs[size_t(output)]);
      !err.empty())
    return makeStatus(LLMC_RUNTIME_ERROR, "CUDA: " + err);
  ctx->linkedInput[size_t(input)] = true;
  for (int vi : {plan.inputs[size_t(input)], plan.outputs[size_t(output)]}) {
    ctx->linkedValue[size_t(vi)] = true;
    unpin(*ctx, size_t(vi));
  }
  return nullptr;
}

// "f32[1x16]"; with a plan, a dynamic dimension prints as its symbol's name.
static std::string describe(const llmc_tensor &t, const llmc_plan_t *plan, const llmc::rt::PlanValue *v = nullptr) {
  std::string dims;
  for (int d = 0; d < t.rank && d < LLMC_MAX_RANK; ++d) {
    dims += d ? "x" : "";
    if (t.dims[d] < 0 && plan && v && v->dimNode[d] >= 0)
      dims += plan->symbols[size_t(plan->dimNodes[size_t(v->dimNode[d])].value)].name;
    else
      dims += std::to_string(t.dims[d]);
  }
  return std::string(llmc::rt::dtypeName(static_cast<llmc::rt::DType>(t.dtype))) + "[" +
         (t.rank == 0 ? "scalar" : dims) + "]";
}

// Checks `tensor` against input `index` and gives the input its shape; the data is the caller's
// business (copied by set_input, referenced by bind_input).
static llmc_status shapeInput(llmc_context ctx, int32_t index, const llmc_tensor *tensor) {
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
    same = v.dimNode[d] >= 0 || tensor->dims[d] == v.shape.dims[d];
  if (!same) {
    llmc_tensor expected{static_cast<llmc_dtype>(v.dtype), v.shape.rank, {}, nullptr};
    for (int d = 0; d < v.shape.rank; ++d)
      expected.dims[d] = v.shape.dims[d];
    return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + v.name + "' expects " + describe(expected, ctx->plan, &v) +
                                                 ", got " + describe(*tensor, nullptr));
  }
  for (int d = 0; d < v.shape.rank; ++d) {
    if (v.dimNode[d] < 0)
      continue;
    const llmc::rt::PlanSymbol &sym = ctx->plan->symbols[size_t(ctx->plan->dimNodes[size_t(v.dimNode[d])].value)];
    if (tensor->dims[d] < sym.min || tensor->dims[d] > sym.max)
      return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + v.name + "' dimension " + std::to_string(d) + " ('" +
                                                   sym.name + "') is " + std::to_string(tensor->dims[d]) +
                                                   ", outside the plan's range " + std::to_string(sym.min) + ".." +
                                                   std::to_string(sym.max) + " (compile with a larger --max-shape " +
                                                   sym.name + "=N)");
  }
  llmc::rt::TensorRef shaped = t;
  shaped.shape.rank = tensor->rank;
  for (int d = 0; d < tensor->rank; ++d)
    shaped.shape.dims[d] = tensor->dims[d];
  if (shaped.bytes() && !tensor->data && !ctx->linkedInput[size_t(index)])
    return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + v.name + "' has no data");
  t.shape = shaped.shape;
  return nullptr;
}

extern "C" llmc_status llmc_context_set_input(llmc_context ctx, int32_t index, const llmc_tensor *tensor) {
  if (llmc_status s = shapeInput(ctx, index, tensor))
    return s;
  const size_t vi = size_t(ctx->plan->inputs[size_t(index)]);
  llmc::rt::TensorRef &t = ctx->tensors[vi];
  t.data = ownBuffer(*ctx, vi); // (back) to the context's own buffer, also after a bind_input
  if (!t.data)
    return makeStatus(LLMC_OUT_OF_MEMORY, "out of memory allocating input '" + ctx->plan->values[vi].name + "'");
  if (t.bytes() && !ctx->linkedInput[size_t(index)]) // a linked cache is already on the device
    std::memcpy(t.data, tensor->data, t.bytes());
  ctx->inputSet[size_t(index)] = true;
  return nullptr;
}

extern "C" llmc_status llmc_context_bind_input(llmc_context ctx, int32_t index, const llmc_tensor *tensor) {
  if (llmc_status s = shapeInput(ctx, index, tensor))
    return s;
  const size_t vi = size_t(ctx->plan->inputs[size_t(index)]);
  llmc::rt::TensorRef &t = ctx->tensors[vi];
  static char empty[64];
  // Kernels never write their inputs, nor touch empty ones; a linked cache is read on the device.
  t.data = t.bytes() && tensor->data ? tensor->data : empty;
  ctx->inputSet[size_t(index)] = true;
  return nullptr;
}

extern "C" size_t llmc_context_output_capacity(llmc_context ctx, int32_t index) {
  if (!ctx || index < 0 || size_t(index) >= ctx->plan->outputs.size())
    return 0;
  return std::max<size_t>(ctx->plan->values[size_t(ctx->plan->outputs[size_t(index)])].capacity, 1);
}

extern "C" llmc_status llmc_context_bind_output(llmc_context ctx, int32_t index, void *data, size_t capacity) {
  if (!ctx || !data)
    return makeStatus(LLMC_INVALID_ARGUMENT, "context and data must not be NULL");
  if (index < 0 || size_t(index) >= ctx->plan->outputs.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "output index " + std::to_string(index) + " out of range");
  const size_t vi = size_t(ctx->plan->outputs[size_t(index)]);
  const llmc::rt::PlanValue &v = ctx->plan->values[vi];
  if (capacity < v.capacity)
    return makeStatus(LLMC_INVALID_ARGUMENT, "output '" + v.name + "' needs " + std::to_string(v.capacity) +
                                                 " bytes at its bounds; the buffer has " + std::to_string(capacity));
  ctx->tensors[vi].data = data;
  unpin(*ctx, vi);
  ctx->buffers[vi].reset(); // the context's own buffer is not needed any more
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

// Binds the symbols from the inputs' shapes, evaluates the dimension expressions and gives
// every dynamic value its shape for this run.
static llmc_status bindShapes(llmc_context_t &ctx) {
  const llmc_plan_t &plan = *ctx.plan;
  if (plan.dimNodes.empty())
    return nullptr;
  ctx.symbols.assign(plan.symbols.size(), -1);
  std::vector<int> boundBy(plan.symbols.size(), -1);
  for (int vi : plan.inputs) {
    const llmc::rt::PlanValue &v = plan.values[size_t(vi)];
    for (int d = 0; d < v.shape.rank; ++d) {
      if (v.dimNode[d] < 0)
        continue;
      const size_t sym = size_t(plan.dimNodes[size_t(v.dimNode[d])].value);
      const int64_t given = ctx.tensors[size_t(vi)].shape.dims[d];
      if (ctx.symbols[sym] >= 0 && ctx.symbols[sym] != given)
        return makeStatus(LLMC_INVALID_ARGUMENT, "inputs disagree on '" + plan.symbols[sym].name + "': '" +
                                                     plan.values[size_t(boundBy[sym])].name + "' has " +
                                                     std::to_string(ctx.symbols[sym]) + ", '" + v.name + "' has " +
                                                     std::to_string(given));
      ctx.symbols[sym] = given;
      boundBy[sym] = vi;
    }
  }
  for (size_t i = 0; i < ctx.symbols.size(); ++i)
    if (ctx.symbols[i] < 0)
      ctx.symbols[i] = plan.symbols[i].max; // a symbol no input carries (kept for completeness)
  if (std::string err = llmc::plan::evaluateDimExprs(plan.dimNodes, ctx.symbols.data(), ctx.dimValues); !err.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, err);
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const llmc::rt::PlanValue &v = plan.values[i];
    if (!v.dynamic || v.kind == fb::ValueKind_Input)
      continue;
    llmc::rt::TensorRef &t = ctx.tensors[i];
    for (int d = 0; d < v.shape.rank; ++d) {
      const int64_t dim = v.dimNode[d] >= 0 ? ctx.dimValues[size_t(v.dimNode[d])] : v.shape.dims[d];
      if (dim < 0)
        return makeStatus(LLMC_INVALID_ARGUMENT, "value '" + v.name + "' would have a negative dimension (" +
                                                     std::to_string(dim) + ") for these input shapes");
      t.shape.dims[d] = dim;
    }
    if (t.bytes() > v.capacity) // the bounds guarantee this never happens; checked all the same
      return makeStatus(LLMC_RUNTIME_ERROR, "value '" + v.name + "' needs " + std::to_string(t.bytes()) +
                                                " bytes, above its planned " + std::to_string(v.capacity));
  }
  return nullptr;
}

// Every input set, and this run's shapes bound.
static llmc_status prepareRun(llmc_context_t &ctx) {
  const llmc_plan_t &plan = *ctx.plan;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (!ctx.inputSet[i])
      return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + plan.values[plan.inputs[i]].name + "' was not set");
  return bindShapes(ctx);
}

static llmc_status runOnCpu(llmc_context_t *ctx);

extern "C" llmc_status llmc_context_run(llmc_context ctx) {
  if (!ctx)
    return makeStatus(LLMC_INVALID_ARGUMENT, "context must not be NULL");
  if (!ctx->startedBatch.empty() || !ctx->startedGreedy.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, "runs started ahead have not finished");
  if (llmc_status s = prepareRun(*ctx))
    return s;
  if (ctx->cuda) {
    pinCopied(*ctx);
    if (std::string err = ctx->cuda->run(ctx->cudaState, ctx->tensors); !err.empty())
      return makeStatus(LLMC_RUNTIME_ERROR, "CUDA: " + err);
    if (ctx->greedyValue >= 0) {
      const int32_t *tokens = ctx->cuda->argmaxResult(ctx->cudaState);
      ctx->greedy.assign(tokens, tokens + ctx->tensors[size_t(ctx->greedyValue)].shape.dims[0]);
    }
    return nullptr;
  }
  return runOnCpu(ctx);
}

static llmc_status runOnCpu(llmc_context_t *ctx) {
  const llmc_plan_t &plan = *ctx->plan;
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
  if (ctx->greedyValue >= 0) // what the CUDA backend computes on the device
    ctx->greedy = lastRowArgmax(ctx->tensors[size_t(ctx->greedyValue)]);
  return nullptr;
}

llmc_status llmc::rt::setGreedyOutput(llmc_context ctx, int32_t output) {
  if (!ctx || output < -1 || output >= int32_t(ctx->plan->outputs.size()))
    return makeStatus(LLMC_INVALID_ARGUMENT, "no such output");
  const int value = output < 0 ? -1 : ctx->plan->outputs[size_t(output)];
  const llmc::rt::PlanValue *v = value < 0 ? nullptr : &ctx->plan->values[size_t(value)];
  if (v && (!llmc::rt::isFloatType(v->dtype) || v->shape.rank < 2))
    return makeStatus(LLMC_INVALID_ARGUMENT, "greedy decoding needs float scores [batch, ..., vocab]");
  if (ctx->cuda)
    if (std::string err = ctx->cuda->setArgmaxOutput(ctx->cudaState, value); !err.empty())
      return makeStatus(LLMC_RUNTIME_ERROR, "CUDA: " + err);
  ctx->greedyValue = value;
  ctx->greedy.clear();
  return nullptr;
}

const int32_t *llmc::rt::greedyTokens(llmc_context ctx) { return ctx->greedy.data(); }

bool llmc::rt::runsAhead(llmc_context ctx) { return ctx && ctx->cuda; }

llmc_status llmc::rt::startRun(llmc_context ctx, int32_t fedInput) {
  if (!ctx || fedInput < -1 || fedInput >= int32_t(ctx->plan->inputs.size()))
    return makeStatus(LLMC_INVALID_ARGUMENT, "no such input");
  if (ctx->startedBatch.size() + ctx->startedGreedy.size() >= 2)
    return makeStatus(LLMC_INVALID_ARGUMENT, "two runs are started already: finish one first");
  if (fedInput >= 0 && ctx->greedyValue < 0)
    return makeStatus(LLMC_INVALID_ARGUMENT, "an input fed by the argmax needs greedy decoding (setGreedyOutput)");
  if (llmc_status s = prepareRun(*ctx))
    return s;
  const int fed = fedInput < 0 ? -1 : ctx->plan->inputs[size_t(fedInput)];
  if (fed >= 0) {
    const llmc::rt::TensorRef &ids = ctx->tensors[size_t(fed)];
    const std::vector<int32_t> &previous = ctx->startedGreedy.empty() ? ctx->greedy : ctx->startedGreedy.back();
    if (ids.dtype != llmc::rt::DType::I64 || (!ctx->cuda && ids.numel() != int64_t(previous.size())))
      return makeStatus(LLMC_INVALID_ARGUMENT, "an input fed by the argmax must be int64 ids, one per sequence");
    if (!ctx->cuda) // the CPU computes the previous run's argmax at once: into the ids
      for (size_t b = 0; b < previous.size(); ++b)
        static_cast<int64_t *>(ids.data)[b] = previous[b];
  }
  if (!ctx->cuda) {
    if (llmc_status s = runOnCpu(ctx))
      return s;
    ctx->startedGreedy.push_back(ctx->greedy);
    return nullptr;
  }
  pinCopied(*ctx);
  if (std::string err = ctx->cuda->startRun(ctx->cudaState, ctx->tensors, true, fed); !err.empty())
    return makeStatus(LLMC_RUNTIME_ERROR, "CUDA: " + err);
  ctx->startedBatch.push_back(ctx->greedyValue >= 0 ? ctx->tensors[size_t(ctx->greedyValue)].shape.dims[0] : 0);
  return nullptr;
}

llmc_status llmc::rt::finishRun(llmc_context ctx) {
  if (!ctx)
    return makeStatus(LLMC_INVALID_ARGUMENT, "context must not be NULL");
  if (!ctx->cuda) {
    if (ctx->startedGreedy.empty())
      return makeStatus(LLMC_INVALID_ARGUMENT, "no run was started");
    ctx->greedy = std::move(ctx->startedGreedy.front());
    ctx->startedGreedy.pop_front();
    return nullptr;
  }
  if (ctx->startedBatch.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, "no run was started");
  const int64_t batch = ctx->startedBatch.front();
  ctx->startedBatch.pop_front();
  if (std::string err = ctx->cuda->finishRun(ctx->cudaState); !err.empty())
    return makeStatus(LLMC_RUNTIME_ERROR, "CUDA: " + err);
  const int32_t *tokens = ctx->cuda->argmaxResult(ctx->cudaState);
  ctx->greedy.assign(tokens, tokens + batch);
  return nullptr;
}

llmc_status llmc::rt::fetchOutput(llmc_context ctx, int32_t output) {
  if (!ctx || output < 0 || output >= int32_t(ctx->plan->outputs.size()))
    return makeStatus(LLMC_INVALID_ARGUMENT, "no such output");
  if (!ctx->cuda)
    return nullptr; // a CPU context's outputs are in their buffers already
  const int value = ctx->plan->outputs[size_t(output)];
  if (std::string err = ctx->cuda->fetchOutput(ctx->cudaState, value, ctx->tensors[size_t(value)]); !err.empty())
    return makeStatus(LLMC_RUNTIME_ERROR, "CUDA: " + err);
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
