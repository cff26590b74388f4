// The C API: inputs, outputs, errors that leave the context usable, and several contexts
// sharing one plan from several threads.
#include "TestPlans.h"
#include "llmc/llmc.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

namespace {

struct Loaded {
  llmc_plan plan = nullptr;
  explicit Loaded(const std::vector<uint8_t> &file = llmc::test::addPlan()) {
    llmc_status s = llmc_plan_load(llmc::test::writeTemp("capi.llmc", file).c_str(), nullptr, &plan);
    EXPECT_EQ(s, nullptr) << llmc_status_message(s);
    llmc_status_free(s);
  }
  ~Loaded() { llmc_plan_release(plan); }
};

llmc_tensor tensor(float *data, int64_t rows, int64_t cols) {
  llmc_tensor t{LLMC_DTYPE_F32, 2, {rows, cols}, data};
  return t;
}

TEST(CApi, DescribesInputsAndOutputs) {
  Loaded l;
  ASSERT_EQ(llmc_plan_input_count(l.plan), 1);
  ASSERT_EQ(llmc_plan_output_count(l.plan), 1);
  const char *name = nullptr;
  llmc_tensor info;
  ASSERT_EQ(llmc_plan_input_info(l.plan, 0, &name, &info), nullptr);
  EXPECT_STREQ(name, "x");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[1], 3);
  llmc_status s = llmc_plan_input_info(l.plan, 5, &name, &info);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  llmc_status_free(s);
  EXPECT_EQ(llmc_plan_kernel_count(l.plan), 1);
}

// One plan, every batch size within the bound; beyond it a clear error, and the context still works.
TEST(CApi, DynamicShapesFollowTheInputs) {
  Loaded l(llmc::test::dynamicPlan());
  ASSERT_EQ(llmc_plan_symbol_count(l.plan), 1);
  const char *symbol = nullptr;
  int64_t max = 0;
  ASSERT_EQ(llmc_plan_symbol_info(l.plan, 0, &symbol, &max), nullptr);
  EXPECT_STREQ(symbol, "batch");
  EXPECT_EQ(max, 4);
  int32_t which = -2;
  ASSERT_EQ(llmc_plan_input_dim_symbol(l.plan, 0, 0, &which), nullptr);
  EXPECT_EQ(which, 0);
  ASSERT_EQ(llmc_plan_input_dim_symbol(l.plan, 0, 1, &which), nullptr);
  EXPECT_EQ(which, -1);
  llmc_tensor info;
  ASSERT_EQ(llmc_plan_input_info(l.plan, 0, nullptr, &info), nullptr);
  EXPECT_EQ(info.dims[0], -1);

  llmc_context ctx = nullptr;
  ASSERT_EQ(llmc_context_create(l.plan, nullptr, &ctx), nullptr);
  for (int64_t batch : {4, 1, 3}) {
    std::vector<float> x(size_t(batch) * 3);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i);
    llmc_tensor in = tensor(x.data(), batch, 3);
    ASSERT_EQ(llmc_context_set_input(ctx, 0, &in), nullptr);
    ASSERT_EQ(llmc_context_run(ctx), nullptr);
    llmc_tensor y, z;
    ASSERT_EQ(llmc_context_output(ctx, 0, &y), nullptr);
    ASSERT_EQ(llmc_context_output(ctx, 1, &z), nullptr);
    EXPECT_EQ(y.dims[0], batch);
    EXPECT_EQ(z.dims[0], 2 * batch);
    EXPECT_EQ(z.dims[1], 3);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(static_cast<float *>(y.data)[i], x[i] + float(i % 3 + 1));
      EXPECT_EQ(static_cast<float *>(z.data)[i], x[i] + float(i % 3 + 1));
      EXPECT_EQ(static_cast<float *>(z.data)[x.size() + i], x[i]);
    }
  }
  float big[15] = {};
  llmc_tensor over = tensor(big, 5, 3);
  llmc_status s = llmc_context_set_input(ctx, 0, &over);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  const std::string message = llmc_status_message(s);
  EXPECT_NE(message.find("('batch') is 5, outside the plan's range 1..4"), std::string::npos) << message;
  llmc_status_free(s);
  float one[3] = {1, 1, 1};
  llmc_tensor ok = tensor(one, 1, 3);
  ASSERT_EQ(llmc_context_set_input(ctx, 0, &ok), nullptr);
  EXPECT_EQ(llmc_context_run(ctx), nullptr);
  llmc_context_release(ctx);
}

