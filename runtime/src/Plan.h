// A loaded, verified plan: the mapped file plus the program resolved to kernels.
#pragma once

#include "../kernels/Kernels.h"
#include "DimExprs.h"
#include "Status.h"
#include "Tokenizer.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace llmc::rt {

struct PlanValue {
  std::string name;
  uint8_t kind; // llmc::plan::ValueKind
  DType dtype;
  Shape shape;                  // a dynamic dimension holds -1
  int32_t dimNode[kMaxRank];    // per dimension: the DimExprNode giving its size, -1 when static
  bool dynamic = false;         // some dimension is dynamic
  size_t capacity = 0;          // bytes a context allocates: enough for every shape within the bounds
  const void *weight = nullptr; // weights only: `dtype` data (into the mapping, or made at load)
  // Reduced-precision plans (llmc --precision): F16 or BF16 where the GPU keeps this f32 value in
  // 16 bits, None otherwise. Such a weight's 16-bit data is `narrow`; `weight` stays null until
  // a CPU context asks for f32 (llmc_plan_t::widenWeights).
  DType deviceDType = DType::None;
  const void *narrow = nullptr;
};

struct PlanSymbol {
  std::string name;
  int64_t max;
  int64_t min; // 1, or 0 for a symbol that may be empty
};

struct PlanOp {
  std::string kernel;
  std::string location;
  KernelFn fn;
  AttrList attrs;
  std::vector<int> inputs; // -1: absent
  std::vector<int> outputs;
  int segment = -1; // the CUDA graph segment (llmc-mark-graph-segments); -1: launched on its own
};

// A CUBIN the plan carries for op `op` on architecture `arch` (into the mapping).
struct PlanCudaKernel {
  int op;
  std::string arch, name;
  const uint8_t *cubin;
  size_t size;
};

} // namespace llmc::rt

struct llmc_plan_t {
  std::atomic<int> refs{1};
  std::once_flag widenOnce;
  std::string widenError;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  std::vector<llmc::rt::PlanValue> values;
  std::vector<llmc::rt::PlanOp> ops;
  std::vector<int> inputs, outputs;
  std::vector<llmc::rt::PlanSymbol> symbols;
  std::vector<llmc::plan::DimExprNode> dimNodes;
  std::unique_ptr<llmc::rt::Tokenizer> tokenizer; // when the plan carries one
  std::vector<std::string> cudaArchs;              // a CUDA plan's architectures (empty: a CPU plan)
  std::vector<llmc::rt::PlanCudaKernel> cudaKernels;
  std::string cudaArchList;                        // cudaArchs joined by ", "
  std::vector<std::unique_ptr<uint8_t, void (*)(void *)>> filledWeights; // made at load: random_fill, widened
  llmc::rt::DType precision = llmc::rt::DType::F32; // llmc --precision: F32, F16 or BF16
  bool tf32 = false;                                 // llmc --precision tf32: f32, GEMMs on TF32

  // The f32 data of the 16-bit weights of a reduced-precision plan, made once (the CPU executor
  // computes in f32). Returns an error (out of memory) or "".
  std::string widenWeights();

  ~llmc_plan_t();
  void retain() { refs.fetch_add(1); }
  void release() {
    if (refs.fetch_sub(1) == 1)
      delete this;
  }
};

namespace llmc::rt {
// Verifies `data` (a whole plan file) and fills `plan`. Returns NULL on success.
llmc_status parsePlan(const void *data, size_t size, bool verifyWeights, llmc_plan_t &plan);
} // namespace llmc::rt
