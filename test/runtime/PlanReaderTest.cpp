// The plan reader accepts a valid plan and rejects every kind of damaged one with a clear status.
#include "PlanFormat.h"
#include "TestPlans.h"
#include "llmc/llmc.h"

#include <gtest/gtest.h>

#include <cstring>
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

TEST(PlanReader, RejectsAnotherTarget) {
  std::vector<uint8_t> plan = addPlan();
  llmc::plan::Header h;
  std::memcpy(&h, plan.data(), sizeof h);
  h.target = uint32_t(llmc::plan::Target::Cuda);
  h.targetArch = 90;
  std::memcpy(plan.data(), &h, sizeof h);
  auto [code, message] = load(plan, "cuda.llmc");
  EXPECT_EQ(code, LLMC_UNSUPPORTED);
  EXPECT_NE(message.find("CPU plans only"), std::string::npos) << message;
}

TEST(PlanReader, ReportsAMissingFile) {
  llmc_plan plan = nullptr;
  llmc_status s = llmc_plan_load("/nonexistent/plan.llmc", nullptr, &plan);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_NOT_FOUND);
  EXPECT_EQ(plan, nullptr);
  llmc_status_free(s);
}

} // namespace
