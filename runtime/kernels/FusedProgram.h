// The fused_elementwise program: the instruction list the compiler serializes from the op's
// region (see FusedElementwise.cpp for the attribute format), parsed once for the CPU kernel and
// for the CUDA code generator, so both run the same program.
#pragma once

#include "Attrs.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::rt::fused {

enum class Op : uint8_t {
  Add, Sub, Mul, Div, Pow, Max, Min, Equal, Less, LessEqual, Greater, GreaterEqual, And, Or, Xor, Where,
  Neg, Abs, Sqrt, Reciprocal, Exp, Log, Tanh, Erf, Sigmoid, Silu, Relu, Cos, Sin, Floor, Ceil, Sign, Softplus,
  Round, Not, IsNan, Gelu, GeluTanh, LeakyRelu, Elu, HardSigmoid, HardSwish, Identity, Constant, Cast
};

struct Instruction {
  Op op;
  int a, b, c;
  float p0, p1;
};


// Operands an op reads (0 for a constant, 3 for where).
int arity(Op op);

// The llmc op name of `op` ("add").
std::string_view opName(Op op);

// Every op, in enum order.
std::vector<Op> allOps();

// Parses and checks the attributes `ops`, `operands`, `params` and `results` for a kernel with
// `numInputs` inputs and `numOutputs` outputs. Returns an error message, empty on success.
std::string parseProgram(const AttrList &attrs, int numInputs, int numOutputs, std::vector<Instruction> &program,
                         std::vector<int> &results);

} // namespace llmc::rt::fused
