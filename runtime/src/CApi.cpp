// The small C API entry points: status, version and plan queries.
#include "Plan.h"

using llmc::rt::makeStatus;

extern "C" llmc_status_code llmc_status_code_of(llmc_status status) { return status ? status->code : LLMC_OK; }

extern "C" const char *llmc_status_message(llmc_status status) { return status ? status->message.c_str() : "ok"; }

extern "C" void llmc_status_free(llmc_status status) { delete status; }

extern "C" const char *llmc_version(void) { return LLMC_VERSION_STRING; }

extern "C" void llmc_plan_release(llmc_plan plan) {
  if (plan)
    plan->release();
}

extern "C" int32_t llmc_plan_input_count(llmc_plan plan) { return plan ? int32_t(plan->inputs.size()) : 0; }

extern "C" int32_t llmc_plan_output_count(llmc_plan plan) { return plan ? int32_t(plan->outputs.size()) : 0; }

extern "C" int32_t llmc_plan_kernel_count(llmc_plan plan) { return plan ? int32_t(plan->ops.size()) : 0; }

static llmc_status describeValue(llmc_plan plan, const std::vector<int> &list, int32_t index, const char *what,
                                 const char **out_name, llmc_tensor *out_info) {
  if (!plan || !out_info)
    return makeStatus(LLMC_INVALID_ARGUMENT, "arguments must not be NULL");
  if (index < 0 || size_t(index) >= list.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, std::string(what) + " index " + std::to_string(index) + " out of range");
  const llmc::rt::PlanValue &v = plan->values[list[index]];
  if (out_name)
    *out_name = v.name.c_str();
  out_info->dtype = static_cast<llmc_dtype>(v.dtype);
  out_info->rank = v.shape.rank;
  for (int d = 0; d < v.shape.rank; ++d)
    out_info->dims[d] = v.shape.dims[d];
  out_info->data = nullptr;
  return nullptr;
}

extern "C" llmc_status llmc_plan_input_info(llmc_plan plan, int32_t index, const char **out_name,
                                            llmc_tensor *out_info) {
  return describeValue(plan, plan ? plan->inputs : std::vector<int>{}, index, "input", out_name, out_info);
}

extern "C" llmc_status llmc_plan_output_info(llmc_plan plan, int32_t index, const char **out_name,
                                             llmc_tensor *out_info) {
  return describeValue(plan, plan ? plan->outputs : std::vector<int>{}, index, "output", out_name, out_info);
}

extern "C" int32_t llmc_plan_symbol_count(llmc_plan plan) { return plan ? int32_t(plan->symbols.size()) : 0; }

extern "C" int32_t llmc_plan_target(llmc_plan plan) {
  return plan && !plan->cudaArchs.empty() ? LLMC_DEVICE_CUDA : LLMC_DEVICE_CPU;
}

extern "C" const char *llmc_plan_cuda_archs(llmc_plan plan) { return plan ? plan->cudaArchList.c_str() : ""; }

extern "C" llmc_status llmc_plan_symbol_info(llmc_plan plan, int32_t index, const char **out_name, int64_t *out_max) {
  if (!plan)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan must not be NULL");
  if (index < 0 || size_t(index) >= plan->symbols.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "symbol index " + std::to_string(index) + " out of range (" +
                                                 std::to_string(plan->symbols.size()) + " symbols)");
  if (out_name)
    *out_name = plan->symbols[size_t(index)].name.c_str();
  if (out_max)
    *out_max = plan->symbols[size_t(index)].max;
  return nullptr;
}

extern "C" llmc_status llmc_plan_input_dim_symbol(llmc_plan plan, int32_t input, int32_t dim, int32_t *out_symbol) {
  if (!plan || !out_symbol)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan and out_symbol must not be NULL");
  if (input < 0 || size_t(input) >= plan->inputs.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "input index " + std::to_string(input) + " out of range");
  const llmc::rt::PlanValue &v = plan->values[size_t(plan->inputs[size_t(input)])];
  if (dim < 0 || dim >= v.shape.rank)
    return makeStatus(LLMC_INVALID_ARGUMENT, "input '" + v.name + "' has no dimension " + std::to_string(dim));
  const int32_t node = v.dimNode[dim];
  *out_symbol = node < 0 ? -1 : int32_t(plan->dimNodes[size_t(node)].value);
  return nullptr;
}
