// A 512-token prompt's kernels, bf16, batch 1, at SmolLM2-135M's and Llama-3.2-1B's layer shapes,
// as the executor launches them for a prompt: the add + RMS norm (addNorm, a block per row), the
// four linears on cuBLASLt ([N, K] weights, M = 512; gate/up then the SwiGLU epilogue kernel),
// and the causal attention on tensor cores (flashAttention; keys and values in the cache's
// [length, batch, heads * head] layout, the queries rotated, the attention_mask input as an int64
// row; each block of query rows' keys shared among blocks as flashAttentionSplits says for this
// GPU), unsplit, with the kernel of a block per query row and with keys and values staged an
// element at a time (rows off 16-byte alignment) for comparison; then one layer's kernels times
// the layers: how much of the benchmark's time to the first token they explain. Not timed: the QKV split
// with the keys' rotation, and the head (one row with --last-position). Asserts nothing.
#include "PromptBench.h"

#include "BenchTiming.h"
#include "CudaKernels.h"
#include "LtLinear.h"
#include "Tensor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace cu = llmc::rt::cuda;

namespace {

constexpr int64_t kPrompt = 512;

struct PromptModel {
  const char *name;
  int64_t hidden, intermediate, Hq, Hkv, D, layers;
};

// Prints one kernel's row; returns its time (0 when it failed, counted in `failures`).
double row(const char *what, double us, double flops, int &failures) {
  if (us < 0) {
    ++failures;
    std::printf("    %-34s failed\n", what);
    return 0;
  }
  std::printf("    %-34s %9.2f us", what, us);
  if (flops > 0)
    std::printf("  %6.1f TFLOP/s", flops / (us * 1e-6) / 1e12);
  std::printf("\n");
  return us;
}

int promptLayer(const PromptModel &m, void *lt, void *workspace, size_t workspaceBytes, int reps, int multiprocessors) {
  const int64_t S = kPrompt, qkvN = (m.Hq + 2 * m.Hkv) * m.D, attnWidth = m.Hq * m.D;
  std::printf("  %s: hidden %lld, intermediate %lld, %lld heads, %lld KV heads of %lld, %lld layers\n", m.name,
              static_cast<long long>(m.hidden), static_cast<long long>(m.intermediate),
              static_cast<long long>(m.Hq), static_cast<long long>(m.Hkv), static_cast<long long>(m.D),
              static_cast<long long>(m.layers));
  const int64_t widest = std::max({m.hidden, qkvN, 2 * m.intermediate, attnWidth});
  BenchBuffer x(size_t(S * widest) * 2), y(size_t(S * widest) * 2), sum(size_t(S * m.hidden) * 2),
      out(size_t(S * widest) * 2), scale(size_t(m.hidden) * 2), mask(size_t(S) * sizeof(int64_t));
  std::vector<int64_t> ones(size_t(S), 1);
  cudaMemcpy(mask.p, ones.data(), ones.size() * sizeof(int64_t), cudaMemcpyHostToDevice);
  int failures = 0;
  double layer = 0;
  // The two add + RMS norms of a layer.
  const double norm = row("add + RMS norm (addNorm)", timeCalls([&](int) {
                            return cu::addNorm(int(llmc::rt::DType::BF16), false, x.p, y.p, scale.p, nullptr, out.p,
                                               sum.p, S, m.hidden, 1e-5, nullptr);
                          }, reps),
                          0, failures);
  layer += 2 * norm;
  struct Linear {
    const char *what;
    int64_t K, N;
    bool swiglu;
  };
  const Linear linears[] = {{"qkv (cuBLASLt)", m.hidden, qkvN, false},
                            {"o (cuBLASLt)", attnWidth, m.hidden, false},
                            {"gate/up (cuBLASLt + SwiGLU kernel)", m.hidden, 2 * m.intermediate, true},
                            {"down (cuBLASLt)", m.intermediate, m.hidden, false}};
  for (const Linear &l : linears) {
    cu::LinearSpec spec;
    spec.storage = cu::Storage::BF16, spec.maxM = S, spec.N = l.N, spec.K = l.K, spec.transB = true;
    std::unique_ptr<cu::LtLinear> linear;
    if (std::string err = cu::LtLinear::create(lt, spec, workspaceBytes, linear); !err.empty()) {
      std::printf("    %s: %s\n", l.what, err.c_str());
      ++failures;
      continue;
    }
    BenchBuffer w(size_t(l.K * l.N) * 2);
    const double us = timeCalls(
        [&](int) {
          std::string err = linear->run(x.p, w.p, nullptr, y.p, S, workspace, nullptr);
          if (err.empty() && l.swiglu)
            err = cu::linearEpilogue(cu::Storage::BF16, y.p, out.p, nullptr, nullptr, S, l.N / 2, "swiglu", true,
                                     nullptr);
          return err;
        },
        reps);
    layer += row(l.what, us, 2.0 * double(S) * double(l.K) * double(l.N), failures);
  }
  // The causal attention over the prompt: queries [S, Hq * D] (the split's piece), keys and
  // values [S, 1, Hkv * D] (the cache's layout), every position kept by the attention_mask row.
  BenchBuffer q(size_t(S * attnWidth) * 2), k(size_t(S * m.Hkv * m.D) * 2), v(size_t(S * m.Hkv * m.D) * 2);
  cu::AttentionArgs a{};
  a.q = q.p, a.k = k.p, a.v = v.p, a.out = out.p, a.B = 1, a.Hq = m.Hq, a.Hkv = m.Hkv, a.Sq = S, a.Sk = S;
  a.D = a.Dv = m.D, a.scale = 0.125f, a.causal = true;
  a.qs = {S * attnWidth, attnWidth, m.D};
  a.ks = a.vs = cu::HeadStrides{m.Hkv * m.D, m.Hkv * m.D, m.D};
  a.mask = mask.p, a.maskType = cu::AttentionArgs::Mask::Int64;
  a.maskStrides[0] = S, a.maskStrides[3] = 1;
  // The queries rotated by tables of D / 2 columns (a Hugging Face export's, read by half); the
  // keys were rotated by the split.
  BenchBuffer cosT(size_t(S * m.D / 2) * 2), sinT(size_t(S * m.D / 2) * 2);
  a.cos = cosT.p, a.sin = sinT.p, a.halfTables = true;
  // Causal: half the score matrix, QK^T and PV.
  const double attentionFlops = 2.0 * 2.0 * double(m.Hq) * double(S) * double(S) / 2 * double(m.D);
  const int splits = cu::flashAttentionSplits(a, multiprocessors, workspaceBytes);
  const std::string split = "causal attention, keys in " + std::to_string(splits) + (splits > 1 ? " splits" : " split");
  BenchBuffer splitWorkspace(workspaceBytes);
  cudaMemset(splitWorkspace.p, 0, workspaceBytes); // its counters start at 0 (each launch leaves them so)
  layer += row(split.c_str(), timeCalls([&](int) {
                 return cu::flashAttention(cu::Storage::BF16, a, nullptr, splits, splitWorkspace.p);
               }, reps),
               attentionFlops, failures);
  row("  keys unsplit (flashAttention)",
      timeCalls([&](int) { return cu::flashAttention(cu::Storage::BF16, a, nullptr); }, reps), attentionFlops,
      failures);
  row("  a block per query row (attention)",
      timeCalls([&](int) { return cu::attention(cu::Storage::BF16, a, nullptr); }, reps), attentionFlops, failures);
  // Keys and values one element past 16-byte alignment: the tensor-core kernel stages them an
  // element at a time, as it did for every layout until session 16.
  BenchBuffer kOff(size_t(S * m.Hkv * m.D + 8) * 2), vOff(size_t(S * m.Hkv * m.D + 8) * 2);
  cu::AttentionArgs unaligned = a;
  unaligned.k = static_cast<char *>(kOff.p) + 2, unaligned.v = static_cast<char *>(vOff.p) + 2;
  row("  keys and values staged per element",
      timeCalls([&](int) { return cu::flashAttention(cu::Storage::BF16, unaligned, nullptr); }, reps), attentionFlops,
      failures);
  std::printf("    one layer's kernels above: %.1f us; times %lld layers: %.2f ms (the split, the embedding and "
              "the head not counted)\n",
              layer, static_cast<long long>(m.layers), layer * double(m.layers) / 1e3);
  return failures;
}

} // namespace

int promptBench(void *lt, void *workspace, size_t workspaceBytes, int reps, bool smoke) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  cu::flashAttentionSetup(prop.sharedMemPerBlockOptin); // outside any capture
  std::printf("a %lld-token prompt's kernels, bf16, batch 1 (%d reps each)\n", static_cast<long long>(kPrompt), reps);
  const PromptModel models[] = {{"SmolLM2-135M", 576, 1536, 9, 3, 64, 30}, {"Llama-3.2-1B", 2048, 8192, 32, 8, 64, 16}};
  // One head over the whole prompt: its 8 key tiles still split in 2 beside the emulation's 132
  // multiprocessors.
  const PromptModel smokeModel = {"a smoke test's", 128, 256, 1, 1, 64, 2};
  int failures = 0;
  const std::vector<PromptModel> chosen =
      smoke ? std::vector<PromptModel>{smokeModel} : std::vector<PromptModel>(std::begin(models), std::end(models));
  for (const PromptModel &m : chosen)
    failures += promptLayer(m, lt, workspace, workspaceBytes, reps, prop.multiProcessorCount);
  return failures;
}
