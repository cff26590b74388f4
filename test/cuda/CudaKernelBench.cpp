// The decode step's kernels on the GPU, bf16, batch 1: llmc's GEMV (smallLinear, [N, K] weights)
// against cuBLASLt on the same [N, K] weights and on [K, N] ones (the layout before
// llmc-transpose-linear-weights), at the shapes of a Llama-3.2-1B layer and its head (alone and
// with the last norm in front, as a decode step runs it) and of a SmolLM2 layer, a block per
// group of columns and persistent (SmallLinearArgs::blocks), with the time per call and the share
// of the GPU's HBM bandwidth each reaches (the H200's 4.8 TB/s; readHbmBandwidth) (bytes of the
// weight and x read, y written; calls cycle
// through copies of the weight that together exceed the L2 cache, as a decode step's layers
// do); the QKV projection with its split, launched apart and in the GEMV's epilogue; then the
// decode attention of one layer at three cache lengths, and followed by the output projection,
// whose weight the attention prefetches to L2 or not; a layer's four linears after its attention
// launched one by one and chained in one launch (decodeChain); last what a step from one
// kernel to the next costs, against a grid-wide barrier (StepCostBench.cu). Between the linears
// and the rest, a 512-token prompt's kernels (PromptBench.cpp: the time to the first token) and a
// mixture of experts' (ExpertBench.cpp: grouped against a warp per output).
// Asserts nothing. Without a GPU it exits with 77 (skipped).
//
//   llmc-cuda-kernel-bench [--reps N] [--smoke]
//
// --smoke: every row once at shapes cut down to what the CPU emulation runs in seconds (ctest
// cuda-kernel-bench-emulated): the figures mean nothing there; a row that fails fails the run.
#include "CudaKernels.h"
#include "LtLinear.h"
#include "BenchTiming.h"
#include "PromptBench.h"
#include "ExpertBench.h"
#include "LatentBench.h"
#include "StepCostBench.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cu = llmc::rt::cuda;

