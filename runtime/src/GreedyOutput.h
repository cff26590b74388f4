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

} // namespace llmc::rt
