// Decoding ahead (llmc_context_options.decode_ahead): llmc_generator_generate's greedy loop with
// each decode step started before the host knows the token it feeds. The step after step k takes
// step k's argmax on the device (GreedyOutput.h: startRun with a fed input), so that the host
// learns step k's token while step k + 1 already runs, and its work between two steps (the
// callback, the next step's inputs, the launch) overlaps the device's instead of leaving it idle.
//
// A started step is counted at once (its token, position and cache slot), the token it feeds
// filled in when the step before it finishes. A step started for a token that does not come (a
// stop token, one past the last wanted, a callback that stops) is dropped: uncounted, its cache
// slot written again by the next feed. It still runs, and is waited for before anything else
// uses the context (finishStarted); the logits it leaves in the context are not those of the
// last step kept, so when they are asked for, that step runs again (restoreLogits), and a
// generation whose callback asks for them goes on one step at a time.
#include "GeneratorState.h"
#include "GreedyOutput.h"
#include "Plan.h"

#include <algorithm>

namespace llmc::rt::generation {
namespace {

// Starts a decode step of the one sequence at cache slot g->length: `token`, or with
// `fromDevice` the argmax of the step started before it (not known yet: counted as -1 until
// the caller fills it in).
llmc_status startStep(llmc_generator g, int32_t token, bool fromDevice) {
  Sequence &s = g->sequences[0];
  std::vector<int64_t> mask(s.mask);
  mask.push_back(1);
  if (llmc_status st = setRunInputs(g, {fromDevice ? 0 : token}, {s.count}, mask, 1))
    return st;
  if (llmc_status st = startRun(g->context, fromDevice ? g->idsInput : -1))
    return st;
  s.tokens.push_back(fromDevice ? -1 : token);
  ++s.count;
  s.mask.push_back(1);
  ++g->length;
  g->started.push_back(true);
  g->logitsLost |= g->logitsPending; // the context's logits become this step's
  return nullptr;
}

// Uncounts the last started step (its token did not come). The logits it leaves in the context
// were marked lost when it started (where they were still wanted).
void dropLast(llmc_generator g) {
  Sequence &s = g->sequences[0];
  s.tokens.pop_back();
  --s.count;
  s.mask.pop_back();
  --g->length;
  g->started.back() = false;
}

// Waits for the oldest started step; *token: its argmax.
llmc_status finishStep(llmc_generator g, int32_t *token) {
  g->started.pop_front();
  if (llmc_status st = finishRun(g->context))
    return st;
  *token = greedyTokens(g->context)[0];
  return nullptr;
}

} // namespace

bool decodesAhead(llmc_generator g, const llmc_sampling &s) {
  const bool greedy = s.temperature <= 0.0f && !(s.repetition_penalty > 0 && s.repetition_penalty != 1.0f);
  return g->decodeAhead && g->batch == 1 && greedy &&
         std::all_of(g->cache.begin(), g->cache.end(), [](const CachePair &c) { return c.mode == CacheMode::InPlace; });
}

void finishStarted(llmc_generator g) {
  while (!g->started.empty()) {
    g->started.pop_front();
    llmc_status_free(finishRun(g->context)); // a dropped step's failure concerns nobody
  }
}

llmc_status restoreLogits(llmc_generator g) {
  // A step still running counted is one that a callback's request came before: it feeds the
  // token the caller has, and generation goes on from that token without it.
  if (!g->started.empty() && g->started.back())
    dropLast(g);
  finishStarted(g);
  Sequence &s = g->sequences[0];
  const int32_t last = s.tokens.back(); // the last step kept: uncounted, and run again
  s.tokens.pop_back();
  --s.count;
  s.mask.pop_back();
  --g->length;
  g->logitsLost = false;
  if (llmc_status st = llmc::rt::setGreedyOutput(g->context, g->logitsOutput))
    return st;
  return runChunk(g, {last}, {1}, 1); // leaves its logits on the device again (greedy)
}

llmc_status generateAhead(llmc_generator g, const llmc_sampling &sampling, int32_t maxTokens, const int32_t *stopIds,
                          int32_t stopCount, llmc_token_callback onToken, void *userData, int32_t *outTokens,
                          int32_t *outCount) {
  const int32_t *stopEnd = stopIds + std::max(stopCount, 0);
  auto isStop = [&](int32_t t) { return std::find(stopIds, stopEnd, t) != stopEnd; };
  auto failed = [&](llmc_status st) {
    finishStarted(g);
    llmc_generator_reset(g); // a failed run leaves the cache half written
    return st;
  };
  if (maxTokens == 0)
    return nullptr;
  int32_t t = -1;
  if (llmc_status st = llmc_generator_sample(g, &sampling, &t)) // the first token: from the last feed
    return st;
  bool ahead = true;     // false once a callback asked for the logits: one step at a time
  bool inFlight = false; // a counted step that feeds t is started
  for (;;) {
    if (isStop(t)) { // not fed or counted
      if (inFlight)
        dropLast(g);
      break;
    }
    if (outTokens)
      outTokens[*outCount] = t;
    ++*outCount;
    // t is fed when another token is wanted and there is room; started before the callback,
    // so that the device computes meanwhile (one step at a time: after it, as the callback may
    // want the logits again).
    const bool feed = *outCount < maxTokens && g->length - (inFlight ? 1 : 0) < g->capacity;
    if (feed && !inFlight && ahead) {
      if (llmc_status st = llmc::rt::setGreedyOutput(g->context, g->logitsOutput))
        return failed(st);
      if (llmc_status st = startStep(g, t, false))
        return failed(st);
      inFlight = true;
    }
    if (onToken && onToken(t, userData)) {
      if (inFlight && !g->started.empty() && g->started.back())
        dropLast(g);
      break;
    }
    if (inFlight && (g->started.empty() || !g->started.back())) { // the callback asked for the logits
      inFlight = false;
      ahead = false;
    }
    if (!feed) {
      if (inFlight)
        dropLast(g);
      break;
    }
    if (!inFlight) {
      if (llmc_status st = llmc::rt::setGreedyOutput(g->context, g->logitsOutput))
        return failed(st);
      if (llmc_status st = startStep(g, t, false))
        return failed(st);
    }
    // The step after it, fed on the device with its argmax, where that token may be fed too.
    const bool next = ahead && *outCount + 1 < maxTokens && g->length < g->capacity;
    if (next)
      if (llmc_status st = startStep(g, -1, true))
        return failed(st);
    int32_t u = -1;
    if (llmc_status st = finishStep(g, &u))
      return failed(st);
    if (next)
      g->sequences[0].tokens.back() = u;
    g->greedy.assign(1, u);
    g->logitsPending = true; // on the device (greedy)
    g->logitsLost = next;    // and being overwritten by the next step
    inFlight = next;
    t = u;
  }
  // As runChunk leaves it: a caller's own runs copy every output.
  if (llmc_status st = llmc::rt::setGreedyOutput(g->context, -1))
    llmc_status_free(st);
  return nullptr;
}

} // namespace llmc::rt::generation
