// What a plan would do on the CUDA executor, answered without a device (PlanReport.cpp; the
// backend's check, plannedMemory and describeDecodeGraphs: CudaBackend.h says what each returns).
#pragma once

#include "Plan.h"

#include <string>

namespace llmc::rt::cuda::exec {

std::string check(const llmc_plan_t &plan);
bool plannedMemory(const llmc_plan_t &plan, size_t *weights, size_t *activations, size_t *other);
std::string describeDecodeGraphs(const llmc_plan_t &plan);

} // namespace llmc::rt::cuda::exec
