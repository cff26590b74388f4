// DeepSeek's decode attention over its latent cache (latent_attention absorbed), bf16, one query
// row at batch 1, at DeepSeek-V3's layer shape (128 heads; latent 512, rotary 64, q_nope 128,
// v 128; W_UK and W_UV kept apart, as llmc-absorb-mla leaves them there) over caches of 512 and
// 4096 tokens: the keys in one block per group of 8 heads (16 blocks) and shared out among
// blocks as the executor picks them (latentAttentionSplits). The share of HBM counts the cache,
// W_UK and W_UV read once. Asserts nothing.
#include "LatentBench.h"

#include "BenchTiming.h"
#include "CudaKernels.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace cu = llmc::rt::cuda;

int latentBench(int reps, bool smoke, int sms, size_t workspaceBytes, double hbmBytesPerSecond) {
  const int64_t H = smoke ? 16 : 128, L = smoke ? 64 : 512, R = smoke ? 16 : 64, n = smoke ? 32 : 128,
                v = smoke ? 32 : 128, longest = smoke ? 600 : 4096;
  std::printf("DeepSeek's decode attention over the latent cache (%s: %lld heads, latent %lld + rotary %lld, "
              "W_UK and W_UV apart), bf16, batch 1\n",
              smoke ? "a smoke test's shape" : "DeepSeek-V3", static_cast<long long>(H), static_cast<long long>(L),
              static_cast<long long>(R));
  cu::latentAttentionSetup();
  BenchBuffer q(size_t(H * (n + R)) * 2), cache(size_t(longest * (L + R)) * 2), wuk(size_t(H * n * L) * 2),
      wuv(size_t(H * L * v) * 2), out(size_t(H * v) * 2), workspace(workspaceBytes);
  cudaMemset(workspace.p, 0, workspaceBytes); // the arrival counters start at 0
  int failures = 0;
  for (int64_t keys : {smoke ? int64_t(300) : int64_t(512), longest}) {
    const int picked = cu::latentAttentionSplits(1, H, 1, keys, L, R, sms, workspaceBytes);
    const double bytes = 2.0 * double(keys * (L + R) + H * n * L + H * L * v + H * (n + R) + H * v);
    const int counts[] = {1, picked};
    for (int k = 0; k < (picked > 1 ? 2 : 1); ++k) {
      const int splits = counts[k];
      const double us = timeCalls(
          [&](int) {
            return cu::latentAttention(cu::Storage::BF16, q.p, cache.p, wuk.p, wuv.p, cu::LatentMask{}, out.p, 1, H, 1,
                                       keys, n, R, L, v, 0.07f, nullptr, splits, workspace.p, nullptr);
          },
          reps);
      char what[64];
      std::snprintf(what, sizeof what, "%lld keys, %d split%s", static_cast<long long>(keys), splits,
                    splits == 1 ? "" : "s");
      if (us < 0) {
        ++failures;
        std::printf("    %-40s failed\n", what);
        continue;
      }
      std::printf("    %-40s %10.2f us  %5.1f%% of HBM (%4.0f GB/s)\n", what, us,
                  100 * bytes / (us * 1e-6) / hbmBytesPerSecond, bytes / (us * 1e-6) / 1e9);
    }
  }
  return failures;
}
