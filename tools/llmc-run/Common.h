// Helpers shared by llmc-run's modes (run, tokenize, generate).
#pragma once

#include "llmc/llmc.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmcrun {

// Prints "llmc-run: error: MESSAGE"; returns the exit code 1.
int fail(const std::string &message);

// True when `status` is OK; otherwise stores its message in `error` and frees it.
bool ok(llmc_status status, std::string &error);

// The plan's tokenizer, with the C API's size-then-fill buffer protocol done here.
bool encode(llmc_plan plan, const std::string &text, std::vector<int32_t> &ids, std::string &error);
bool decode(llmc_plan plan, const std::vector<int32_t> &ids, std::string &text, std::string &error);

// The CUDA flags both modes that run a plan take (--no-cuda-graphs, --no-cuda-gemv,
// --no-cuda-overlap); take() consumes `arg` when it is one of them.
struct CudaFlags {
  bool graphs = true, gemv = true, overlap = true;
  bool take(const std::string &arg);
};

// Context options for `device` with `threads` GEMM threads and the CUDA flags (the rest default).
llmc_context_options contextOptions(llmc_device device, int threads, const CudaFlags &cuda);

} // namespace llmcrun
