// Dimension expressions: the sizes of a plan's dynamic dimensions as small programs over the
// symbols (batch, sequence length). Shared by the runtime, which evaluates them once per run,
// and the compiler's plan writer. See docs/plan-format.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::plan {

enum class DimOp : uint8_t { Const = 0, Symbol = 1, Add = 2, Mul = 3, FloorDiv = 4, CeilDiv = 5, Mod = 6, Min = 7,
                             Max = 8, Broadcast = 9 };
inline constexpr uint8_t kLastDimOp = uint8_t(DimOp::Broadcast);

struct DimExprNode {
  DimOp op = DimOp::Const;
  int32_t a = -1, b = -1; // operand nodes (earlier in the list) for the binary ops
  int64_t value = 0;      // Const: the value; Symbol: the symbol's number
};

// Checks that every node refers only to earlier nodes and to existing symbols; "" when valid.
std::string checkDimExprs(const std::vector<DimExprNode> &nodes, size_t numSymbols);

// Evaluates every node for the given symbol values. Fails (with a message) on division by zero
// or a result outside [0, 2^40] for a node that sizes a dimension.
std::string evaluateDimExprs(const std::vector<DimExprNode> &nodes, const int64_t *symbols,
                             std::vector<int64_t> &out);

// An upper bound of every node over all symbol values in [min, max] (interval arithmetic), so
// that buffers sized by it hold every shape a run can have.
// Symbols range over [symbolMin, symbolMax].
std::string boundDimExprs(const std::vector<DimExprNode> &nodes, const int64_t *symbolMin, const int64_t *symbolMax,
                          std::vector<int64_t> &upper);

} // namespace llmc::plan
