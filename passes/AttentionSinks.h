// GPT-OSS's attention sinks as exports write them, matched by llmc-raise-attention (into
// fused_attention's sinks) and llmc-absorb-mla (into latent_attention's).
#pragma once

#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace llmc {

// softmax(concat(scores, sinks) [- its row max]) with the sinks' column sliced off the result, the
// sinks a logit per head broadcast to [B, H, Sq, 1] (an expand of [1, H, 1, 1], or that folded
// into a constant at static lengths). (The row max is what the softmax subtracts anyway.) The
// scores inside, the sinks' column and the slice that reads the probabilities of the keys (those
// before the sinks' column: its end is -1, or the keys' count).
struct SinkColumn {
  mlir::Value scores, column;
  SliceOp keys;
};

// The sink column around `softmax`; none where its input is not of this form.
std::optional<SinkColumn> sinkColumn(SoftmaxOp softmax);

// The softmax of `scores` concatenated with a sink column (sinkColumn's form) where that is what
// reads them (besides shape ops), else null.
SoftmaxOp softmaxWithSinksOf(mlir::Value scores);

// The sinks [H] of a column [B, H, Sq, 1] that holds one logit per head: the value it is an
// expand of, where that is [1, H, 1, 1], reshaped; or a constant whose every row of a head is
// the same. Null where the column is not of either form; `build` false: checks only.
mlir::Value sinksPerHead(mlir::OpBuilder &b, mlir::Location loc, mlir::Value column, int64_t heads, bool build);

} // namespace llmc
