// Parsing ONNX einsum equations, shared by the compiler's type inference and the CPU kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::rt {

// An equation with every "..." expanded into labels of its own (uppercase letters, aligned from
// the right across operands) and the implicit output made explicit.
struct EinsumSpec {
  std::vector<std::string> inputs; // one label string per operand, one label per dimension
  std::string output;
};

// Fills `spec` for operands of the given ranks; returns "" or an error message.
std::string parseEinsum(const std::string &equation, const std::vector<int> &ranks, EinsumSpec &spec);

} // namespace llmc::rt
