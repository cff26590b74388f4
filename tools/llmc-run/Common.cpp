#include "Common.h"

#include <cstdio>

namespace llmcrun {

int fail(const std::string &message) {
  std::fprintf(stderr, "llmc-run: error: %s\n", message.c_str());
  return 1;
}

bool ok(llmc_status status, std::string &error) {
  if (!status)
    return true;
  error = llmc_status_message(status);
  llmc_status_free(status);
  return false;
}

bool encode(llmc_plan plan, const std::string &text, std::vector<int32_t> &ids, std::string &error) {
  int32_t count = 0;
  if (!ok(llmc_tokenize(plan, text.data(), text.size(), nullptr, 0, &count), error))
    return false;
  ids.resize(size_t(count));
  return ok(llmc_tokenize(plan, text.data(), text.size(), ids.data(), count, &count), error);
}

bool decode(llmc_plan plan, const std::vector<int32_t> &ids, std::string &text, std::string &error) {
  size_t length = 0;
  if (!ok(llmc_detokenize(plan, ids.data(), int32_t(ids.size()), nullptr, 0, &length), error))
    return false;
  text.resize(length);
  return ok(llmc_detokenize(plan, ids.data(), int32_t(ids.size()), text.data(), length, &length), error);
}

bool CudaFlags::take(const std::string &arg) {
  bool *flag = arg == "--no-cuda-graphs" ? &graphs : arg == "--no-cuda-gemv" ? &gemv : arg == "--no-cuda-overlap" ? &overlap : nullptr;
  if (flag)
    *flag = false;
  return flag != nullptr;
}

llmc_context_options contextOptions(llmc_device device, int threads, const CudaFlags &cuda) {
  llmc_context_options options;
  llmc_context_options_init(&options);
  options.num_threads = threads;
  options.device = device;
  options.cuda_graphs = cuda.graphs;
  options.cuda_gemv = cuda.gemv;
  options.cuda_overlap = cuda.overlap;
  return options;
}

} // namespace llmcrun
