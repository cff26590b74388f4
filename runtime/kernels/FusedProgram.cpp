#include "FusedProgram.h"

namespace llmc::rt::fused {
namespace {

struct Named {
  std::string_view name;
  Op op;
};
constexpr Named kOps[] = {
    {"add", Op::Add},           {"sub", Op::Sub},         {"mul", Op::Mul},
    {"div", Op::Div},           {"pow", Op::Pow},         {"max", Op::Max},
    {"min", Op::Min},           {"equal", Op::Equal},     {"less", Op::Less},
    {"less_equal", Op::LessEqual}, {"greater", Op::Greater}, {"greater_equal", Op::GreaterEqual},
    {"and", Op::And},           {"or", Op::Or},           {"xor", Op::Xor},
    {"where", Op::Where},       {"neg", Op::Neg},         {"abs", Op::Abs},
    {"sqrt", Op::Sqrt},         {"reciprocal", Op::Reciprocal}, {"exp", Op::Exp},
    {"log", Op::Log},           {"tanh", Op::Tanh},       {"erf", Op::Erf},
    {"sigmoid", Op::Sigmoid},   {"silu", Op::Silu},       {"relu", Op::Relu},
    {"cos", Op::Cos},           {"sin", Op::Sin},         {"floor", Op::Floor},
    {"ceil", Op::Ceil},         {"sign", Op::Sign},       {"softplus", Op::Softplus},
    {"round", Op::Round},       {"not", Op::Not},         {"is_nan", Op::IsNan},
    {"gelu", Op::Gelu},         {"gelu_tanh", Op::GeluTanh}, {"leaky_relu", Op::LeakyRelu},
    {"elu", Op::Elu},           {"hard_sigmoid", Op::HardSigmoid}, {"hard_swish", Op::HardSwish},
    {"identity", Op::Identity}, {"constant", Op::Constant}, {"cast", Op::Cast},
};

} // namespace

int arity(Op op) {
  if (op == Op::Where)
    return 3;
  if (op == Op::Constant)
    return 0;
  return op <= Op::Xor ? 2 : 1;
}

std::string_view opName(Op op) {
  for (const Named &n : kOps)
    if (n.op == op)
      return n.name;
  return "?";
}

std::vector<Op> allOps() {
  std::vector<Op> ops;
  for (const Named &n : kOps)
    ops.push_back(n.op);
  return ops;
}

std::string parseProgram(const AttrList &attrs, int numInputs, int numOutputs, std::vector<Instruction> &program,
                         std::vector<int> &results) {
  const std::string_view names = attrs.getString("ops");
  const std::vector<int64_t> operands = attrs.getInts("operands"), res = attrs.getInts("results");
  const std::vector<double> params = attrs.getFloats("params");
  size_t start = 0;
  while (start < names.size()) {
    size_t end = names.find(';', start);
    if (end == std::string_view::npos)
      end = names.size();
    const std::string_view name = names.substr(start, end - start);
    start = end + 1;
    const Named *found = nullptr;
    for (const Named &n : kOps)
      if (n.name == name)
        found = &n;
    if (!found)
      return "unknown op '" + std::string(name) + "' in the fused region";
    const size_t i = program.size();
    if (operands.size() < 3 * (i + 1) || params.size() < 2 * (i + 1))
      return "operands or params are missing for instruction " + std::to_string(i);
    Instruction in{found->op, int(operands[3 * i]), int(operands[3 * i + 1]), int(operands[3 * i + 2]),
                   float(params[2 * i]), float(params[2 * i + 1])};
    const int registers = numInputs + int(i);
    const int used[3] = {in.a, in.b, in.c};
    for (int k = 0; k < 3; ++k)
      if ((k < arity(in.op) && (used[k] < 0 || used[k] >= registers)) || (k >= arity(in.op) && used[k] != -1))
        return "instruction " + std::to_string(i) + " reads a register that does not exist";
    program.push_back(in);
  }
  const int registers = numInputs + int(program.size());
  if (res.size() != size_t(numOutputs))
    return "expects one result register per output";
  for (int64_t r : res) {
    if (r < 0 || r >= registers)
      return "a result register does not exist";
    results.push_back(int(r));
  }
  return {};
}

} // namespace llmc::rt::fused
