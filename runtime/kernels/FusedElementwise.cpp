// fused_elementwise: a chain or tree of elementwise ops run in one pass over memory. The
// compiler serializes the op's region into attributes (see docs/passes.md, llmc-fuse-elementwise):
//   ops       "add;mul;cast;..."  one name per instruction (llmc op names)
//   operands  3 ints per instruction: registers read (-1 unused); registers 0..inputs-1 are the
//             inputs, instruction i writes register inputs + i
//   params    2 floats per instruction (alpha/beta, a constant's value, a cast's target dtype)
//   results   the registers stored to the outputs, in order
// Every register holds floats: f16, bool and integer inputs (a cast's) widen on load, outputs
// narrow on store, and a cast to f16 rounds through half precision. Inputs broadcast (numpy) to
// the output shape; the work goes row by row in chunks that stay in the L1 cache.
#include "FusedProgram.h"
#include "KernelUtil.h"

#include <array>
#include <cmath>
#include <string_view>

namespace llmc::rt {
namespace {

constexpr int64_t kChunk = 256;

using namespace fused;

// x rounded to a 16-bit float type `to` and back.
float roundTo(float x, DType to) { return widenFloat(toHalfWidth(x, to), to); }

float apply(const Instruction &in, float x, float y, float z) {
  switch (in.op) {
  case Op::Add: return x + y;
  case Op::Sub: return x - y;
  case Op::Mul: return x * y;
  case Op::Div: return x / y;
  case Op::Pow: return std::pow(x, y);
  case Op::Max: return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
  case Op::Min: return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
  case Op::Equal: return x == y;
  case Op::Less: return x < y;
  case Op::LessEqual: return x <= y;
  case Op::Greater: return x > y;
  case Op::GreaterEqual: return x >= y;
  case Op::And: return (x != 0) && (y != 0);
  case Op::Or: return (x != 0) || (y != 0);
  case Op::Xor: return (x != 0) != (y != 0);
  case Op::Where: return x != 0 ? y : z;
  case Op::Neg: return -x;
  case Op::Abs: return std::fabs(x);
  case Op::Sqrt: return std::sqrt(x);
  case Op::Reciprocal: return 1.0f / x;
  case Op::Exp: return std::exp(x);
  case Op::Log: return std::log(x);
  case Op::Tanh: return std::tanh(x);
  case Op::Erf: return std::erf(x);
  case Op::Sigmoid: return sigmoidOf(x);
  case Op::Silu: return x >= 0 ? x / (1.0f + std::exp(-x)) : x * std::exp(x) / (1.0f + std::exp(x));
  case Op::Relu: return x > 0 ? x : 0.0f;
  case Op::Cos: return std::cos(x);
  case Op::Sin: return std::sin(x);
  case Op::Floor: return std::floor(x);
  case Op::Ceil: return std::ceil(x);
  case Op::Sign: return float((x > 0) - (x < 0));
  case Op::Softplus: return x > 20 ? x : std::log1p(std::exp(x));
  case Op::Round: return std::nearbyint(x);
  case Op::Not: return x == 0;
  case Op::IsNan: return std::isnan(x);
  case Op::Gelu: return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
  case Op::GeluTanh: return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  case Op::LeakyRelu: return x >= 0 ? x : in.p0 * x;
  case Op::Elu: return x >= 0 ? x : in.p0 * (std::exp(x) - 1.0f);
  case Op::HardSigmoid: return std::max(0.0f, std::min(1.0f, in.p0 * x + in.p1));
  case Op::HardSwish: return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
  case Op::Identity: return x;
  case Op::Constant: return in.p0;
  case Op::Cast: {
    const DType to = static_cast<DType>(int(in.p0));
    if (to == DType::Bool)
      return x != 0;
    return isHalfWidth(to) ? roundTo(x, to) : x;
  }
  }
  return x;
}

float load(const TensorRef &t, int64_t i) {
  switch (t.dtype) {
  case DType::F32: return t.as<const float>()[i];
  case DType::F16:
  case DType::BF16: return widenFloat(t.as<const uint16_t>()[i], t.dtype);
  case DType::I64: return float(t.as<const int64_t>()[i]); // a cast's integers (position ids)
  case DType::I32: return float(t.as<const int32_t>()[i]);
  default: return float(t.as<const uint8_t>()[i]); // bool
  }
}

void store(TensorRef &t, int64_t i, float v) {
  switch (t.dtype) {
  case DType::F32: t.as<float>()[i] = v; break;
  case DType::F16:
  case DType::BF16: t.as<uint16_t>()[i] = toHalfWidth(v, t.dtype); break;
  default: t.as<uint8_t>()[i] = v != 0; break;
  }
}

std::string fusedElementwiseKernel(const KernelArgs &args) {
  std::vector<Instruction> program;
  std::vector<int> results;
  if (std::string err = parseProgram(args.attrs, args.numInputs, args.numOutputs, program, results); !err.empty())
    return err;
  if (args.numOutputs < 1)
    return "expects at least one output";
  const Shape &shape = args.out(0).shape;
  for (int o = 0; o < args.numOutputs; ++o) {
    const DType t = args.out(o).dtype;
    if (!(args.out(o).shape == shape) || (t != DType::F32 && !isHalfWidth(t) && t != DType::Bool))
      return "outputs must share one shape and be f32, f16, bf16 or bool";
  }
  std::vector<std::array<int64_t, kMaxRank>> strides(size_t(args.numInputs));
  for (int i = 0; i < args.numInputs; ++i) {
    const TensorRef &t = args.in(i);
    if (t.dtype != DType::F32 && !isHalfWidth(t.dtype) && t.dtype != DType::Bool && t.dtype != DType::I64 &&
        t.dtype != DType::I32)
      return "inputs must be f32, f16, bf16, bool, or integers that a cast turns into floats";
    if (!broadcastsTo(t.shape, shape))
      return "input " + t.shape.str() + " does not broadcast to " + shape.str();
    broadcastStrides(t.shape, shape, strides[size_t(i)].data());
  }
  const int numRegisters = args.numInputs + int(program.size());
  std::vector<float> regs(size_t(numRegisters) * kChunk);
  const int64_t total = shape.numel();
  if (total == 0)
    return {};
  const int last = shape.rank - 1;
  const int64_t rowLength = shape.rank == 0 ? 1 : shape.dims[last];
  int64_t index[kMaxRank] = {};
  std::vector<int64_t> offsets(size_t(args.numInputs), 0);
  for (int64_t row = 0; row * rowLength < total; ++row) {
    // offsets of this row's first element in each input
    for (int i = 0; i < args.numInputs; ++i) {
      int64_t o = 0;
      for (int d = 0; d < last; ++d)
        o += index[d] * strides[size_t(i)][size_t(d)];
      offsets[size_t(i)] = o;
    }
    for (int64_t begin = 0; begin < rowLength; begin += kChunk) {
      const int64_t n = std::min(kChunk, rowLength - begin);
      for (int i = 0; i < args.numInputs; ++i) {
        float *r = regs.data() + size_t(i) * kChunk;
        const int64_t step = shape.rank == 0 ? 0 : strides[size_t(i)][size_t(last)];
        for (int64_t e = 0; e < n; ++e)
          r[e] = load(args.in(i), offsets[size_t(i)] + (begin + e) * step);
      }
      for (size_t k = 0; k < program.size(); ++k) {
        const Instruction &in = program[k];
        float *dst = regs.data() + (size_t(args.numInputs) + k) * kChunk;
        const float *x = in.a >= 0 ? regs.data() + size_t(in.a) * kChunk : nullptr;
        const float *y = in.b >= 0 ? regs.data() + size_t(in.b) * kChunk : nullptr;
        const float *z = in.c >= 0 ? regs.data() + size_t(in.c) * kChunk : nullptr;
        for (int64_t e = 0; e < n; ++e)
          dst[e] = apply(in, x ? x[e] : 0.0f, y ? y[e] : 0.0f, z ? z[e] : 0.0f);
      }
      for (int o = 0; o < args.numOutputs; ++o) {
        const float *r = regs.data() + size_t(results[size_t(o)]) * kChunk;
        for (int64_t e = 0; e < n; ++e)
          store(args.out(o), row * rowLength + begin + e, r[e]);
      }
    }
    for (int d = last - 1; d >= 0; --d) {
      if (++index[d] < shape.dims[d])
        break;
      index[d] = 0;
    }
  }
  return {};
}

} // namespace

extern const KernelEntry kFusedElementwiseKernels[] = {
    {"fused_elementwise", fusedElementwiseKernel},
    {nullptr, nullptr},
};

} // namespace llmc::rt
