// Generation on a past/present decoder plan: the generator owns the KV cache, runs prompt chunks
// and single tokens through one context, and samples from the last logits.
//
// The compiler (llmc-kv-cache-layout) turns each past/present pair to [1, length, heads * head],
// where a longer cache extends a shorter one at its end. The generator gives each pair one buffer
// at the bound's size, binds the past input to its filled prefix and the present output to the
// whole buffer: a run then writes only the new tokens' keys and values (the concatenation skips
// the part already in place) and nothing is copied between steps. Plans that keep the
// [1, heads, length, head] layout fall back to copying each present output into the next past.
#include "Plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>

using llmc::rt::makeStatus;

namespace {

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};

struct CachePair {
  int32_t pastInput = -1, presentOutput = -1;
  bool inPlace = false;    // [1, length, width] in `buffer`; else [1, heads, length, width] in `data`
  int64_t heads = 0, width = 0;
  std::vector<float> data; // copy mode
  std::unique_ptr<float, AlignedFree> buffer; // in-place mode: the present output's memory
};

int32_t findInput(llmc_plan plan, const std::string &name) {
  for (size_t i = 0; i < plan->inputs.size(); ++i)
    if (plan->values[size_t(plan->inputs[i])].name == name)
      return int32_t(i);
  return -1;
}

int32_t findOutput(llmc_plan plan, const std::string &name) {
  for (size_t i = 0; i < plan->outputs.size(); ++i)
    if (plan->values[size_t(plan->outputs[i])].name == name)
      return int32_t(i);
  return -1;
}

int64_t symbolMax(llmc_plan plan, const llmc::rt::PlanValue &v, int dim) {
  if (v.dimNode[dim] < 0)
    return v.shape.dims[dim];
  return plan->symbols[size_t(plan->dimNodes[size_t(v.dimNode[dim])].value)].max;
}

} // namespace

struct llmc_generator_t {
  llmc_plan plan = nullptr;
  llmc_context context = nullptr;
  int32_t idsInput = -1, maskInput = -1, positionInput = -1, logitsOutput = -1;
  std::vector<CachePair> cache;
  int64_t length = 0, capacity = 0, chunk = 0, vocab = 0;
  std::vector<int32_t> history; // every token fed since the last reset
  std::vector<float> logits;    // of the last token fed
  std::mt19937_64 rng;
  uint64_t seededWith = ~uint64_t(0);

  ~llmc_generator_t() {
    llmc_context_release(context);
    if (plan)
      plan->release();
  }
};

extern "C" void llmc_sampling_init(llmc_sampling *s) {
  if (!s)
    return;
  s->struct_size = sizeof *s;
  s->temperature = 0.0f;
  s->top_k = 0;
  s->top_p = 1.0f;
  s->repetition_penalty = 1.0f;
  s->seed = 0;
}