// Inputs read from and outputs written into the caller's memory (how generation keeps its cache).
// A reduced-precision plan's 16-bit weights are widened to f32 for the CPU executor.
TEST(CApi, TheCpuWidensTheWeightsOfAReducedPrecisionPlan) {
  Loaded l(llmc::test::addPlan(1, uint8_t(9))); // bf16 weights {0, 1, 0}
  llmc_context ctx = nullptr;
  ASSERT_EQ(llmc_context_create(l.plan, nullptr, &ctx), nullptr);
  float x[6] = {0, 1, 2, 3, 4, 5};
  llmc_tensor in = tensor(x, 2, 3), out;
  ASSERT_EQ(llmc_context_set_input(ctx, 0, &in), nullptr);
  ASSERT_EQ(llmc_context_run(ctx), nullptr);
  ASSERT_EQ(llmc_context_output(ctx, 0, &out), nullptr);
  const float *y = static_cast<const float *>(out.data);
  EXPECT_EQ(std::vector<float>(y, y + 6), (std::vector<float>{0, 2, 2, 3, 5, 5}));
  llmc_context_release(ctx);
}

// The device memory a CUDA context would hold, worked out without a GPU (when the build has the
// CUDA plugin; without it the answer is 0): the parts add up, the weight is one aligned slot.
TEST(CApi, PlannedCudaMemoryAddsUp) {
  Loaded l;
  size_t weights = 1, activations = 1, other = 1;
  const size_t total = llmc_plan_cuda_device_bytes(l.plan, &weights, &activations, &other);
  EXPECT_EQ(total, weights + activations + other);
#ifdef LLMC_TEST_HAVE_CUDA_PLUGIN
  EXPECT_EQ(weights, 256u);    // 3 floats, in a 256-byte slot
  EXPECT_GT(activations, 0u);  // x and y
  EXPECT_GT(other, 32u << 20); // the GEMM workspace at least
#endif
  EXPECT_EQ(llmc_plan_cuda_device_bytes(nullptr, nullptr, nullptr, nullptr), 0u);
}

// The decode-graph report, without a device: the add plan has no attention over a cache; the
// line is cut to the buffer, NUL-terminated, and its full length returned.
TEST(CApi, CudaGraphReportFitsTheBuffer) {
  Loaded l;
  const size_t length = llmc_plan_cuda_graph_report(l.plan, nullptr, 0);
#ifdef LLMC_TEST_HAVE_CUDA_PLUGIN
  ASSERT_GT(length, 10u);
  std::string full(length + 1, 'x');
  EXPECT_EQ(llmc_plan_cuda_graph_report(l.plan, full.data(), full.size()), length);
  EXPECT_EQ(full.substr(0, 22), "no attention over a ca");
  EXPECT_EQ(full[length], '\0');
  char cut[8];
  std::memset(cut, 'x', sizeof cut);
  EXPECT_EQ(llmc_plan_cuda_graph_report(l.plan, cut, sizeof cut), length);
  EXPECT_EQ(std::string(cut), full.substr(0, 7));
#else
  EXPECT_EQ(length, 0u);
#endif
  EXPECT_EQ(llmc_plan_cuda_graph_report(nullptr, nullptr, 0), 0u);
}

// Keeping a cache on the device is for CUDA contexts; a CPU context says so and stays usable.
TEST(CApi, LinkingACacheNeedsACudaContext) {
  Loaded l;
  llmc_context ctx = nullptr;
  ASSERT_EQ(llmc_context_create(l.plan, nullptr, &ctx), nullptr);
  llmc_status s = llmc_context_link_cache(ctx, 0, 0);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_UNSUPPORTED);
  EXPECT_NE(std::string(llmc_status_message(s)).find("CUDA"), std::string::npos);
  llmc_status_free(s);
  s = llmc_context_link_cache(ctx, 1, 0);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  llmc_status_free(s);
  float x[6] = {};
  llmc_tensor in = tensor(x, 2, 3);
  ASSERT_EQ(llmc_context_set_input(ctx, 0, &in), nullptr);
  EXPECT_EQ(llmc_context_run(ctx), nullptr);
  llmc_context_release(ctx);
}

TEST(CApi, BoundInputsAndOutputsUseTheCallersMemory) {
  Loaded l(llmc::test::dynamicPlan());
  llmc_context ctx = nullptr;
  ASSERT_EQ(llmc_context_create(l.plan, nullptr, &ctx), nullptr);
  const size_t need = llmc_context_output_capacity(ctx, 0);
  EXPECT_EQ(need, 4 * 3 * sizeof(float)); // y at the bound batch = 4
  std::vector<float> y(12, -1.0f);
  llmc_status s = llmc_context_bind_output(ctx, 0, y.data(), need - 1);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  llmc_status_free(s);
  ASSERT_EQ(llmc_context_bind_output(ctx, 0, y.data(), need), nullptr);
  float x[6] = {0, 1, 2, 3, 4, 5};
  llmc_tensor in = tensor(x, 2, 3);
  ASSERT_EQ(llmc_context_bind_input(ctx, 0, &in), nullptr);
  ASSERT_EQ(llmc_context_run(ctx), nullptr);
  llmc_tensor out;
  ASSERT_EQ(llmc_context_output(ctx, 0, &out), nullptr);
  EXPECT_EQ(out.data, y.data());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[5], 8.0f);
  x[0] = 10; // the bound input is read where it is
  ASSERT_EQ(llmc_context_run(ctx), nullptr);
  EXPECT_EQ(y[0], 11.0f);
  llmc_context_release(ctx);
}

