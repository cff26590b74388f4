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

} // namespace llmcrun