extern "C" llmc_status llmc_generator_create(llmc_plan plan, const llmc_context_options *options,
                                             llmc_generator *out) {
  if (!plan || !out)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan and out_generator must not be NULL");
  *out = nullptr;
  auto g = std::make_unique<llmc_generator_t>();
  plan->retain();
  g->plan = plan;
  g->idsInput = findInput(plan, "input_ids");
  g->maskInput = findInput(plan, "attention_mask");
  g->positionInput = findInput(plan, "position_ids");
  g->logitsOutput = findOutput(plan, "logits");
  if (g->idsInput < 0 || g->logitsOutput < 0)
    return makeStatus(LLMC_UNSUPPORTED, "the plan is not a decoder: it needs an input 'input_ids' and an output 'logits'");
  const llmc::rt::PlanValue &ids = plan->values[size_t(plan->inputs[size_t(g->idsInput)])];
  const llmc::rt::PlanValue &logits = plan->values[size_t(plan->outputs[size_t(g->logitsOutput)])];
  if (ids.shape.rank != 2 || logits.shape.rank != 3 || logits.dimNode[2] >= 0)
    return makeStatus(LLMC_UNSUPPORTED, "input_ids must be [batch, seq] and logits [batch, seq, vocab]");
  g->vocab = logits.shape.dims[2];
  g->chunk = symbolMax(plan, ids, 1);
  for (int i = 0;; ++i) {
    const std::string prefix = "past_key_values." + std::to_string(i) + ".";
    for (const char *kind : {"key", "value"}) {
      CachePair pair;
      pair.pastInput = findInput(plan, prefix + kind);
      pair.presentOutput = findOutput(plan, "present." + std::to_string(i) + "." + kind);
      if (pair.pastInput < 0)
        break;
      if (pair.presentOutput < 0)
        return makeStatus(LLMC_UNSUPPORTED, "input '" + prefix + kind + "' has no output 'present." +
                                                std::to_string(i) + "." + kind + "'");
      const llmc::rt::PlanValue &past = plan->values[size_t(plan->inputs[size_t(pair.pastInput)])];
      pair.inPlace = past.shape.rank == 3;
      const int lengthDim = pair.inPlace ? 1 : 2;
      const bool layoutOk = pair.inPlace ? past.dimNode[2] < 0
                                         : past.shape.rank == 4 && past.dimNode[1] < 0 && past.dimNode[3] < 0;
      if (!layoutOk || past.dtype != llmc::rt::DType::F32 || past.dimNode[lengthDim] < 0)
        return makeStatus(LLMC_UNSUPPORTED, "'" + past.name + "' must be f32 [batch, past, heads * head] or [batch, "
                                            "heads, past, head] with a dynamic past length (--max-shape past=0..N)");
      if (plan->symbols[size_t(plan->dimNodes[size_t(past.dimNode[lengthDim])].value)].min != 0)
        return makeStatus(LLMC_UNSUPPORTED, "the past length of '" + past.name +
                                                "' must be allowed to be 0 (compile with --max-shape past=0..N)");
      pair.heads = pair.inPlace ? 1 : past.shape.dims[1];
      pair.width = past.shape.dims[pair.inPlace ? 2 : 3];
      const int64_t cap = symbolMax(plan, past, lengthDim);
      g->capacity = g->cache.empty() ? cap : std::min(g->capacity, cap);
      g->cache.push_back(std::move(pair));
    }
    if (g->cache.size() < size_t(2 * (i + 1)))
      break;
  }
  if (g->cache.empty())
    return makeStatus(LLMC_UNSUPPORTED, "the plan has no past_key_values inputs (export the decoder with its KV cache)");
  // Every run starts at a past length within its bound, so the context ends at most one token
  // after it; the mask, which covers past and new tokens, may limit it further.
  g->capacity += 1;
  if (g->maskInput >= 0)
    g->capacity = std::min(g->capacity, symbolMax(plan, plan->values[size_t(plan->inputs[size_t(g->maskInput)])], 1));
  if (llmc_status s = llmc_context_create(plan, options, &g->context))
    return s;
  for (CachePair &c : g->cache) {
    if (!c.inPlace)
      continue;
    const size_t bytes = (llmc_context_output_capacity(g->context, c.presentOutput) + 63) / 64 * 64;
    c.buffer.reset(static_cast<float *>(std::aligned_alloc(64, bytes)));
    if (!c.buffer)
      return makeStatus(LLMC_OUT_OF_MEMORY, "out of memory allocating the KV cache");
    if (llmc_status s = llmc_context_bind_output(g->context, c.presentOutput, c.buffer.get(), bytes))
      return s;
  }
  *out = g.release();
  return nullptr;
}

extern "C" void llmc_generator_release(llmc_generator g) { delete g; }

extern "C" void llmc_generator_reset(llmc_generator g) {
  if (!g)
    return;
  g->length = 0;
  g->history.clear();
  g->logits.clear();
  for (CachePair &c : g->cache)
    c.data.clear();
}

extern "C" int32_t llmc_generator_length(llmc_generator g) { return g ? int32_t(g->length) : 0; }
extern "C" int32_t llmc_generator_capacity(llmc_generator g) { return g ? int32_t(g->capacity) : 0; }

// Runs one chunk of at most `g->chunk` tokens at position g->length.
static llmc_status runChunk(llmc_generator g, const int32_t *tokens, int64_t n) {
  std::vector<int64_t> ids(tokens, tokens + n);
  std::vector<int64_t> positions(static_cast<size_t>(n));
  std::vector<int64_t> mask(static_cast<size_t>(g->length + n), 1);
  std::iota(positions.begin(), positions.end(), g->length);
  llmc_tensor t{LLMC_DTYPE_I64, 2, {1, n}, ids.data()};
  if (llmc_status s = llmc_context_set_input(g->context, g->idsInput, &t))
    return s;
  if (g->positionInput >= 0) {
    llmc_tensor p{LLMC_DTYPE_I64, 2, {1, n}, positions.data()};
    if (llmc_status s = llmc_context_set_input(g->context, g->positionInput, &p))
      return s;
  }
  if (g->maskInput >= 0) {
    llmc_tensor m{LLMC_DTYPE_I64, 2, {1, g->length + n}, mask.data()};
    if (llmc_status s = llmc_context_set_input(g->context, g->maskInput, &m))
      return s;
  }
  for (CachePair &c : g->cache) {
    if (c.inPlace) { // the filled prefix of the buffer the present output extends
      llmc_tensor past{LLMC_DTYPE_F32, 3, {1, g->length, c.width}, c.buffer.get()};
      if (llmc_status s = llmc_context_bind_input(g->context, c.pastInput, &past))
        return s;
      continue;
    }
    llmc_tensor past{LLMC_DTYPE_F32, 4, {1, c.heads, g->length, c.width}, c.data.data()};
    if (llmc_status s = llmc_context_set_input(g->context, c.pastInput, &past))
      return s;
  }
  if (llmc_status s = llmc_context_run(g->context))
    return s;
  for (CachePair &c : g->cache) {
    llmc_tensor present;
    llmc_context_output(g->context, c.presentOutput, &present);
    if (present.dims[c.inPlace ? 1 : 2] != g->length + n)
      return makeStatus(LLMC_RUNTIME_ERROR, "a present output does not have the expected length");
    if (c.inPlace) // already where the next step reads it
      continue;
    const size_t count = size_t(c.heads * (g->length + n) * c.width);
    c.data.assign(static_cast<const float *>(present.data), static_cast<const float *>(present.data) + count);
  }
  llmc_tensor logits;
  llmc_context_output(g->context, g->logitsOutput, &logits);
  const float *last = static_cast<const float *>(logits.data) + (n - 1) * g->vocab;
  g->logits.assign(last, last + g->vocab);
  g->length += n;
  return nullptr;
}

