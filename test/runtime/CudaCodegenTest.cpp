// The CUDA C generated for fused_elementwise programs compiles with NVRTC for the architectures
// plans target (sm_80, sm_90a): every op, every storage dtype, several outputs. Needs no GPU.
#include "FusedElementwiseCuda.h"
#include "Nvrtc.h"

#include <gtest/gtest.h>

#include <limits>

using namespace llmc::rt;
using llmc::rt::fused::Instruction;
using llmc::rt::fused::Op;

namespace {

const char *const kArchs[] = {"sm_80", "sm_90a"};

void expectCompiles(const std::vector<Instruction> &program, const std::vector<int> &results,
                    const std::vector<DType> &inputs, const std::vector<DType> &outputs, const std::string &name) {
  std::string error;
  const std::string source = cuda::fusedElementwiseSource(program, results, inputs, outputs, name, error);
  ASSERT_EQ(error, "");
  ASSERT_NE(source.find("__global__ void " + name + "("), std::string::npos);
  for (const char *arch : kArchs) {
    std::vector<char> cubin;
    ASSERT_EQ(cuda::compileToCubin(source, name, arch, cubin), "") << source;
    EXPECT_GT(cubin.size(), 0u);
  }
}

TEST(CudaCodegen, EveryOpCompiles) {
  for (Op op : fused::allOps()) {
    const int n = fused::arity(op);
    Instruction in{op, n > 0 ? 0 : -1, n > 1 ? 1 : -1, n > 2 ? 2 : -1, 0.25f, 0.5f};
    if (op == Op::Cast)
      in.p0 = float(int(DType::F16));
    const std::vector<DType> inputs(size_t(std::max(n, 1)), DType::F32);
    expectCompiles({in}, {int(inputs.size())}, inputs, {DType::F32}, "fused_" + std::string(fused::opName(op)));
  }
}

// Constants of every form a region holds: integral values, exponents, infinities, NaN. Register
// 0 is the input and instruction i writes register 1 + i: each constant is added to the sum so far.
TEST(CudaCodegen, EveryKindOfConstantCompiles) {
  std::vector<Instruction> program;
  int sum = 0;
  for (float c : {0.0f, 1.0f, -3.0f, 2.5f, 1e30f, -1e-30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    program.push_back({Op::Constant, -1, -1, -1, c, 0});
    const int constant = int(program.size()); // its register
    program.push_back({Op::Add, sum, constant, -1, 0, 0});
    sum = int(program.size());
  }
  expectCompiles(program, {sum}, {DType::F32}, {DType::F32}, "fused_constants");
}

TEST(CudaCodegen, MixedDtypesAndSeveralOutputs) {
  // where(mask, x * 0.5, -inf) from a bool mask and an f16 x, stored as f16 and as bool.
  const std::vector<Instruction> program = {
      {Op::Constant, -1, -1, -1, 0.5f, 0},
      {Op::Mul, 1, 2, -1, 0, 0},
      {Op::Constant, -1, -1, -1, -std::numeric_limits<float>::infinity(), 0},
      {Op::Where, 0, 3, 4, 0, 0},
      {Op::Cast, 5, -1, -1, float(int(DType::Bool)), 0},
  };
  expectCompiles(program, {5, 6}, {DType::Bool, DType::F16}, {DType::F16, DType::Bool}, "fused_mixed");
  // A reduced-precision plan's region: bf16 activations next to an f32 angle, a bf16 and an f32 result.
  expectCompiles(program, {5, 3}, {DType::Bool, DType::BF16}, {DType::BF16, DType::F32}, "fused_bf16");
  // Rotary tables: int64 position ids cast to floats times the frequencies, their sin and cos.
  const std::vector<fused::Instruction> tables = {
      {Op::Cast, 0, -1, -1, float(int(DType::F32)), 0},
      {Op::Mul, 2, 1, -1, 0, 0},
      {Op::Sin, 3, -1, -1, 0, 0},
      {Op::Cos, 3, -1, -1, 0, 0},
  };
  expectCompiles(tables, {4, 5}, {DType::I64, DType::F32}, {DType::F32, DType::F32}, "fused_tables");
  expectCompiles(tables, {4, 5}, {DType::I32, DType::F32}, {DType::BF16, DType::BF16}, "fused_tables_i32");
}

TEST(CudaCodegen, RefusesWhatItCannotGenerate) {
  std::string error;
  EXPECT_EQ(cuda::fusedElementwiseSource({{Op::Neg, 0, -1, -1, 0, 0}}, {1}, {DType::F64}, {DType::F32}, "k", error), "");
  EXPECT_NE(error.find("input 0 is not f32, f16, bf16, bool, i32 or i64"), std::string::npos);
  error.clear();
  EXPECT_EQ(cuda::fusedElementwiseSource({{Op::Neg, 0, -1, -1, 0, 0}}, {1}, {DType::F32}, {DType::I64}, "k", error), "");
  EXPECT_NE(error.find("output 0 is not f32, f16, bf16 or bool"), std::string::npos);
  error.clear();
  const std::vector<DType> many(cuda::kMaxFusedInputs + 1, DType::F32);
  EXPECT_EQ(cuda::fusedElementwiseSource({}, {0}, many, {DType::F32}, "k", error), "");
  EXPECT_NE(error.find("at most"), std::string::npos);
  std::vector<char> cubin;
  EXPECT_NE(cuda::compileToCubin("this is not CUDA", "bad", "sm_80", cubin), "");
}

} // namespace
