// Generation on a past/present decoder plan: the generator owns the KV cache, runs prompt chunks
// and single tokens through one context, and samples from the last logits, for a batch of
// sequences that may have different lengths.
//
// The compiler (llmc-kv-cache-layout) turns each past/present pair to [length, batch, heads *
// head], where a longer cache extends a shorter one at its end. The generator gives each pair one
// buffer at the bound's size, binds the past input to its filled prefix and the present output to
// the whole buffer: a run writes only the new tokens' keys and values (the concatenation skips the
// part already in place) and nothing is copied between steps, for any batch. On a CUDA context
// that buffer is device memory (llmc_context_link_cache): the cache never crosses the bus. Plans
// that keep the [batch, heads, length, head] layout fall back to copying each present.
//
// Sequences of different lengths share the cache's slots: each feed puts every sequence's new
// tokens at the end of the chunk (padding before them), and the attention mask hides the padding.
//
// Greedy generation of one sequence on a CUDA context decodes ahead (DecodeAhead.cpp): each step
// starts before the host has the token it feeds.
#include "GeneratorState.h"
#include "GreedyOutput.h"
#include "Plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>

using llmc::rt::makeStatus;
using namespace llmc::rt::generation;

namespace {

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

static llmc_status findCache(llmc_generator g) {
  llmc_plan plan = g->plan;
  // Per layer a key and a value cache, or one latent cache (DeepSeek MLA after llmc-absorb-mla);
  // with DeepSeek Sparse Attention, its indexer's keys too.
  for (int i = 0;; ++i) {
    const std::string prefix = "past_key_values." + std::to_string(i) + ".";
    const size_t cachesBefore = g->cache.size();
    for (const char *kind : {"key", "value", "latent", "indexer"}) {
      CachePair pair;
      pair.pastInput = findInput(plan, prefix + kind);
      pair.presentOutput = findOutput(plan, "present." + std::to_string(i) + "." + kind);
      if (pair.pastInput < 0)
        continue;
      if (pair.presentOutput < 0)
        return makeStatus(LLMC_UNSUPPORTED, "input '" + prefix + kind + "' has no output 'present." +
                                                std::to_string(i) + "." + kind + "'");
      const llmc::rt::PlanValue &past = plan->values[size_t(plan->inputs[size_t(pair.pastInput)])];
      const bool flat = past.shape.rank == 3;
      const int lengthDim = flat ? 0 : 2, batchDim = flat ? 1 : 0;
      const bool layoutOk = flat ? past.dimNode[2] < 0 : past.shape.rank == 4 && past.dimNode[1] < 0 && past.dimNode[3] < 0;
      if (!layoutOk || !llmc::rt::isFloatType(past.dtype) || past.dimNode[lengthDim] < 0)
        return makeStatus(LLMC_UNSUPPORTED, "'" + past.name + "' must be floats [batch, past, heads * head] or [batch, "
                                            "heads, past, head] with a dynamic past length (--max-shape past=0..N)");
      if (plan->symbols[size_t(plan->dimNodes[size_t(past.dimNode[lengthDim])].value)].min != 0)
        return makeStatus(LLMC_UNSUPPORTED, "the past length of '" + past.name +
                                                "' must be allowed to be 0 (compile with --max-shape past=0..N)");
      if (g->batch > symbolMax(plan, past, batchDim))
        return makeStatus(LLMC_INVALID_ARGUMENT, "batch " + std::to_string(g->batch) + " is above the plan's bound " +
                                                     std::to_string(symbolMax(plan, past, batchDim)));
      pair.mode = flat ? CacheMode::InPlace : CacheMode::Copy;
      pair.dtype = static_cast<llmc_dtype>(past.dtype);
      pair.heads = flat ? 1 : past.shape.dims[1];
      pair.width = past.shape.dims[flat ? 2 : 3];
      const int64_t cap = symbolMax(plan, past, lengthDim);
      g->capacity = g->cache.empty() ? cap : std::min(g->capacity, cap);
      g->cache.push_back(std::move(pair));
    }
    if (g->cache.size() == cachesBefore)
      return nullptr;
  }
}

extern "C" llmc_status llmc_generator_create_batch(llmc_plan plan, const llmc_context_options *options, int32_t batch,
                                                   llmc_generator *out) {
  if (!plan || !out || batch < 1)
    return makeStatus(LLMC_INVALID_ARGUMENT, "plan and out_generator must not be NULL, batch at least 1");
  *out = nullptr;
  auto g = std::make_unique<llmc_generator_t>();
  plan->retain();
  g->plan = plan;
  g->batch = batch;
  g->idsInput = findInput(plan, "input_ids");
  g->maskInput = findInput(plan, "attention_mask");
  g->positionInput = findInput(plan, "position_ids");
  g->logitsOutput = findOutput(plan, "logits");
  if (g->idsInput < 0 || g->logitsOutput < 0)
    return makeStatus(LLMC_UNSUPPORTED, "the plan is not a decoder: it needs an input 'input_ids' and an output 'logits'");
  const llmc::rt::PlanValue &ids = plan->values[size_t(plan->inputs[size_t(g->idsInput)])];
  const llmc::rt::PlanValue &logits = plan->values[size_t(plan->outputs[size_t(g->logitsOutput)])];
  if (ids.shape.rank != 2 || logits.shape.rank != 3 || logits.dimNode[2] >= 0 || !llmc::rt::isFloatType(logits.dtype))
    return makeStatus(LLMC_UNSUPPORTED, "input_ids must be [batch, seq] and logits floats [batch, seq, vocab]");
  if (batch > 1 && g->maskInput < 0)
    return makeStatus(LLMC_UNSUPPORTED, "a batch of sequences needs an attention_mask input (to hide the padding)");
  g->vocab = logits.shape.dims[2];
  g->chunk = symbolMax(plan, ids, 1);
  if (llmc_status s = findCache(g.get()))
    return s;
  if (g->cache.empty())
    return makeStatus(LLMC_UNSUPPORTED, "the plan has no past_key_values inputs (export the decoder with its KV cache)");
  // Every run starts at a past length within its bound, so the context ends at most one token
  // after it; the mask, which covers past and new tokens, may limit it further.
  g->capacity += 1;
  if (g->maskInput >= 0)
    g->capacity = std::min(g->capacity, symbolMax(plan, plan->values[size_t(plan->inputs[size_t(g->maskInput)])], 1));
  if (llmc_status s = llmc_context_create(plan, options, &g->context))
    return s;
  // Decoding ahead: where a run returns before it is done (a CUDA context), unless told.
  const bool given = options && options->struct_size >= offsetof(llmc_context_options, decode_ahead) + sizeof(int32_t);
  const int32_t ahead = given ? options->decode_ahead : -1;
  g->decodeAhead = ahead > 0 || (ahead < 0 && llmc::rt::runsAhead(g->context));
  for (CachePair &c : g->cache) {
    if (c.mode == CacheMode::Copy)
      continue;
    // On a GPU the cache stays in device memory; on the CPU one host buffer serves past and present.
    llmc_status linked = llmc_context_link_cache(g->context, c.pastInput, c.presentOutput);
    const bool unsupported = linked && llmc_status_code_of(linked) == LLMC_UNSUPPORTED;
    if (linked && !unsupported)
      return linked;
    llmc_status_free(linked);
    if (!unsupported)
      continue;
    const size_t bytes = (llmc_context_output_capacity(g->context, c.presentOutput) + 63) / 64 * 64;
    c.buffer.reset(static_cast<char *>(std::aligned_alloc(64, bytes)));
    if (!c.buffer)
      return makeStatus(LLMC_OUT_OF_MEMORY, "out of memory allocating the KV cache");
    if (llmc_status s = llmc_context_bind_output(g->context, c.presentOutput, c.buffer.get(), bytes))
      return s;
  }
  g->sequences.resize(size_t(batch));
  g->logits.assign(size_t(batch * g->vocab), 0.0f);
  *out = g.release();
  return nullptr;
}

extern "C" llmc_status llmc_generator_create(llmc_plan plan, const llmc_context_options *options,
                                             llmc_generator *out) {
  return llmc_generator_create_batch(plan, options, 1, out);
}

extern "C" void llmc_generator_release(llmc_generator g) { delete g; }

extern "C" void llmc_generator_reset(llmc_generator g) {
  if (!g)
    return;
  finishStarted(g);
  g->logitsLost = false;
  g->length = 0;
  g->fed = false;
  g->logitsPending = false;
  for (Sequence &s : g->sequences)
    s = Sequence();
  for (CachePair &c : g->cache)
    c.data.clear();
}

extern "C" int32_t llmc_generator_length(llmc_generator g) { return g ? int32_t(g->length) : 0; }
extern "C" int32_t llmc_generator_capacity(llmc_generator g) { return g ? int32_t(g->capacity) : 0; }
extern "C" llmc_context llmc_generator_context(llmc_generator g) { return g ? g->context : nullptr; }
extern "C" int32_t llmc_generator_batch(llmc_generator g) { return g ? int32_t(g->batch) : 0; }

// The last row of the logits output of each sequence b with take[b], to g->logits.
static void copyLogits(llmc_generator g, const std::vector<bool> &take) {
  llmc_tensor logits;
  llmc_context_output(g->context, g->logitsOutput, &logits);
  const int64_t rows = logits.dims[1]; // n, or 1 for a plan that returns the last position (llmc --last-position)
  const auto type = static_cast<llmc::rt::DType>(logits.dtype);
  const size_t size = llmc::rt::dtypeSize(type);
  for (int64_t b = 0; b < g->batch; ++b)
    if (take[size_t(b)]) {
      const char *row = static_cast<const char *>(logits.data) + size_t((b * rows + rows - 1) * g->vocab) * size;
      float *to = g->logits.data() + b * g->vocab;
      for (int64_t i = 0; i < g->vocab; ++i) // (f32 as it is; the others to f32, the sampler's type)
        to[i] = llmc::rt::floatAt(row, type, i);
    }
}

// The logits that the last run left on the device, to g->logits after all.
llmc_status llmc::rt::generation::materializeLogits(llmc_generator g) {
  if (!g->logitsPending)
    return nullptr;
  if (g->logitsLost) // a later decode step took their place
    if (llmc_status s = restoreLogits(g))
      return s;
  if (llmc_status s = llmc::rt::fetchOutput(g->context, g->logitsOutput))
    return s;
  copyLogits(g, std::vector<bool>(size_t(g->batch), true)); // every sequence had new ones
  g->logitsPending = false;
  return nullptr;
}

llmc_status llmc::rt::generation::setRunInputs(llmc_generator g, const std::vector<int64_t> &ids,
                                              const std::vector<int64_t> &positions, const std::vector<int64_t> &mask,
                                              int64_t n) {
  const int64_t B = g->batch, total = g->length + n;
  llmc_tensor t{LLMC_DTYPE_I64, 2, {B, n}, const_cast<int64_t *>(ids.data())};
  if (llmc_status s = llmc_context_set_input(g->context, g->idsInput, &t))
    return s;
  if (g->positionInput >= 0) {
    llmc_tensor p{LLMC_DTYPE_I64, 2, {B, n}, const_cast<int64_t *>(positions.data())};
    if (llmc_status s = llmc_context_set_input(g->context, g->positionInput, &p))
      return s;
  }
  if (g->maskInput >= 0) {
    llmc_tensor m{LLMC_DTYPE_I64, 2, {B, total}, const_cast<int64_t *>(mask.data())};
    if (llmc_status s = llmc_context_set_input(g->context, g->maskInput, &m))
      return s;
  }
  for (CachePair &c : g->cache) {
    if (c.mode == CacheMode::Copy) {
      llmc_tensor past{c.dtype, 4, {B, c.heads, g->length, c.width}, c.data.data()};
      if (llmc_status s = llmc_context_set_input(g->context, c.pastInput, &past))
        return s;
      continue;
    }
    llmc_tensor past{c.dtype, 3, {g->length, B, c.width}, c.buffer.get()};
    if (llmc_status s = llmc_context_bind_input(g->context, c.pastInput, &past))
      return s;
  }
  return nullptr;
}

llmc_status llmc::rt::generation::runChunk(llmc_generator g, const std::vector<int64_t> &ids,
                                          const std::vector<uint8_t> &real, int64_t n) {
  const int64_t B = g->batch, total = g->length + n;
  std::vector<int64_t> positions(size_t(B * n), 0), mask(size_t(B * total), 0);
  for (int64_t b = 0; b < B; ++b) {
    Sequence &s = g->sequences[size_t(b)];
    std::copy(s.mask.begin(), s.mask.end(), mask.begin() + b * total);
    int64_t next = s.count;
    for (int64_t j = 0; j < n; ++j)
      if (real[size_t(b * n + j)]) {
        positions[size_t(b * n + j)] = next++;
        mask[size_t(b * total + g->length + j)] = 1;
      }
  }
  if (llmc_status s = setRunInputs(g, ids, positions, mask, n))
    return s;
  // Which sequences get new logits: those with a token in this chunk (their last column).
  std::vector<bool> fresh(size_t(B), false);
  for (int64_t b = 0; b < B; ++b)
    fresh[size_t(b)] = std::find(real.begin() + b * n, real.begin() + (b + 1) * n, 1) != real.begin() + (b + 1) * n;
  const bool allFresh = std::find(fresh.begin(), fresh.end(), false) == fresh.end();
  if (!allFresh) // the others keep theirs, which may still be on the device
    if (llmc_status s = materializeLogits(g))
      return s;
  const bool greedy = g->greedyOnDevice && allFresh;
  if (greedy)
    if (llmc_status s = llmc::rt::setGreedyOutput(g->context, g->logitsOutput))
      return s;
  llmc_status ran = llmc_context_run(g->context);
  if (greedy) {
    if (!ran) {
      const int32_t *tokens = llmc::rt::greedyTokens(g->context);
      g->greedy.assign(tokens, tokens + B);
    }
    if (llmc_status s = llmc::rt::setGreedyOutput(g->context, -1)) // a caller's runs copy every output
      llmc_status_free(s);
  }
  if (ran)
    return ran;
  g->logitsPending = greedy;
  for (CachePair &c : g->cache) {
    llmc_tensor present;
    llmc_context_output(g->context, c.presentOutput, &present);
    if (const int64_t length = present.dims[c.mode == CacheMode::Copy ? 2 : 0]; length != total)
      return makeStatus(LLMC_RUNTIME_ERROR,
                        "a present output holds " + std::to_string(length) + " positions where the cached and new "
                        "tokens are " + std::to_string(total) + ": the generator needs a cache that keeps every "
                        "position (a sliding-window cache drops the oldest ones; its plan generates while the "
                        "compiled bounds keep past + seq below the window)");
    if (c.mode == CacheMode::Copy) {
      const size_t bytes = size_t(B * c.heads * total * c.width) * llmc::rt::dtypeSize(llmc::rt::DType(c.dtype));
      c.data.assign(static_cast<const char *>(present.data), static_cast<const char *>(present.data) + bytes);
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    Sequence &s = g->sequences[size_t(b)];
    for (int64_t j = 0; j < n; ++j)
      if (real[size_t(b * n + j)]) {
        s.tokens.push_back(int32_t(ids[size_t(b * n + j)]));
        ++s.count;
      }
    s.mask.insert(s.mask.end(), mask.begin() + b * total + g->length, mask.begin() + (b + 1) * total);
  }
  if (!greedy) // a fresh sequence's last column is its newest token (tokens sit at the end of a chunk)
    copyLogits(g, fresh);
  g->length = total;
  return nullptr;
}

extern "C" llmc_status llmc_generator_feed_batch(llmc_generator g, const int32_t *const *tokens, const int32_t *counts) {
  if (!g || !tokens || !counts)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator, tokens and counts must not be NULL");
  int64_t n = 0;
  for (int64_t b = 0; b < g->batch; ++b) {
    if (counts[b] < 0 || (counts[b] && !tokens[b]))
      return makeStatus(LLMC_INVALID_ARGUMENT, "sequence " + std::to_string(b) + " has a bad token list");
    for (int32_t i = 0; i < counts[b]; ++i)
      if (tokens[b][i] < 0 || tokens[b][i] >= g->vocab)
        return makeStatus(LLMC_INVALID_ARGUMENT, "token id " + std::to_string(tokens[b][i]) +
                                                     " is outside the vocabulary (0.." + std::to_string(g->vocab - 1) +
                                                     ")");
    n = std::max<int64_t>(n, counts[b]);
  }
  if (n == 0)
    return nullptr;
  finishStarted(g);
  if (g->logitsLost) // the last step's logits are not wanted now: the next run makes new ones
    g->logitsLost = false, g->logitsPending = false;
  if (g->length + n > g->capacity)
    return makeStatus(LLMC_INVALID_ARGUMENT, "the context holds " + std::to_string(g->capacity) + " tokens; " +
                                                 std::to_string(g->length) + " are in it and " + std::to_string(n) +
                                                 " more do not fit (reset it, or compile with a larger past bound)");
  // Each sequence's tokens end at the last column; padding (id 0, masked) before them.
  for (int64_t done = 0; done < n;) {
    const int64_t m = std::min(g->chunk, n - done);
    std::vector<int64_t> ids(size_t(g->batch * m), 0);
    std::vector<uint8_t> real(size_t(g->batch * m), 0);
    for (int64_t b = 0; b < g->batch; ++b)
      for (int64_t j = 0; j < m; ++j) {
        const int64_t slot = done + j - (n - counts[b]); // index into this sequence's tokens
        if (slot >= 0) {
          ids[size_t(b * m + j)] = tokens[b][slot];
          real[size_t(b * m + j)] = 1;
        }
      }
    if (llmc_status s = runChunk(g, ids, real, m)) {
      llmc_generator_reset(g); // a failed run leaves the cache half written
      return s;
    }
    done += m;
  }
  g->fed = true;
  return nullptr;
}

extern "C" llmc_status llmc_generator_feed(llmc_generator g, const int32_t *tokens, int32_t count) {
  if (!g || (!tokens && count) || count < 0)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and tokens must not be NULL, count not negative");
  if (g->batch != 1)
    return makeStatus(LLMC_INVALID_ARGUMENT, "the generator has a batch of " + std::to_string(g->batch) +
                                                 " sequences: use llmc_generator_feed_batch");
  return llmc_generator_feed_batch(g, &tokens, &count);
}

extern "C" llmc_status llmc_generator_logits(llmc_generator g, const float **out_logits, int32_t *out_vocab) {
  if (!g || !out_logits)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and out_logits must not be NULL");
  if (!g->fed)
    return makeStatus(LLMC_INVALID_ARGUMENT, "no tokens were fed yet");
  if (llmc_status s = materializeLogits(g)) // (a decode step started ahead: restoreLogits)
    return s;
  *out_logits = g->logits.data();
  if (out_vocab)
    *out_vocab = int32_t(g->vocab);
  return nullptr;
}

// One draw from a sequence's `vocab` logits after the penalties and filters. Greedy decoding
// without a penalty reads them in place: no allocation and copy of the vocabulary's scores (128K
// floats for Llama 3) on the host between two GPU decode steps.
static int32_t sampleOne(llmc_generator g, const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                         const llmc_sampling &s) {
  const bool penalty = s.repetition_penalty > 0 && s.repetition_penalty != 1.0f;
  if (s.temperature <= 0.0f && !penalty)
    return int32_t(std::max_element(logits, logits + vocab) - logits);
  std::vector<float> scores(logits, logits + vocab);
  if (penalty)
    for (int32_t t : history) { // as in Hugging Face: divide positive scores, multiply negative
      float &x = scores[size_t(t)];
      x = x > 0 ? x / s.repetition_penalty : x * s.repetition_penalty;
    }
  if (s.temperature <= 0.0f)
    return int32_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
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
  return order[pick];
}

extern "C" llmc_status llmc_generator_sample_batch(llmc_generator g, const llmc_sampling *sampling,
                                                   int32_t *out_tokens) {
  if (!g || !out_tokens)
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and out_tokens must not be NULL");
  if (!g->fed)
    return makeStatus(LLMC_INVALID_ARGUMENT, "no tokens were fed yet");
  llmc_sampling defaults;
  llmc_sampling_init(&defaults);
  const llmc_sampling &s = sampling ? *sampling : defaults;
  finishStarted(g);
  // Greedy without a penalty: the next runs may leave the logits on the device (runChunk).
  g->greedyOnDevice = s.temperature <= 0.0f && !(s.repetition_penalty > 0 && s.repetition_penalty != 1.0f);
  if (g->logitsPending && g->greedyOnDevice) {
    std::copy(g->greedy.begin(), g->greedy.end(), out_tokens);
    return nullptr;
  }
  if (llmc_status st = materializeLogits(g))
    return st;
  for (int64_t b = 0; b < g->batch; ++b)
    out_tokens[b] = sampleOne(g, g->logits.data() + b * g->vocab, g->vocab, g->sequences[size_t(b)].tokens, s);
  return nullptr;
}

extern "C" llmc_status llmc_generator_sample(llmc_generator g, const llmc_sampling *sampling, int32_t *out_token) {
  if (g && g->batch != 1)
    return makeStatus(LLMC_INVALID_ARGUMENT, "the generator has a batch of " + std::to_string(g->batch) +
                                                 " sequences: use llmc_generator_sample_batch");
  return llmc_generator_sample_batch(g, sampling, out_token);
}

extern "C" llmc_status llmc_generator_generate(llmc_generator g, const llmc_sampling *sampling, int32_t max_tokens,
                                               const int32_t *stop_ids, int32_t stop_count,
                                               llmc_token_callback on_token, void *user_data, int32_t *out_tokens,
                                               int32_t *out_count) {
  if (!g || !out_count || max_tokens < 0 || (stop_count > 0 && !stop_ids))
    return makeStatus(LLMC_INVALID_ARGUMENT, "generator and out_count must not be NULL, max_tokens not negative");
  *out_count = 0;
  llmc_sampling defaults;
  llmc_sampling_init(&defaults);
  if (g->fed && decodesAhead(g, sampling ? *sampling : defaults))
    return generateAhead(g, sampling ? *sampling : defaults, max_tokens, stop_ids, stop_count, on_token, user_data,
                         out_tokens, out_count);
  for (int32_t step = 0; step < max_tokens; ++step) {
    int32_t token = -1;
    if (llmc_status s = llmc_generator_sample(g, sampling, &token))
      return s;
    if (std::find(stop_ids, stop_ids + std::max(stop_count, 0), token) != stop_ids + std::max(stop_count, 0))
      return nullptr;
    if (out_tokens)
      out_tokens[*out_count] = token;
    ++*out_count;
    if (on_token && on_token(token, user_data))
      return nullptr;
    if (step + 1 == max_tokens || g->length >= g->capacity)
      return nullptr;
    if (llmc_status s = llmc_generator_feed(g, &token, 1))
      return s;
  }
  return nullptr;
}
