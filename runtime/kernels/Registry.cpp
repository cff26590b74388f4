#include "KernelUtil.h"

namespace llmc::rt {

extern const KernelEntry kElementwiseKernels[];
extern const KernelEntry kMatMulKernels[];
extern const KernelEntry kReductionKernels[];
extern const KernelEntry kDataMovementKernels[];
extern const KernelEntry kConvolutionKernels[];
extern const KernelEntry kEinsumKernels[];
extern const KernelEntry kAttentionKernels[];
extern const KernelEntry kFusedKernels[];
extern const KernelEntry kFusedElementwiseKernels[];
extern const KernelEntry kLatentAttentionKernels[];

static const KernelEntry *const kFamilies[] = {kElementwiseKernels, kMatMulKernels, kReductionKernels,
                                                kDataMovementKernels, kConvolutionKernels, kEinsumKernels,
                                                kAttentionKernels, kFusedKernels,
                                                kFusedElementwiseKernels, kLatentAttentionKernels};

KernelFn findKernel(std::string_view name) {
  for (const KernelEntry *family : kFamilies)
    for (const KernelEntry *e = family; e->name; ++e)
      if (name == e->name)
        return e->fn;
  return nullptr;
}

bool isElementwiseKernel(std::string_view name) {
  if (name == "fused_elementwise")
    return true;
  for (const KernelEntry *e = kElementwiseKernels; e->name; ++e)
    if (name == e->name)
      return true;
  return false;
}

bool isCopyKernel(std::string_view name) {
  return name == "reshape" || name == "unsqueeze" || name == "squeeze" || name == "flatten" || name == "identity";
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const KernelEntry *family : kFamilies)
    for (const KernelEntry *e = family; e->name; ++e)
      names.emplace_back(e->name);
  return names;
}

} // namespace llmc::rt
