// Parsing ONNX einsum equations, shared by the compiler's type inference and the CPU and CUDA
// kernels, and the loops that compute one.
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

// The loops of an einsum over operands of given dims (the CPU kernel's and the CUDA one's): the
// output's labels, then the summed ones, each label's size (checked across operands; 1
// broadcasts), and each operand's element stride per label (0 where it lacks the label or
// broadcasts it). The output's element o sums over `summed` index tuples of the summed labels.
struct EinsumLoops {
  std::string labels;
  std::vector<int64_t> sizes;                // per label
  std::vector<std::vector<int64_t>> strides; // [operand][label]
  int64_t outCount = 1, summed = 1;
};
std::string einsumLoops(const EinsumSpec &spec, const std::vector<std::vector<int64_t>> &dims, EinsumLoops &loops);

} // namespace llmc::rt