extern "C" llmc_status llmc_generator_feed(llmc_generator g, const int32_t *tokens, int32_t count) {
  if (!g || (!tokens && count) || count < 0)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and tokens must not be NULL, count not negative");
  for (int32_t i = 0; i < count; ++i)
    if (tokens[i] < 0 || tokens[i] >= g->vocab)
      return makeStatus(LLMC_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) +
                                                   " is outside the vocabulary (0.." + std::to_string(g->vocab - 1) + ")");
  if (g->length + count > g->capacity)
    return makeStatus(LLMC_INVALID_ARGUMENT, "the context holds " + std::to_string(g->capacity) + " tokens; " +
                                                 std::to_string(g->length) + " are in it and " + std::to_string(count) +
                                                 " more do not fit (reset it, or compile with a larger past bound)");
  for (int32_t done = 0; done < count;) {
    const int64_t n = std::min<int64_t>(g->chunk, count - done);
    if (llmc_status s = runChunk(g, tokens + done, n)) {
      llmc_generator_reset(g); // a failed run leaves the cache half written
      return s;
    }
    g->history.insert(g->history.end(), tokens + done, tokens + done + n);
    done += int32_t(n);
  }
  return nullptr;
}

extern "C" llmc_status llmc_generator_logits(llmc_generator g, const float **out_logits, int32_t *out_vocab) {
  if (!g || !out_logits)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and out_logits must not be NULL");
  if (g->logits.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, "no tokens were fed yet");
  *out_logits = g->logits.data();
  if (out_vocab)
    *out_vocab = int32_t(g->vocab);
  return nullptr;
}

extern "C" llmc_status llmc_generator_sample(llmc_generator g, const llmc_sampling *sampling, int32_t *out_token) {
  if (!g || !out_token)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and out_token must not be NULL");
  if (g->logits.empty())
    return makeStatus(LLMC_INVALID_ARGUMENT, "no tokens were fed yet");
  llmc_sampling defaults;
  llmc_sampling_init(&defaults);
  const llmc_sampling &s = sampling ? *sampling : defaults;
  std::vector<float> scores = g->logits;
  if (s.repetition_penalty > 0 && s.repetition_penalty != 1.0f)
    for (int32_t t : g->history) { // as in Hugging Face: divide positive scores, multiply negative
      float &x = scores[size_t(t)];
      x = x > 0 ? x / s.repetition_penalty : x * s.repetition_penalty;
    }
  if (s.temperature <= 0.0f) {
    *out_token = int32_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
    return nullptr;
  }
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return scores[size_t(a)] > scores[size_t(b)]; });
  size_t keep = s.top_k > 0 ? std::min<size_t>(size_t(s.top_k), order.size()) : order.size();
  std::vector<double> probs(keep);
  const double top = scores[size_t(order[0])];
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += probs[i] = std::exp((scores[size_t(order[i])] - top) / s.temperature);
  if (s.top_p > 0.0f && s.top_p < 1.0f) {
    double mass = 0;
    size_t i = 0;
    while (i < keep && mass < s.top_p * total)
      mass += probs[i++];
    keep = std::max<size_t>(i, 1);
    total = mass;
  }
  if (g->seededWith != s.seed) {
    g->rng.seed(s.seed);
    g->seededWith = s.seed;
  }
  double draw = std::uniform_real_distribution<double>(0.0, total)(g->rng);
  size_t pick = 0;
  while (pick + 1 < keep && draw >= probs[pick])
    draw -= probs[pick++];
  *out_token = order[pick];
  return nullptr;
}
