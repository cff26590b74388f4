// Greedy decoding without the scores crossing the bus: between the generator and the context
// (one library; not in the C API). A context told to may leave one output (a decoder's logits)
// where its runs compute it and hand back only the index of the largest score in each batch's
// last row; the scores are copied to the output's buffer when asked for.
#pragma once

#include "llmc/llmc.h"

#include <cstdint>

namespace llmc::rt {

// Output `output` (-1: none) of the following runs stays on the device of a CUDA context (a CPU
// context computes it in place anyway), and each run leaves greedyTokens. [batch, rows, vocab].
llmc_status setGreedyOutput(llmc_context ctx, int32_t output);

// After a run with a greedy output: per batch, the index of the largest score of its last row
// (the first of equal ones).
const int32_t *greedyTokens(llmc_context ctx);

// The last run's output `output` in its host buffer after all (llmc_context_output), when that
// run left it on the device as a greedy output; a CPU context's outputs are there already.
llmc_status fetchOutput(llmc_context ctx, int32_t output);

// Decoding ahead: a run in two halves, so that the host sets the next run's inputs while the
// device computes this one. startRun starts a run of the inputs as set now (at most two started
// and not finished; a CPU context runs it whole at once) and returns; `fedInput` (-1: none), an
// int64 [batch, 1] input (input_ids), takes the greedy tokens of the run started before instead
// of its own data. finishRun waits for the oldest started run; greedyTokens are then its tokens.
// Meanwhile llmc_context_run and fetchOutput refuse. Only the outputs that stay on the device
// (linked caches, the greedy output) may be read after such runs.
llmc_status startRun(llmc_context ctx, int32_t fedInput);
llmc_status finishRun(llmc_context ctx);
// Whether startRun returns before the run is done (a CUDA context), so that decoding ahead gains.
bool runsAhead(llmc_context ctx);

} // namespace llmc::rt