TEST(CApi, RunsAndRejectsBadInputsWithoutBreakingTheContext) {
  Loaded l;
  llmc_context ctx = nullptr;
  ASSERT_EQ(llmc_context_create(l.plan, nullptr, &ctx), nullptr);

  llmc_status s = llmc_context_run(ctx); // input not set
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(llmc_status_message(s)).find("'x' was not set"), std::string::npos);
  llmc_status_free(s);

  float wrong[4] = {};
  llmc_tensor bad = tensor(wrong, 2, 2);
  s = llmc_context_set_input(ctx, 0, &bad);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(llmc_status_message(s)).find("expects f32[2x3], got f32[2x2]"), std::string::npos)
      << llmc_status_message(s);
  llmc_status_free(s);

  int64_t ints[6] = {};
  llmc_tensor badType{LLMC_DTYPE_I64, 2, {2, 3}, ints};
  s = llmc_context_set_input(ctx, 0, &badType);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  llmc_status_free(s);

  float x[6] = {0, 1, 2, 3, 4, 5};
  llmc_tensor good = tensor(x, 2, 3);
  ASSERT_EQ(llmc_context_set_input(ctx, 0, &good), nullptr);
  ASSERT_EQ(llmc_context_run(ctx), nullptr);
  llmc_tensor out;
  ASSERT_EQ(llmc_context_output(ctx, 0, &out), nullptr);
  const float *y = static_cast<const float *>(out.data);
  const float expected[6] = {1, 3, 5, 4, 6, 8};
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y[i], expected[i]);

  int32_t index = -1;
  ASSERT_EQ(llmc_context_input_index(ctx, "x", &index), nullptr);
  EXPECT_EQ(index, 0);
  s = llmc_context_input_index(ctx, "nope", &index);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_NOT_FOUND);
  llmc_status_free(s);
  llmc_context_release(ctx);
}

TEST(CApi, ManyContextsShareOnePlanAcrossThreads) {
  Loaded l;
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      llmc_context ctx = nullptr;
      if (llmc_context_create(l.plan, nullptr, &ctx)) {
        failures[t]++;
        return;
      }
      for (int iter = 0; iter < 200; ++iter) {
        float x[6];
        for (int i = 0; i < 6; ++i)
          x[i] = float(t * 1000 + iter + i);
        llmc_tensor in = tensor(x, 2, 3);
        llmc_tensor out;
        if (llmc_context_set_input(ctx, 0, &in) || llmc_context_run(ctx) || llmc_context_output(ctx, 0, &out)) {
          failures[t]++;
          break;
        }
        const float *y = static_cast<const float *>(out.data);
        for (int i = 0; i < 6; ++i)
          if (y[i] != x[i] + float(i % 3 + 1))
            failures[t]++;
      }
      llmc_context_release(ctx);
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(CApi, ContextKeepsThePlanAlive) {
  llmc_plan plan = nullptr;
  ASSERT_EQ(llmc_plan_load(llmc::test::writeTemp("alive.llmc", llmc::test::addPlan()).c_str(), nullptr, &plan), nullptr);
  llmc_context ctx = nullptr;
  ASSERT_EQ(llmc_context_create(plan, nullptr, &ctx), nullptr);
  llmc_plan_release(plan); // the context still holds it
  float x[6] = {};
  llmc_tensor in = tensor(x, 2, 3);
  EXPECT_EQ(llmc_context_set_input(ctx, 0, &in), nullptr);
  EXPECT_EQ(llmc_context_run(ctx), nullptr);
  llmc_context_release(ctx);
}

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  llmc_status s = llmc_plan_load(nullptr, nullptr, nullptr);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  llmc_status_free(s);
  s = llmc_context_run(nullptr);
  EXPECT_EQ(llmc_status_code_of(s), LLMC_INVALID_ARGUMENT);
  llmc_status_free(s);
  EXPECT_EQ(llmc_status_code_of(nullptr), LLMC_OK);
  EXPECT_STRNE(llmc_version(), "");
}

} // namespace
