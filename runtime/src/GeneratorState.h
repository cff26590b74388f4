// The state of a generator (llmc_generator, Generator.cpp), shared with the decoding ahead of
// its greedy decode steps (DecodeAhead.cpp). Internal to libllmc.
#pragma once

#include "Plan.h"
#include "llmc/llmc.h"

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace llmc::rt::generation {

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, AlignedFree>;

enum class CacheMode { InPlace, Copy };

struct CachePair {
  int32_t pastInput = -1, presentOutput = -1;
  CacheMode mode = CacheMode::Copy;
  int64_t heads = 0, width = 0; // Copy: [B, heads, length, width]; InPlace: [length, B, width]
  llmc_dtype dtype = LLMC_DTYPE_F32; // f32, f16, bf16 or f64: the model's
  std::vector<char> data;            // Copy
  Buffer buffer;                     // InPlace
};

struct Sequence {
  std::vector<int32_t> tokens; // fed since the last reset, for the repetition penalty
  std::vector<int64_t> mask;   // per cache slot: 1 where the slot holds one of its tokens
  int64_t count = 0;           // its tokens in the cache (the next position id)
};

} // namespace llmc::rt::generation

struct llmc_generator_t {
  llmc_plan plan = nullptr;
  llmc_context context = nullptr;
  int32_t idsInput = -1, maskInput = -1, positionInput = -1, logitsOutput = -1;
  std::vector<llmc::rt::generation::CachePair> cache;
  int64_t batch = 1, length = 0, capacity = 0, chunk = 0, vocab = 0;
  std::vector<llmc::rt::generation::Sequence> sequences;
  std::vector<float> logits; // [batch, vocab]: each sequence's after its last token
  // Greedy decoding on the device (GreedyOutput.h): after a greedy sample without a penalty, the
  // next runs that give every sequence new logits leave them in the context and bring back only
  // their argmax (`greedy`); `logits` is then stale (`logitsPending`) until asked for.
  bool greedyOnDevice = false, logitsPending = false;
  std::vector<int32_t> greedy;
  bool fed = false;
  // Decoding ahead (llmc_context_options.decode_ahead; DecodeAhead.cpp):
  // decode steps started and not finished, each true while the generator counts it (its token,
  // position and cache slot), false once dropped (started for a token that did not come); and
  // whether the logits the context holds are a dropped or later step's rather than those of
  // the last step kept (then the last step is run again when they are asked for).
  bool decodeAhead = false;
  std::deque<bool> started;
  bool logitsLost = false;
  std::mt19937_64 rng;
  uint64_t seededWith = ~uint64_t(0);

  ~llmc_generator_t() {
    llmc_context_release(context);
    if (plan)
      plan->release();
  }
};

namespace llmc::rt::generation {

// Generator.cpp: sets the inputs of a run of `n` columns at cache slot g->length: `ids` and
// `positions` [batch, n], `mask` [batch, g->length + n], and the caches' filled part.
llmc_status setRunInputs(llmc_generator g, const std::vector<int64_t> &ids, const std::vector<int64_t> &positions,
                         const std::vector<int64_t> &mask, int64_t n);
// Runs `n` columns of `ids` ([batch, n], padding marked by `real` = 0) at cache
// slot g->length and keeps their logits (or, greedy, their argmax); the logits left on the
// device, to g->logits.
llmc_status runChunk(llmc_generator g, const std::vector<int64_t> &ids, const std::vector<uint8_t> &real, int64_t n);
llmc_status materializeLogits(llmc_generator g);

// DecodeAhead.cpp.
// Whether llmc_generator_generate decodes ahead with `sampling`: the option is on, greedy
// sampling without a penalty, one sequence, every cache in place on the context's device.
bool decodesAhead(llmc_generator g, const llmc_sampling &sampling);
// llmc_generator_generate's loop, each decode step started before the token it feeds is known.
llmc_status generateAhead(llmc_generator g, const llmc_sampling &sampling, int32_t max_tokens, const int32_t *stop_ids,
                          int32_t stop_count, llmc_token_callback on_token, void *user_data, int32_t *out_tokens,
                          int32_t *out_count);
// Waits for the decode steps still running (those dropped included): before anything else
// runs the context or reads what it holds.
void finishStarted(llmc_generator g);
// The logits of the last step kept, where a later one took their place (logitsLost): that step
// run again.
llmc_status restoreLogits(llmc_generator g);

} // namespace llmc::rt::generation
