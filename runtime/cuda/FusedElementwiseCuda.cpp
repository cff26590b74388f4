#include "FusedElementwiseCuda.h"

#include <cmath>
#include <cstdio>

namespace llmc::rt::cuda {
namespace {

using fused::Op;

// A float literal CUDA C accepts for `v` ("0.f", "2.5f", "1e+30f"; infinities and NaN by their bits).
std::string literal(float v) {
  if (std::isnan(v))
    return "__int_as_float(0x7fc00000)";
  if (std::isinf(v))
    return v < 0 ? "(-__int_as_float(0x7f800000))" : "__int_as_float(0x7f800000)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".";
  return "(" + s + "f)";
}

// The expression computing one instruction from registers x, y, z; matches fused::apply on the CPU.
std::string expression(const fused::Instruction &in, const std::string &x, const std::string &y, const std::string &z) {
  switch (in.op) {
  case Op::Add: return x + " + " + y;
  case Op::Sub: return x + " - " + y;
  case Op::Mul: return x + " * " + y;
  case Op::Div: return x + " / " + y;
  case Op::Pow: return "powf(" + x + ", " + y + ")";
  case Op::Max: return "(isnan(" + x + ") || isnan(" + y + ") ? __int_as_float(0x7fc00000) : fmaxf(" + x + ", " + y + "))";
  case Op::Min: return "(isnan(" + x + ") || isnan(" + y + ") ? __int_as_float(0x7fc00000) : fminf(" + x + ", " + y + "))";
  case Op::Equal: return "(float)(" + x + " == " + y + ")";
  case Op::Less: return "(float)(" + x + " < " + y + ")";
  case Op::LessEqual: return "(float)(" + x + " <= " + y + ")";
  case Op::Greater: return "(float)(" + x + " > " + y + ")";
  case Op::GreaterEqual: return "(float)(" + x + " >= " + y + ")";
  case Op::And: return "(float)((" + x + " != 0.f) && (" + y + " != 0.f))";
  case Op::Or: return "(float)((" + x + " != 0.f) || (" + y + " != 0.f))";
  case Op::Xor: return "(float)((" + x + " != 0.f) != (" + y + " != 0.f))";
  case Op::Where: return "(" + x + " != 0.f ? " + y + " : " + z + ")";
  case Op::Neg: return "-" + x;
  case Op::Abs: return "fabsf(" + x + ")";
  case Op::Sqrt: return "sqrtf(" + x + ")";
  case Op::Reciprocal: return "1.f / " + x;
  case Op::Exp: return "expf(" + x + ")";
  case Op::Log: return "logf(" + x + ")";
  case Op::Tanh: return "tanhf(" + x + ")";
  case Op::Erf: return "erff(" + x + ")";
  case Op::Sigmoid: return "(" + x + " >= 0.f ? 1.f / (1.f + expf(-" + x + ")) : expf(" + x + ") / (1.f + expf(" + x + ")))";
  case Op::Silu:
    return "(" + x + " >= 0.f ? " + x + " / (1.f + expf(-" + x + ")) : " + x + " * expf(" + x + ") / (1.f + expf(" + x + ")))";
  case Op::Relu: return "fmaxf(" + x + ", 0.f)";
  case Op::Cos: return "cosf(" + x + ")";
  case Op::Sin: return "sinf(" + x + ")";
  case Op::Floor: return "floorf(" + x + ")";
  case Op::Ceil: return "ceilf(" + x + ")";
  case Op::Sign: return "(float)((" + x + " > 0.f) - (" + x + " < 0.f))";
  case Op::Softplus: return "(" + x + " > 20.f ? " + x + " : log1pf(expf(" + x + ")))";
  case Op::Round: return "rintf(" + x + ")";
  case Op::Not: return "(float)(" + x + " == 0.f)";
  case Op::IsNan: return "(float)isnan(" + x + ")";
  case Op::Gelu: return "0.5f * " + x + " * (1.f + erff(" + x + " * 0.7071067811865476f))";
  case Op::GeluTanh:
    return "0.5f * " + x + " * (1.f + tanhf(0.7978845608028654f * (" + x + " + 0.044715f * " + x + " * " + x + " * " + x + ")))";
  case Op::LeakyRelu: return "(" + x + " >= 0.f ? " + x + " : " + literal(in.p0) + " * " + x + ")";
  case Op::Elu: return "(" + x + " >= 0.f ? " + x + " : " + literal(in.p0) + " * (expf(" + x + ") - 1.f))";
  case Op::HardSigmoid: return "fmaxf(0.f, fminf(1.f, " + literal(in.p0) + " * " + x + " + " + literal(in.p1) + "))";
  case Op::HardSwish: return x + " * fmaxf(0.f, fminf(1.f, " + x + " / 6.f + 0.5f))";
  case Op::Identity: return x;
  case Op::Constant: return literal(in.p0);
  case Op::Cast: {
    const DType to = static_cast<DType>(int(in.p0));
    if (to == DType::Bool)
      return "(float)(" + x + " != 0.f)";
    return to == DType::F16 ? "llmc_round_half(" + x + ")" : to == DType::BF16 ? "llmc_round_bf16(" + x + ")" : x;
  }
  }
  return x;
}

const char *storageType(DType t) {
  switch (t) {
  case DType::F32: return "float";
  case DType::F16:
  case DType::BF16: return "unsigned short";
  case DType::Bool: return "unsigned char";
  default: return nullptr;
  }
}

// No headers: NVRTC then needs no include path, and half conversions are one PTX instruction each.
constexpr const char *kPrelude = R"(struct FusedShape {
  long long count;
  int rank;
  long long dims[8];
  long long strides[16][8];
};
__device__ __forceinline__ float llmc_half_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short llmc_float_to_half(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float llmc_round_half(float f) { return llmc_half_to_float(llmc_float_to_half(f)); }
__device__ __forceinline__ float llmc_bf16_to_float(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ unsigned short llmc_float_to_bf16(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float llmc_round_bf16(float f) { return llmc_bf16_to_float(llmc_float_to_bf16(f)); }
// Storing a 16-bit value: beyond the type's range, finite values saturate (Tensor.h narrowFloat).
__device__ __forceinline__ float llmc_saturate(float f, float largest) {
  return fabsf(f) > largest && !isinf(f) ? copysignf(largest, f) : f;
}
)";

} // namespace

std::string fusedElementwiseSource(const std::vector<fused::Instruction> &program, const std::vector<int> &results,
                                   const std::vector<DType> &inputs, const std::vector<DType> &outputs,
                                   const std::string &name, std::string &error) {
  static_assert(kMaxRank == 8 && kMaxFusedInputs == 16, "kPrelude spells FusedShape's sizes");
  if (inputs.size() > size_t(kMaxFusedInputs)) {
    error = "a fused region with " + std::to_string(inputs.size()) + " inputs (at most " +
            std::to_string(kMaxFusedInputs) + ")";
    return {};
  }
  std::string params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Integers only come in (a cast's: position ids), and widen to float as the rest.
    const char *type = inputs[i] == DType::I64 ? "long long" : inputs[i] == DType::I32 ? "int" : storageType(inputs[i]);
    if (!type) {
      error = "fused region input " + std::to_string(i) + " is not f32, f16, bf16, bool, i32 or i64";
      return {};
    }
    params += std::string("const ") + type + " *__restrict__ in" + std::to_string(i) + ", ";
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!storageType(outputs[o])) {
      error = "fused region output " + std::to_string(o) + " is not f32, f16, bf16 or bool";
      return {};
    }
    params += std::string(storageType(outputs[o])) + " *__restrict__ out" + std::to_string(o) + ", ";
  }
  std::string s = kPrelude;
  s += "extern \"C\" __global__ void " + name + "(" + params + "FusedShape shape) {\n";
  s += "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < shape.count;\n"
       "       i += (long long)gridDim.x * blockDim.x) {\n";
  s += "    long long rest = i";
  for (size_t k = 0; k < inputs.size(); ++k)
    s += ", at" + std::to_string(k) + " = 0";
  s += ";\n    for (int d = shape.rank - 1; d >= 0; --d) {\n"
       "      const long long c = rest % shape.dims[d];\n      rest /= shape.dims[d];\n";
  for (size_t k = 0; k < inputs.size(); ++k)
    s += "      at" + std::to_string(k) + " += c * shape.strides[" + std::to_string(k) + "][d];\n";
  s += "    }\n";
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string r = "r" + std::to_string(k), src = "in" + std::to_string(k) + "[at" + std::to_string(k) + "]";
    s += "    const float " + r + " = " +
         (inputs[k] == DType::F16    ? "llmc_half_to_float(" + src + ")"
          : inputs[k] == DType::BF16 ? "llmc_bf16_to_float(" + src + ")"
                                     : "(float)" + src) +
         ";\n";
  }
  for (size_t n = 0; n < program.size(); ++n) {
    const fused::Instruction &in = program[n];
    auto reg = [](int r) { return r >= 0 ? "r" + std::to_string(r) : std::string("0.f"); };
    s += "    const float r" + std::to_string(inputs.size() + n) + " = " + expression(in, reg(in.a), reg(in.b), reg(in.c)) +
         ";\n";
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    const std::string r = "r" + std::to_string(results[o]), dst = "    out" + std::to_string(o) + "[i] = ";
    if (outputs[o] == DType::F16)
      s += dst + "llmc_float_to_half(llmc_saturate(" + r + ", 65504.f));\n";
    else if (outputs[o] == DType::BF16)
      s += dst + "llmc_float_to_bf16(llmc_saturate(" + r + ", 3.38953139e38f));\n";
    else if (outputs[o] == DType::Bool)
      s += dst + "(unsigned char)(" + r + " != 0.f);\n";
    else
      s += dst + r + ";\n";
  }
  s += "  }\n}\n";
  return s;
}

} // namespace llmc::rt::cuda