namespace {

// The HBM bandwidth shares are taken against: the datasheet's for the GPU's name (the H200's
// 4.8 TB/s, as issue 7 defines the share, or an H100's that the device tool may lend instead; the
// same table as tools/gpu_benchmark.py's HBM_BY_NAME), else the device's peak (twice its memory
// clock times its bus width), else 4.8 TB/s.
double hbmBytesPerSecond = 4.8e12;

void readHbmBandwidth(const char *name) {
  const std::pair<const char *, double> byName[] = {
      {"H200", 4.8e12}, {"H100 NVL", 3.9e12}, {"H100 PCIe", 2.0e12}, {"H100", 3.35e12}};
  for (const auto &[part, rate] : byName)
    if (std::strstr(name, part)) {
      hbmBytesPerSecond = rate;
      return;
    }
  int kilohertz = 0, busBits = 0;
  if (cudaDeviceGetAttribute(&kilohertz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess &&
      cudaDeviceGetAttribute(&busBits, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess && kilohertz > 0 &&
      busBits > 0)
    hbmBytesPerSecond = 2.0 * kilohertz * 1e3 * busBits / 8;
  cudaGetLastError(); // an attribute the device does not have is no launch's error
}
constexpr size_t kBeyondL2 = 256u << 20; // bytes of weight copies a benchmark cycles through

// Copies of a bf16 weight of `bytes` that together exceed the L2 cache (at least one; one alone
// with `smoke`), each 0x3c3c (about 0.0115) everywhere; call i reads copy i modulo their count, as a
// decode step's layers each read their own weights.
struct WeightCopies {
  std::vector<void *> copies;
  WeightCopies(size_t bytes, bool smoke)
      : copies(smoke ? 1 : std::max<size_t>(1, (kBeyondL2 + bytes - 1) / bytes), nullptr) {
    for (void *&copy : copies)
      cudaMalloc(&copy, bytes), cudaMemset(copy, 0x3c, bytes);
  }
  ~WeightCopies() {
    for (void *copy : copies)
      cudaFree(copy);
  }
  WeightCopies(const WeightCopies &) = delete;
  void *operator[](int i) const { return copies[size_t(i) % copies.size()]; }
};

struct Shape {
  const char *what;
  int64_t K, N;
  bool swiglu, norm; // norm: our GEMV computes the RMS norm in front, as a decode step runs it
};

void report(const char *how, double us, double bytes) {
  if (us < 0)
    return;
  const double share = bytes / (us * 1e-6) / hbmBytesPerSecond;
  std::printf("    %-28s %8.2f us  %7.1f GB/s  %5.1f%% of HBM\n", how, us, bytes / (us * 1e-6) / 1e9, 100 * share);
}

// The decode attention of one Llama-3.2-1B layer (32 query heads, 8 key/value heads of 64, a
// length-major bf16 cache), launched as the graph replayed for every cache length launches it:
// sized for a 1536-token bound, the key count read on the device (`smoke`: 8 heads, 2 KV heads,
// a 256-token bound). Returns the failures.
int decodeAttentionBench(int reps, bool smoke) {
  const int64_t Hq = smoke ? 8 : 32, Hkv = smoke ? 2 : 8, D = 64, bound = smoke ? 256 : 1536;
  std::printf("decode attention, bf16, one layer of %s (%lld heads, %lld KV heads of 64)\n",
              smoke ? "a smoke test's shape" : "Llama-3.2-1B", static_cast<long long>(Hq), static_cast<long long>(Hkv));
  void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *workspace = nullptr;
  int64_t *keys = nullptr;
  const int splits = cu::decodeAttentionSplits(bound);
  const size_t cacheBytes = size_t(bound * Hkv * D) * 2, workspaceBytes = cu::decodeAttentionWorkspaceBytes(1, Hq, D, splits);
  cudaMalloc(&q, size_t(Hq * D) * 2), cudaMalloc(&out, size_t(Hq * D) * 2);
  cudaMalloc(&k, cacheBytes), cudaMalloc(&v, cacheBytes), cudaMalloc(&keys, sizeof(int64_t));
  cudaMalloc(&workspace, workspaceBytes);
  cudaMemset(q, 0x3c, size_t(Hq * D) * 2), cudaMemset(k, 0x3c, cacheBytes), cudaMemset(v, 0x3c, cacheBytes);
  cudaMemset(workspace, 0, workspaceBytes);
  cu::AttentionArgs a{};
  a.q = q, a.k = k, a.v = v, a.out = out, a.B = 1, a.Hq = Hq, a.Hkv = Hkv, a.Sq = 1, a.Sk = bound, a.D = D, a.Dv = D;
  a.scale = 0.125f, a.causal = false, a.skOnDevice = keys;
  a.qs = {Hq * D, Hq * D, D};
  a.ks = a.vs = cu::HeadStrides{Hkv * D, Hkv * D, D}; // [length, batch 1, heads * D]
  int failures = 0;
  // The tiled kernel with the 4 heads that share a key/value head in one block (the default), with
  // one block per head (as before), and the plain kernel.
  const std::vector<int64_t> lengths = smoke ? std::vector<int64_t>{16, 100, 256} : std::vector<int64_t>{64, 576, 1536};
  for (int64_t T : lengths)
    for (const char *kernel : {"tiled", "tiled, a head per block,", "plain"}) {
      cudaMemcpy(keys, &T, sizeof T, cudaMemcpyHostToDevice);
      a.plainDecode = std::string(kernel) == "plain";
      a.oneHeadPerBlock = std::string(kernel) != "tiled";
      const double us = timeCalls(
          [&](int) { return cu::decodeAttention(cu::Storage::BF16, a, splits, workspace, nullptr); }, reps);
      std::printf("  %4lld cached tokens (%d splits per head), %s kernel:", static_cast<long long>(T), splits, kernel);
      if (us < 0) {
        std::printf(" failed\n");
        ++failures;
        continue;
      }
      std::printf(" %7.2f us for %.2f MB of keys and values\n", us, 2.0 * double(T * Hkv * D) * 2 / 1e6);
    }
  // A layer's attention then its output projection (2048 -> 2048, llmc's GEMV reading the
  // attention's output), back to back as a decode step runs them at 576 cached tokens: with the
  // projection's weight asked of the L2 cache by the attention's blocks, and without. Weights
  // cycle beyond the L2 cache.
  const int64_t T = smoke ? 100 : 576, N = Hq * D, K = Hq * D;
  cudaMemcpy(keys, &T, sizeof T, cudaMemcpyHostToDevice);
  a.plainDecode = a.oneHeadPerBlock = false;
  const size_t weightBytes = size_t(N * K) * 2;
  const WeightCopies w(weightBytes, smoke);
  void *y = nullptr;
  cudaMalloc(&y, size_t(N) * 2);
  cudaStream_t stream = nullptr; // blocking: the timing events wait for it
  cudaStreamCreate(&stream);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  a.overlapPrevious = prop.major >= 9;
  cu::SmallLinearArgs o;
  o.x = out, o.out = y, o.M = 1, o.N = N, o.K = K, o.overlapPrevious = a.overlapPrevious;
  for (bool prefetch : {false, true}) {
    const double us = timeCalls(
        [&](int i) {
          void *weight = w[i];
          a.prefetchL2 = prefetch ? weight : nullptr, a.prefetchL2Bytes = prefetch ? weightBytes : 0;
          o.w = weight;
          std::string err = cu::decodeAttention(cu::Storage::BF16, a, splits, workspace, stream);
          return err.empty() ? cu::smallLinear(cu::Storage::BF16, o, "none", stream) : err;
        },
        reps);
    std::printf("  %4lld cached tokens, then the output projection (%.2f MB), weight %s:", static_cast<long long>(T),
                double(weightBytes) / 1e6, prefetch ? "prefetched to L2 by the attention" : "not prefetched");
    if (us < 0) {
      std::printf(" failed\n");
      ++failures;
      continue;
    }
    std::printf(" %7.2f us for both\n", us);
  }
  cudaStreamDestroy(stream);
  cudaFree(y);
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(keys), cudaFree(workspace);
  return failures;
}

// A Llama-3.2-1B layer's QKV projection (the add + RMS norm in front) with its split as the
// decode step runs it: queries out, keys rotated into the cache, values into it, at the end of
// 100 cached rows whose count is read on the device; the GEMV then the split's launch
// (stridedCopiesAndRotary), against the GEMV storing the pieces itself. With overlapping launches
// where the GPU has them. `smoke`: 256 -> 384 (4 query heads, 1 KV head). Returns the failures.
int qkvSplitBench(int reps, bool overlap, bool smoke) {
  const int64_t K = smoke ? 256 : 2048, D = 64, Q = (smoke ? 4 : 32) * D, Kv = (smoke ? 1 : 8) * D, N = Q + 2 * Kv,
                past = 100, table = 2048;
  std::printf("qkv %lld -> %lld with its split (queries, keys rotated into the cache, values into it), "
              "llmc GEMV%s\n",
              static_cast<long long>(K), static_cast<long long>(N), overlap ? ", overlapping launches" : "");
  const WeightCopies w(size_t(K * N) * 2, smoke);
  void *x = nullptr, *residual = nullptr, *sum = nullptr, *qkv = nullptr, *q = nullptr, *keys = nullptr,
       *values = nullptr, *cosT = nullptr, *sinT = nullptr;
  int64_t *rows = nullptr, *position = nullptr;
  int *error = nullptr;
  for (void **b : {&x, &residual, &sum})
    cudaMalloc(b, size_t(K) * 2), cudaMemset(*b, 0x3c, size_t(K) * 2);
  cudaMalloc(&qkv, size_t(N) * 2), cudaMalloc(&q, size_t(Q) * 2);
  cudaMalloc(&keys, size_t((past + 1) * Kv) * 2), cudaMalloc(&values, size_t((past + 1) * Kv) * 2);
  cudaMalloc(&cosT, size_t(table * D / 2) * 2), cudaMalloc(&sinT, size_t(table * D / 2) * 2);
  cudaMemset(cosT, 0x3c, size_t(table * D / 2) * 2), cudaMemset(sinT, 0x3c, size_t(table * D / 2) * 2);
  cudaMalloc(&rows, sizeof(int64_t)), cudaMalloc(&position, sizeof(int64_t)), cudaMalloc(&error, sizeof(int));
  cudaMemcpy(rows, &past, sizeof past, cudaMemcpyHostToDevice);
  cudaMemcpy(position, &past, sizeof past, cudaMemcpyHostToDevice);
  cudaMemset(error, 0, sizeof(int));
  cudaStream_t stream = nullptr; // blocking: the timing events wait for it
  cudaStreamCreate(&stream);

  cu::SmallLinearArgs a;
  a.x = x, a.out = qkv, a.M = 1, a.N = N, a.K = K, a.overlapPrevious = overlap;
  a.normScale = x, a.normResidual = residual, a.normSum = sum, a.normEpsilon = 1e-5f;
  cu::RotaryArgs r;
  r.cos = cosT, r.sin = sinT, r.tableRows = table, r.positions = position, r.B = 1, r.H = Kv / D, r.S = 1, r.D = D;
  r.rotaryDim = D, r.flat = true, r.error = error;
  r.x = static_cast<char *>(qkv) + Q * 2, r.xRowStride = N, r.y = {keys, rows, Kv};
  cu::StridedCopies copies; // queries, values: [1, width] from the QKV row
  const int64_t from[2] = {0, Q + Kv}, width[2] = {Q, Kv};
  void *to[2] = {q, values};
  for (int i = 0; i < 2; ++i) {
    cu::StridedCopy &c = copies.copy[i];
    c.rank = 2, c.elemBytes = 2, c.dims[0] = 1, c.dims[1] = width[i], c.src[0] = N, c.src[1] = 1;
    c.dst[0] = width[i], c.dst[1] = 1, c.srcBase = from[i];
    if (i == 1)
      c.dstShift = rows, c.dstShiftStride = Kv;
    copies.src[i] = qkv, copies.dst[i] = to[i];
  }
  copies.count = 2;
  int failures = 0;
  const double separate = timeCalls(
      [&](int i) {
        a.w = w[i];
        std::string err = cu::smallLinear(cu::Storage::BF16, a, "none", stream);
        return err.empty() ? cu::stridedCopiesAndRotary(cu::Storage::BF16, copies, r, stream, overlap) : err;
      },
      reps);
  a.pieces = 3;
  a.piece[0].columns = Q, a.piece[0].to.base = q;
  a.piece[1].columns = Kv, a.piece[1].to = r.y, a.piece[1].rotary = r;
  a.piece[2].columns = Kv, a.piece[2].to = {values, rows, Kv};
  const double fused = timeCalls(
      [&](int i) {
        a.w = w[i];
        return cu::smallLinear(cu::Storage::BF16, a, "none", stream);
      },
      reps);
  const double bytes = 2.0 * double(K * N + K + N);
  report("GEMV, then the split", separate, bytes);
  report("GEMV storing the pieces", fused, bytes);
  failures += (separate < 0) + (fused < 0);
  cudaStreamDestroy(stream);
  for (void *b : {x, residual, sum, qkv, q, keys, values, cosT, sinT})
    cudaFree(b);
  cudaFree(rows), cudaFree(position), cudaFree(error);
  return failures;
}

// A decoder layer's four linears after its attention as a decode step runs them (the output
// projection; gate/up with the add + RMS norm in front, its sum stored, and SwiGLU; down with that
// sum as its residual; the next layer's QKV projection with the add + norm in front), launched one
// by one (with overlapping launches where the GPU has them, as the executor launches them) and
// chained in one cooperative launch with a grid barrier between two (decodeChain), and with the
// layer's decode attention before them, launched apart and as the chain's first step, at
// SmolLM2's and Llama-3.2-1B's shapes; each timed in a CUDA graph, as a decode step replays them
// (back-to-back launches from the host would time the host for kernels this short). `smoke`: one
// small layer (4 heads, 1 KV head) and chains of 2 and 3 blocks (the CPU emulation's cooperative
// launches hold at most 2048 threads). Returns the failures.
int chainBench(int reps, bool overlap, bool smoke) {
  struct Layer {
    const char *what;
    int64_t H, F, QKV, Hq, Hkv; // heads of 64
  };
  const std::vector<Layer> layers =
      smoke ? std::vector<Layer>{{"A smoke test's", 256, 512, 384, 4, 1}}
            : std::vector<Layer>{{"SmolLM2", 576, 1536, 960, 9, 3}, {"Llama-3.2-1B", 2048, 8192, 3072, 32, 8}};
  int failures = 0;
  for (const Layer &l : layers) {
    const WeightCopies wo(size_t(l.H * l.H) * 2, smoke), wgu(size_t(2 * l.F * l.H) * 2, smoke),
        wd(size_t(l.H * l.F) * 2, smoke), wqkv(size_t(l.QKV * l.H) * 2, smoke);
    std::vector<void *> buffers;
    auto buffer = [&](int64_t n) {
      void *p = nullptr;
      cudaMalloc(&p, size_t(n) * 2), cudaMemset(p, 0x3c, size_t(n) * 2);
      buffers.push_back(p);
      return p;
    };
    void *x0 = buffer(l.H), *r0 = buffer(l.H), *scale = buffer(l.H), *y1 = buffer(l.H), *h1 = buffer(l.H),
         *m = buffer(l.F), *y3 = buffer(l.H), *h2 = buffer(l.H), *qkv = buffer(l.QKV), *barrier = nullptr;
    cudaMalloc(&barrier, cu::decodeChainBarrierBytes()), cudaMemset(barrier, 0, cu::decodeChainBarrierBytes());
    cu::SmallLinearArgs ls[4];
    for (cu::SmallLinearArgs &a : ls)
      a.M = 1, a.K = l.H, a.normEpsilon = 1e-5f, a.overlapPrevious = overlap;
    ls[0].x = x0, ls[0].out = y1, ls[0].N = l.H;
    ls[1].x = y1, ls[1].out = m, ls[1].N = 2 * l.F, ls[1].swiglu = true;
    ls[1].normScale = scale, ls[1].normResidual = r0, ls[1].normSum = h1;
    ls[2].x = m, ls[2].out = y3, ls[2].N = l.H, ls[2].K = l.F, ls[2].residual = h1;
    ls[3].x = y3, ls[3].out = qkv, ls[3].N = l.QKV, ls[3].normScale = scale, ls[3].normResidual = h1;
    ls[3].normSum = h2;
    auto weigh = [&](int i) {
      ls[0].w = wo[i], ls[1].w = wgu[i], ls[2].w = wd[i], ls[3].w = wqkv[i];
    };
    const std::string activations[4] = {"none", "swiglu", "none", "none"};
    cudaStream_t stream = nullptr; // blocking: the timing events wait for it
    cudaStreamCreate(&stream);
    const double bytes = 2.0 * double(l.H * l.H + 2 * l.F * l.H + l.H * l.F + l.QKV * l.H);
    std::printf("%s layer's output projection, gate/up, down and next QKV (%.1f MB of weights)\n", l.what, bytes / 1e6);
    auto oneByOne = [&](int i) {
      weigh(i);
      for (int k = 0; k < 4; ++k)
        if (std::string err = cu::smallLinear(cu::Storage::BF16, ls[k], activations[k], stream); !err.empty())
          return err;
      return std::string();
    };
    const double apart = timeGraph(stream, oneByOne, reps);
    report(overlap ? "4 launches, overlapping" : "4 launches", apart, bytes);
    // The same launches, each persistent (the blocks the GPU holds, looping as the chain's do).
    for (cu::SmallLinearArgs &a : ls)
      a.blocks = -1;
    const double persistent = timeGraph(stream, oneByOne, reps);
    report(overlap ? "4 persistent launches, overlapping" : "4 persistent launches", persistent, bytes);
    for (cu::SmallLinearArgs &a : ls)
      a.blocks = 0;
    // The four linears chained in one launch (a chain ignores overlapPrevious), after `attention`
    // where given, with `blocks` (0: as many as the GPU holds).
    auto timeChain = [&](const cu::ChainStep *attention, int64_t blocks) {
      return timeGraph(
          stream,
          [&](int i) {
            weigh(i);
            std::vector<cu::ChainStep> steps;
            if (attention)
              steps.push_back(*attention);
            for (int k = 0; k < 4; ++k) {
              steps.emplace_back();
              steps.back().linear = ls[k], steps.back().activation = activations[k];
            }
            return cu::decodeChain(cu::Storage::BF16, steps.data(), int(steps.size()), blocks, barrier, stream);
          },
          reps);
    };
    // Chained, with as many blocks as the GPU holds (0), and with one per multiprocessor (fewer
    // to wait for at each barrier).
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    const std::vector<int64_t> chainBlocks = smoke ? std::vector<int64_t>{2, 3}
                                                   : std::vector<int64_t>{0, int64_t(prop.multiProcessorCount)};
    for (int64_t blocks : chainBlocks) {
      const double chained = timeChain(nullptr, blocks);
      const std::string how = smoke    ? "chained, " + std::to_string(blocks) + " blocks"
                              : blocks ? "chained, a block per SM"
                                       : "chained, the blocks the GPU holds";
      report(how.c_str(), chained, bytes);
      failures += chained < 0;
    }
    failures += (apart < 0) + (persistent < 0);
    // The layer's attention before them (one query over a cache of 576 of a 1536-token bound, as
    // decodeAttentionBench has it; its output is the output projection's x), launched apart and
    // as the chain's first step (LLMC_CUDA_CHAIN_ATTENTION).
    const int64_t D = 64, bound = smoke ? 256 : 1536, T = smoke ? 100 : 576;
    const int splits = cu::decodeAttentionSplits(bound);
    void *q = buffer(l.Hq * D), *kCache = buffer(bound * l.Hkv * D), *vCache = buffer(bound * l.Hkv * D);
    int64_t *keys = nullptr;
    void *workspace = nullptr;
    const size_t workspaceBytes = cu::decodeAttentionWorkspaceBytes(1, l.Hq, D, splits);
    cudaMalloc(&keys, sizeof(int64_t)), cudaMemcpy(keys, &T, sizeof T, cudaMemcpyHostToDevice);
    cudaMalloc(&workspace, workspaceBytes), cudaMemset(workspace, 0, workspaceBytes);
    cu::AttentionArgs att{};
    att.q = q, att.k = kCache, att.v = vCache, att.out = x0, att.B = 1, att.Hq = l.Hq, att.Hkv = l.Hkv, att.Sq = 1;
    att.Sk = bound, att.D = att.Dv = D, att.scale = 0.125f, att.causal = false, att.skOnDevice = keys;
    att.qs = {l.Hq * D, l.Hq * D, D};
    att.ks = att.vs = cu::HeadStrides{l.Hkv * D, l.Hkv * D, D}; // [length, batch 1, heads * D]
    att.overlapPrevious = overlap;
    const double cacheBytes = 2.0 * 2.0 * double(T * l.Hkv * D);
    const double layerApart = timeGraph(
        stream,
        [&](int i) {
          std::string err = cu::decodeAttention(cu::Storage::BF16, att, splits, workspace, stream);
          return err.empty() ? oneByOne(i) : err;
        },
        reps);
    report(overlap ? "attention + 4 launches, overlapping" : "attention + 4 launches", layerApart, bytes + cacheBytes);
    cu::ChainStep attention;
    attention.attention = true, attention.attentionArgs = att, attention.splits = splits;
    attention.workspace = workspace;
    const double layerChained = timeChain(&attention, smoke ? 2 : 0);
    report("chained layer, one launch", layerChained, bytes + cacheBytes);
    failures += (layerApart < 0) + (layerChained < 0);
    cudaStreamDestroy(stream);
    for (void *p : buffers)
      cudaFree(p);
    cudaFree(barrier), cudaFree(keys), cudaFree(workspace);
  }
  return failures;
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // each row out as it is measured: a crash keeps those before it
  int reps = 0;
  bool smoke = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else {
      std::printf("usage: llmc-cuda-kernel-bench [--reps N] [--smoke]\n");
      return 2;
    }
  }
  if (reps == 0)
    reps = smoke ? 1 : 200;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: the kernel benchmark is skipped\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  readHbmBandwidth(prop.name);
  std::printf("decode linears, bf16, M = 1, on %s (%d reps each; HBM shares of %.2f TB/s)\n", prop.name, reps,
              hbmBytesPerSecond / 1e12);
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasLtCreate failed\n");
    return 1;
  }
  const size_t workspaceBytes = 32u << 20;
  void *workspace = nullptr;
  cudaMalloc(&workspace, workspaceBytes);
  const Shape fullShapes[] = {{"qkv 2048 -> 3072", 2048, 3072, false, true},
                          {"o 2048 -> 2048", 2048, 2048, false, false},
                          {"gate/up 2048 -> 2x8192", 2048, 16384, true, true},
                          {"down 8192 -> 2048", 8192, 2048, false, false},
                          {"head 2048 -> 128256", 2048, 128256, false, false},
                          {"head (+ add, RMS norm) 2048 -> 128256", 2048, 128256, false, true},
                          // SmolLM2-135M's layer, whose decode step its launches bound, not its bytes
                          {"SmolLM2 qkv 576 -> 960", 576, 960, false, true},
                          {"SmolLM2 o 576 -> 576", 576, 576, false, false},
                          {"SmolLM2 gate/up 576 -> 2x1536", 576, 3072, true, true},
                          {"SmolLM2 down 1536 -> 576", 1536, 576, false, false}};
  // Each kind of row above (with and without the norm, SwiGLU, a K longer than N), small.
  const Shape smokeShapes[] = {{"qkv 256 -> 384", 256, 384, false, true},
                               {"gate/up 256 -> 2x512", 256, 1024, true, true},
                               {"down 512 -> 256", 512, 256, false, false}};
  std::vector<Shape> shapes(std::begin(fullShapes), std::end(fullShapes));
  if (smoke)
    shapes.assign(std::begin(smokeShapes), std::end(smokeShapes));
  int failures = 0;
  for (const Shape &s : shapes) {
    const int64_t nOut = s.swiglu ? s.N / 2 : s.N;
    const double bytes = 2.0 * double(s.K * s.N + s.K + nOut);
    const size_t weightBytes = size_t(s.K * s.N) * 2;
    const WeightCopies w(weightBytes, smoke);
    void *x = nullptr, *y = nullptr, *out = nullptr, *sum = nullptr;
    cudaMalloc(&x, size_t(s.K) * 2);
    cudaMalloc(&y, size_t(s.N) * 2);
    cudaMalloc(&out, size_t(nOut) * 2);
    cudaMalloc(&sum, size_t(s.K) * 2);
    cudaMemset(x, 0x3c, size_t(s.K) * 2);
    std::printf("  %s (%.1f MB of weights, %zu copies)%s\n", s.what, double(weightBytes) / 1e6, w.copies.size(),
                s.norm ? ", llmc's GEMV with the add + RMS norm in front" : "");
    cu::SmallLinearArgs a;
    a.x = x, a.w = w[0], a.out = out, a.M = 1, a.N = s.N, a.K = s.K, a.swiglu = s.swiglu;
    if (s.norm) { // as a decoder layer has it: add_rms_norm of x and the residual (y's first K), the sum stored
      cudaMemset(y, 0x3c, size_t(s.N) * 2);
      a.normScale = x, a.normEpsilon = 1e-5f; // any scale: the time is the same
      a.normResidual = y, a.normSum = sum;
    }
    // Times the GEMV as `a` says now, launched on `stream`, and reports it under `label`.
    auto timeGemv = [&](const std::string &label, cudaStream_t stream) {
      const double us = timeCalls(
          [&](int i) {
            a.w = w[i];
            return cu::smallLinear(cu::Storage::BF16, a, "none", stream);
          },
          reps);
      report(label.c_str(), us, bytes);
      failures += us < 0;
    };
    // Its choice of slices of K per column, then each choice it has.
    const int chosen = cu::smallLinearSlices(cu::Storage::BF16, a);
    for (int slices : {0, 1, 2, 4}) {
      a.slices = slices;
      timeGemv(slices == 0 ? "llmc GEMV [N, K] (" + std::to_string(chosen) + " chosen)"
                           : "  K in " + std::to_string(slices) + " slice" + (slices > 1 ? "s" : ""),
               nullptr);
    }
    a.slices = 0;
    // At most the blocks the GPU holds at once, each taking several groups of columns (the norm
    // staged once per block; LLMC_CUDA_GEMV_BLOCKS=resident in the executor).
    a.blocks = -1;
    timeGemv("  persistent (the blocks the GPU holds)", nullptr);
    a.blocks = 0;
    if (s.norm) { // the norm's inputs prepared by each warp rather than once per block
      a.stageNorm = false;
      timeGemv("  norm per warp", nullptr);
      a.stageNorm = true;
    }
    if (prop.major >= 9) { // back to back with programmatic dependent launch, as the executor runs it
      a.overlapPrevious = true;
      cudaStream_t stream = nullptr; // a stream of our own (blocking: the timing events wait for it)
      cudaStreamCreate(&stream);
      timeGemv("llmc GEMV, overlapping launches", stream);
      a.blocks = -1;
      timeGemv("  persistent, overlapping launches", stream);
      a.blocks = 0;
      // Replayed from a CUDA graph, as a decode step runs it: for the smallest shapes the host's
      // launches above take longer than the kernels.
      const double us = timeGraph(
          stream,
          [&](int i) {
            a.w = w[i];
            return cu::smallLinear(cu::Storage::BF16, a, "none", stream);
          },
          reps);
      report("llmc GEMV, overlapping, in a graph", us, bytes);
      failures += us < 0;
      cudaStreamDestroy(stream);
      a.overlapPrevious = false;
    }
    for (bool transB : {true, false}) {
      cu::LinearSpec spec;
      spec.storage = cu::Storage::BF16, spec.maxM = 1, spec.N = s.N, spec.K = s.K, spec.transB = transB;
      std::unique_ptr<cu::LtLinear> linear;
      if (std::string err = cu::LtLinear::create(lt, spec, workspaceBytes, linear); !err.empty()) {
        std::printf("    cuBLASLt: %s\n", err.c_str());
        ++failures;
        continue;
      }
      // cuBLASLt leaves SwiGLU to our epilogue kernel: timed with it, as the executor runs it.
      const double us = timeCalls(
          [&](int i) {
            std::string err = linear->run(x, w[i], nullptr, y, 1, workspace, nullptr);
            if (err.empty() && s.swiglu)
              err = cu::linearEpilogue(cu::Storage::BF16, y, out, nullptr, nullptr, 1, nOut, "swiglu", true, nullptr);
            return err;
          },
          reps);
      report(transB ? "cuBLASLt [N, K]" : "cuBLASLt [K, N]", us, bytes);
      failures += us < 0;
    }
    cudaFree(x), cudaFree(y), cudaFree(out), cudaFree(sum);
  }
  failures += promptBench(lt, workspace, workspaceBytes, std::max(1, reps / 10), smoke);
  failures += expertBench(std::max(1, reps / 10), smoke, hbmBytesPerSecond);
  failures += latentBench(reps, smoke, prop.multiProcessorCount, workspaceBytes, hbmBytesPerSecond);
  cudaFree(workspace);
  cublasLtDestroy(lt);
  failures += qkvSplitBench(reps, false, smoke);
  if (prop.major >= 9)
    failures += qkvSplitBench(reps, true, smoke);
  failures += decodeAttentionBench(reps, smoke);
  cu::decodeChainSetup();
  failures += chainBench(reps, prop.major >= 9, smoke);
  failures += stepCostBench(smoke);
  if (failures)
    std::printf("%d rows failed\n", failures);
  return failures ? 1 : 0;
}
