// The tokenizer entry points of the C API.
#include "Plan.h"

#include <cstring>

using llmc::rt::makeStatus;

namespace {
llmc_status noTokenizer(llmc_plan plan) {
  if (!plan)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan must not be NULL");
  if (!plan->tokenizer)
    return makeStatus(LLMC_UNSUPPORTED, "the plan has no tokenizer (compile it with llmc --tokenizer tokenizer.json)");
  return nullptr;
}
} // namespace

extern "C" int32_t llmc_plan_has_tokenizer(llmc_plan plan) { return plan && plan->tokenizer ? 1 : 0; }

extern "C" int32_t llmc_plan_vocab_size(llmc_plan plan) {
  return plan && plan->tokenizer ? int32_t(plan->tokenizer->vocabSize()) : 0;
}

extern "C" llmc_status llmc_tokenize(llmc_plan plan, const char *text, size_t length, int32_t *ids, int32_t capacity,
                                     int32_t *out_count) {
  if (llmc_status s = noTokenizer(plan))
    return s;
  if ((!text && length) || !out_count)
    return makeStatus(LLMC_INVALID_ARGUMENT, "text and out_count must not be NULL");
  std::vector<int32_t> result;
  plan->tokenizer->encode(std::string_view(text ? text : "", length), result);
  *out_count = int32_t(result.size());
  if (!ids)
    return nullptr;
  if (capacity < 0 || size_t(capacity) < result.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "the id buffer holds " + std::to_string(capacity) + " ids; the text has " +
                                                 std::to_string(result.size()));
  std::memcpy(ids, result.data(), result.size() * sizeof(int32_t));
  return nullptr;
}

extern "C" llmc_status llmc_detokenize(llmc_plan plan, const int32_t *ids, int32_t count, char *text, size_t capacity,
                                       size_t *out_length) {
  if (llmc_status s = noTokenizer(plan))
    return s;
  if ((!ids && count) || count < 0 || !out_length)
    return makeStatus(LLMC_INVALID_ARGUMENT, "ids and out_length must not be NULL, count not negative");
  std::string result;
  if (std::string err = plan->tokenizer->decode(ids, size_t(count), result); !err.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, err);
  *out_length = result.size();
  if (!text)
    return nullptr;
  if (capacity < result.size())
    return makeStatus(LLMC_INVALID_ARGUMENT, "the text buffer holds " + std::to_string(capacity) + " bytes; the text has " +
                                                 std::to_string(result.size()));
  std::memcpy(text, result.data(), result.size());
  return nullptr;
}
