// Lowers func.func @main (llmc graph ops with static shapes) into a plan file.
#pragma once

#include "TokenizerImport.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace llmc {

struct PlanStats {
  int64_t kernels = 0;
  int64_t weights = 0;
  uint64_t weightBytes = 0;
  uint64_t fileBytes = 0;
};

// Writes the plan for `module` to `path`. The file appears complete or not at all: it is
// written to a temporary file in the same folder and renamed. Returns "" or an error message.
// `tokenizer`, when given, goes into the plan too.
std::string writePlan(mlir::ModuleOp module, const std::string &path, PlanStats *stats = nullptr,
                      const TokenizerData *tokenizer = nullptr);

} // namespace llmc
