// The plan reader accepts a valid plan and rejects every kind of damaged one with a clear status.
#include "PlanFormat.h"
#include "TestPlans.h"
#include "llmc/llmc.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

namespace {

using llmc::test::addPlan;
using llmc::test::writeTemp;

// Loads `bytes` and returns the status code and message (the plan, if any, is released).
std::pair<llmc_status_code, std::string> load(const std::vector<uint8_t> &bytes, const std::string &name) {
  llmc_plan plan = nullptr;
  llmc_status s = llmc_plan_load(writeTemp(name, bytes).c_str(), nullptr, &plan);
  auto result = std::make_pair(llmc_status_code_of(s), std::string(llmc_status_message(s)));
  llmc_status_free(s);
  if (plan)
    llmc_plan_release(plan);
  else
    EXPECT_NE(s, nullptr);
  return result;
}

TEST(PlanReader, LoadsAValidPlan) {
  auto [code, message] = load(addPlan(), "valid.llmc");
  EXPECT_EQ(code, LLMC_OK) << message;
}

TEST(PlanReader, ChecksTheDeviceTypesOfAReducedPrecisionPlan) {
  EXPECT_EQ(load(addPlan(1, 2), "f16.llmc").first, LLMC_OK); // f16 and bf16 weights
  EXPECT_EQ(load(addPlan(1, 9), "bf16.llmc").first, LLMC_OK);
  auto [code, message] = load(addPlan(1, 4), "i64.llmc"); // i64 is no 16-bit float type
  EXPECT_EQ(code, LLMC_INVALID_PLAN);
  EXPECT_NE(message.find("device element type"), std::string::npos) << message;
}

TEST(PlanReader, RejectsTruncatedPlans) {
  std::vector<uint8_t> plan = addPlan();
  for (size_t size : {size_t(0), size_t(10), size_t(96), size_t(200), plan.size() - 1}) {
    std::vector<uint8_t> cut(plan.begin(), plan.begin() + std::ptrdiff_t(size));
    auto [code, message] = load(cut, "truncated.llmc");
    EXPECT_EQ(code, LLMC_INVALID_PLAN) << "size " << size << ": " << message;
  }
}

TEST(PlanReader, RejectsAFlippedByteInTheProgram) {
  std::vector<uint8_t> plan = addPlan();
  auto sections = llmc::test::sectionsOf(plan);
  for (uint64_t at = sections.programOffset; at < sections.programOffset + sections.programSize; at += 7) {
    std::vector<uint8_t> bad = plan;
    bad[at] ^= 0x10;
    auto [code, message] = load(bad, "flipped.llmc");
    EXPECT_EQ(code, LLMC_INVALID_PLAN) << "byte " << at;
    EXPECT_NE(message.find("checksum"), std::string::npos) << message;
  }
}

TEST(PlanReader, RejectsAFlippedByteInTheWeights) {
  std::vector<uint8_t> plan = addPlan();
  plan[llmc::test::sectionsOf(plan).weightsOffset + 5] ^= 1;
  auto [code, message] = load(plan, "flipped-weights.llmc");
  EXPECT_EQ(code, LLMC_INVALID_PLAN);
  EXPECT_NE(message.find("weights section checksum"), std::string::npos) << message;
}

TEST(PlanReader, RejectsANewerFormatVersion) {
  auto [code, message] = load(addPlan(llmc::plan::kFormatVersion + 1), "newer.llmc");
  EXPECT_EQ(code, LLMC_UNSUPPORTED);
  EXPECT_NE(message.find("newer than this runtime"), std::string::npos) << message;
}

TEST(PlanReader, RejectsAFileThatIsNotAPlan) {
  std::vector<uint8_t> text(200, 'a');
  auto [code, message] = load(text, "text.llmc");
  EXPECT_EQ(code, LLMC_INVALID_PLAN);
  EXPECT_NE(message.find("magic"), std::string::npos) << message;
}

TEST(PlanReader, RejectsAnUnknownTargetAndACudaHeaderWithoutArchitectures) {
  std::vector<uint8_t> plan = addPlan();
  llmc::plan::Header h;
  std::memcpy(&h, plan.data(), sizeof h);
  h.target = 7;
  std::memcpy(plan.data(), &h, sizeof h);
  auto [code, message] = load(plan, "other.llmc");
  EXPECT_EQ(code, LLMC_UNSUPPORTED);
  EXPECT_NE(message.find("unknown target 7"), std::string::npos) << message;
  // A CUDA header on a program that names no CUDA architectures.
  h.target = uint32_t(llmc::plan::Target::Cuda);
  h.targetArch = 90;
  std::memcpy(plan.data(), &h, sizeof h);
  std::tie(code, message) = load(plan, "cuda.llmc");
  EXPECT_EQ(code, LLMC_INVALID_PLAN);
  EXPECT_NE(message.find("disagree"), std::string::npos) << message;
}

// Random byte changes in the program section, with the checksum recomputed so that they reach
// the structural and semantic checks: loading and running must fail cleanly or succeed, never crash.
class MutatedPlans : public ::testing::TestWithParam<bool> {};

TEST_P(MutatedPlans, SurviveWithValidChecksums) {
  const std::vector<uint8_t> plan = GetParam() ? llmc::test::dynamicPlan() : addPlan();
  const auto sections = llmc::test::sectionsOf(plan);
  std::mt19937 rng(42);
  int loaded = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = plan;
    const int changes = 1 + int(rng() % 3);
    for (int c = 0; c < changes; ++c)
      bad[sections.programOffset + rng() % sections.programSize] = uint8_t(rng());
    llmc::plan::Header h;
    std::memcpy(&h, bad.data(), sizeof h);
    h.programChecksum = llmc::plan::checksum(bad.data() + h.programOffset, h.programSize);
    std::memcpy(bad.data(), &h, sizeof h);
    llmc_plan p = nullptr;
    llmc_status s = llmc_plan_load(writeTemp("mutated.llmc", bad).c_str(), nullptr, &p);
    if (s) {
      ++refused;
      EXPECT_NE(std::string(llmc_status_message(s)), "");
      llmc_status_free(s);
      continue;
    }
    ++loaded;
    llmc_context ctx = nullptr;
    if (llmc_status cs = llmc_context_create(p, nullptr, &ctx)) {
      llmc_status_free(cs);
    } else {
      float x[64] = {};
      for (int32_t i = 0; i < llmc_plan_input_count(p); ++i) {
        llmc_tensor info;
        llmc_plan_input_info(p, i, nullptr, &info);
        int64_t n = 1;
        for (int d = 0; d < info.rank; ++d)
          n *= info.dims[d];
        info.data = x;
        if (n <= 16)
          llmc_status_free(llmc_context_set_input(ctx, i, &info));
      }
      llmc_status_free(llmc_context_run(ctx));
      llmc_context_release(ctx);
    }
    llmc_plan_release(p);
  }
  EXPECT_GT(refused, 0);
  std::printf("mutated plans: %d refused, %d loaded and ran or failed cleanly\n", refused, loaded);
}

// The static add plan, and the plan with symbols and dimension expressions.
INSTANTIATE_TEST_SUITE_P(PlanReader, MutatedPlans, ::testing::Values(false, true));

TEST(PlanReader, LoadsADynamicPlanAndBoundsItsBuffers) {
  llmc_plan p = nullptr;
  llmc_status s = llmc_plan_load(writeTemp("dynamic.llmc", llmc::test::dynamicPlan()).c_str(), nullptr, &p);
  ASSERT_EQ(s, nullptr) << llmc_status_message(s);
  EXPECT_EQ(llmc_plan_symbol_count(p), 1);
  llmc_plan_release(p);
}

TEST(PlanReader, ReportsAMissingFile) {
  llmc_plan plan = nullptr;
  llmc_status s = llmc_plan_load("/nonexistent/plan.llmc", nullptr, &plan);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_NOT_FOUND);
  EXPECT_EQ(plan, nullptr);
  llmc_status_free(s);
}

} // namespace
