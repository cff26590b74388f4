// A mixture of experts' two projections over a 512-token prompt, bf16, at GPT-OSS-20B's layer
// shape (32 experts of 2880 -> 2 x 2880 with the clamped SwiGLU and biases, then 2880 -> 2880
// weighed and summed over each token's 4 experts), as the executor runs them: on the grouped
// kernel (groupedExpertLinear: rows grouped by expert, tensor cores) and on the warp per output
// (expertLinear, what every id took before it, and what a decode step's few ids take). Each
// token picks 4 distinct experts, spread evenly. The share of HBM counts each expert's matrix
// read once (the least any kernel must read) and the rows read and written; TFLOP/s the products'
// multiply-adds. Then a decode step's two projections (one token, its 4 experts) on the warp per
// output. Asserts nothing.
#include "ExpertBench.h"

#include "BenchTiming.h"
#include "CudaKernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace cu = llmc::rt::cuda;

namespace {

constexpr int kBf16 = 9; // DType::BF16's number

} // namespace

int expertBench(int reps, bool smoke, double hbmBytesPerSecond) {
  const int64_t E = smoke ? 4 : 32, H = smoke ? 64 : 2880, tokens = smoke ? 32 : 512, top = 4;
  const int64_t N = tokens * top;
  std::printf("a mixture of experts' prompt (%s: %lld experts, %lld -> 2 x %lld and back, %lld tokens x %lld "
              "experts), bf16\n",
              smoke ? "a smoke test's shape" : "GPT-OSS-20B", static_cast<long long>(E), static_cast<long long>(H),
              static_cast<long long>(H), static_cast<long long>(tokens), static_cast<long long>(top));
  std::vector<int64_t> picks(static_cast<size_t>(N));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < top; ++j)
      picks[size_t(t * top + j)] = (t * 7 + j * 5) % E; // j * 5 differ modulo 4 and 32
  BenchBuffer x(size_t(tokens * H) * 2), gateUp(size_t(E * 2 * H * H) * 2), gateUpBias(size_t(E * 2 * H) * 2),
      hidden(size_t(N * H) * 2), down(size_t(E * H * H) * 2), downBias(size_t(E * H) * 2),
      combine(size_t(N) * 2), y(size_t(tokens * H) * 2), ids(size_t(N) * sizeof(int64_t)), error(sizeof(int));
  cudaMemcpy(ids.p, picks.data(), picks.size() * sizeof(int64_t), cudaMemcpyHostToDevice);
  cudaMemset(error.p, 0, sizeof(int));

  cu::ExpertLinearArgs first; // gate/up: each token's row repeated for its 4 experts
  first.N = N, first.M = 2 * H, first.K = H, first.E = E, first.repeat = top, first.swiglu = true;
  first.clamped = true, first.alpha = 1.702f, first.limit = 7.0f, first.bias = gateUpBias.p;
  cu::ExpertLinearArgs second; // down: weighed and summed over a token's 4
  second.N = N, second.M = H, second.K = H, second.E = E, second.group = top, second.bias = downBias.p;
  const size_t scratchBytes =
      std::max(cu::groupedExpertScratchBytes(first, N, false), cu::groupedExpertScratchBytes(second, N, true));
  BenchBuffer scratch(scratchBytes);

  int failures = 0;
  auto row = [&](const char *what, double us, double bytes, double flops) {
    if (us < 0) {
      ++failures;
      std::printf("    %-40s failed\n", what);
      return;
    }
    std::printf("    %-40s %10.2f us  %5.1f%% of HBM (%4.0f GB/s)  %6.1f TFLOP/s\n", what, us,
                100 * bytes / (us * 1e-6) / hbmBytesPerSecond, bytes / (us * 1e-6) / 1e9, flops / (us * 1e-6) / 1e12);
  };
  const double firstBytes = 2.0 * double(E * 2 * H * H + E * 2 * H + tokens * H + N * H);
  const double secondBytes = 2.0 * double(E * H * H + E * H + N * H + N + tokens * H);
  const double firstFlops = 2.0 * double(N * 2 * H * H), secondFlops = 2.0 * double(N * H * H);
  for (bool grouped : {true, false}) {
    const int calls = grouped ? reps : std::max(1, reps / 20); // the warp per output is slow
    const double a = timeCalls(
        [&](int) {
          return grouped ? cu::groupedExpertLinear(kBf16, x.p, gateUp.p, static_cast<const int64_t *>(ids.p), nullptr,
                                                   hidden.p, first, scratch.p, scratchBytes,
                                                   static_cast<int *>(error.p), nullptr)
                         : cu::expertLinear(kBf16, x.p, gateUp.p, static_cast<const int64_t *>(ids.p), nullptr,
                                            hidden.p, first, static_cast<int *>(error.p), nullptr);
        },
        calls);
    const double b = timeCalls(
        [&](int) {
          return grouped ? cu::groupedExpertLinear(kBf16, hidden.p, down.p, static_cast<const int64_t *>(ids.p),
                                                   combine.p, y.p, second, scratch.p, scratchBytes,
                                                   static_cast<int *>(error.p), nullptr)
                         : cu::expertLinear(kBf16, hidden.p, down.p, static_cast<const int64_t *>(ids.p), combine.p,
                                            y.p, second, static_cast<int *>(error.p), nullptr);
        },
        calls);
    row(grouped ? "gate/up, grouped (tensor cores)" : "gate/up, a warp per output", a, firstBytes, firstFlops);
    row(grouped ? "down + combine, grouped" : "down + combine, a warp per output", b, secondBytes, secondFlops);
  }
  // A decode step's: one token's row by its 4 experts on the warp per output, as the executor runs
  // a step's few ids; call i takes token i's experts, so that calls read different matrices (a
  // step's 133 MB of gate/up matrices pass the L2 cache anyway).
  cu::ExpertLinearArgs stepFirst = first, stepSecond = second;
  stepFirst.N = top, stepSecond.N = top;
  const int64_t *idsOf = static_cast<const int64_t *>(ids.p);
  const double c = timeCalls(
      [&](int i) {
        return cu::expertLinear(kBf16, x.p, gateUp.p, idsOf + (i % tokens) * top, nullptr, hidden.p, stepFirst,
                                static_cast<int *>(error.p), nullptr);
      },
      reps);
  const double d = timeCalls(
      [&](int i) {
        return cu::expertLinear(kBf16, hidden.p, down.p, idsOf + (i % tokens) * top, combine.p, y.p, stepSecond,
                                static_cast<int *>(error.p), nullptr);
      },
      reps);
  row("decode step (4 ids): gate/up", c, 2.0 * double(top * 2 * H * H + top * 2 * H + H + top * H),
      2.0 * double(top * 2 * H * H));
  row("decode step (4 ids): down + combine", d, 2.0 * double(top * H * H + top * H + top * H + top + H),
      2.0 * double(top * H * H));
  int flag = 0;
  cudaMemcpy(&flag, error.p, sizeof flag, cudaMemcpyDeviceToHost);
  if (flag) {
    std::printf("    an id was out of range\n");
    ++failures;
  }
  return failures;
}
