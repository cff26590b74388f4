// Every CUDA kernel against the CPU kernel it stands for (the CPU executor is the reference), in
// f32, f16 and bf16 storage, on random data rounded to the storage type first so that both sides
// see the same inputs (the kernels of doubles: NumericTypesTest.cpp). Built as llmc-cuda-tests, it
// needs a GPU (CudaTestMain.cpp); built as llmc-cuda-emulated-tests (LLMC_CUDA_EMULATION), the same
// tests run the kernels on the CPU emulation of test/cuda/emulation, every test but the two that
// need NVRTC's cubins or cuBLASLt.
#include "CudaTestUtil.h"
#include "Einsum.h"
#include "FusedElementwiseCuda.h"
#include "LtLinear.h"
#include "Nvrtc.h"

#include <cublasLt.h>

#include <functional>

using namespace llmc::rt;
using namespace llmc::rt::cudatest;

namespace {

// Lets the tensor-core attention use the shared memory a block may opt in to; returns those bytes.
size_t allowFlashSharedMemory() {
  int device = 0, optIn = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  cu::flashAttentionSetup(size_t(optIn));
  return size_t(optIn);
}

// add_rms_norm and add_layer_norm against the CPU's, with and without a residual, on rows of 1000
// columns and of 13000 (more than shared memory stages: read again for each pass).
TEST(Cuda, AddNormsMatchTheCpu) {
  const int64_t rows = 5;
  for (int64_t cols : {1000, 13000})
    for (cu::Storage s : kStorages)
      for (bool layer : {false, true})
        for (bool withResidual : {false, true}) {
          Buf<float> x(DType::F32, {rows, cols}, rounded(randomFloats(rows * cols, 1), s)),
              r(DType::F32, {rows, cols}, withResidual ? rounded(randomFloats(rows * cols, 2), s) : std::vector<float>(rows * cols)),
              scale(DType::F32, {cols}, rounded(randomFloats(cols, 3), s)), bias(DType::F32, {cols}, rounded(randomFloats(cols, 4), s)),
              want(DType::F32, {rows, cols}), wantSum(DType::F32, {rows, cols});
          std::vector<TensorRef> ins = {x.ref(), r.ref(), scale.ref()};
          if (layer)
            ins.push_back(bias.ref());
          ASSERT_EQ(call(layer ? "add_layer_norm" : "add_rms_norm", attrs({floatAttr("epsilon", 1e-5)}), ins,
                         {want.ref(), wantSum.ref()}),
                    "");
          auto dx = upload(x.data, s), dr = upload(r.data, s), dscale = upload(scale.data, s), dbias = upload(bias.data, s);
          Device out(size_t(rows * cols) * cu::storageBytes(s)), sum(size_t(rows * cols) * cu::storageBytes(s));
          const int type = int(storageDType(s));
          // (the RMS norms without their sum: a long row reads x and the residual again)
          ASSERT_EQ(cu::addNorm(type, layer, dx->p, withResidual ? dr->p : nullptr, dscale->p, layer ? dbias->p : nullptr,
                                out.p, layer ? sum.p : nullptr, rows, cols, 1e-5, nullptr),
                    "");
          const std::string what =
              std::string(layer ? "add_layer_norm " : "add_rms_norm ") + name(s) + " of " + std::to_string(cols);
          expectClose(download(out, size_t(rows * cols), s), want.data, tolerance(s), what);
          if (layer)
            expectClose(download(sum, size_t(rows * cols), s), wantSum.data, tolerance(s), what + " sum");
          if (!withResidual)
            continue;
          // In place: the sum over x, as an arena that reuses x's bytes for it would have it.
          auto inPlace = upload(x.data, s);
          ASSERT_EQ(cu::addNorm(type, layer, inPlace->p, dr->p, dscale->p, layer ? dbias->p : nullptr, out.p, inPlace->p,
                                rows, cols, 1e-5, nullptr),
                    "");
          expectClose(download(out, size_t(rows * cols), s), want.data, tolerance(s), what + " in place");
          expectClose(download(*inPlace, size_t(rows * cols), s), wantSum.data, tolerance(s), what + " in place, sum");
        }
}

// softmax and log_softmax against the CPU's; log_softmax also where exp(x - max) is 0 in f32 (a
// spread of 200), which it must not take the logarithm of; rows longer than shared memory stages.
TEST(Cuda, SoftmaxMatchesTheCpu) {
  const int64_t rows = 7;
  for (int64_t cols : {333, 13000})
    for (cu::Storage s : kStorages)
      for (const char *op : {"softmax", "log_softmax"})
        for (float spread : {8.0f, 100.0f}) {
          Buf<float> x(DType::F32, {rows, cols}, rounded(randomFloats(rows * cols, 5, -spread, spread), s)),
              want(DType::F32, {rows, cols});
          ASSERT_EQ(call(op, attrs({intAttr("axis", -1)}), {x.ref()}, {want.ref()}), "");
          auto dx = upload(x.data, s);
          Device y(size_t(rows * cols) * cu::storageBytes(s));
          const bool log = std::string(op) == "log_softmax";
          ASSERT_EQ(cu::softmax(int(storageDType(s)), dx->p, y.p, rows, cols, nullptr, log), "");
          // log_softmax's values reach -200: the storage's relative rounding of them.
          const float tol = log ? tolerance(s) * spread * 2 : tolerance(s);
          expectClose(download(y, size_t(rows * cols), s), want.data, tol,
                      std::string(op) + " " + name(s) + " of " + std::to_string(cols));
        }
}

// softmax and log_softmax along the middle axis of [3, 5, 4] (a row's elements 4 apart).
TEST(Cuda, SoftmaxAlongAnInnerAxisMatchesTheCpu) {
  for (cu::Storage s : kStorages)
    for (const char *op : {"softmax", "log_softmax"}) {
      Buf<float> x(DType::F32, {3, 5, 4}, rounded(randomFloats(60, 6, -4, 4), s)), want(DType::F32, {3, 5, 4});
      ASSERT_EQ(call(op, attrs({intAttr("axis", 1)}), {x.ref()}, {want.ref()}), "");
      auto dx = upload(x.data, s);
      Device y(60 * cu::storageBytes(s));
      ASSERT_EQ(cu::softmax(int(storageDType(s)), dx->p, y.p, 12, 5, nullptr, std::string(op) == "log_softmax", 4), "");
      expectClose(download(y, 60, s), want.data, tolerance(s) * 4, std::string(op) + " along axis 1 " + name(s));
    }
}

TEST(Cuda, RotaryMatchesTheCpu) {
  const int64_t B = 2, H = 3, S = 5, D = 16, table = 40;
  for (cu::Storage s : kStorages)
    for (bool interleaved : {false, true})
      for (bool flat : {false, true})
        for (int64_t rot : {D, D / 2}) {
          std::vector<int64_t> shape = flat ? std::vector<int64_t>{B, S, H * D} : std::vector<int64_t>{B, H, S, D};
          Buf<float> x(DType::F32, shape, rounded(randomFloats(B * H * S * D, 6), s)), want(DType::F32, shape),
              cosT(DType::F32, {table, rot / 2}, rounded(randomFloats(table * rot / 2, 7), s)),
              sinT(DType::F32, {table, rot / 2}, rounded(randomFloats(table * rot / 2, 8), s));
          Buf<int64_t> pos(DType::I64, {B, S}, {3, 9, 0, 39, 12, 1, 2, 3, 4, 5});
          AttrList a = attrs({intAttr("interleaved", interleaved), intAttr("rotary_embedding_dim", rot)});
          if (flat)
            a.add(intAttr("num_heads", H));
          ASSERT_EQ(call("rotary", a, {x.ref(), cosT.ref(), sinT.ref(), pos.ref()}, {want.ref()}), "");
          auto dx = upload(x.data, s), dcos = upload(cosT.data, s), dsin = upload(sinT.data, s), dpos = uploadRaw(pos.data);
          auto error = uploadRaw(std::vector<int>{0});
          Device y(size_t(B * H * S * D) * cu::storageBytes(s));
          cu::RotaryArgs r;
          r.x = dx->p, r.y.base = y.p, r.cos = dcos->p, r.sin = dsin->p, r.tableRows = table;
          r.positions = dpos->as<int64_t>(), r.B = B, r.H = H, r.S = S, r.D = D, r.rotaryDim = rot;
          r.interleaved = interleaved, r.flat = flat, r.error = error->as<int>();
          ASSERT_EQ(cu::rotary(s, r, nullptr), "");
          expectClose(download(y, size_t(B * H * S * D), s), want.data, tolerance(s), std::string("rotary ") + name(s));
          int flag = 1;
          cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
          EXPECT_EQ(flag, 0);
        }
}

// Without position ids: tables [B, S, rot / 2], one row per token (llmc-raise-attention's key
// rotations for a cache), on [B, H, S, D] or on rows [B, S, H * D] (where llmc-fold-transposes
// puts the keys of a KV-cache export). Also tables [1, S, rot / 2] that every batch reads
// (sharedTables: tables made from one row of positions beside a larger batch).
TEST(Cuda, RotaryByRowMatchesTheCpu) {
  const int64_t B = 2, H = 3, S = 5, D = 16;
  for (cu::Storage s : kStorages)
    for (bool flat : {false, true})
      for (int64_t tables : {B, int64_t(1)}) {
        std::vector<int64_t> shape = flat ? std::vector<int64_t>{B, S, H * D} : std::vector<int64_t>{B, H, S, D};
        Buf<float> x(DType::F32, shape, rounded(randomFloats(B * H * S * D, 60), s)), want(DType::F32, shape),
            cosT(DType::F32, {tables, S, D / 2}, rounded(randomFloats(tables * S * D / 2, 61), s)),
            sinT(DType::F32, {tables, S, D / 2}, rounded(randomFloats(tables * S * D / 2, 62), s));
        Buf<int64_t> none(DType::I64, {0});
        AttrList a = attrs({intAttr("rotary_embedding_dim", D)});
        if (flat)
          a.add(intAttr("num_heads", H));
        ASSERT_EQ(call("rotary", a, {x.ref(), cosT.ref(), sinT.ref(), none.ref()}, {want.ref()}), "");
        auto dx = upload(x.data, s), dcos = upload(cosT.data, s), dsin = upload(sinT.data, s);
        auto error = uploadRaw(std::vector<int>{0});
        Device y(size_t(B * H * S * D) * cu::storageBytes(s));
        cu::RotaryArgs r;
        r.x = dx->p, r.y.base = y.p, r.cos = dcos->p, r.sin = dsin->p, r.tableRows = tables * S;
        r.sharedTables = tables == 1;
        r.B = B, r.H = H, r.S = S, r.D = D, r.rotaryDim = D, r.flat = flat, r.error = error->as<int>();
        ASSERT_EQ(cu::rotary(s, r, nullptr), "");
        expectClose(download(y, size_t(B * H * S * D), s), want.data, tolerance(s),
                    std::string("rotary by row ") + (flat ? "on rows " : "") + (tables == 1 ? "one table " : "") + name(s));
        if (!flat) { // rows placed by batch and token: only rows [B, S, H * D]
          r.y.batchStride = H * D, r.y.tokenStride = B * H * D;
          EXPECT_NE(cu::rotary(s, r, nullptr), "");
          continue;
        }
        // Written into a cache after 7 rows of B * H * D elements, the row count read from the
        // device (a key rotation writing a linked cache's new rows): the same values there, and
        // the rows before untouched.
        const int64_t past = 7, row = B * H * D;
        Device cache(size_t((past + S) * row) * cu::storageBytes(s));
        cudaMemset(cache.p, 0, cache.bytes);
        auto rows = uploadRaw(std::vector<int64_t>{past});
        r.y = {cache.p, rows->as<int64_t>(), row};
        ASSERT_EQ(cu::rotary(s, r, nullptr), "");
        const std::vector<float> all = download(cache, size_t((past + S) * row), s);
        expectClose(std::vector<float>(all.begin() + past * row, all.end()), want.data, tolerance(s),
                    std::string("rotary into a cache's rows ") + name(s));
        expectClose(std::vector<float>(all.begin(), all.begin() + past * row), std::vector<float>(size_t(past * row), 0.0f),
                    0.0f, std::string("rotary into a cache's rows: the rows before ") + name(s));

        // The keys as the middle piece of wider rows [B, S, Q + H * D + V] (a merged QKV
        // projection), split and rotated in one launch: queries and values copied out, keys
        // rotated into the cache, against the CPU's split and rotary.
        const int64_t Q = 2 * D, V = H * D, W = Q + H * D + V;
        Buf<float> qkv(DType::F32, {B, S, W}, rounded(randomFloats(B * S * W, 63), s)), q(DType::F32, {B, S, Q}),
            k(DType::F32, {B, S, H * D}), v(DType::F32, {B, S, V}), kWant(DType::F32, {B, S, H * D});
        ASSERT_EQ(call("split", attrs({intAttr("axis", 2)}), {qkv.ref()}, {q.ref(), k.ref(), v.ref()}), "");
        ASSERT_EQ(call("rotary", a, {k.ref(), cosT.ref(), sinT.ref(), none.ref()}, {kWant.ref()}), "");
        auto dqkv = upload(qkv.data, s);
        Device dq(size_t(B * S * Q) * cu::storageBytes(s)), dv(size_t(B * S * V) * cu::storageBytes(s));
        cudaMemset(cache.p, 0, cache.bytes);
        cu::StridedCopies pieces;
        const int64_t offsets[2] = {0, Q + H * D}, widths[2] = {Q, V};
        void *outs[2] = {dq.p, dv.p};
        for (int i = 0; i < 2; ++i) {
          cu::StridedCopy &c = pieces.copy[i];
          c.rank = 3, c.elemBytes = int(cu::storageBytes(s)), c.srcBase = offsets[i];
          const int64_t dims[3] = {B, S, widths[i]}, src[3] = {S * W, W, 1}, dst[3] = {S * widths[i], widths[i], 1};
          for (int d = 0; d < 3; ++d)
            c.dims[d] = dims[d], c.src[d] = src[d], c.dst[d] = dst[d];
          pieces.src[i] = dqkv->p, pieces.dst[i] = outs[i];
        }
        pieces.count = 2;
        r.x = static_cast<const char *>(dqkv->p) + Q * cu::storageBytes(s), r.xRowStride = W;
        ASSERT_EQ(cu::stridedCopiesAndRotary(s, pieces, r, nullptr), "");
        expectClose(download(dq, size_t(B * S * Q), s), q.data, 0.0f, std::string("split with rotary: queries ") + name(s));
        expectClose(download(dv, size_t(B * S * V), s), v.data, 0.0f, std::string("split with rotary: values ") + name(s));
        const std::vector<float> keys = download(cache, size_t((past + S) * row), s);
        expectClose(std::vector<float>(keys.begin() + past * row, keys.end()), kWant.data, tolerance(s),
                    std::string("split with rotary: keys into the cache ") + name(s));

        // A batch's rows stored token-major ([past + S, B, H * D], where a transpose of [B, S, ...]
        // to [S, B, ...] puts them): row (b, s) at b * H * D + s * B * H * D after the rows there,
        // by the rotary kernel and by the split that rotates its keys piece.
        std::vector<float> tokenMajor(size_t(S * row));
        for (int64_t b = 0; b < B; ++b)
          for (int64_t t = 0; t < S; ++t)
            for (int64_t e = 0; e < H * D; ++e)
              tokenMajor[size_t((t * B + b) * H * D + e)] = kWant.data[size_t((b * S + t) * H * D + e)];
        for (bool bySplit : {false, true}) {
          cudaMemset(cache.p, 0, cache.bytes);
          r.y = {cache.p, rows->as<int64_t>(), row, H * D, B * H * D};
          const std::string what = std::string(bySplit ? "split with rotary" : "rotary") + ": a batch's keys token-major ";
          ASSERT_EQ(bySplit ? cu::stridedCopiesAndRotary(s, pieces, r, nullptr) : cu::rotary(s, r, nullptr), "");
          const std::vector<float> placed = download(cache, size_t((past + S) * row), s);
          expectClose(std::vector<float>(placed.begin() + past * row, placed.end()), tokenMajor, tolerance(s), what + name(s));
          expectClose(std::vector<float>(placed.begin(), placed.begin() + past * row),
                      std::vector<float>(size_t(past * row), 0.0f), 0.0f, what + "(the rows before) " + name(s));
        }
      }
}

TEST(Cuda, GatherRowsMatchesTheCpuAndFlagsBadIds) {
  const int64_t rows = 50, width = 24;
  for (cu::Storage s : kStorages) {
    Buf<float> table(DType::F32, {rows, width}, rounded(randomFloats(rows * width, 9), s)), want(DType::F32, {2, 3, width});
    Buf<int64_t> ids(DType::I64, {2, 3}, {0, 49, 7, -1, 3, 3});
    ASSERT_EQ(call("gather", attrs({intAttr("axis", 0)}), {table.ref(), ids.ref()}, {want.ref()}), "");
    auto dt = upload(table.data, s), di = uploadRaw(ids.data), error = uploadRaw(std::vector<int>{0});
    Device out(size_t(6 * width) * cu::storageBytes(s));
    ASSERT_EQ(cu::gatherRows(s, dt->p, rows, width, di->as<int64_t>(), 6, out.p, error->as<int>(), nullptr), "");
    expectClose(download(out, size_t(6 * width), s), want.data, 0.0f, std::string("gather ") + name(s));
    auto bad = uploadRaw(std::vector<int64_t>{50});
    ASSERT_EQ(cu::gatherRows(s, dt->p, rows, width, bad->as<int64_t>(), 1, out.p, error->as<int>(), nullptr), "");
    int flag = 0;
    cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
    EXPECT_EQ(flag, 1);
  }
}

// A decode attention's cache as a graph replayed for every cache length reads it: `a` gets the
// key count `keys` on the device and a launch bound of `bound` rows, of which those past the
// count are NaN (what a row not yet written may hold: the kernel may load, not use them). The
// uploads live as long as the result.
struct CacheAtBound {
  std::unique_ptr<Device> count, k, v;
};
CacheAtBound cacheAtBound(cu::AttentionArgs &a, const std::vector<float> &k, const std::vector<float> &v, int64_t keys,
                          int64_t bound, int64_t rowElements, cu::Storage s) {
  CacheAtBound c;
  c.count = uploadRaw(std::vector<int64_t>{keys});
  a.Sk = bound, a.skOnDevice = static_cast<const int64_t *>(c.count->p);
  std::vector<float> kBound(size_t(bound * rowElements), NAN), vBound(kBound.size(), NAN);
  std::copy(k.begin(), k.end(), kBound.begin());
  std::copy(v.begin(), v.end(), vBound.begin());
  c.k = upload(kBound, s), c.v = upload(vBound, s);
  a.k = c.k->p, a.v = c.v->p;
  return c;
}

// Decode steps: one query over T keys split across blocks, in the layouts a decoder's plan has: a
// length-major cache with a bool keep-mask; the same with the query rotated (tables [1, 1, D]) and
// an additive mask; rotated, with the attention_mask input (i64) as the mask, as SmolLM2's KV plan
// has it (llmc-raise-attention-mask); keys [B, T, Hkv * D] without a mask, and values one element
// off 16 bytes; a length-major cache with a bias per head (ALiBi's, MPT's and Bloom's mask).
// Groups of 4 and of 3 query heads per key/value head (Llama-1B's and SmolLM2's), which the
// tiled kernel takes in one block each, of 8 (in two blocks of 4), and one block per head.
TEST(Cuda, DecodeAttentionMatchesFusedAttention) {
  const int64_t B = 2, Hkv = 2, D = 64, Dv = 64;
  for (int64_t Hq : {8, 6, 16})
  for (cu::Storage s : kStorages)
    for (int64_t T : {1, 37, 700})
      for (const char *layout :
           {"time-major-keep", "time-major-rotary-additive", "time-major-rotary-input-mask", "time-major-alibi", "3d"}) {
        if (Hq == 16 && (s != cu::Storage::BF16 || T == 1)) // two blocks per group: bf16 is enough
          continue;
        const std::string l = layout;
        const bool timeMajor = l != "3d", inputMask = l == "time-major-rotary-input-mask",
                   rotary = l == "time-major-rotary-additive" || inputMask, keepMask = l == "time-major-keep",
                   alibi = l == "time-major-alibi";
        const std::vector<int64_t> kvShape =
            timeMajor ? std::vector<int64_t>{T, B, Hkv * D} : std::vector<int64_t>{B, T, Hkv * D};
        Buf<float> q(DType::F32, {B, 1, Hq * D}, rounded(randomFloats(B * Hq * D, 12), s)),
            k(DType::F32, kvShape, rounded(randomFloats(T * B * Hkv * D, 13), s)),
            v(DType::F32, kvShape, rounded(randomFloats(T * B * Hkv * Dv, 14), s)), want(DType::F32, {B, 1, Hq * Dv}),
            additive(DType::F32, {B, 1, 1, T}), cosT(DType::F32, {1, 1, D}, rounded(randomFloats(D, 15), s)),
            sinT(DType::F32, {1, 1, D}, rounded(randomFloats(D, 16), s)), none(DType::F32, {0}),
            bias(DType::F32, {B, Hq, 1, T});
        Buf<uint8_t> keep(DType::Bool, {B, 1, 1, T});
        Buf<int64_t> attentionMask(DType::I64, {B, 1, 1, T});
        for (int64_t i = 0; i < B * T; ++i) {
          keep.data[size_t(i)] = i % 5 != 2; // a few masked keys (never all: see below)
          additive.data[size_t(i)] = i % 7 == 3 ? -INFINITY : 0.0f;
          attentionMask.data[size_t(i)] = i % T < 3 && T > 3 ? 0 : 1; // left padding
        }
        additive.data[0] = 0.0f; // T = 1: keep the one key
        for (int64_t b = 0; b < B; ++b) // a slope per head over the keys' distances, a key of each row hidden
          for (int64_t h = 0; h < Hq; ++h)
            for (int64_t t = 0; t < T; ++t)
              bias.data[size_t((b * Hq + h) * T + t)] =
                  t == 1 + b ? -INFINITY : -std::ldexp(1.0f, -int(h % 8) - 1) * float(T - 1 - t);
        const float scale = 0.125f;
        ASSERT_EQ(call("fused_attention",
                       attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", scale),
                              intAttr("kv_time_major", timeMajor), intAttr("rotate_keys", 0)}),
                       {q.ref(), k.ref(), v.ref(),
                        keepMask    ? keep.ref()
                        : inputMask ? attentionMask.ref()
                        : rotary    ? additive.ref()
                        : alibi     ? bias.ref()
                                    : none.ref(),
                        rotary ? cosT.ref() : none.ref(), rotary ? sinT.ref() : none.ref()},
                       {want.ref()}),
                  "");
        std::vector<float> valuesOffByOne = v.data;
        valuesOffByOne.insert(valuesOffByOne.begin(), 0.0f);
        auto dq = upload(q.data, s), dk = upload(k.data, s), dv = upload(timeMajor ? v.data : valuesOffByOne, s),
             dkeep = uploadRaw(keep.data),
             dadd = upload(additive.data, s), dcos = upload(cosT.data, s), dsin = upload(sinT.data, s),
             dinput = uploadRaw(attentionMask.data), dbias = upload(bias.data, s);
        Device out(size_t(B * Hq * Dv) * cu::storageBytes(s));
        cu::AttentionArgs a;
        a.B = B, a.Hq = Hq, a.Hkv = Hkv, a.Sq = 1, a.Sk = T, a.D = D, a.Dv = Dv, a.scale = scale, a.causal = false;
        a.q = dq->p, a.k = dk->p, a.out = out.p;
        a.v = static_cast<char *>(dv->p) + (timeMajor ? 0 : cu::storageBytes(s));
        a.qs = {Hq * D, Hq * D, D};
        a.ks = a.vs = timeMajor ? cu::HeadStrides{Hkv * D, B * Hkv * D, D} : cu::HeadStrides{T * Hkv * D, Hkv * D, D};
        if (keepMask || rotary) {
          a.mask = keepMask ? dkeep->p : inputMask ? dinput->p : dadd->p;
          a.maskType = keepMask    ? cu::AttentionArgs::Mask::Bool
                       : inputMask ? cu::AttentionArgs::Mask::Int64
                                   : cu::AttentionArgs::Mask::Additive;
          a.maskStrides[0] = T, a.maskStrides[3] = 1;
        }
        if (alibi) {
          a.mask = dbias->p, a.maskType = cu::AttentionArgs::Mask::Additive;
          a.maskStrides[0] = Hq * T, a.maskStrides[1] = T, a.maskStrides[3] = 1;
        }
        if (rotary)
          a.cos = dcos->p, a.sin = dsin->p;
        // Both kernels (the tiled one takes every layout here but the values off 16 bytes; with the
        // heads that share keys in one block, and one block per head), with the splits chosen from
        // T and with one split per head (several tiles of keys each).
        for (const char *kernel : {"tiled", "tiled, one head per block", "plain"})
          for (int splits : {cu::decodeAttentionSplits(T), 1}) {
            Device ws(cu::decodeAttentionWorkspaceBytes(B, Hq, Dv, splits));
            cudaMemset(ws.p, 0, ws.bytes);
            a.plainDecode = std::string(kernel) == "plain";
            a.oneHeadPerBlock = std::string(kernel) == "tiled, one head per block";
            ASSERT_EQ(cu::decodeAttention(s, a, splits, ws.p, nullptr), "");
            expectClose(download(out, size_t(B * Hq * Dv), s), want.data, tolerance(s),
                        std::string("decode attention (") + kernel + ") Hq=" + std::to_string(Hq) + " " + layout + " " +
                            name(s) + " T=" + std::to_string(T) + " splits=" + std::to_string(splits));
          }
        a.plainDecode = a.oneHeadPerBlock = false;
        if (!timeMajor)
          continue;
        // The key count read from the device, the launch sized for a longer cache (a graph
        // replayed for every cache length): the same result.
        const CacheAtBound cache = cacheAtBound(a, k.data, v.data, T, 1536, B * Hkv * D, s);
        if (inputMask) // a row per sequence: its stride is the key count, not what a capture saw
          a.maskRowsPerBatch = 1, a.maskStrides[0] = 1;
        if (alibi) // a row per sequence and head
          a.maskRowsPerBatch = Hq, a.maskRowsPerHead = 1, a.maskStrides[0] = a.maskStrides[1] = 1;
        const int boundSplits = cu::decodeAttentionSplits(a.Sk);
        Device boundWs(cu::decodeAttentionWorkspaceBytes(B, Hq, Dv, boundSplits));
        cudaMemset(boundWs.p, 0, boundWs.bytes);
        for (int launch = 0; launch < 2; ++launch) { // the second finds the counters as the first left them
          // The second also has its blocks prefetch bytes to L2 (a later kernel's weight: here
          // the keys), which changes nothing it computes.
          a.prefetchL2 = launch ? dk->p : nullptr, a.prefetchL2Bytes = launch ? k.data.size() * cu::storageBytes(s) : 0;
          cudaMemset(out.p, 0, size_t(B * Hq * Dv) * cu::storageBytes(s));
          ASSERT_EQ(cu::decodeAttention(s, a, boundSplits, boundWs.p, nullptr), "");
          expectClose(download(out, size_t(B * Hq * Dv), s), want.data, tolerance(s),
                      std::string("decode attention, key count on the device, ") + layout + " " + name(s) +
                          " T=" + std::to_string(T) + " launch " + std::to_string(launch));
        }
      }
}

// Rotation tables of D / 2 columns that both halves of a head share (AttentionArgs::halfTables,
// what the executor passes for a concatenation of one table with itself): every attention
// kernel gives what it gives with the concatenated D-column tables, to the last bit: the plain
// kernel (query and keys rotated), the tensor-core one (16-bit storage) and the decode kernel
// (the query; its key count read on the device).
TEST(Cuda, AttentionWithHalfTablesMatchesFullTables) {
  const int64_t B = 1, Hq = 4, Hkv = 2, S = 24, D = 64;
  for (cu::Storage s : kStorages) {
    const std::vector<float> cosHalf = rounded(randomFloats(S * D / 2, 80), s), sinHalf = rounded(randomFloats(S * D / 2, 81), s);
    std::vector<float> cosFull, sinFull; // each row: its half twice
    for (int64_t i = 0; i < S; ++i)
      for (int twice = 0; twice < 2; ++twice) {
        cosFull.insert(cosFull.end(), cosHalf.begin() + i * D / 2, cosHalf.begin() + (i + 1) * D / 2);
        sinFull.insert(sinFull.end(), sinHalf.begin() + i * D / 2, sinHalf.begin() + (i + 1) * D / 2);
      }
    auto dq = upload(rounded(randomFloats(B * S * Hq * D, 82), s), s), dk = upload(rounded(randomFloats(B * S * Hkv * D, 83), s), s),
         dv = upload(rounded(randomFloats(B * S * Hkv * D, 84), s), s), dcosF = upload(cosFull, s),
         dsinF = upload(sinFull, s), dcosH = upload(cosHalf, s), dsinH = upload(sinHalf, s);
    Device full(size_t(B * S * Hq * D) * cu::storageBytes(s)), half(full.bytes);
    cu::AttentionArgs a;
    a.B = B, a.Hq = Hq, a.Hkv = Hkv, a.Sq = S, a.Sk = S, a.D = D, a.Dv = D, a.scale = 0.125f, a.causal = true;
    a.q = dq->p, a.k = dk->p, a.v = dv->p, a.qs = {S * Hq * D, Hq * D, D}, a.ks = a.vs = {S * Hkv * D, Hkv * D, D};
    a.rotateKeys = true;
    auto both = [&](const std::string &what, const std::function<std::string()> &launch) {
      a.cos = dcosF->p, a.sin = dsinF->p, a.halfTables = false, a.out = full.p;
      ASSERT_EQ(launch(), "") << what;
      a.cos = dcosH->p, a.sin = dsinH->p, a.halfTables = true, a.out = half.p;
      ASSERT_EQ(launch(), "") << what;
      expectClose(download(half, size_t(B * a.Sq * Hq * D), s), download(full, size_t(B * a.Sq * Hq * D), s), 0.0f,
                  what + " with half tables " + name(s));
    };
    both("attention", [&] { return cu::attention(s, a, nullptr); });
    allowFlashSharedMemory();
    if (s != cu::Storage::F32)
      both("flash attention", [&] { return cu::flashAttention(s, a, nullptr); });
    // One query (the last position's tables: row 0 of tables that are one row long), over the keys.
    a.Sq = 1, a.rotateKeys = false, a.causal = false;
    auto keys = uploadRaw(std::vector<int64_t>{S});
    a.skOnDevice = static_cast<const int64_t *>(keys->p);
    const int splits = cu::decodeAttentionSplits(S);
    Device ws(cu::decodeAttentionWorkspaceBytes(B, Hq, D, splits));
    cudaMemset(ws.p, 0, ws.bytes);
    both("decode attention", [&] { return cu::decodeAttention(s, a, splits, ws.p, nullptr); });
  }
}

#ifndef LLMC_CUDA_EMULATION // NVRTC's cubins and cuBLASLt need the GPU: the emulation has neither
// The NVRTC-generated fused_elementwise kernel, run on the device, against the CPU kernel on the
// same program: where(mask, gelu(x) * 0.5 + y, -inf) over broadcast inputs.
TEST(Cuda, GeneratedFusedElementwiseMatchesTheCpu) {
  int device = 0;
  cudaDeviceProp props{};
  ASSERT_EQ(cudaGetDeviceProperties(&props, device), cudaSuccess);
  const std::string arch = "sm_" + std::to_string(props.major * 10 + props.minor) + (props.major == 9 ? "a" : "");
  AttrList a = attrs({stringAttr("ops", "gelu;constant;mul;add;constant;where"),
                      intsAttr("operands", {1, -1, -1, -1, -1, -1, 3, 4, -1, 5, 2, -1, -1, -1, -1, 0, 6, 7}),
                      intsAttr("results", {8})});
  Attr params;
  params.name = "params";
  params.kind = Attr::Kind::Floats;
  params.floats = {0, 0, 0.5, 0, 0, 0, 0, 0, -INFINITY, 0, 0, 0};
  a.add(params);
  std::vector<fused::Instruction> program;
  std::vector<int> results;
  ASSERT_EQ(fused::parseProgram(a, 3, 1, program, results), "");
  const int64_t R = 4, C = 300;
  Buf<uint8_t> mask(DType::Bool, {R, 1});
  mask.data = {1, 0, 1, 1};
  Buf<float> x(DType::F32, {R, C}, randomFloats(R * C, 15)), y(DType::F32, {C}, randomFloats(C, 16)), want(DType::F32, {R, C});
  ASSERT_EQ(call("fused_elementwise", a, {mask.ref(), x.ref(), y.ref()}, {want.ref()}), "");
  std::string error;
  const std::string source = cu::fusedElementwiseSource(program, results, {DType::Bool, DType::F32, DType::F32},
                                                         {DType::F32}, "fused_test", error);
  ASSERT_EQ(error, "");
  std::vector<char> cubin;
  ASSERT_EQ(cu::compileToCubin(source, "fused_test", arch, cubin), "");
  cudaLibrary_t library;
  ASSERT_EQ(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), cudaSuccess);
  cudaKernel_t kernel;
  ASSERT_EQ(cudaLibraryGetKernel(&kernel, library, "fused_test"), cudaSuccess);
  auto dm = uploadRaw(mask.data), dx = uploadRaw(x.data), dy = uploadRaw(y.data);
  Device out(size_t(R * C) * 4);
  cu::FusedShape shape{};
  shape.count = R * C, shape.rank = 2, shape.dims[0] = R, shape.dims[1] = C;
  shape.strides[0][0] = 1, shape.strides[0][1] = 0; // mask [R, 1]
  shape.strides[1][0] = C, shape.strides[1][1] = 1; // x [R, C]
  shape.strides[2][0] = 0, shape.strides[2][1] = 1; // y [C]
  void *m = dm->p, *xp = dx->p, *yp = dy->p, *o = out.p;
  void *args[] = {&m, &xp, &yp, &o, &shape};
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(4), dim3(256), args, 0, nullptr), cudaSuccess);
  expectClose(download(out, size_t(R * C), cu::Storage::F32), want.data, 1e-5f, "fused_elementwise");
  cudaLibraryUnload(library);
}

// cuBLASLt linears (algorithms chosen once per size class, run at several M) against the CPU linear.
TEST(Cuda, LtLinearMatchesTheCpu) {
  cublasLtHandle_t handle;
  ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const int64_t N = 96, K = 80, maxM = 70;
  const size_t workspaceBytes = 32 << 20;
  Device workspace(workspaceBytes);
  for (cu::Storage s : kStorages)
    for (bool tf32 : {false, true})
      for (const char *activation : {"none", "relu", "gelu_tanh"})
        for (bool transB : {false, true})
          for (bool bias : {false, true}) {
            if (tf32 && s != cu::Storage::F32)
              continue;
            cu::LinearSpec spec;
            spec.storage = s, spec.maxM = maxM, spec.N = N, spec.K = K, spec.transB = transB, spec.bias = bias;
            spec.activation = activation, spec.tf32 = tf32;
            std::unique_ptr<cu::LtLinear> linear;
            ASSERT_EQ(cu::LtLinear::create(handle, spec, workspaceBytes, linear), "");
            Buf<float> w(DType::F32, transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N},
                         rounded(randomFloats(N * K, 17, -0.5f, 0.5f), s)),
                b(DType::F32, {N}, rounded(randomFloats(N, 18), s)), none(DType::F32, {0});
            auto dw = upload(w.data, s), db = upload(b.data, s);
            for (int64_t M : {int64_t(1), int64_t(7), maxM}) {
              Buf<float> x(DType::F32, {M, K}, rounded(randomFloats(M * K, 19), s)), want(DType::F32, {M, N});
              ASSERT_EQ(call("linear", attrs({stringAttr("activation", activation), intAttr("transB", transB)}),
                             {x.ref(), w.ref(), bias ? b.ref() : none.ref(), none.ref(), none.ref()}, {want.ref()}),
                        "");
              auto dx = upload(x.data, s);
              Device y(size_t(M * N) * cu::storageBytes(s));
              ASSERT_EQ(linear->run(dx->p, dw->p, bias ? db->p : nullptr, y.p, M, workspace.p, nullptr), "");
              // TF32 keeps 10 mantissa bits of each product's inputs.
              const float tol = tf32 ? 3e-3f : s == cu::Storage::F32 ? 1e-4f : tolerance(s);
              expectClose(download(y, size_t(M * N), s), want.data, tol,
                          std::string("linear ") + name(s) + " " + activation + (tf32 ? " tf32" : ""));
            }
          }
  cu::LinearSpec erf;
  erf.N = N, erf.K = K, erf.activation = "gelu";
  std::unique_ptr<cu::LtLinear> refused;
  EXPECT_NE(cu::LtLinear::create(handle, erf, workspaceBytes, refused), "");
  cublasLtDestroy(handle);
}

#endif

// The general attention kernel in the layouts fused_attention has: 3-D q/k/v with rotary (keys
// rotated too) and a causal mask, packed QKV, a 4-D [B, Hkv, Sk, D] cache, a length-major cache
// with an additive mask, and one with is_causal and a left-padded attention_mask input (i64) as
// the mask (llmc-raise-attention-mask's form); against the CPU fused_attention.
TEST(Cuda, AttentionMatchesFusedAttention) {
  const int64_t B = 2, Hq = 4, Hkv = 2, S = 5, D = 16;
  for (cu::Storage s : kStorages)
    for (const char *layout :
         {"3d-rotary-causal", "packed", "cache4d", "time-major-mask", "time-major-causal-input-mask"}) {
      const std::string l = layout;
      const bool inputMask = l == "time-major-causal-input-mask", causal = l == "3d-rotary-causal" || inputMask;
      const bool packed = l == "packed", cache4d = l == "cache4d", timeMajor = l == "time-major-mask" || inputMask;
      const int64_t Sk = cache4d || timeMajor ? 9 : S;
      Buf<float> none(DType::F32, {0});
      Buf<float> q(DType::F32, {B, S, packed ? (Hq + 2 * Hkv) * D : Hq * D},
                   rounded(randomFloats(B * S * (packed ? (Hq + 2 * Hkv) : Hq) * D, 20), s));
      std::vector<int64_t> kvShape = cache4d ? std::vector<int64_t>{B, Hkv, Sk, D}
                                     : timeMajor ? std::vector<int64_t>{Sk, B, Hkv * D}
                                                 : std::vector<int64_t>{B, Sk, Hkv * D};
      Buf<float> k(DType::F32, packed ? std::vector<int64_t>{0} : kvShape, packed ? std::vector<float>{} : rounded(randomFloats(B * Sk * Hkv * D, 21), s)),
          v(DType::F32, packed ? std::vector<int64_t>{0} : kvShape, packed ? std::vector<float>{} : rounded(randomFloats(B * Sk * Hkv * D, 22), s)),
          mask(DType::F32, {B, 1, S, Sk}, rounded(randomFloats(B * S * Sk, 23), s)),
          cosT(DType::F32, {1, S, D}, rounded(randomFloats(S * D, 24), s)),
          sinT(DType::F32, {1, S, D}, rounded(randomFloats(S * D, 25), s)), want(DType::F32, {B, S, Hq * D});
      Buf<int64_t> padding(DType::I64, {B, 1, 1, Sk});
      for (int64_t i = 0; i < B * Sk; ++i)
        padding.data[size_t(i)] = i >= Sk && i < Sk + 2 ? 0 : 1; // sequence 1 starts with 2 padding keys
      const bool rotary = l == "3d-rotary-causal" || packed;
      AttrList a = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", 0.3),
                          intAttr("is_causal", causal), intAttr("packed_qkv", packed),
                          intAttr("kv_time_major", timeMajor)});
      ASSERT_EQ(call("fused_attention", a,
                     {q.ref(), packed ? none.ref() : k.ref(), packed ? none.ref() : v.ref(),
                      inputMask ? padding.ref() : timeMajor ? mask.ref() : none.ref(),
                      rotary ? cosT.ref() : none.ref(), rotary ? sinT.ref() : none.ref()},
                     {want.ref()}),
                "") << layout;
      auto dq = upload(q.data, s), dk = upload(k.data, s), dv = upload(v.data, s), dmask = upload(mask.data, s),
           dcos = upload(cosT.data, s), dsin = upload(sinT.data, s), dpadding = uploadRaw(padding.data);
      Device out(size_t(B * S * Hq * D) * cu::storageBytes(s));
      cu::AttentionArgs args;
      args.B = B, args.Hq = Hq, args.Hkv = Hkv, args.Sq = S, args.Sk = Sk, args.D = D, args.Dv = D;
      args.scale = 0.3f, args.causal = causal, args.out = out.p;
      const size_t bytes = cu::storageBytes(s);
      if (packed) {
        const int64_t w = (Hq + 2 * Hkv) * D;
        args.q = dq->p, args.k = static_cast<char *>(dq->p) + Hq * D * bytes, args.v = static_cast<char *>(dq->p) + (Hq + Hkv) * D * bytes;
        args.qs = args.ks = args.vs = {S * w, w, D};
      } else {
        args.q = dq->p, args.k = dk->p, args.v = dv->p;
        args.qs = {S * Hq * D, Hq * D, D};
        args.ks = args.vs = cache4d ? cu::HeadStrides{Hkv * Sk * D, D, Sk * D}
                          : timeMajor ? cu::HeadStrides{Hkv * D, B * Hkv * D, D}
                                      : cu::HeadStrides{Sk * Hkv * D, Hkv * D, D};
      }
      if (inputMask) {
        args.mask = dpadding->p, args.maskType = cu::AttentionArgs::Mask::Int64;
        args.maskStrides[0] = Sk, args.maskStrides[1] = 0, args.maskStrides[2] = 0, args.maskStrides[3] = 1;
      } else if (timeMajor) {
        args.mask = dmask->p;
        args.maskStrides[0] = S * Sk, args.maskStrides[1] = 0, args.maskStrides[2] = Sk, args.maskStrides[3] = 1;
      }
      if (rotary)
        args.cos = dcos->p, args.sin = dsin->p, args.rotateKeys = true;
      ASSERT_EQ(cu::attention(s, args, nullptr), "");
      expectClose(download(out, size_t(B * S * Hq * D), s), want.data, tolerance(s) * 2,
                  std::string("attention ") + layout + " " + name(s));
      if (s == cu::Storage::F32)
        continue;
      // The tensor-core kernel on the same arguments (P rounds to the storage type: a looser bound).
      ASSERT_TRUE(cu::flashAttentionFits(s, D, D, 48 * 1024));
      ASSERT_EQ(cudaMemset(out.p, 0, out.bytes), cudaSuccess);
      ASSERT_EQ(cu::flashAttention(s, args, nullptr), "");
      expectClose(download(out, size_t(B * S * Hq * D), s), want.data, tolerance(s) * 4,
                  std::string("flash attention ") + layout + " " + name(s));
    }
}

// A fused attention test's operands: q [B, Sq, Hq * D], keys and values [B, Sk, Hkv * D] for a
// prompt, or a length-major cache [Sk, B, Hkv * D] for a decode step (Sq == 1), random (seeds
// seed, seed + 1, seed + 2) and rounded to storage `s`; uploaded, with `out` for the result, and
// the kernel arguments that read and write them (causal for a prompt). Each test adds its
// feature (and a mask) to `a`.
struct AttentionOperands {
  AttentionOperands(cu::Storage s, int64_t B, int64_t Hq, int64_t Hkv, int64_t D, int64_t Sq, int64_t Sk, float scale,
                    uint64_t seed)
      : q(DType::F32, {B, Sq, Hq * D}, rounded(randomFloats(size_t(B * Sq * Hq * D), seed), s)),
        k(DType::F32, kvShape(B, Hkv, D, Sq, Sk), rounded(randomFloats(size_t(B * Sk * Hkv * D), seed + 1), s)),
        v(DType::F32, kvShape(B, Hkv, D, Sq, Sk), rounded(randomFloats(size_t(B * Sk * Hkv * D), seed + 2), s)),
        dq(upload(q.data, s)), dk(upload(k.data, s)), dv(upload(v.data, s)),
        out(size_t(B * Sq * Hq * D) * cu::storageBytes(s)) {
    const bool decode = Sq == 1;
    a.B = B, a.Hq = Hq, a.Hkv = Hkv, a.Sq = Sq, a.Sk = Sk, a.D = D, a.Dv = D, a.scale = scale, a.causal = !decode;
    a.q = dq->p, a.k = dk->p, a.v = dv->p, a.out = out.p;
    a.qs = {Sq * Hq * D, Hq * D, D};
    a.ks = a.vs = decode ? cu::HeadStrides{Hkv * D, B * Hkv * D, D} : cu::HeadStrides{Sk * Hkv * D, Hkv * D, D};
  }
  static std::vector<int64_t> kvShape(int64_t B, int64_t Hkv, int64_t D, int64_t Sq, int64_t Sk) {
    return Sq == 1 ? std::vector<int64_t>{Sk, B, Hkv * D} : std::vector<int64_t>{B, Sk, Hkv * D};
  }
  size_t elements() const { return q.data.size(); }

  Buf<float> q, k, v;
  std::unique_ptr<Device> dq, dk, dv;
  Device out;
  cu::AttentionArgs a;
};

// An attention_mask input [B, 1, 1, Sk] of sequences whose second starts with 3 padding keys.
Buf<int64_t> leftPadded(int64_t B, int64_t Sk) {
  Buf<int64_t> padding(DType::I64, {B, 1, 1, Sk});
  for (int64_t i = 0; i < B * Sk; ++i)
    padding.data[size_t(i)] = i >= Sk && i < Sk + 3 ? 0 : 1;
  return padding;
}

// The largest difference between two results (a feature's CPU result with and without it).
float largestDifference(const std::vector<float> &a, const std::vector<float> &b) {
  float apart = 0.0f;
  for (size_t i = 0; i < a.size(); ++i)
    apart = std::max(apart, std::fabs(a[i] - b[i]));
  return apart;
}

// `a` (writing `elements` of `out`, its a.out) on every fused attention kernel that takes it, each
// result against `want`: a prompt on the row kernel and, in 16 bits, on the tensor-core one with
// its keys in 1 and 3 splits; a decode step (Sq == 1) on the tiled and plain kernels, in the
// splits its keys get and in one.
void expectEveryAttentionKernelGives(cu::Storage s, cu::AttentionArgs a, const Device &out, size_t elements,
                                     const std::vector<float> &want, const std::string &what) {
  if (a.Sq > 1) {
    ASSERT_EQ(cu::attention(s, a, nullptr), "");
    expectClose(download(out, elements, s), want, tolerance(s) * 2, "row attention, " + what);
    if (s == cu::Storage::F32)
      return;
    ASSERT_TRUE(cu::flashAttentionFits(s, a.D, a.Dv, allowFlashSharedMemory()));
    Device workspace(size_t(2) << 20);
    cudaMemset(workspace.p, 0, workspace.bytes);
    for (int splits : {1, 3}) {
      ASSERT_EQ(cudaMemset(out.p, 0, out.bytes), cudaSuccess);
      ASSERT_EQ(cu::flashAttention(s, a, nullptr, splits, workspace.p), "");
      expectClose(download(out, elements, s), want, tolerance(s) * 4,
                  "flash attention, " + what + " splits=" + std::to_string(splits));
    }
    return;
  }
  for (bool plain : {false, true})
    for (int splits : {cu::decodeAttentionSplits(cu::decodeKeysSeen(a)), 1}) {
      Device ws(cu::decodeAttentionWorkspaceBytes(a.B, a.Hq, a.Dv, splits));
      cudaMemset(ws.p, 0, ws.bytes);
      a.plainDecode = plain;
      ASSERT_EQ(cudaMemset(out.p, 0, out.bytes), cudaSuccess);
      ASSERT_EQ(cu::decodeAttention(s, a, splits, ws.p, nullptr), "");
      expectClose(download(out, elements, s), want, tolerance(s),
                  std::string(plain ? "plain " : "tiled ") + what + " splits=" + std::to_string(splits));
    }
}

// fused_attention's softcap (Gemma 2: each scaled score s becomes c * tanh(s / c) before the
// mask) in every kernel that runs it, against the CPU: the row kernel and the tensor-core one over
// a causal prompt of 70 tokens with an additive mask; the decode kernels (plain and tiled, the
// splits chosen and one) over a length-major cache of 37 keys with the attention_mask input
// (left padding) as the mask. Scores reach about 4, which a cap of 1.5 bends: the result
// without the cap is checked to be far from the capped one.
TEST(Cuda, AttentionSoftcapMatchesTheCpu) {
  const int64_t B = 2, Hq = 4, Hkv = 2, D = 64;
  const float scale = 0.5f, softcap = 1.5f;
  for (cu::Storage s : kStorages)
    for (bool decode : {false, true}) {
      const int64_t Sq = decode ? 1 : 70, Sk = decode ? 37 : 70;
      AttentionOperands o(s, B, Hq, Hkv, D, Sq, Sk, scale, 60);
      Buf<float> none(DType::F32, {0}),
          additive(DType::F32, {B, 1, Sq, Sk}, rounded(randomFloats(B * Sq * Sk, 63), s)),
          want(DType::F32, {B, Sq, Hq * D}), uncapped(DType::F32, {B, Sq, Hq * D});
      Buf<int64_t> padding = leftPadded(B, Sk);
      const TensorRef mask = decode ? padding.ref() : additive.ref();
      for (float cap : {softcap, 0.0f})
        ASSERT_EQ(call("fused_attention",
                       attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", scale),
                              intAttr("is_causal", !decode), intAttr("kv_time_major", decode),
                              floatAttr("softcap", cap)}),
                       {o.q.ref(), o.k.ref(), o.v.ref(), mask, none.ref(), none.ref()},
                       {cap > 0 ? want.ref() : uncapped.ref()}),
                  "");
      ASSERT_GT(largestDifference(want.data, uncapped.data), 0.1f) << "the cap changes the result";
      auto dadd = upload(additive.data, s), dpadding = uploadRaw(padding.data);
      cu::AttentionArgs &a = o.a;
      a.softcap = softcap;
      if (decode) {
        a.mask = dpadding->p, a.maskType = cu::AttentionArgs::Mask::Int64;
        a.maskStrides[0] = Sk, a.maskStrides[3] = 1;
      } else {
        a.mask = dadd->p;
        a.maskStrides[0] = Sq * Sk, a.maskStrides[2] = Sk, a.maskStrides[3] = 1;
      }
      expectEveryAttentionKernelGives(s, a, o.out, o.elements(), want.data,
                                      std::string(decode ? "decode " : "prompt ") + name(s));
    }
}

// A sliding window on every fused attention kernel, against the CPU's: a causal prompt of 150
// queries after 50 cached keys (3 tiles of queries, 4 of keys: the first key tiles fall outside
// the last query tiles' windows) on the row kernel and the tensor-core one, its keys in 1 and 3
// splits; a decode step over 700 keys on the plain and tiled kernels, in the splits the window's
// keys get and in one, then with the key count on the device (a launch sized for 1536 keys,
// those past the count NaN: the window starts from the count). Sequence 1 is left-padded.
TEST(Cuda, AttentionSlidingWindowMatchesTheCpu) {
  const int64_t B = 2, Hq = 4, Hkv = 2, D = 64, window = 70;
  const float scale = 0.125f;
  for (cu::Storage s : kStorages)
    for (bool decode : {false, true}) {
      const int64_t Sq = decode ? 1 : 150, Sk = decode ? 700 : 200;
      AttentionOperands o(s, B, Hq, Hkv, D, Sq, Sk, scale, 70);
      Buf<float> none(DType::F32, {0}), want(DType::F32, {B, Sq, Hq * D}), unwindowed(DType::F32, {B, Sq, Hq * D});
      Buf<int64_t> padding = leftPadded(B, Sk);
      for (int64_t w : {window, int64_t(0)})
        ASSERT_EQ(call("fused_attention",
                       attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", scale),
                              intAttr("is_causal", !decode), intAttr("kv_time_major", decode),
                              intAttr("sliding_window", w)}),
                       {o.q.ref(), o.k.ref(), o.v.ref(), padding.ref(), none.ref(), none.ref()},
                       {w ? want.ref() : unwindowed.ref()}),
                  "");
      ASSERT_GT(largestDifference(want.data, unwindowed.data), 0.01f) << "the window changes the result";
      auto dpadding = uploadRaw(padding.data);
      cu::AttentionArgs &a = o.a;
      a.window = window;
      a.mask = dpadding->p, a.maskType = cu::AttentionArgs::Mask::Int64;
      a.maskStrides[0] = Sk, a.maskStrides[3] = 1;
      const std::string what = std::string(decode ? "decode " : "prompt ") + name(s);
      expectEveryAttentionKernelGives(s, a, o.out, o.elements(), want.data, what);
      if (!decode)
        continue;
      EXPECT_EQ(cu::decodeKeysSeen(a), window);
      const CacheAtBound cache = cacheAtBound(a, o.k.data, o.v.data, Sk, 1536, B * Hkv * D, s);
      a.maskRowsPerBatch = 1, a.maskStrides[0] = 1;
      const int splits = cu::decodeAttentionSplits(cu::decodeKeysSeen(a));
      Device ws(cu::decodeAttentionWorkspaceBytes(B, Hq, D, splits));
      cudaMemset(ws.p, 0, ws.bytes);
      for (bool plain : {false, true}) {
        a.plainDecode = plain;
        cudaMemset(o.out.p, 0, o.out.bytes);
        ASSERT_EQ(cu::decodeAttention(s, a, splits, ws.p, nullptr), "");
        expectClose(download(o.out, o.elements(), s), want.data, tolerance(s),
                    std::string(plain ? "plain " : "tiled ") + what + ", key count on the device");
      }
    }
}

// fused_attention's sinks (GPT-OSS: a logit per query head in each row's softmax, with no value)
// on every fused attention kernel, against the CPU's: a causal prompt of 70 tokens, then with a
// window of 20 keys, whose second sequence is left-padded (its first query sees no key: zeros);
// a decode step over 300 cached keys, its splits merged with the sink, and in one split. The
// sinks, 2 to 6, are near the scores' max and above it: the result without them is checked to
// be far from the one with them.
TEST(Cuda, AttentionSinksMatchTheCpu) {
  const int64_t B = 2, Hq = 4, Hkv = 2, D = 64;
  const float scale = 0.125f;
  for (cu::Storage s : kStorages)
    for (int64_t window : {int64_t(0), int64_t(20)})
      for (bool decode : {false, true}) {
        const int64_t Sq = decode ? 1 : 70, Sk = decode ? 300 : 70;
        AttentionOperands o(s, B, Hq, Hkv, D, Sq, Sk, scale, 90);
        Buf<float> none(DType::F32, {0}), sinks(DType::F32, {Hq}, rounded({2.0f, 6.0f, 3.0f, 5.0f}, s)),
            want(DType::F32, {B, Sq, Hq * D}), unsunk(DType::F32, {B, Sq, Hq * D});
        Buf<int64_t> padding = leftPadded(B, Sk);
        for (bool withSinks : {true, false}) {
          std::vector<TensorRef> operands{o.q.ref(), o.k.ref(), o.v.ref(), padding.ref(), none.ref(), none.ref()};
          if (withSinks)
            operands.push_back(sinks.ref());
          ASSERT_EQ(call("fused_attention",
                         attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", scale),
                                intAttr("is_causal", !decode), intAttr("kv_time_major", decode),
                                intAttr("sliding_window", window)}),
                         operands, {withSinks ? want.ref() : unsunk.ref()}),
                    "");
        }
        ASSERT_GT(largestDifference(want.data, unsunk.data), 0.05f) << "the sinks change the result";
        auto dsinks = upload(sinks.data, s), dpadding = uploadRaw(padding.data);
        cu::AttentionArgs &a = o.a;
        a.sinks = dsinks->p, a.window = window;
        a.mask = dpadding->p, a.maskType = cu::AttentionArgs::Mask::Int64;
        a.maskStrides[0] = Sk, a.maskStrides[3] = 1;
        expectEveryAttentionKernelGives(s, a, o.out, o.elements(), want.data,
                                        std::string(decode ? "decode " : "prompt ") + name(s) + " window " +
                                            std::to_string(window));
      }
}

// rotary_dim on every fused attention kernel, against the CPU's: the query turned as llmc.rotary
// turns it (its first 32 of 64 features or all, halves or neighbours, tables [B, S, R/2]); a
// causal prompt of 70 tokens (the tensor-core kernel stages such a query element by element) and
// a decode step over 300 cached keys.
TEST(Cuda, AttentionRotaryDimMatchesTheCpu) {
  const int64_t B = 2, Hq = 4, Hkv = 2, D = 64;
  for (int64_t R : {int64_t(32), D})
    for (bool interleaved : {false, true})
      for (cu::Storage s : kStorages)
        for (bool decode : {false, true}) {
          const int64_t Sq = decode ? 1 : 70, Sk = decode ? 300 : 70;
          AttentionOperands o(s, B, Hq, Hkv, D, Sq, Sk, 0.125f, 80);
          Buf<float> none(DType::F32, {0}),
              cos(DType::F32, {B, Sq, R / 2}, rounded(randomFloats(size_t(B * Sq * R / 2), 83, -1, 1), s)),
              sin(DType::F32, {B, Sq, R / 2}, rounded(randomFloats(size_t(B * Sq * R / 2), 84, -1, 1), s)),
              want(DType::F32, {B, Sq, Hq * D});
          ASSERT_EQ(call("fused_attention",
                         attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", 0.125),
                                intAttr("is_causal", !decode), intAttr("kv_time_major", decode),
                                intAttr("rotary_dim", R), intAttr("rotary_interleaved", interleaved),
                                intAttr("rotate_keys", 0)}),
                         {o.q.ref(), o.k.ref(), o.v.ref(), none.ref(), cos.ref(), sin.ref()}, {want.ref()}),
                    "");
          auto dcos = upload(cos.data, s), dsin = upload(sin.data, s);
          cu::AttentionArgs &a = o.a;
          a.cos = dcos->p, a.sin = dsin->p, a.tablesPerBatch = true, a.rotaryDim = R, a.interleaved = interleaved;
          expectEveryAttentionKernelGives(s, a, o.out, o.elements(), want.data,
                                          std::string(decode ? "decode " : "prompt ") + name(s) + " rotary_dim " +
                                              std::to_string(R) + (interleaved ? " interleaved" : ""));
        }
}

// The kernels of a block per query row over more keys than one chunk (kAttendChunk, 4096) holds:
// 9000 keys in three chunks, against the CPU. fused_attention's over a 4-D cache with an additive
// mask, causal (the first query sees all but the last key); ONNX Attention's over a past of 6000
// and 3000 new keys with a softcap, in f32 and bf16, its probabilities read (mode 3: a second pass).
TEST(Cuda, RowAttentionTakesKeysInChunks) {
  const int64_t B = 1, Hq = 2, Hkv = 1, Sq = 2, Sk = 9000, D = 8;
  for (cu::Storage s : {cu::Storage::F32, cu::Storage::BF16}) {
    Buf<float> none(DType::F32, {0});
    Buf<float> q(DType::F32, {B, Sq, Hq * D}, rounded(randomFloats(size_t(B * Sq * Hq * D), 60), s)),
        k(DType::F32, {B, Hkv, Sk, D}, rounded(randomFloats(size_t(B * Hkv * Sk * D), 61), s)),
        v(DType::F32, {B, Hkv, Sk, D}, rounded(randomFloats(size_t(B * Hkv * Sk * D), 62), s)),
        mask(DType::F32, {B, 1, Sq, Sk}, rounded(randomFloats(size_t(B * Sq * Sk), 63), s)),
        want(DType::F32, {B, Sq, Hq * D});
    AttrList fa = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", 0.5),
                         intAttr("is_causal", 1)});
    ASSERT_EQ(call("fused_attention", fa, {q.ref(), k.ref(), v.ref(), mask.ref(), none.ref(), none.ref()}, {want.ref()}),
              "");
    auto dq = upload(q.data, s), dk = upload(k.data, s), dv = upload(v.data, s), dmask = upload(mask.data, s);
    Device out(size_t(want.numel()) * cu::storageBytes(s));
    cu::AttentionArgs a;
    a.B = B, a.Hq = Hq, a.Hkv = Hkv, a.Sq = Sq, a.Sk = Sk, a.D = a.Dv = D, a.scale = 0.5f, a.causal = true;
    a.q = dq->p, a.k = dk->p, a.v = dv->p, a.out = out.p, a.mask = dmask->p;
    a.qs = {Sq * Hq * D, Hq * D, D}, a.ks = a.vs = {Hkv * Sk * D, D, Sk * D};
    a.maskStrides[2] = Sk, a.maskStrides[3] = 1;
    ASSERT_EQ(cu::attention(s, a, nullptr), "");
    expectClose(download(out, size_t(want.numel()), s), want.data, tolerance(s) * 2,
                std::string("attention over 9000 keys ") + name(s));

    const int64_t P = 6000, Skv = Sk - P;
    Buf<float> pastK(DType::F32, {B, Hkv, P, D}, std::vector<float>(k.data.begin(), k.data.begin() + P * D)),
        pastV(DType::F32, {B, Hkv, P, D}, std::vector<float>(v.data.begin(), v.data.begin() + P * D)),
        newK(DType::F32, {B, Hkv, Skv, D}, std::vector<float>(k.data.begin() + P * D, k.data.end())),
        newV(DType::F32, {B, Hkv, Skv, D}, std::vector<float>(v.data.begin() + P * D, v.data.end())),
        q4(DType::F32, {B, Hq, Sq, D}, q.data), y(DType::F32, {B, Hq, Sq, D}), presentK(DType::F32, {B, Hkv, Sk, D}),
        presentV(DType::F32, {B, Hkv, Sk, D}), probabilities(DType::F32, {B, Hq, Sq, Sk});
    AttrList oa = attrs({floatAttr("scale", 0.5), floatAttr("softcap", 1.5), intAttr("qk_matmul_output_mode", 3)});
    ASSERT_EQ(call("attention", oa,
                   {q4.ref(), newK.ref(), newV.ref(), none.ref(), pastK.ref(), pastV.ref(), none.ref()},
                   {y.ref(), presentK.ref(), presentV.ref(), probabilities.ref()}),
              "");
    auto dpk = upload(pastK.data, s), dpv = upload(pastV.data, s), dnk = upload(newK.data, s),
         dnv = upload(newV.data, s), dq4 = upload(q4.data, s);
    const size_t bytes = cu::storageBytes(s);
    Device gotY(size_t(y.numel()) * bytes), gotK(size_t(presentK.numel()) * bytes),
        gotV(size_t(presentV.numel()) * bytes), gotP(size_t(probabilities.numel()) * bytes);
    cu::OnnxAttentionArgs o;
    o.B = B, o.Hq = Hq, o.Hkv = Hkv, o.Sq = Sq, o.Skv = Skv, o.past = P, o.D = o.Dv = D, o.scale = 0.5f;
    o.softcap = 1.5f, o.scoresMode = 3;
    o.q = dq4->p, o.k = dnk->p, o.v = dnv->p, o.pastK = dpk->p, o.pastV = dpv->p;
    o.qs = o.outs = {Hq * Sq * D, D, Sq * D}, o.ks = o.vs = {Hkv * Skv * D, D, Skv * D};
    o.out = gotY.p, o.presentK = gotK.p, o.presentV = gotV.p, o.scores = gotP.p;
    ASSERT_EQ(cu::onnxAttention(int(storageDType(s)), o, nullptr), "");
    expectClose(download(gotY, size_t(y.numel()), s), y.data, tolerance(s) * 2,
                std::string("ONNX attention over 9000 keys ") + name(s));
    auto timesKeys = [&](std::vector<float> p) { // (probabilities of about 1 / Sk, compared near 1)
      for (float &x : p)
        x *= float(Sk);
      return p;
    };
    expectClose(timesKeys(download(gotP, size_t(probabilities.numel()), s)), timesKeys(probabilities.data),
                tolerance(s) * 2, std::string("its probabilities ") + name(s));
    expectClose(download(gotK, size_t(presentK.numel()), s), presentK.data, 0.0f, "its present keys");
  }
}

// The tensor-core kernel over several tiles: 100 queries (a partial tile) over 100 keys, causal,
// with rotary, head 64; and 70 queries over a length-major cache of 150 keys with an additive
// mask, head 128 (the largest).
TEST(Cuda, FlashAttentionTilesMatchFusedAttention) {
  for (cu::Storage s : {cu::Storage::F16, cu::Storage::BF16})
    for (bool cached : {false, true}) {
      const int64_t B = 1, Hq = 4, Hkv = 2, S = cached ? 70 : 100, Sk = cached ? 150 : 100, D = cached ? 128 : 64;
      Buf<float> none(DType::F32, {0});
      Buf<float> q(DType::F32, {B, S, Hq * D}, rounded(randomFloats(B * S * Hq * D, 50), s));
      const std::vector<int64_t> kvShape = cached ? std::vector<int64_t>{Sk, B, Hkv * D} : std::vector<int64_t>{B, Sk, Hkv * D};
      Buf<float> k(DType::F32, kvShape, rounded(randomFloats(B * Sk * Hkv * D, 51), s)),
          v(DType::F32, kvShape, rounded(randomFloats(B * Sk * Hkv * D, 52), s)),
          mask(DType::F32, {B, 1, S, Sk}, rounded(randomFloats(B * S * Sk, 53), s)),
          cosT(DType::F32, {1, S, D}, rounded(randomFloats(S * D, 54), s)),
          sinT(DType::F32, {1, S, D}, rounded(randomFloats(S * D, 55), s)), want(DType::F32, {B, S, Hq * D});
      AttrList a = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", 0.125),
                          intAttr("is_causal", !cached), intAttr("kv_time_major", cached)});
      ASSERT_EQ(call("fused_attention", a,
                     {q.ref(), k.ref(), v.ref(), cached ? mask.ref() : none.ref(), cached ? none.ref() : cosT.ref(),
                      cached ? none.ref() : sinT.ref()},
                     {want.ref()}),
                "");
      auto dq = upload(q.data, s), dk = upload(k.data, s), dv = upload(v.data, s), dmask = upload(mask.data, s),
           dcos = upload(cosT.data, s), dsin = upload(sinT.data, s);
      Device out(size_t(B * S * Hq * D) * cu::storageBytes(s));
      cu::AttentionArgs args;
      args.B = B, args.Hq = Hq, args.Hkv = Hkv, args.Sq = S, args.Sk = Sk, args.D = D, args.Dv = D;
      args.scale = 0.125f, args.causal = !cached, args.out = out.p;
      args.q = dq->p, args.k = dk->p, args.v = dv->p;
      args.qs = {S * Hq * D, Hq * D, D};
      args.ks = args.vs = cached ? cu::HeadStrides{Hkv * D, B * Hkv * D, D} : cu::HeadStrides{Sk * Hkv * D, Hkv * D, D};
      if (cached) {
        args.mask = dmask->p;
        args.maskStrides[0] = S * Sk, args.maskStrides[1] = 0, args.maskStrides[2] = Sk, args.maskStrides[3] = 1;
      } else {
        args.cos = dcos->p, args.sin = dsin->p, args.rotateKeys = true;
      }
      const size_t optIn = allowFlashSharedMemory();
      ASSERT_TRUE(cu::flashAttentionFits(s, D, D, optIn));
      ASSERT_EQ(cu::flashAttention(s, args, nullptr), "");
      expectClose(download(out, size_t(B * S * Hq * D), s), want.data, tolerance(s) * 4,
                  std::string("flash attention ") + (cached ? "cache" : "causal") + " " + name(s));
      // Each block of query rows' keys shared out among 2 and 3 blocks (the first causal tile's
      // keys fit one, so it writes its rows itself), merged by the last; twice each, so that the
      // second launch finds the counters back at 0.
      Device workspace(size_t(2) << 20);
      cudaMemset(workspace.p, 0, workspace.bytes);
      EXPECT_NE(cu::flashAttention(s, args, nullptr, 2, nullptr), ""); // splits need a workspace
      for (int splits : {2, 3, 2, 3}) {
        cudaMemset(out.p, 0, out.bytes);
        ASSERT_EQ(cu::flashAttention(s, args, nullptr, splits, workspace.p), "");
        expectClose(download(out, size_t(B * S * Hq * D), s), want.data, tolerance(s) * 4,
                    std::string("flash attention, keys in ") + std::to_string(splits) + " splits, " +
                        (cached ? "cache " : "causal ") + name(s));
      }
      const std::vector<unsigned> counters = downloadRaw<unsigned>(workspace, 64);
      EXPECT_EQ(counters, std::vector<unsigned>(64, 0u)) << "the counters left at 0";
    }
}

// How many blocks share a prompt's keys: one per 4 key tiles of the longest walk where the
// launch has fewer blocks of query rows than twice the multiprocessors, else 1.
TEST(Cuda, FlashAttentionSplitsOnlyWhereTheGpuHasRoom) {
  cu::AttentionArgs a;
  a.B = 1, a.Hq = 9, a.Hkv = 3, a.Sq = 512, a.Sk = 512, a.D = a.Dv = 64, a.causal = true;
  EXPECT_EQ(cu::flashAttentionSplits(a, 132, size_t(32) << 20), 2);  // SmolLM2's 72 blocks on an H100/H200
  a.Hq = 32, a.Hkv = 8;
  EXPECT_EQ(cu::flashAttentionSplits(a, 132, size_t(32) << 20), 2);  // Llama-1B's 256
  EXPECT_EQ(cu::flashAttentionSplits(a, 100, size_t(32) << 20), 1);  // 256 blocks fill 100 SMs twice over
  a.Sq = 1, a.Sk = 4096;
  EXPECT_EQ(cu::flashAttentionSplits(a, 132, size_t(32) << 20), 16); // at most 16
  EXPECT_EQ(cu::flashAttentionSplits(a, 132, size_t(1) << 20), 1);   // their partial results would not fit
  a.Sq = 100, a.Sk = 100;
  EXPECT_EQ(cu::flashAttentionSplits(a, 132, size_t(32) << 20), 1);  // two key tiles: one block each
}

// ONNX Attention's own kernel against the CPU's `attention`, all four results: 3-D with a past, a
// softcap, causal and an f32 mask shorter than the keys (the scores with their bias read); 4-D
// with a sliding window, a bool mask, Dv != D and int32 nonpad lengths, one of them 0 (a row of
// zeros; the probabilities read); 4-D causal after int64 nonpad lengths (offset nonpad - Sq; the
// raw scores read).
TEST(Cuda, OnnxAttentionMatchesTheCpu) {
  struct Case {
    const char *name;
    bool flat;
    int64_t past;
    bool causal;
    float softcap;
    int64_t left, right;
    const char *mask; // "", "f32" or "bool"
    int nonpadBits;   // 0: none
    int mode;
    int64_t Dv;
  };
  const Case cases[] = {
      {"3d-past-softcap-causal-mask", true, 3, true, 1.5f, -1, -1, "f32", 0, 2, 8},
      {"4d-window-bool-nonpad32", false, 0, false, 0.0f, 2, 1, "bool", 32, 3, 6},
      {"4d-causal-nonpad64", false, 0, true, 2.0f, -1, -1, "", 64, 0, 8},
  };
  const int64_t B = 2, Hq = 4, Hkv = 2, Sq = 3, Skv = 5, D = 8;
  for (cu::Storage s : kStorages)
    for (const Case &c : cases) {
      const int64_t P = c.past, T = P + Skv, Dv = c.Dv;
      const std::string mask = c.mask, what = std::string(c.name) + " " + name(s);
      auto shape = [&](int64_t H, int64_t S, int64_t width) {
        return c.flat ? std::vector<int64_t>{B, S, H * width} : std::vector<int64_t>{B, H, S, width};
      };
      Buf<float> none(DType::F32, {0});
      Buf<float> q(DType::F32, shape(Hq, Sq, D), rounded(randomFloats(size_t(B * Hq * Sq * D), 40), s)),
          k(DType::F32, shape(Hkv, Skv, D), rounded(randomFloats(size_t(B * Hkv * Skv * D), 41), s)),
          v(DType::F32, shape(Hkv, Skv, Dv), rounded(randomFloats(size_t(B * Hkv * Skv * Dv), 42), s)),
          pastK(DType::F32, {B, Hkv, P, D}, rounded(randomFloats(size_t(B * Hkv * P * D), 43), s)),
          pastV(DType::F32, {B, Hkv, P, Dv}, rounded(randomFloats(size_t(B * Hkv * P * Dv), 44), s)),
          floatMask(DType::F32, {Sq, T - 2}, rounded(randomFloats(size_t(Sq * (T - 2)), 45), s));
      Buf<uint8_t> boolMask(DType::Bool, {B, 1, Sq, T});
      for (size_t i = 0; i < boolMask.data.size(); ++i)
        boolMask.data[i] = i % 4 != 1;
      Buf<int32_t> nonpad32(DType::I32, {B}, {0, int32_t(T)});
      Buf<int64_t> nonpad64(DType::I64, {B}, {T - 1, T});
      Buf<float> want(DType::F32, shape(Hq, Sq, Dv)), wantK(DType::F32, {B, Hkv, T, D}),
          wantV(DType::F32, {B, Hkv, T, Dv}), wantScores(DType::F32, {B, Hq, Sq, T});
      AttrList a = attrs({intAttr("q_num_heads", Hq), intAttr("kv_num_heads", Hkv), floatAttr("scale", 0.4),
                          intAttr("is_causal", c.causal), floatAttr("softcap", c.softcap),
                          intAttr("left_window_size", c.left), intAttr("right_window_size", c.right),
                          intAttr("qk_matmul_output_mode", c.mode)});
      ASSERT_EQ(call("attention", a,
                     {q.ref(), k.ref(), v.ref(),
                      mask == "f32"    ? floatMask.ref()
                      : mask == "bool" ? boolMask.ref()
                                       : none.ref(),
                      P ? pastK.ref() : none.ref(), P ? pastV.ref() : none.ref(),
                      c.nonpadBits == 32   ? nonpad32.ref()
                      : c.nonpadBits == 64 ? nonpad64.ref()
                                           : none.ref()},
                     {want.ref(), wantK.ref(), wantV.ref(), wantScores.ref()}),
                "")
          << what;
      auto dq = upload(q.data, s), dk = upload(k.data, s), dv = upload(v.data, s), dpk = upload(pastK.data, s),
           dpv = upload(pastV.data, s), dmask = upload(floatMask.data, s), dbool = uploadRaw(boolMask.data),
           dn32 = uploadRaw(nonpad32.data), dn64 = uploadRaw(nonpad64.data);
      const size_t bytes = cu::storageBytes(s);
      Device out(size_t(want.numel()) * bytes), presentK(size_t(wantK.numel()) * bytes),
          presentV(size_t(wantV.numel()) * bytes), scores(size_t(wantScores.numel()) * bytes);
      cu::OnnxAttentionArgs args;
      args.B = B, args.Hq = Hq, args.Hkv = Hkv, args.Sq = Sq, args.Skv = Skv, args.D = D, args.Dv = Dv;
      // element (b, h, i, d) at b * batch + i * token + h * head + d
      auto strides = [&](int64_t H, int64_t S, int64_t width) {
        return c.flat ? cu::HeadStrides{S * H * width, H * width, width} : cu::HeadStrides{H * S * width, width, S * width};
      };
      args.q = dq->p, args.k = dk->p, args.v = dv->p;
      args.qs = strides(Hq, Sq, D), args.ks = strides(Hkv, Skv, D), args.vs = strides(Hkv, Skv, Dv);
      args.outs = strides(Hq, Sq, Dv);
      if (P)
        args.past = P, args.pastK = dpk->p, args.pastV = dpv->p;
      args.out = out.p, args.presentK = presentK.p, args.presentV = presentV.p, args.scores = scores.p;
      args.scoresMode = c.mode, args.scale = 0.4f, args.softcap = c.softcap, args.causal = c.causal;
      args.leftWindow = c.left, args.rightWindow = c.right;
      if (mask == "f32") {
        args.mask = dmask->p, args.maskKeys = T - 2;
        args.maskStrides[2] = T - 2, args.maskStrides[3] = 1;
      } else if (mask == "bool") {
        args.mask = dbool->p, args.maskType = cu::AttentionArgs::Mask::Bool, args.maskKeys = T;
        args.maskStrides[0] = Sq * T, args.maskStrides[2] = T, args.maskStrides[3] = 1;
      }
      if (c.nonpadBits)
        args.nonpad = c.nonpadBits == 32 ? dn32->p : dn64->p, args.nonpad32 = c.nonpadBits == 32;
      ASSERT_EQ(cu::onnxAttention(int(storageDType(s)), args, nullptr), "") << what;
      expectClose(download(presentK, size_t(wantK.numel()), s), wantK.data, 0.0f, "present keys " + what);
      expectClose(download(presentV, size_t(wantV.numel()), s), wantV.data, 0.0f, "present values " + what);
      expectClose(download(scores, size_t(wantScores.numel()), s), wantScores.data, tolerance(s), "scores " + what);
      expectClose(download(out, size_t(want.numel()), s), want.data, tolerance(s) * 2, "output " + what);
    }
  cu::OnnxAttentionArgs bad;
  bad.B = 1, bad.Hq = 3, bad.Hkv = 2, bad.Sq = 1, bad.Skv = 4, bad.D = bad.Dv = 8;
  EXPECT_NE(cu::onnxAttention(int(DType::F32), bad, nullptr), "") << "Hq not a multiple of Hkv";
  bad.Hq = 2, bad.past = 2;
  EXPECT_NE(cu::onnxAttention(int(DType::F32), bad, nullptr), "") << "a past without its keys";
}

// The linear epilogue kernel against the CPU linear: SwiGLU (which takes no gate or residual),
// erf GELU, SiLU and ReLU with gate and residual; the GEMM part (with bias) by the CPU matmul and add.
TEST(Cuda, LinearEpilogueMatchesTheCpuLinear) {
  const int64_t M = 6, K = 8, N = 10;
  for (cu::Storage s : kStorages)
    for (const char *activation : {"swiglu", "gelu", "silu", "relu"}) {
      const bool swiglu = std::string(activation) == "swiglu";
      const int64_t full = swiglu ? 2 * N : N;
      Buf<float> x(DType::F32, {M, K}, rounded(randomFloats(M * K, 26), s)), w(DType::F32, {K, full}, rounded(randomFloats(K * full, 27), s)),
          bias(DType::F32, {full}, rounded(randomFloats(full, 28), s)), gate(DType::F32, {M, N}, rounded(randomFloats(M * N, 29), s)),
          residual(DType::F32, {M, N}, rounded(randomFloats(M * N, 30), s)), none(DType::F32, {0}), y(DType::F32, {M, full}),
          yb(DType::F32, {M, full}), want(DType::F32, {M, N});
      ASSERT_EQ(call("linear", attrs({stringAttr("activation", activation)}),
                     {x.ref(), w.ref(), bias.ref(), swiglu ? none.ref() : gate.ref(), swiglu ? none.ref() : residual.ref()},
                     {want.ref()}),
                "");
      ASSERT_EQ(call("matmul", {}, {x.ref(), w.ref()}, {y.ref()}), "");
      ASSERT_EQ(call("add", {}, {y.ref(), bias.ref()}, {yb.ref()}), "");
      auto dy = upload(rounded(yb.data, s), s), dg = upload(gate.data, s), dr = upload(residual.data, s);
      Device out(size_t(M * N) * cu::storageBytes(s));
      ASSERT_EQ(cu::linearEpilogue(s, dy->p, out.p, swiglu ? nullptr : dg->p, swiglu ? nullptr : dr->p, M, N, activation,
                                   swiglu, nullptr),
                "");
      expectClose(download(out, size_t(M * N), s), want.data, tolerance(s) * 4, std::string("epilogue ") + activation + " " + name(s));
    }
}

// The GEMV of decode steps: every row count it takes (its 1, 2, 4 and 8-row variants, M rounded
// up), every epilogue (SwiGLU, activations, bias, gate, residual), K in 1, 2 or 4 slices per
// column (the last slice shorter, or with 4, empty), a K that leaves a remainder after the
// unrolled loads and an N that leaves a block's last warps without a column, a block per group
// of columns or 2 blocks taking the groups in turn (SmallLinearArgs::blocks: 16-bit, M <= 2;
// elsewhere a block per group all the same); against the CPU
// linear with transB. It refuses an unaligned x, too many rows, an odd slice count and a block
// count under -1.
TEST(Cuda, SmallLinearMatchesTheCpuLinear) {
  const int64_t K = 1096, N = 37;
  for (cu::Storage s : kStorages)
    for (const char *activation : {"none", "swiglu", "silu", "gelu", "gelu_tanh", "relu"})
      for (int64_t M : {1, 2, 3, 5, 8})
        for (int slices : {1, 2, 4})
          for (int64_t blocks : {0, 2}) {
            const bool swiglu = std::string(activation) == "swiglu", extras = M % 2 == 1; // bias, gate, residual
            const int64_t rows = swiglu ? 2 * N : N;
            Buf<float> x(DType::F32, {M, K}, rounded(randomFloats(M * K, 40 + M), s)),
                w(DType::F32, {rows, K}, rounded(randomFloats(rows * K, 41, -0.1f, 0.1f), s)),
                bias(DType::F32, {rows}, rounded(randomFloats(rows, 42), s)),
                gate(DType::F32, {M, N}, rounded(randomFloats(M * N, 43), s)),
                residual(DType::F32, {M, N}, rounded(randomFloats(M * N, 44), s)), none(DType::F32, {0}),
                want(DType::F32, {M, N});
            const bool gated = extras && !swiglu;
            ASSERT_EQ(call("linear", attrs({stringAttr("activation", activation), intAttr("transB", 1)}),
                           {x.ref(), w.ref(), extras ? bias.ref() : none.ref(), gated ? gate.ref() : none.ref(),
                            gated ? residual.ref() : none.ref()},
                           {want.ref()}),
                      "");
            auto dx = upload(x.data, s), dw = upload(w.data, s), db = upload(bias.data, s), dg = upload(gate.data, s),
                 dr = upload(residual.data, s);
            Device out(size_t(M * N) * cu::storageBytes(s));
            cu::SmallLinearArgs a;
            a.x = dx->p, a.w = dw->p, a.bias = extras ? db->p : nullptr, a.gate = gated ? dg->p : nullptr;
            a.residual = gated ? dr->p : nullptr, a.out = out.p, a.M = M, a.N = rows, a.K = K, a.swiglu = swiglu;
            a.slices = slices, a.blocks = blocks;
            ASSERT_TRUE(cu::smallLinearTakes(s, a));
            const std::string what = std::string("small linear ") + name(s) + " " + activation + " M=" + std::to_string(M) +
                                     " slices=" + std::to_string(slices) + " blocks=" + std::to_string(blocks);
            ASSERT_EQ(cu::smallLinear(s, a, activation, nullptr), "") << what;
            expectClose(download(out, size_t(M * N), s), want.data, s == cu::Storage::F32 ? 1e-4f : tolerance(s), what);
          }
  Device x(64 * 4), w(64 * 4), out(64 * 4);
  cu::SmallLinearArgs a;
  a.x = static_cast<char *>(x.p) + 4, a.w = w.p, a.out = out.p, a.M = 1, a.N = 4, a.K = 8;
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
  EXPECT_NE(cu::smallLinear(cu::Storage::F32, a, "none", nullptr), "");
  a.x = x.p, a.M = cu::kSmallLinearMaxM + 1;
  EXPECT_NE(cu::smallLinear(cu::Storage::F32, a, "none", nullptr), "");
  a.M = 1;
  EXPECT_NE(cu::smallLinear(cu::Storage::F32, a, "tanh", nullptr), "");
  a.slices = 3;
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
  a.slices = 0, a.blocks = -2;
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
}

// The GEMV with the decoder's RMS norm in front (normScale): against the CPU's add_rms_norm (with
// a residual, whose sum the GEMV stores too) or rms_norm, then linear; plain and SwiGLU, one
// and several rows, K in one slice or two (the sums of squares and the stored sum split too); the
// block normalizing x in shared memory, and (3 rows of 4000, too many for it) each warp; a block
// per group of columns, or 2 blocks taking them in turn (16-bit, M = 1: the norm staged once per
// block).
TEST(Cuda, SmallLinearWithItsNormMatchesTheCpu) {
  const int64_t N = 12;
  for (cu::Storage s : kStorages)
    for (bool withResidual : {true, false})
      for (bool swiglu : {false, true})
        for (int64_t M : {1, 3})
          for (int64_t K : {520, 4000})
            for (int slices : {1, 2})
              for (int64_t blocks : {0, 2}) {
                const int64_t rows = swiglu ? 2 * N : N;
                Buf<float> x(DType::F32, {M, K}, rounded(randomFloats(M * K, 50), s)),
                    r(DType::F32, {M, K}, rounded(randomFloats(M * K, 51), s)),
                    scale(DType::F32, {K}, rounded(randomFloats(K, 52, 0.5f, 1.5f), s)),
                    w(DType::F32, {rows, K}, rounded(randomFloats(rows * K, 53, -0.2f, 0.2f), s)), none(DType::F32, {0}),
                    normed(DType::F32, {M, K}), sum(DType::F32, {M, K}), want(DType::F32, {M, N});
                if (withResidual)
                  ASSERT_EQ(call("add_rms_norm", attrs({floatAttr("epsilon", 1e-5)}), {x.ref(), r.ref(), scale.ref()},
                                 {normed.ref(), sum.ref()}),
                            "");
                else
                  ASSERT_EQ(call("rms_norm", attrs({floatAttr("epsilon", 1e-5)}), {x.ref(), scale.ref()}, {normed.ref()}),
                            "");
                const char *activation = swiglu ? "swiglu" : "none";
                ASSERT_EQ(call("linear", attrs({stringAttr("activation", activation), intAttr("transB", 1)}),
                               {normed.ref(), w.ref(), none.ref(), none.ref(), none.ref()}, {want.ref()}),
                          "");
                auto dx = upload(x.data, s), dr = upload(r.data, s), dscale = upload(scale.data, s),
                     dw = upload(w.data, s);
                Device out(size_t(M * N) * cu::storageBytes(s)), dsum(size_t(M * K) * cu::storageBytes(s));
                cu::SmallLinearArgs a;
                a.x = dx->p, a.w = dw->p, a.out = out.p, a.M = M, a.N = rows, a.K = K, a.swiglu = swiglu;
                a.normScale = dscale->p, a.normEpsilon = 1e-5f, a.slices = slices, a.blocks = blocks;
                if (withResidual)
                  a.normResidual = dr->p, a.normSum = dsum.p;
                const std::string what = std::string("small linear after ") +
                                         (withResidual ? "add_rms_norm " : "rms_norm ") + activation + " " + name(s) +
                                         " M=" + std::to_string(M) + " K=" + std::to_string(K) +
                                         " slices=" + std::to_string(slices) + " blocks=" + std::to_string(blocks);
                ASSERT_TRUE(cu::smallLinearTakes(s, a)) << what;
                ASSERT_EQ(cu::smallLinear(s, a, activation, nullptr), "") << what;
                expectClose(download(out, size_t(M * N), s), want.data, s == cu::Storage::F32 ? 1e-4f : tolerance(s),
                            what);
                if (withResidual)
                  expectClose(download(dsum, size_t(M * K), s), rounded(sum.data, s),
                              s == cu::Storage::F32 ? 0.0f : 1e-3f,
                              what + " sum"); // a 16-bit sum within one rounding step
              }
  cu::SmallLinearArgs a; // a sum needs a residual, and a residual a scale
  Device x(64), w(64), out(64);
  a.x = x.p, a.w = w.p, a.out = out.p, a.M = 1, a.N = 1, a.K = 4, a.normSum = out.p;
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
  a.normSum = nullptr, a.normResidual = x.p;
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
}

// The GEMV storing its output as pieces (a merged QKV projection's split in its epilogue):
// queries [M, Hq * D] as computed, keys rotated (by position ids, or tables by row, or one
// table row that M sequences of one token share (sharedTables); rotate-half or interleaved; all
// of the head or half of it) into a cache after 5 rows whose count it reads
// on the device, values into another; with the RMS norm in front and a bias, K in one slice or
// two, one row and several, a block per group of columns or 2 blocks taking them in turn (16-bit,
// M = 1); against
// the CPU's add_rms_norm, linear, split and rotary. It refuses
// odd widths, widths that miss N, a rotated piece of part of a head, and an activation.
TEST(Cuda, SmallLinearWithOutputPiecesMatchesTheCpu) {
  const int64_t K = 264, D = 8, Hq = 3, Hk = 2, Q = Hq * D, Kc = Hk * D, V = Hk * D, N = Q + Kc + V, past = 5;
  const int64_t table = 12;
  for (cu::Storage s : kStorages)
    for (int64_t M : {1, 3})
      for (int tables : {0, 1, 2}) // by position, by row, shared
        for (bool interleaved : {false, true})
          for (int64_t rot : {D, D / 2})
            for (int slices : {1, 2})
              for (int64_t blocks : {0, 2}) {
                Buf<float> x(DType::F32, {M, K}, rounded(randomFloats(M * K, 70), s)),
                    r(DType::F32, {M, K}, rounded(randomFloats(M * K, 71), s)),
                    scale(DType::F32, {K}, rounded(randomFloats(K, 72, 0.5f, 1.5f), s)),
                    w(DType::F32, {N, K}, rounded(randomFloats(N * K, 73, -0.2f, 0.2f), s)),
                    bias(DType::F32, {N}, rounded(randomFloats(N, 74), s)), none(DType::F32, {0}),
                    normed(DType::F32, {M, K}), sum(DType::F32, {M, K}), qkv(DType::F32, {1, M, N}),
                    q(DType::F32, {1, M, Q}), k(DType::F32, {1, M, Kc}), v(DType::F32, {1, M, V}),
                    kWant(DType::F32, {1, M, Kc});
                const bool byPosition = tables == 0, shared = tables == 2;
                const int64_t tableRows = byPosition ? table : shared ? 1 : M;
                Buf<float> cosT(DType::F32, {tableRows, rot / 2}, rounded(randomFloats(tableRows * rot / 2, 75), s)),
                    sinT(DType::F32, {tableRows, rot / 2}, rounded(randomFloats(tableRows * rot / 2, 76), s));
                const auto firstRows = [&](const std::vector<float> &t) {
                  return std::vector<float>(t.begin(), t.begin() + tableRows * rot / 2);
                };
                // Shared: the M rows are M sequences of one token, [M, 1, Hk * D], one table row.
                Buf<float> cosRows(DType::F32, {1, shared ? 1 : M, rot / 2}, firstRows(cosT.data)),
                    sinRows(DType::F32, {1, shared ? 1 : M, rot / 2}, firstRows(sinT.data)),
                    kSequences(DType::F32, {M, 1, Kc}), kSequencesWant(DType::F32, {M, 1, Kc});
                std::vector<int64_t> ids = {7, 2, 11};
                ids.resize(size_t(M));
                Buf<int64_t> pos(DType::I64, {1, M}, ids), noIds(DType::I64, {0});
                ASSERT_EQ(call("add_rms_norm", attrs({floatAttr("epsilon", 1e-5)}), {x.ref(), r.ref(), scale.ref()},
                               {normed.ref(), sum.ref()}),
                          "");
                ASSERT_EQ(call("linear", attrs({intAttr("transB", 1)}), {normed.ref(), w.ref(), bias.ref(), none.ref(), none.ref()},
                               {qkv.ref()}),
                          "");
                ASSERT_EQ(call("split", attrs({intAttr("axis", 2)}), {qkv.ref()}, {q.ref(), k.ref(), v.ref()}), "");
                AttrList ra = attrs({intAttr("interleaved", interleaved), intAttr("rotary_embedding_dim", rot),
                                     intAttr("num_heads", Hk)});
                if (byPosition)
                  ASSERT_EQ(call("rotary", ra, {k.ref(), cosT.ref(), sinT.ref(), pos.ref()}, {kWant.ref()}), "");
                else if (!shared)
                  ASSERT_EQ(call("rotary", ra, {k.ref(), cosRows.ref(), sinRows.ref(), noIds.ref()}, {kWant.ref()}), "");
                else {
                  kSequences.data = k.data;
                  ASSERT_EQ(call("rotary", ra, {kSequences.ref(), cosRows.ref(), sinRows.ref(), noIds.ref()},
                                 {kSequencesWant.ref()}),
                            "");
                  kWant.data = kSequencesWant.data;
                }
                auto dx = upload(x.data, s), dr = upload(r.data, s), dscale = upload(scale.data, s), dw = upload(w.data, s),
                     db = upload(bias.data, s), dcos = upload(cosT.data, s), dsin = upload(sinT.data, s),
                     dpos = uploadRaw(pos.data), rows = uploadRaw(std::vector<int64_t>{past});
                auto error = uploadRaw(std::vector<int>{0});
                Device dq(size_t(M * Q) * cu::storageBytes(s)), dsum(size_t(M * K) * cu::storageBytes(s)),
                    keys(size_t((past + M) * Kc) * cu::storageBytes(s)), values(size_t((past + M) * V) * cu::storageBytes(s));
                cudaMemset(keys.p, 0, keys.bytes);
                cudaMemset(values.p, 0, values.bytes);
                cu::SmallLinearArgs a;
                a.x = dx->p, a.w = dw->p, a.bias = db->p, a.M = M, a.N = N, a.K = K, a.slices = slices, a.blocks = blocks;
                a.normScale = dscale->p, a.normResidual = dr->p, a.normSum = dsum.p, a.normEpsilon = 1e-5f;
                a.pieces = 3;
                a.piece[0].columns = Q, a.piece[0].to.base = dq.p;
                a.piece[1].columns = Kc, a.piece[1].to = {keys.p, rows->as<int64_t>(), Kc};
                a.piece[2].columns = V, a.piece[2].to = {values.p, rows->as<int64_t>(), V};
                cu::RotaryArgs &rk = a.piece[1].rotary;
                rk.cos = dcos->p, rk.sin = dsin->p, rk.tableRows = tableRows, rk.D = D, rk.rotaryDim = rot;
                rk.positions = byPosition ? dpos->as<int64_t>() : nullptr, rk.interleaved = interleaved;
                rk.sharedTables = shared, rk.S = shared ? 1 : M;
                rk.error = error->as<int>();
                const std::string what = std::string("small linear into pieces ") + name(s) + " M=" + std::to_string(M) +
                                         (byPosition ? " by position" : shared ? " one table row" : " tables by row") +
                                         (interleaved ? " interleaved" : "") + " rot=" + std::to_string(rot) +
                                         " slices=" + std::to_string(slices) + " blocks=" + std::to_string(blocks);
                ASSERT_TRUE(cu::smallLinearTakes(s, a)) << what;
                ASSERT_EQ(cu::smallLinear(s, a, "none", nullptr), "") << what;
                const float tol = s == cu::Storage::F32 ? 1e-4f : tolerance(s);
                expectClose(download(dq, size_t(M * Q), s), q.data, tol, what + ": queries");
                const std::vector<float> cachedKeys = download(keys, size_t((past + M) * Kc), s),
                                         cachedValues = download(values, size_t((past + M) * V), s);
                expectClose(std::vector<float>(cachedKeys.begin() + past * Kc, cachedKeys.end()), kWant.data, tol,
                            what + ": keys");
                expectClose(std::vector<float>(cachedValues.begin() + past * V, cachedValues.end()), v.data, tol,
                            what + ": values");
                expectClose(std::vector<float>(cachedKeys.begin(), cachedKeys.begin() + past * Kc),
                            std::vector<float>(size_t(past * Kc), 0.0f), 0.0f, what + ": the cache's rows before");
                expectClose(download(dsum, size_t(M * K), s), rounded(sum.data, s), s == cu::Storage::F32 ? 0.0f : 1e-3f,
                            what + ": sum");
                int flag = 1;
                cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
                EXPECT_EQ(flag, 0) << what;
              }
  Device x(64 * 4), w(64 * 4), out(64 * 4);
  cu::SmallLinearArgs a;
  a.x = x.p, a.w = w.p, a.M = 1, a.N = 8, a.K = 8, a.pieces = 2;
  a.piece[0].columns = 4, a.piece[0].to.base = out.p, a.piece[1].columns = 4, a.piece[1].to.base = out.p;
  EXPECT_TRUE(cu::smallLinearTakes(cu::Storage::F32, a));
  EXPECT_NE(cu::smallLinear(cu::Storage::F32, a, "relu", nullptr), ""); // no activation with pieces
  a.piece[1].columns = 2;                                                // widths that miss N
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
  a.piece[0].columns = 5, a.piece[1].columns = 3; // odd widths
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a));
  a.piece[0].columns = 4, a.piece[1].columns = 4;
  a.piece[1].rotary.cos = a.piece[1].rotary.sin = w.p, a.piece[1].rotary.D = 8, a.piece[1].rotary.rotaryDim = 8;
  EXPECT_FALSE(cu::smallLinearTakes(cu::Storage::F32, a)); // 4 columns: part of a head of 8
}

// A chained launch (decodeChain) as a decoder layer's decode step would run it: the attention of
// one query over a length-major cache of 100 rows, 70 of them counted on the device (2 splits per
// head, whose results the last block of a head combines; heads of 64, 4 query heads on 1 key/value
// head and 6 on 2: 4 and 3 heads per block), then the output projection of its output, gate/up with
// the add + RMS norm in front (its sum stored) and SwiGLU, down with the stored sum as its
// residual, and a norm in front of two output pieces, the second after 3 rows of a cache whose
// count it reads on the device; each step reading what the one before wrote. Against the same steps
// launched one by one (decodeAttention, smallLinear, which the tests above hold to the CPU): the
// same values, to the bit, for 1, 2 and 3 blocks taking the groups of columns and the attention's
// blocks in turn, K in one slice or two, with the attention and without; bf16, the one storage it
// takes. It refuses f16, two rows, no step, more than kMaxChainSteps, an attention that is not the
// first step, and no barrier.
TEST(Cuda, DecodeChainMatchesTheStepsOneByOne) {
  cu::decodeChainSetup();
  const int64_t D = 64, F = 136, P0 = 200, P1 = 64, past = 3, bound = 100, keys = 70;
  const cu::Storage s = cu::Storage::BF16;
  for (int64_t Hkv : {1, 2})
    for (bool attention : {true, false})
      for (int slices : {1, 2})
        for (int64_t blocks : {1, 2, 3}) {
          const int64_t Hq = Hkv == 1 ? 4 : 6, H = Hq * D;
          const size_t e = cu::storageBytes(s);
          auto values = [&](int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
            return upload(rounded(randomFloats(n, seed, lo, hi), s), s);
          };
          auto w1 = values(H * H, 90, -0.2f, 0.2f), w2 = values(2 * F * H, 91, -0.2f, 0.2f),
               w3 = values(H * F, 92, -0.2f, 0.2f), w4 = values((P0 + P1) * H, 93, -0.2f, 0.2f);
          auto x0 = values(H, 94), r0 = values(H, 95), scale = values(H, 96, 0.5f, 1.5f);
          auto q = values(H, 97), kCache = values(bound * Hkv * D, 98), vCache = values(bound * Hkv * D, 99);
          auto rows = uploadRaw(std::vector<int64_t>{past}), count = uploadRaw(std::vector<int64_t>{keys});
          Device workspace(cu::decodeAttentionWorkspaceBytes(1, Hq, D, cu::decodeAttentionSplits(bound)));
          cudaMemset(workspace.p, 0, workspace.bytes);
          // Each run's outputs: the attention's, y1, the stored sum h1, m, y3, then the two pieces.
          struct Outputs {
            Device att, y1, h1, m, y3, p0, p1;
            Outputs(int64_t H, size_t e)
                : att(H * e), y1(H * e), h1(H * e), m(F * e), y3(H * e), p0(P0 * e), p1((past + 1) * P1 * e) {}
          };
          auto stepsOf = [&](Outputs &o, std::vector<cu::ChainStep> &steps) {
            steps.assign(5, cu::ChainStep());
            cu::AttentionArgs &a = steps[0].attentionArgs;
            a.q = q->p, a.k = kCache->p, a.v = vCache->p, a.out = o.att.p, a.B = 1, a.Hq = Hq, a.Hkv = Hkv, a.Sq = 1;
            a.Sk = bound, a.D = a.Dv = D, a.scale = 0.125f, a.causal = false, a.skOnDevice = count->as<int64_t>();
            a.qs = {H, H, D}, a.ks = a.vs = cu::HeadStrides{Hkv * D, Hkv * D, D};
            steps[0].attention = true, steps[0].splits = cu::decodeAttentionSplits(bound);
            steps[0].workspace = workspace.p;
            for (size_t i = 1; i < 5; ++i) {
              cu::SmallLinearArgs &l = steps[i].linear;
              l.M = 1, l.K = H, l.slices = slices, l.normEpsilon = 1e-5f;
            }
            cu::SmallLinearArgs &l1 = steps[1].linear, &l2 = steps[2].linear, &l3 = steps[3].linear,
                                &l4 = steps[4].linear;
            l1.x = attention ? o.att.p : x0->p, l1.w = w1->p, l1.out = o.y1.p, l1.N = H;
            l2.x = o.y1.p, l2.w = w2->p, l2.out = o.m.p, l2.N = 2 * F, l2.swiglu = true;
            l2.normScale = scale->p, l2.normResidual = r0->p, l2.normSum = o.h1.p;
            steps[2].activation = "swiglu";
            l3.x = o.m.p, l3.w = w3->p, l3.out = o.y3.p, l3.N = H, l3.K = F, l3.residual = o.h1.p;
            l4.x = o.y3.p, l4.w = w4->p, l4.N = P0 + P1, l4.normScale = scale->p, l4.pieces = 2;
            l4.piece[0].columns = P0, l4.piece[0].to.base = o.p0.p;
            l4.piece[1].columns = P1, l4.piece[1].to = {o.p1.p, rows->as<int64_t>(), P1};
            if (!attention)
              steps.erase(steps.begin());
          };
          Outputs one(H, e), chained(H, e);
          std::vector<cu::ChainStep> steps;
          stepsOf(one, steps);
          for (const cu::ChainStep &st : steps)
            if (st.attention) {
              ASSERT_TRUE(cu::decodeAttentionChainTakes(s, st.attentionArgs, st.splits));
              ASSERT_EQ(cu::decodeAttention(s, st.attentionArgs, st.splits, st.workspace, nullptr), "");
            } else {
              ASSERT_TRUE(cu::smallLinearChainTakes(s, st.linear));
              ASSERT_EQ(cu::smallLinear(s, st.linear, st.activation, nullptr), "");
            }
          Device barrier(cu::decodeChainBarrierBytes());
          cudaMemset(barrier.p, 0, barrier.bytes);
          stepsOf(chained, steps);
          const std::string what = std::string("chain, ") + std::to_string(Hq) + " heads on " + std::to_string(Hkv) +
                                   (attention ? ", with the attention" : "") +
                                   " slices=" + std::to_string(slices) + " blocks=" + std::to_string(blocks);
          ASSERT_EQ(cu::decodeChain(s, steps.data(), int(steps.size()), blocks, barrier.p, nullptr), "") << what;
          const std::pair<const Device *, const Device *> pairs[] = {{&one.att, &chained.att}, {&one.y1, &chained.y1},
                                                                     {&one.h1, &chained.h1},   {&one.m, &chained.m},
                                                                     {&one.y3, &chained.y3},   {&one.p0, &chained.p0}};
          for (const auto &[want, got] : pairs)
            if (attention || want != &one.att)
              expectClose(download(*got, got->bytes / e, s), download(*want, want->bytes / e, s), 0.0f, what);
          const std::vector<float> cacheWant = download(one.p1, size_t((past + 1) * P1), s),
                                   cacheGot = download(chained.p1, size_t((past + 1) * P1), s);
          expectClose(std::vector<float>(cacheGot.begin() + past * P1, cacheGot.end()),
                      std::vector<float>(cacheWant.begin() + past * P1, cacheWant.end()), 0.0f, what + ": cache rows");
          EXPECT_EQ(downloadRaw<unsigned>(barrier, barrier.bytes / sizeof(unsigned))[0], 0u)
              << what << ": the count left";
        }
  Device x(64 * 4), w(64 * 4), out(64 * 4), barrier(cu::decodeChainBarrierBytes());
  std::vector<cu::ChainStep> steps(cu::kMaxChainSteps + 1);
  for (cu::ChainStep &st : steps)
    st.linear.x = x.p, st.linear.w = w.p, st.linear.out = out.p, st.linear.M = 1, st.linear.N = 4, st.linear.K = 8;
  EXPECT_EQ(cu::decodeChain(cu::Storage::BF16, steps.data(), 2, 1, barrier.p, nullptr), "");
  EXPECT_NE(cu::decodeChain(cu::Storage::F16, steps.data(), 1, 1, barrier.p, nullptr), "");
  EXPECT_NE(cu::decodeChain(cu::Storage::BF16, steps.data(), 0, 1, barrier.p, nullptr), "");
  EXPECT_NE(cu::decodeChain(cu::Storage::BF16, steps.data(), cu::kMaxChainSteps + 1, 1, barrier.p, nullptr), "");
  EXPECT_NE(cu::decodeChain(cu::Storage::BF16, steps.data(), 1, 1, nullptr, nullptr), "");
  steps[1].attention = true; // an attention second (and without its arguments)
  EXPECT_NE(cu::decodeChain(cu::Storage::BF16, steps.data(), 2, 1, barrier.p, nullptr), "");
  steps[0].linear.M = 2;
  EXPECT_FALSE(cu::smallLinearChainTakes(cu::Storage::BF16, steps[0].linear));
  EXPECT_NE(cu::decodeChain(cu::Storage::BF16, steps.data(), 1, 1, barrier.p, nullptr), "");
}


// The strided copy as transpose, stepped slice, broadcast and a split's pieces in one launch,
// against the CPU kernels.
TEST(Cuda, StridedCopiesMatchTheCpu) {
  Buf<float> x(DType::F32, {2, 3, 4}, randomFloats(24, 31)), t(DType::F32, {4, 2, 3}), sl(DType::F32, {2, 2, 2}),
      ex(DType::F32, {3, 2, 3, 4});
  ASSERT_EQ(call("transpose", attrs({intsAttr("perm", {2, 0, 1})}), {x.ref()}, {t.ref()}), "");
  ASSERT_EQ(call("slice", attrs({intsAttr("starts", {0, 3}), intsAttr("ends", {3, 0}), intsAttr("axes", {1, 2}),
                                 intsAttr("steps", {2, -2})}),
                 {x.ref()}, {sl.ref()}),
            "");
  Buf<int64_t> shape(DType::I64, {4}, {3, 2, 3, 4});
  ASSERT_EQ(call("expand", {}, {x.ref(), shape.ref()}, {ex.ref()}), "");
  auto dx = uploadRaw(x.data);
  { // transpose [2,3,4] -> [4,2,3]
    Device out(24 * 4);
    cu::StridedCopy c;
    c.rank = 3, c.elemBytes = 4;
    const int64_t dims[3] = {4, 2, 3}, src[3] = {1, 12, 4}, dst[3] = {6, 3, 1};
    for (int d = 0; d < 3; ++d)
      c.dims[d] = dims[d], c.src[d] = src[d], c.dst[d] = dst[d];
    ASSERT_EQ(cu::stridedCopy(dx->p, out.p, c, nullptr), "");
    expectClose(downloadRaw<float>(out, 24), t.data, 0.0f, "transpose");
  }
  { // x[:, 0:3:2, 3:0:-2]
    Device out(8 * 4);
    cu::StridedCopy c;
    c.rank = 3, c.elemBytes = 4, c.srcBase = 3;
    const int64_t dims[3] = {2, 2, 2}, src[3] = {12, 8, -2}, dst[3] = {4, 2, 1};
    for (int d = 0; d < 3; ++d)
      c.dims[d] = dims[d], c.src[d] = src[d], c.dst[d] = dst[d];
    ASSERT_EQ(cu::stridedCopy(dx->p, out.p, c, nullptr), "");
    expectClose(downloadRaw<float>(out, 8), sl.data, 0.0f, "slice");
  }
  { // expand to [3, 2, 3, 4]
    Device out(72 * 4);
    cu::StridedCopy c;
    c.rank = 4, c.elemBytes = 4;
    const int64_t dims[4] = {3, 2, 3, 4}, src[4] = {0, 12, 4, 1}, dst[4] = {24, 12, 4, 1};
    for (int d = 0; d < 4; ++d)
      c.dims[d] = dims[d], c.src[d] = src[d], c.dst[d] = dst[d];
    ASSERT_EQ(cu::stridedCopy(dx->p, out.p, c, nullptr), "");
    expectClose(downloadRaw<float>(out, 72), ex.data, 0.0f, "expand");
  }
  { // split along the last axis into widths 1, 2, 1: three pieces, one launch
    Buf<float> p0(DType::F32, {2, 3, 1}), p1(DType::F32, {2, 3, 2}), p2(DType::F32, {2, 3, 1});
    ASSERT_EQ(call("split", attrs({intAttr("axis", 2)}), {x.ref()}, {p0.ref(), p1.ref(), p2.ref()}), "");
    Device o0(6 * 4), o1(12 * 4), o2(6 * 4);
    cu::StridedCopies batch;
    const int64_t widths[3] = {1, 2, 1};
    void *outs[3] = {o0.p, o1.p, o2.p};
    for (int i = 0, at = 0; i < 3; at += int(widths[i]), ++i) {
      cu::StridedCopy &c = batch.copy[i];
      c.rank = 3, c.elemBytes = 4, c.srcBase = at;
      const int64_t dims[3] = {2, 3, widths[i]}, src[3] = {12, 4, 1}, dst[3] = {3 * widths[i], widths[i], 1};
      for (int d = 0; d < 3; ++d)
        c.dims[d] = dims[d], c.src[d] = src[d], c.dst[d] = dst[d];
      batch.src[i] = dx->p, batch.dst[i] = outs[i];
    }
    batch.count = 3;
    ASSERT_EQ(cu::stridedCopies(batch, nullptr), "");
    expectClose(downloadRaw<float>(o0, 6), p0.data, 0.0f, "split piece 0");
    expectClose(downloadRaw<float>(o1, 12), p1.data, 0.0f, "split piece 1");
    expectClose(downloadRaw<float>(o2, 6), p2.data, 0.0f, "split piece 2");
    batch.copy[1].elemBytes = 2;
    EXPECT_NE(cu::stridedCopies(batch, nullptr), "") << "pieces of different element sizes are refused";
    batch.copy[1].elemBytes = 4;
    batch.count = cu::kMaxCopies + 1;
    EXPECT_NE(cu::stridedCopies(batch, nullptr), "") << "more pieces than a launch takes are refused";
  }
}

// A slice whose starts the device holds against the CPU's dynamic_slice: x [2, 3, 4] from starts
// (1, -1) along axes 1 and 2 with steps 1 and -2 (the second wrapped from the end), as int64 and as
// int32; starts out of range clamped (9 along an axis of 3 with a step of -1: from its last
// element); a slice that would read past the input copies nothing and raises the error flag.
TEST(Cuda, SliceFromDeviceStartsMatchesTheCpu) {
  Buf<float> x(DType::F32, {2, 3, 4}, randomFloats(24, 34));
  auto dx = uploadRaw(x.data);
  struct Case {
    std::vector<int64_t> starts, axes, steps, out;
  };
  const Case cases[] = {{{1, -1}, {1, 2}, {1, -2}, {2, 2, 2}}, {{9}, {1}, {-1}, {2, 3, 4}}, {{-7, 2}, {0, 2}, {1, 1}, {2, 3, 2}}};
  for (const Case &c : cases)
    for (bool int32 : {false, true}) {
      const std::string what = "slice from starts " + std::to_string(c.starts[0]) + (int32 ? " (int32)" : " (int64)");
      Buf<int64_t> starts(DType::I64, {int64_t(c.starts.size())}, c.starts);
      Buf<int32_t> starts32(DType::I32, {int64_t(c.starts.size())});
      for (size_t i = 0; i < c.starts.size(); ++i)
        starts32.data[i] = int32_t(c.starts[i]);
      Buf<int64_t> ends(DType::I64, {int64_t(c.starts.size())}); // (the output's shape says where it ends)
      Buf<float> want(DType::F32, c.out);
      ASSERT_EQ(call("dynamic_slice", attrs({intsAttr("axes", c.axes), intsAttr("steps", c.steps)}),
                     {x.ref(), int32 ? starts32.ref() : starts.ref(), ends.ref()}, {want.ref()}),
                "")
          << what;
      auto dstarts = int32 ? uploadRaw(starts32.data) : uploadRaw(starts.data);
      Device out(size_t(want.numel() + 4) * 4), error(4); // (room for the too-long slice below)
      cudaMemset(error.p, 0, 4);
      cu::StridedCopy copy;
      copy.rank = 3, copy.elemBytes = 4;
      const int64_t strides[3] = {12, 4, 1};
      for (int d = 0; d < 3; ++d)
        copy.dims[d] = c.out[size_t(d)], copy.src[d] = strides[d], copy.dst[d] = d == 2 ? 1 : d == 1 ? c.out[2] : c.out[1] * c.out[2];
      cu::SliceStarts sl;
      sl.values = dstarts->p, sl.int32 = int32, sl.count = int(c.axes.size());
      for (size_t i = 0; i < c.axes.size(); ++i) {
        const int d = int(c.axes[i]);
        sl.axes[i] = d, sl.inDims[i] = x.shape[size_t(d)], sl.inStrides[i] = strides[d], sl.steps[i] = c.steps[i];
        copy.src[d] = strides[d] * c.steps[i];
      }
      ASSERT_EQ(cu::slicedCopy(dx->p, out.p, copy, sl, error.as<int>(), nullptr), "") << what;
      expectClose(downloadRaw<float>(out, size_t(want.numel())), want.data, 0.0f, what);
      EXPECT_EQ(downloadRaw<int>(error, 1)[0], 0) << what;
      if (&c != &cases[0] || int32)
        continue;
      // The first case with its output one row longer along axis 1 than the start leaves.
      copy.dims[1] = 3;
      cudaMemset(out.p, 0, out.bytes);
      ASSERT_EQ(cu::slicedCopy(dx->p, out.p, copy, sl, error.as<int>(), nullptr), "");
      EXPECT_EQ(downloadRaw<int>(error, 1)[0], 1) << "a slice past the input raises the flag";
      EXPECT_EQ(downloadRaw<float>(out, size_t(want.numel())), std::vector<float>(size_t(want.numel()), 0.0f))
          << "and copies nothing";
    }
}

// A cache's new rows placed after a past whose row count the launch reads from the device (the
// concatenation of a graph replayed for every cache length), against the CPU's concat.
TEST(Cuda, StridedCopyShiftedOnTheDeviceMatchesConcat) {
  const int64_t P = 5, S = 2, B = 1, W = 6, capacity = 16;
  Buf<float> past(DType::F32, {P, B, W}, randomFloats(P * B * W, 32)), fresh(DType::F32, {S, B, W}, randomFloats(S * B * W, 33)),
      want(DType::F32, {P + S, B, W});
  ASSERT_EQ(call("concat", attrs({intAttr("axis", 0)}), {past.ref(), fresh.ref()}, {want.ref()}), "");
  std::vector<float> cache = past.data;
  cache.resize(size_t(capacity * B * W), 0.0f);
  auto dcache = uploadRaw(cache), dfresh = uploadRaw(fresh.data), rows = uploadRaw(std::vector<int64_t>{P});
  cu::StridedCopy c;
  c.rank = 3, c.elemBytes = 4;
  const int64_t dims[3] = {S, B, W}, strides[3] = {B * W, W, 1};
  for (int d = 0; d < 3; ++d)
    c.dims[d] = dims[d], c.src[d] = strides[d], c.dst[d] = strides[d];
  c.dstShift = static_cast<const int64_t *>(rows->p), c.dstShiftStride = B * W;
  ASSERT_EQ(cu::stridedCopy(dfresh->p, dcache->p, c, nullptr), "");
  expectClose(downloadRaw<float>(*dcache, size_t((P + S) * B * W)), want.data, 0.0f, "shifted append");
}

// Elementwise ops of shape subgraphs and masks (int64, bool, f32), range, gather_nd, shape values.
TEST(Cuda, SmallOpsMatchTheCpu) {
  Buf<int64_t> a(DType::I64, {2, 3}, {1, -7, 3, 40, 5, -6}), b(DType::I64, {3}, {2, 2, -4}), sum(DType::I64, {2, 3}),
      quotient(DType::I64, {2, 3});
  Buf<uint8_t> le(DType::Bool, {2, 3});
  ASSERT_EQ(call("add", {}, {a.ref(), b.ref()}, {sum.ref()}), "");
  ASSERT_EQ(call("div", {}, {a.ref(), b.ref()}, {quotient.ref()}), "");
  ASSERT_EQ(call("less_equal", {}, {a.ref(), b.ref()}, {le.ref()}), "");
  Buf<float> x(DType::F32, {2, 3}, randomFloats(6, 32)), zero(DType::F32, {}, {0.0f}), where(DType::F32, {2, 3}),
      gelu(DType::F32, {2, 3});
  ASSERT_EQ(call("where", {}, {le.ref(), x.ref(), zero.ref()}, {where.ref()}), "");
  ASSERT_EQ(call("gelu", attrs({stringAttr("approximate", "tanh")}), {x.ref()}, {gelu.ref()}), "");
  auto da = uploadRaw(a.data), db = uploadRaw(b.data), dx = uploadRaw(x.data), dz = uploadRaw(zero.data);
  Device dsum(48), dq(48), dle(6), dwhere(24), dgelu(24);
  auto run = [&](const char *op, std::vector<std::pair<const void *, DType>> ins, std::vector<std::vector<int64_t>> strides,
                 void *out, DType outType) {
    cu::ElementwiseArgs e;
    e.op = cu::elementwiseOp(op), e.numInputs = int(ins.size()), e.out = out, e.outType = int(outType), e.rank = 2;
    e.dims[0] = 2, e.dims[1] = 3;
    for (size_t j = 0; j < ins.size(); ++j) {
      e.in[j] = ins[j].first, e.inType[j] = int(ins[j].second);
      e.inStrides[j][0] = strides[j][0], e.inStrides[j][1] = strides[j][1];
    }
    return cu::elementwise(e, nullptr);
  };
  ASSERT_EQ(run("add", {{da->p, DType::I64}, {db->p, DType::I64}}, {{3, 1}, {0, 1}}, dsum.p, DType::I64), "");
  ASSERT_EQ(run("div", {{da->p, DType::I64}, {db->p, DType::I64}}, {{3, 1}, {0, 1}}, dq.p, DType::I64), "");
  ASSERT_EQ(run("less_equal", {{da->p, DType::I64}, {db->p, DType::I64}}, {{3, 1}, {0, 1}}, dle.p, DType::Bool), "");
  ASSERT_EQ(run("where", {{dle.p, DType::Bool}, {dx->p, DType::F32}, {dz->p, DType::F32}}, {{3, 1}, {3, 1}, {0, 0}},
                dwhere.p, DType::F32),
            "");
  ASSERT_EQ(run("gelu_tanh", {{dx->p, DType::F32}}, {{3, 1}}, dgelu.p, DType::F32), "");
  EXPECT_EQ(downloadRaw<int64_t>(dsum, 6), sum.data);
  EXPECT_EQ(downloadRaw<int64_t>(dq, 6), quotient.data);
  EXPECT_EQ(downloadRaw<uint8_t>(dle, 6), le.data);
  expectClose(downloadRaw<float>(dwhere, 6), where.data, 1e-6f, "where");
  expectClose(downloadRaw<float>(dgelu, 6), gelu.data, 1e-5f, "gelu tanh");
  // The unary ops of session 18: halves round to even; a NaN; softplus and hard_swish far out.
  Buf<float> u(DType::F32, {2, 3}, {0.5f, -2.5f, 1.5f, std::nanf(""), 100.0f, -100.0f});
  auto du = uploadRaw(u.data);
  for (const char *op : {"round", "softplus", "hard_swish"}) {
    Buf<float> want(DType::F32, {2, 3});
    ASSERT_EQ(call(op, {}, {u.ref()}, {want.ref()}), "");
    Device got(24);
    ASSERT_EQ(run(op, {{du->p, DType::F32}}, {{3, 1}}, got.p, DType::F32), "");
    expectCloseOrNan(downloadRaw<float>(got, 6), want.data, 1e-5f, op);
  }
  Buf<uint8_t> nan(DType::Bool, {2, 3});
  ASSERT_EQ(call("is_nan", {}, {u.ref()}, {nan.ref()}), "");
  Device dnan(6);
  ASSERT_EQ(run("is_nan", {{du->p, DType::F32}}, {{3, 1}}, dnan.p, DType::Bool), "");
  EXPECT_EQ(downloadRaw<uint8_t>(dnan, 6), nan.data);
  // The activations with attributes (not the defaults, so that a default in their place shows),
  // and a NaN, which each passes on as the CPU's does.
  Buf<float> signs(DType::F32, {2, 4}, {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, -40.0f, 9.0f, std::nanf("")});
  auto dsigns = uploadRaw(signs.data);
  const std::pair<const char *, AttrList> activations[] = {
      {"elu", attrs({floatAttr("alpha", 0.5)})},
      {"leaky_relu", attrs({floatAttr("alpha", 0.2)})},
      {"hard_sigmoid", attrs({floatAttr("alpha", 0.3), floatAttr("beta", 0.4)})}};
  for (const auto &[op, opAttrs] : activations) {
    Buf<float> want(DType::F32, {2, 4});
    ASSERT_EQ(call(op, opAttrs, {signs.ref()}, {want.ref()}), "");
    cu::ElementwiseArgs e;
    e.op = cu::elementwiseOp(op), e.numInputs = 1, e.in[0] = dsigns->p, e.inType[0] = int(DType::F32);
    e.rank = 1, e.dims[0] = 8, e.inStrides[0][0] = 1, e.outType = int(DType::F32);
    e.alpha = opAttrs.getFloat("alpha", 0), e.beta = opAttrs.getFloat("beta", 0);
    Device got(32);
    e.out = got.p;
    ASSERT_EQ(cu::elementwise(e, nullptr), "");
    expectCloseOrNan(downloadRaw<float>(got, 8), want.data, 1e-6f, op);
  }
  // mod of integers and floats with both signs, Python's (fmod 0) and C's (fmod 1); an integer
  // divisor of 0 gives 0.
  Buf<int64_t> dividends(DType::I64, {2, 3}, {7, -7, 7, -7, 5, 9}), divisors(DType::I64, {2, 3}, {3, 3, -3, -3, 0, 9});
  Buf<float> fx(DType::F32, {2, 3}, {5.5f, -5.5f, 5.5f, -5.5f, 1.0f, -0.0f}),
      fy(DType::F32, {2, 3}, {2.0f, 2.0f, -2.0f, -2.0f, 0.5f, 3.0f});
  auto dn = uploadRaw(dividends.data), dd2 = uploadRaw(divisors.data), dfx = uploadRaw(fx.data), dfy = uploadRaw(fy.data);
  for (int cMod : {0, 1}) {
    Buf<int64_t> wantInt(DType::I64, {2, 3});
    Buf<float> wantFloat(DType::F32, {2, 3});
    ASSERT_EQ(call("mod", attrs({intAttr("fmod", cMod)}), {dividends.ref(), divisors.ref()}, {wantInt.ref()}), "");
    ASSERT_EQ(call("mod", attrs({intAttr("fmod", cMod)}), {fx.ref(), fy.ref()}, {wantFloat.ref()}), "");
    const char *op = cMod ? "fmod" : "mod";
    Device gotInt(48), gotFloat(24);
    ASSERT_EQ(run(op, {{dn->p, DType::I64}, {dd2->p, DType::I64}}, {{3, 1}, {3, 1}}, gotInt.p, DType::I64), "");
    ASSERT_EQ(run(op, {{dfx->p, DType::F32}, {dfy->p, DType::F32}}, {{3, 1}, {3, 1}}, gotFloat.p, DType::F32), "");
    EXPECT_EQ(downloadRaw<int64_t>(gotInt, 6), wantInt.data) << op;
    expectClose(downloadRaw<float>(gotFloat, 6), wantFloat.data, 0.0f, op);
  }
  // range(3, 3 + 5 * 4, 4)
  Buf<int64_t> start(DType::I64, {}, {3}), limit(DType::I64, {}, {23}), delta(DType::I64, {}, {4}), want(DType::I64, {5});
  ASSERT_EQ(call("range", {}, {start.ref(), limit.ref(), delta.ref()}, {want.ref()}), "");
  auto ds = uploadRaw(start.data), dd = uploadRaw(delta.data);
  Device range(40);
  ASSERT_EQ(cu::range(int(DType::I64), ds->p, dd->p, range.p, 5, nullptr), "");
  EXPECT_EQ(downloadRaw<int64_t>(range, 5), want.data);
  // gather_nd: pairs of indices into [3, 4] data with rows of 2 picked whole.
  Buf<float> data(DType::F32, {3, 4, 2}, randomFloats(24, 33)), picked(DType::F32, {2, 2});
  Buf<int64_t> idx(DType::I64, {2, 2}, {2, 1, 0, -1});
  ASSERT_EQ(call("gather_nd", {}, {data.ref(), idx.ref()}, {picked.ref()}), "");
  auto ddata = uploadRaw(data.data), didx = uploadRaw(idx.data), error = uploadRaw(std::vector<int>{0});
  Device gathered(16);
  const int64_t dims[2] = {3, 4}, strides[2] = {8, 2};
  ASSERT_EQ(cu::gatherNd(ddata->p, didx->as<int64_t>(), gathered.p, 2, 2, dims, strides, 2, 4, error->as<int>(), nullptr), "");
  expectClose(downloadRaw<float>(gathered, 4), picked.data, 0.0f, "gather_nd");
  // gather_nd with batch_dims 1: per batch of the data's 3, two int32 indices into its 4 rows.
  Buf<float> perBatch(DType::F32, {3, 2, 2});
  Buf<int32_t> batchIdx(DType::I32, {3, 2, 1}, {3, 0, -1, 1, 2, 2});
  ASSERT_EQ(call("gather_nd", attrs({intAttr("batch_dims", 1)}), {data.ref(), batchIdx.ref()}, {perBatch.ref()}), "");
  auto dbi = uploadRaw(batchIdx.data);
  Device batchGathered(48);
  ASSERT_EQ(cu::gatherNd(ddata->p, dbi->p, batchGathered.p, 6, 1, dims + 1, strides + 1, 2, 4, error->as<int>(),
                         nullptr, 4, 3, 8),
            "");
  expectClose(downloadRaw<float>(batchGathered, 12), perBatch.data, 0.0f, "gather_nd with batch_dims 1");
  EXPECT_EQ(downloadRaw<int>(*error, 1)[0], 0);
  // The values of a Shape op.
  const int64_t values[3] = {7, 1, 64};
  Device shape(24);
  ASSERT_EQ(cu::writeInt64s(shape.p, values, 3, nullptr), "");
  EXPECT_EQ(downloadRaw<int64_t>(shape, 3), (std::vector<int64_t>{7, 1, 64}));
  // constant_of_shape's fill, in int64 and in f16.
  Device filled(5 * 8), halfFilled(6 * 2);
  ASSERT_EQ(cu::fill(filled.p, int(DType::I64), -3.0, 5, nullptr), "");
  ASSERT_EQ(cu::fill(halfFilled.p, int(DType::F16), 2.5, 6, nullptr), "");
  EXPECT_EQ(downloadRaw<int64_t>(filled, 5), std::vector<int64_t>(5, -3));
  EXPECT_EQ(download(halfFilled, 6, cu::Storage::F16), std::vector<float>(6, 2.5f));
}

// scatter_nd and scatter_elements against the CPU's, every reduction, with duplicate indices
// where a reduction combines them (the atomic paths: a 4-byte word around each 16-bit element, an
// 8-byte one for int64), in every storage type. Values are multiples of 0.5 below 4, so that sums
// and products of three stay exact in bf16 (the GPU rounds after each update, the CPU once).
TEST(Cuda, ScatterMatchesTheCpu) {
  auto halves = [](size_t n, int seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = 0.5f * float(int((i * 7 + size_t(seed) * 13) % 7) - 3);
    return v;
  };
  auto deviceType = [](cu::Storage s) {
    return int(s == cu::Storage::F32 ? DType::F32 : s == cu::Storage::F16 ? DType::F16 : DType::BF16);
  };
  auto error = uploadRaw(std::vector<int>{0});
  for (const char *reduction : {"none", "add", "mul", "max", "min"}) {
    const bool none = std::string(reduction) == "none";
    const AttrList a = attrs({stringAttr("reduction", reduction)});
    // scatter_nd: rows of [4, 3, 2] data picked by [3, 1] indices (2 twice where they combine).
    Buf<int64_t> ndIdx(DType::I64, {3, 1}, none ? std::vector<int64_t>{3, 0, -3} : std::vector<int64_t>{2, 0, -2});
    const int64_t dims[3] = {4, 3, 2}, strides[3] = {6, 2, 1};
    // scatter_elements along axis 1 of [3, 4] data, [3, 2] indices (negative; 1 twice in row 0).
    Buf<int64_t> elIdx(DType::I64, {3, 2}, none ? std::vector<int64_t>{1, 3, 0, -1, 2, 0} : std::vector<int64_t>{1, -3, 0, 3, 2, 2});
    const int64_t elIdxDims[2] = {3, 2}, elDataDims[2] = {3, 4};
    for (cu::Storage s : kStorages) {
      Buf<float> data(DType::F32, {4, 3, 2}, halves(24, 1)), updates(DType::F32, {3, 3, 2}, halves(18, 2)),
          want(DType::F32, {4, 3, 2});
      ASSERT_EQ(call("scatter_nd", a, {data.ref(), ndIdx.ref(), updates.ref()}, {want.ref()}), "");
      auto out = upload(data.data, s), du = upload(updates.data, s), di = uploadRaw(ndIdx.data);
      ASSERT_EQ(cu::scatterNd(out->p, di->as<int64_t>(), du->p, 3, 1, dims, strides, 6, deviceType(s), reduction,
                              error->as<int>(), nullptr),
                "");
      expectClose(download(*out, 24, s), want.data, 0.0f, (std::string("scatter_nd ") + reduction + " " + name(s)).c_str());

      Buf<float> edata(DType::F32, {3, 4}, halves(12, 3)), eupdates(DType::F32, {3, 2}, halves(6, 4)),
          ewant(DType::F32, {3, 4});
      ASSERT_EQ(call("scatter_elements", attrs({stringAttr("reduction", reduction), intAttr("axis", 1)}),
                     {edata.ref(), elIdx.ref(), eupdates.ref()}, {ewant.ref()}),
                "");
      auto eout = upload(edata.data, s), deu = upload(eupdates.data, s), dei = uploadRaw(elIdx.data);
      ASSERT_EQ(cu::scatterElements(eout->p, dei->as<int64_t>(), deu->p, 2, 1, elIdxDims, elDataDims, deviceType(s),
                                    reduction, error->as<int>(), nullptr),
                "");
      expectClose(download(*eout, 12, s), ewant.data, 0.0f,
                  (std::string("scatter_elements ") + reduction + " " + name(s)).c_str());
    }
    // int64 data (8-byte words): scatter_nd of single elements ([3, 3] indices of depth 3).
    Buf<int64_t> data(DType::I64, {4, 3, 2}), tuples(DType::I64, {3, 3}, {1, 2, 0, 3, 0, 1, none ? 0 : 1, 2, 0}),
        updates(DType::I64, {3}, {5, -7, 9}), want(DType::I64, {4, 3, 2});
    for (size_t i = 0; i < 24; ++i)
      data.data[i] = int64_t(i) * 3 - 30;
    ASSERT_EQ(call("scatter_nd", a, {data.ref(), tuples.ref(), updates.ref()}, {want.ref()}), "");
    auto out = uploadRaw(data.data), dt = uploadRaw(tuples.data), du = uploadRaw(updates.data);
    ASSERT_EQ(cu::scatterNd(out->p, dt->as<int64_t>(), du->p, 3, 3, dims, strides, 1, int(DType::I64), reduction,
                            error->as<int>(), nullptr),
              "");
    EXPECT_EQ(downloadRaw<int64_t>(*out, 24), want.data) << "scatter_nd int64 " << reduction;
  }
  { // int32 indices: scatter_elements (add, a duplicate) and gather_nd of the result.
    Buf<float> data(DType::F32, {3, 4}, halves(12, 5)), updates(DType::F32, {3, 2}, halves(6, 6)),
        want(DType::F32, {3, 4}), picked(DType::F32, {2, 4});
    Buf<int32_t> idx(DType::I32, {3, 2}, {1, 1, 0, -1, 2, 3}), rows(DType::I32, {2, 1}, {2, -3});
    ASSERT_EQ(call("scatter_elements", attrs({stringAttr("reduction", "add"), intAttr("axis", 1)}),
                   {data.ref(), idx.ref(), updates.ref()}, {want.ref()}),
              "");
    ASSERT_EQ(call("gather_nd", {}, {want.ref(), rows.ref()}, {picked.ref()}), "");
    auto out = uploadRaw(data.data), du = uploadRaw(updates.data), di = uploadRaw(idx.data), dr = uploadRaw(rows.data);
    const int64_t idxDims[2] = {3, 2}, dataDims[2] = {3, 4}, rowStrides[1] = {4};
    ASSERT_EQ(cu::scatterElements(out->p, di->p, du->p, 2, 1, idxDims, dataDims, int(DType::F32), "add",
                                  error->as<int>(), nullptr, 4),
              "");
    expectClose(downloadRaw<float>(*out, 12), want.data, 0.0f, "scatter_elements int32 indices");
    Device gathered(8 * 4);
    ASSERT_EQ(cu::gatherNd(out->p, dr->p, gathered.p, 2, 1, dataDims, rowStrides, 4, 4, error->as<int>(), nullptr, 4),
              "");
    expectClose(downloadRaw<float>(gathered, 8), picked.data, 0.0f, "gather_nd int32 indices");
  }
  EXPECT_EQ(downloadRaw<int>(*error, 1)[0], 0);
  // An index out of range sets the error flag; an unknown reduction is refused.
  Buf<int64_t> bad(DType::I64, {1, 1}, {4});
  auto out = upload(std::vector<float>(24, 0.0f), cu::Storage::F32), du = upload(std::vector<float>(6, 1.0f), cu::Storage::F32),
       di = uploadRaw(bad.data);
  const int64_t dims[3] = {4, 3, 2}, strides[3] = {6, 2, 1};
  ASSERT_EQ(cu::scatterNd(out->p, di->as<int64_t>(), du->p, 1, 1, dims, strides, 6, int(DType::F32), "add",
                          error->as<int>(), nullptr),
            "");
  EXPECT_EQ(downloadRaw<int>(*error, 1)[0], 1);
  EXPECT_NE(cu::scatterNd(out->p, di->as<int64_t>(), du->p, 1, 1, dims, strides, 6, int(DType::F32), "sum",
                          error->as<int>(), nullptr),
            "");
}

// quantize_linear and dequantize_linear against the CPU: a scale per tensor (int8, values that
// saturate, and some exactly half a step from two levels: rounded to even), per index of axis 1
// (uint8 zero points) and per block of 3 along axis 2 (int8), on x [2, 3, 4].
TEST(Cuda, QuantizeMatchesTheCpu) {
  struct Case {
    const char *what;
    std::vector<int64_t> scaleDims;
    DType q;
    int64_t axis, block, dim, inner;
  };
  const Case cases[] = {{"per tensor", {}, DType::I8, 1, 0, 1, 1},
                        {"per axis", {3}, DType::U8, 1, 0, 3, 4},
                        {"per block", {2, 3, 2}, DType::I8, 2, 3, 4, 1}};
  for (const Case &c : cases) {
    const int64_t count = elementsOf(c.scaleDims);
    std::vector<float> scales(static_cast<size_t>(count));
    for (size_t i = 0; i < scales.size(); ++i)
      scales[i] = 0.015625f * float(i + 1); // 2^-6: x / scale is exact
    std::vector<float> values = randomFloats(24, 90, -3.0f, 3.0f);
    if (count == 1) // half a step between levels i and i + 1 (i = 0, 5, 10, ...): to the even one
      for (size_t i = 0; i < 24; i += 5)
        values[i] = scales[0] * (float(i) + 0.5f);
    const bool isSigned = c.q == DType::I8;
    std::vector<uint8_t> zeros(static_cast<size_t>(count));
    for (size_t i = 0; i < zeros.size(); ++i)
      zeros[i] = uint8_t(isSigned ? int8_t(int(i % 3) - 1) : uint8_t(120 + i));
    Buf<float> x(DType::F32, {2, 3, 4}, values), scale(DType::F32, c.scaleDims, scales), back(DType::F32, {2, 3, 4});
    Buf<uint8_t> zero(c.q, c.scaleDims, zeros), q(c.q, {2, 3, 4});
    const AttrList a = attrs({intAttr("axis", c.axis), intAttr("block_size", c.block)});
    ASSERT_EQ(call("quantize_linear", a, {x.ref(), scale.ref(), zero.ref()}, {q.ref()}), "");
    ASSERT_EQ(call("dequantize_linear", a, {q.ref(), scale.ref(), zero.ref()}, {back.ref()}), "");
    auto dx = uploadRaw(x.data), ds = uploadRaw(scale.data), dz = uploadRaw(zero.data);
    Device dq(24), dback(24 * 4);
    cu::QuantArgs args;
    args.x = dx->p, args.scale = ds->p, args.zero = dz->p, args.out = dq.p;
    args.xType = int(DType::F32), args.scaleType = int(DType::F32), args.zeroType = int(c.q), args.outType = int(c.q);
    args.n = 24, args.dim = c.dim, args.inner = c.inner, args.block = c.block, args.count = count;
    ASSERT_EQ(cu::quantizeLinear(true, args, nullptr), "");
    EXPECT_EQ(downloadRaw<uint8_t>(dq, 24), q.data) << c.what;
    args.x = dq.p, args.xType = int(c.q), args.out = dback.p, args.outType = int(DType::F32);
    ASSERT_EQ(cu::quantizeLinear(false, args, nullptr), "");
    expectClose(downloadRaw<float>(dback, 24), back.data, 1e-6f, c.what);
  }
}

// Reductions, convolution (grouped, strided, padded, dilated), pooling and padding against the
// CPU, in every storage type.
// group_norm (3 groups of 2 channels), instance_norm, layer_norm_stats over two trailing axes and
// batch_norm against the CPU, in every storage type. The inputs have a mean far from 0 (+3), so
// that a variance taken as E[x^2] - E[x]^2 in f32 would show.
TEST(Cuda, GroupNormsMatchTheCpu) {
  auto shifted = [](int64_t n, int seed) {
    std::vector<float> v = randomFloats(n, seed);
    for (float &f : v)
      f += 3.0f;
    return v;
  };
  for (cu::Storage s : kStorages) {
    const float tol = std::max(tolerance(s), 1e-5f) * 4;
    const std::string storage = name(s);
    const int type = int(storageDType(s));
    { // group_norm: x [2, 6, 5]
      Buf<float> x(DType::F32, {2, 6, 5}, rounded(shifted(60, 70), s)), scale(DType::F32, {6}, rounded(randomFloats(6, 71), s)),
          bias(DType::F32, {6}, rounded(randomFloats(6, 72), s)), want(DType::F32, {2, 6, 5});
      ASSERT_EQ(call("group_norm", attrs({intAttr("num_groups", 3), floatAttr("epsilon", 1e-5)}),
                     {x.ref(), scale.ref(), bias.ref()}, {want.ref()}),
                "");
      auto dx = upload(x.data, s), ds = upload(scale.data, s), db = upload(bias.data, s);
      Device y(60 * cu::storageBytes(s));
      ASSERT_EQ(cu::groupNorm(type, dx->p, y.p, ds->p, db->p, nullptr, nullptr, 6, 10, 3, 2, 5, 1e-5, nullptr), "");
      expectClose(download(y, 60, s), want.data, tol, ("group_norm " + storage).c_str());
    }
    { // instance_norm: x [2, 3, 4, 5], a group per channel
      Buf<float> x(DType::F32, {2, 3, 4, 5}, rounded(shifted(120, 73), s)),
          scale(DType::F32, {3}, rounded(randomFloats(3, 74), s)), bias(DType::F32, {3}, rounded(randomFloats(3, 75), s)),
          want(DType::F32, {2, 3, 4, 5});
      ASSERT_EQ(call("instance_norm", attrs({floatAttr("epsilon", 1e-5)}), {x.ref(), scale.ref(), bias.ref()}, {want.ref()}),
                "");
      auto dx = upload(x.data, s), ds = upload(scale.data, s), db = upload(bias.data, s);
      Device y(120 * cu::storageBytes(s));
      ASSERT_EQ(cu::groupNorm(type, dx->p, y.p, ds->p, db->p, nullptr, nullptr, 6, 20, 3, 1, 20, 1e-5, nullptr), "");
      expectClose(download(y, 120, s), want.data, tol, ("instance_norm " + storage).c_str());
    }
    { // layer_norm_stats: x [3, 4, 70] from axis 1: rows of 280 (more than a block's threads)
      Buf<float> x(DType::F32, {3, 4, 70}, rounded(shifted(840, 76), s)), mean(DType::F32, {3, 1, 1}),
          inv(DType::F32, {3, 1, 1});
      ASSERT_EQ(call("layer_norm_stats", attrs({intAttr("axis", 1), floatAttr("epsilon", 1e-5)}), {x.ref()},
                     {mean.ref(), inv.ref()}),
                "");
      auto dx = upload(x.data, s);
      Device m(3 * cu::storageBytes(s)), i(3 * cu::storageBytes(s));
      ASSERT_EQ(cu::groupNorm(type, dx->p, nullptr, nullptr, nullptr, m.p, i.p, 3, 280, 1, 1, 1, 1e-5, nullptr), "");
      expectClose(download(m, 3, s), mean.data, tol, ("layer_norm_stats mean " + storage).c_str());
      expectClose(download(i, 3, s), inv.data, tol, ("layer_norm_stats 1/std " + storage).c_str());
    }
    { // batch_norm: x [2, 4, 3, 3]
      std::vector<float> var = randomFloats(4, 80);
      for (float &v : var)
        v = std::fabs(v) + 0.5f;
      Buf<float> x(DType::F32, {2, 4, 3, 3}, rounded(randomFloats(72, 77), s)),
          scale(DType::F32, {4}, rounded(randomFloats(4, 78), s)), bias(DType::F32, {4}, rounded(randomFloats(4, 79), s)),
          mean(DType::F32, {4}, rounded(randomFloats(4, 81), s)), variance(DType::F32, {4}, rounded(var, s)),
          want(DType::F32, {2, 4, 3, 3});
      ASSERT_EQ(call("batch_norm", attrs({floatAttr("epsilon", 1e-5)}),
                     {x.ref(), scale.ref(), bias.ref(), mean.ref(), variance.ref()}, {want.ref()}),
                "");
      auto dx = upload(x.data, s), ds = upload(scale.data, s), db = upload(bias.data, s), dm = upload(mean.data, s),
           dv = upload(variance.data, s);
      Device y(72 * cu::storageBytes(s));
      ASSERT_EQ(cu::batchNorm(type, dx->p, y.p, ds->p, db->p, dm->p, dv->p, 72, 4, 9, 1e-5, nullptr), "");
      expectClose(download(y, 72, s), want.data, tol, ("batch_norm " + storage).c_str());
    }
  }
}

TEST(Cuda, ReduceConvPoolPadMatchTheCpu) {
  for (cu::Storage s : kStorages) {
    const float tol = tolerance(s);
    Buf<float> x(DType::F32, {2, 4, 6, 5}, rounded(randomFloats(240, 34), s));
    auto dx = upload(x.data, s);
    const int64_t dims[4] = {2, 4, 6, 5};
    for (const char *kind : {"sum", "mean", "max", "min", "l2", "sum_square", "prod"}) {
      Buf<float> want(DType::F32, {2, 1, 1, 5});
      ASSERT_EQ(call(std::string("reduce_") + kind, attrs({intsAttr("axes", {1, 2}), intAttr("keepdims", 1)}), {x.ref()},
                     {want.ref()}),
                "");
      const bool reduced[4] = {false, true, true, false};
      Device out(10 * cu::storageBytes(s));
      ASSERT_EQ(cu::reduce(int(storageDType(s)), kind, dx->p, out.p, 4, dims, reduced, nullptr), "");
      expectClose(download(out, 10, s), want.data, std::max(tol, 1e-5f) * 4, std::string("reduce_") + kind + " " + name(s));
    }
    if (s == cu::Storage::F32) // integers once: int64 sums past f64's 53 bits of mantissa, an int32 mean that truncates
      for (DType type : {DType::I64, DType::I32})
        for (const char *kind : {"sum", "mean", "max", "min", "l2", "sum_square", "prod"}) {
          const std::string what = std::string("reduce_") + kind + " of " + dtypeName(type);
          Buf<int64_t> x64(DType::I64, {2, 4, 6, 5}), want64(DType::I64, {2, 1, 1, 5});
          Buf<int32_t> x32(DType::I32, {2, 4, 6, 5}), want32(DType::I32, {2, 1, 1, 5});
          for (size_t i = 0; i < x64.data.size(); ++i) {
            x32.data[i] = int32_t((i * 7919) % 9) - 4; // (prod of 24 of them stays within int64)
            x64.data[i] = x32.data[i] + (std::string(kind) == "sum" ? int64_t(1) << 58 : 0);
          }
          const bool wide = type == DType::I64;
          ASSERT_EQ(call(std::string("reduce_") + kind, attrs({intsAttr("axes", {1, 2}), intAttr("keepdims", 1)}),
                         {wide ? x64.ref() : x32.ref()}, {wide ? want64.ref() : want32.ref()}),
                    "")
              << what;
          auto dxi = wide ? uploadRaw(x64.data) : uploadRaw(x32.data);
          Device out(10 * 8);
          const bool reduced[4] = {false, true, true, false};
          ASSERT_EQ(cu::reduce(int(type), kind, dxi->p, out.p, 4, dims, reduced, nullptr), "") << what;
          if (wide)
            EXPECT_EQ(downloadRaw<int64_t>(out, 10), want64.data) << what;
          else
            EXPECT_EQ(downloadRaw<int32_t>(out, 10), want32.data) << what;
        }
    if (s == cu::Storage::F32) // bools (bytes, as the CPU takes them): max is any, min all
      for (const char *kind : {"max", "min"}) {
        Buf<uint8_t> flags(DType::Bool, {2, 4, 6, 5}), want(DType::Bool, {2, 1, 1, 5});
        for (size_t i = 0; i < flags.data.size(); ++i)
          flags.data[i] = i % 7 != 0 && (i % 5 != 3 || i < 120); // column 3 of the second image: all false
        ASSERT_EQ(call(std::string("reduce_") + kind, attrs({intsAttr("axes", {1, 2}), intAttr("keepdims", 1)}),
                       {flags.ref()}, {want.ref()}),
                  "");
        auto df = uploadRaw(flags.data);
        Device out(10);
        const bool reduced[4] = {false, true, true, false};
        ASSERT_EQ(cu::reduce(int(DType::Bool), kind, df->p, out.p, 4, dims, reduced, nullptr), "");
        EXPECT_EQ(downloadRaw<uint8_t>(out, 10), want.data) << "reduce_" << kind << " of bool";
      }
    { // conv: 4 -> 6 channels in 2 groups, kernel 3x2, stride (2, 1), pads (1, 0, 1, 1), dilation (1, 2)
      Buf<float> w(DType::F32, {6, 2, 3, 2}, rounded(randomFloats(72, 35), s)),
          bias(DType::F32, {6}, rounded(randomFloats(6, 36), s)), want(DType::F32, {2, 6, 3, 4});
      const AttrList a = attrs({intsAttr("pads", {1, 0, 1, 1}), intsAttr("strides", {2, 1}), intsAttr("dilations", {1, 2}),
                                intAttr("group", 2)});
      ASSERT_EQ(call("conv", a, {x.ref(), w.ref(), bias.ref()}, {want.ref()}), "");
      const cu::Window win = groupedConvWindow();
      auto dw = upload(w.data, s), db = upload(bias.data, s);
      Device y(size_t(want.numel()) * cu::storageBytes(s));
      ASSERT_EQ(cu::conv(int(storageDType(s)), dx->p, dw->p, db->p, y.p, 2, 4, 6, 2, win, nullptr), "");
      expectClose(download(y, size_t(want.numel()), s), want.data, std::max(tol, 1e-4f) * 4, std::string("conv ") + name(s));
    }
    // The pools' window: 3x3 over [6, 5], stride 2, padding 1 at the start (at the end: 1 for the
    // first pools, 0 for the last, which only an average with count_include_pad reads), 3x3 out.
    cu::Window win;
    win.spatial = 2;
    win.in[0] = 6, win.in[1] = 5, win.out[0] = 3, win.out[1] = 3, win.kernel[0] = win.kernel[1] = 3;
    win.padBegin[0] = win.padBegin[1] = 1, win.stride[0] = win.stride[1] = 2;
    for (bool max : {true, false}) { // 3x3 pooling, stride 2, pads 1
      Buf<float> want(DType::F32, {2, 4, 3, 3});
      const AttrList a = attrs({intsAttr("kernel_shape", {3, 3}), intsAttr("pads", {1, 1, 1, 1}),
                                intsAttr("strides", {2, 2}), intsAttr("dilations", {1, 1})});
      ASSERT_EQ(call(max ? "max_pool" : "average_pool", a, {x.ref()}, {want.ref()}), "");
      Device y(size_t(want.numel()) * cu::storageBytes(s));
      ASSERT_EQ(cu::pool(int(storageDType(s)), max, dx->p, y.p, 8, win, false, nullptr), "");
      expectClose(download(y, size_t(want.numel()), s), want.data, std::max(tol, 1e-5f),
                  std::string(max ? "max_pool " : "average_pool ") + name(s));
      for (int columnMajor : {0, 1}) { // max_pool_with_indices, in both storage orders
        if (!max)
          break;
        Buf<float> values(DType::F32, {2, 4, 3, 3});
        Buf<int64_t> indices(DType::I64, {2, 4, 3, 3});
        AttrList withOrder = a;
        withOrder.add(intAttr("storage_order", columnMajor));
        ASSERT_EQ(call("max_pool_with_indices", withOrder, {x.ref()}, {values.ref(), indices.ref()}), "");
        Device yi(size_t(want.numel()) * cu::storageBytes(s)), di(size_t(want.numel()) * 8);
        ASSERT_EQ(cu::pool(int(storageDType(s)), true, dx->p, yi.p, 8, win, false, nullptr, static_cast<int64_t *>(di.p), columnMajor != 0),
                  "");
        expectClose(download(yi, size_t(want.numel()), s), values.data, 0.0f,
                    "max_pool_with_indices " + std::string(name(s)));
        EXPECT_EQ(downloadRaw<int64_t>(di, size_t(want.numel())), indices.data)
            << "max_pool_with_indices storage_order " << columnMajor << " " << name(s);
      }
    }
    { // average pool, count_include_pad, ceil_mode: the last column's window runs past the input
      // and its end padding of 0, whose taps the divisor leaves out (3x3, stride 2, pads 1 at the start)
      Buf<float> want(DType::F32, {2, 4, 3, 3});
      const AttrList a = attrs({intsAttr("kernel_shape", {3, 3}), intsAttr("pads", {1, 1, 0, 0}),
                                intsAttr("strides", {2, 2}), intsAttr("dilations", {1, 1}), intAttr("ceil_mode", 1),
                                intAttr("count_include_pad", 1)});
      ASSERT_EQ(call("average_pool", a, {x.ref()}, {want.ref()}), "");
      Device y(size_t(want.numel()) * cu::storageBytes(s));
      ASSERT_EQ(cu::pool(int(storageDType(s)), false, dx->p, y.p, 8, win, true, nullptr), "");
      expectClose(download(y, size_t(want.numel()), s), want.data, std::max(tol, 1e-5f),
                  std::string("average_pool, count_include_pad, ceil_mode ") + name(s));
    }
    for (const char *mode : {"constant", "edge", "reflect", "wrap"}) {
      Buf<float> want(DType::F32, {2, 5, 9, 6});
      ASSERT_EQ(call("pad", attrs({intsAttr("pads", {0, 1, 2, 0, 0, 0, 1, 1}), stringAttr("mode", mode)}), {x.ref()},
                     {want.ref()}),
                "");
      const int64_t outDims[4] = {2, 5, 9, 6}, begin[4] = {0, 1, 2, 0};
      Device y(size_t(want.numel()) * cu::storageBytes(s));
      ASSERT_EQ(cu::pad(int(storageDType(s)), mode, dx->p, y.p, 4, dims, outDims, begin, 0.0, nullptr), "");
      expectClose(download(y, size_t(want.numel()), s), want.data, 0.0f, std::string("pad ") + mode + " " + name(s));
    }
  }
}

// matmul against the CPU's, in every storage type: batched, broadcast either way (a batch dim of
// 1, a missing one), rank-1 operands, sides off the kernel's 16 x 16 tiles; and shapes that do not
// multiply refused.
TEST(Cuda, MatmulMatchesTheCpu) {
  struct Case {
    std::vector<int64_t> a, b, c;
  };
  const Case cases[] = {{{2, 3, 5, 7}, {2, 3, 7, 4}, {2, 3, 5, 4}},
                        {{2, 1, 5, 7}, {3, 7, 20}, {2, 3, 5, 20}},
                        {{33, 17}, {2, 17, 18}, {2, 33, 18}},
                        {{5, 7}, {7}, {5}},
                        {{7}, {2, 7, 4}, {2, 4}}};
  for (cu::Storage s : kStorages) {
    for (const Case &c : cases) {
      Buf<float> a(DType::F32, c.a, rounded(randomFloats(elementsOf(c.a), 91), s)),
          b(DType::F32, c.b, rounded(randomFloats(elementsOf(c.b), 92), s)), want(DType::F32, c.c);
      ASSERT_EQ(call("matmul", {}, {a.ref(), b.ref()}, {want.ref()}), "");
      cu::MatmulArgs m;
      ASSERT_EQ(cu::matmulArgsOf(int(c.a.size()), c.a.data(), int(c.b.size()), c.b.data(), m), "");
      auto da = upload(a.data, s), db = upload(b.data, s);
      Device out(size_t(want.numel()) * cu::storageBytes(s));
      ASSERT_EQ(cu::matmul(int(storageDType(s)), da->p, db->p, out.p, m, nullptr), "");
      expectClose(download(out, size_t(want.numel()), s), want.data, std::max(tolerance(s), 1e-5f) * 4,
                  std::string("matmul ") + name(s) + " " + std::to_string(c.a.size()) + "-D x " +
                      std::to_string(c.b.size()) + "-D");
    }
  }
  cu::MatmulArgs m;
  const int64_t a[3] = {2, 5, 7}, b[3] = {3, 7, 4}, c[2] = {7, 5};
  EXPECT_EQ(cu::matmulArgsOf(3, a, 3, b, m), "batch dimensions do not broadcast");
  EXPECT_EQ(cu::matmulArgsOf(3, a, 2, c, m), "");
  EXPECT_EQ(cu::matmulArgsOf(2, c, 3, b, m), "inner dimensions differ");
}

// matmul of operands and a result of different types (f32 and one 16-bit type each: a
// reduced-precision plan's f32 index scores from 16-bit queries and keys) against the CPU's on the
// same rounded operands: an f32 result within f32's rounding (no 16-bit rounding of the
// product), a 16-bit one within its own; f16 mixed with bf16 refused.
TEST(Cuda, MixedTypeMatmulMatchesTheCpu) {
  const std::vector<int64_t> ad = {2, 17, 24}, bd = {1, 24, 19}, cd = {2, 17, 19};
  cu::MatmulArgs m;
  ASSERT_EQ(cu::matmulArgsOf(3, ad.data(), 3, bd.data(), m), "");
  const cu::Storage f32 = cu::Storage::F32;
  for (cu::Storage half : {cu::Storage::F16, cu::Storage::BF16})
    for (int mix = 1; mix < 7; ++mix) { // bit 0: A 16-bit, bit 1: B, bit 2: C
      const cu::Storage sa = mix & 1 ? half : f32, sb = mix & 2 ? half : f32, sc = mix & 4 ? half : f32;
      Buf<float> a(DType::F32, ad, rounded(randomFloats(elementsOf(ad), 93), sa)),
          b(DType::F32, bd, rounded(randomFloats(elementsOf(bd), 94), sb)), want(DType::F32, cd);
      ASSERT_EQ(call("matmul", {}, {a.ref(), b.ref()}, {want.ref()}), "");
      auto da = upload(a.data, sa), db = upload(b.data, sb);
      Device out(size_t(want.numel()) * cu::storageBytes(sc));
      ASSERT_EQ(cu::mixedMatmul(int(storageDType(sa)), int(storageDType(sb)), int(storageDType(sc)), da->p, db->p,
                                out.p, m, nullptr),
                "");
      expectClose(download(out, size_t(want.numel()), sc), want.data, sc == f32 ? 1e-5f : tolerance(sc) * 4,
                  std::string("mixed matmul ") + name(sa) + " x " + name(sb) + " -> " + name(sc));
    }
  Device unused(64);
  EXPECT_EQ(cu::mixedMatmul(int(DType::F16), int(DType::BF16), int(DType::F32), unused.p, unused.p, unused.p, m,
                            nullptr),
            "matmul: mixes types other than f32 and one 16-bit type");
}

// expert_linear against the CPU's: 6 ids picking among 3 experts' [M, K] matrices (a negative id
// from the end), each input row read by one id, or by 2 (repeat, a token's top 2), with no
// activation, a swiglu, GPT-OSS's clamped swiglu (limit 1: some values clamped) or HY V4's (alpha
// 1, up_offset 0), each row alone or weighed and summed by pairs (combine [3, 2]), with and
// without the experts' biases [3, M] (biased: the bias before the swiglu and the sum); K = 77
// (an element per lane and load), K = 264 (16 bytes per lane and load, past one warp's stride and
// not a multiple of it); an id out of range sets the error flag.
TEST(Cuda, ExpertLinearMatchesTheCpuAndFlagsBadIds) {
  const int64_t N = 6, E = 3, M = 10, group = 2;
  for (int64_t K : {77, 264})
    for (int64_t repeat : {1, 2})
      for (std::string variant : {"none", "swiglu", "clamped_swiglu", "clamped_silu"})
        for (bool combined : {false, true})
          for (bool biased : {false, true})
            for (cu::Storage s : kStorages) {
              const bool hy = variant == "clamped_silu";
              const std::string activation = hy ? "clamped_swiglu" : variant;
              const float alpha = hy ? 1.0f : 1.702f, upOffset = hy ? 0.0f : 1.0f;
              const bool swiglu = activation != "none", clamped = activation == "clamped_swiglu";
              const int64_t T = N / repeat, width = swiglu ? M / 2 : M, rows = combined ? N / group : N;
              Buf<float> x(DType::F32, {T, K}, rounded(randomFloats(T * K, 96), s)),
                  w(DType::F32, {E, M, K}, rounded(randomFloats(E * M * K, 97), s)),
                  c(DType::F32, {N / group, group}, rounded(randomFloats(N, 98), s)), want(DType::F32, {rows, width}),
                  b(DType::F32, {E, M}, rounded(randomFloats(E * M, 99), s)), none(DType::F32, {0});
              Buf<int64_t> ids(DType::I64, {N, 1}, {2, 0, -1, 1, 2, -3});
              const AttrList at = attrs({intAttr("repeat", repeat), stringAttr("activation", activation),
                                         floatAttr("alpha", alpha), floatAttr("limit", 1.0),
                                         floatAttr("up_offset", upOffset)});
              std::vector<TensorRef> ins = {x.ref(), w.ref(), ids.ref()};
              if (combined || biased)
                ins.push_back(combined ? c.ref() : none.ref());
              if (biased)
                ins.push_back(b.ref());
              ASSERT_EQ(call("expert_linear", at, ins, {want.ref()}), "");
              auto dx = upload(x.data, s), dw = upload(w.data, s), dc = upload(c.data, s), di = uploadRaw(ids.data),
                   db = upload(b.data, s), error = uploadRaw(std::vector<int>{0});
              Device out(size_t(rows * width) * cu::storageBytes(s));
              cu::ExpertLinearArgs a;
              a.N = N, a.M = M, a.K = K, a.E = E, a.repeat = repeat, a.swiglu = swiglu, a.group = group;
              a.clamped = clamped, a.alpha = alpha, a.limit = 1.0f, a.upOffset = upOffset;
              a.bias = biased ? db->p : nullptr;
              ASSERT_EQ(cu::expertLinear(int(storageDType(s)), dx->p, dw->p, di->as<int64_t>(),
                                         combined ? dc->p : nullptr, out.p, a, error->as<int>(), nullptr),
                        "");
              expectClose(download(out, size_t(rows * width), s), want.data, std::max(tolerance(s), 1e-5f) * 8,
                          std::string("expert_linear ") + name(s) + " K " + std::to_string(K) + " repeat " +
                              std::to_string(repeat) + " " + variant + (combined ? " combined" : "") +
                              (biased ? " biased" : ""));
              int flag = 0;
              cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
              EXPECT_EQ(flag, 0);
              auto bad = uploadRaw(std::vector<int64_t>{3});
              a.N = 1, a.repeat = 1, a.group = 1;
              ASSERT_EQ(cu::expertLinear(int(storageDType(s)), dx->p, dw->p, bad->as<int64_t>(), nullptr, out.p, a,
                                         error->as<int>(), nullptr),
                        "");
              cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
              EXPECT_EQ(flag, 1);
            }
}

// expert_linear's warp per output with groups of ids the kernel takes at once or in turn: 3 (of
// 4 at once), 8 (all at once) and 10 (8, then 2), two rows each, without an activation and with
// the clamped swiglu, against the CPU's; an id out of range inside a group sets the flag and
// counts 0 (the CPU's result with its weight 0 and a good id in its place).
TEST(Cuda, ExpertLinearSumsGroupsOfIds) {
  const int64_t E = 5, M = 6, K = 40;
  for (int64_t group : {3, 8, 10})
    for (std::string activation : {"none", "clamped_swiglu"})
      for (cu::Storage s : {cu::Storage::F32, cu::Storage::BF16})
        for (bool bad : {false, true}) {
          const int64_t N = 2 * group, width = activation == "none" ? M : M / 2;
          std::vector<int64_t> picks(static_cast<size_t>(N)), good;
          for (int64_t n = 0; n < N; ++n)
            picks[size_t(n)] = (n * 3) % E - (n % 4 == 1 ? E : 0); // some negative
          std::vector<float> weights = rounded(randomFloats(N, 111), s);
          good = picks;
          if (bad) // row 1's second id
            picks[size_t(group + 1)] = E, weights[size_t(group + 1)] = 0.0f;
          Buf<float> x(DType::F32, {N, K}, rounded(randomFloats(N * K, 112), s)),
              w(DType::F32, {E, M, K}, rounded(randomFloats(E * M * K, 113), s)),
              c(DType::F32, {2, group}, weights), want(DType::F32, {2, width});
          Buf<int64_t> ids(DType::I64, {N}, good);
          const AttrList at = attrs({stringAttr("activation", activation), floatAttr("alpha", 1.702),
                                     floatAttr("limit", 1.0)});
          ASSERT_EQ(call("expert_linear", at, {x.ref(), w.ref(), ids.ref(), c.ref()}, {want.ref()}), "");
          auto dx = upload(x.data, s), dw = upload(w.data, s), dc = upload(c.data, s), di = uploadRaw(picks),
               error = uploadRaw(std::vector<int>{0});
          Device out(size_t(2 * width) * cu::storageBytes(s));
          cu::ExpertLinearArgs a;
          a.N = N, a.M = M, a.K = K, a.E = E, a.group = group, a.swiglu = activation != "none";
          a.clamped = a.swiglu, a.alpha = 1.702f, a.limit = 1.0f;
          ASSERT_EQ(cu::expertLinear(int(storageDType(s)), dx->p, dw->p, di->as<int64_t>(), dc->p, out.p, a,
                                     error->as<int>(), nullptr),
                    "");
          const std::string what = std::string("expert_linear ") + name(s) + " group " + std::to_string(group) + " " +
                                   activation + (bad ? " with a bad id" : "");
          expectClose(download(out, size_t(2 * width), s), want.data, std::max(tolerance(s), 1e-5f) * 8, what);
          int flag = 0;
          cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
          EXPECT_EQ(flag, bad ? 1 : 0) << what;
        }
}

// groupedExpertLinear (a prompt's expert_linear on tensor cores) against the CPU's: 200 ids among
// 3 experts, 120 picking expert 0 and 80 expert 1 (negative ids among them), none expert 2, so
// that an expert's rows fill two blocks, the second in part; 70 outputs per row (two column
// tiles, the second of 6); K of 40 (16-byte loads, the second step in part) and 37 (an element
// per load). Each case a different mix of activation, combine, bias and repeat, two with a
// scratch too small for every id at once (chunks of whole groups). An id out of range sets the
// error flag and its row is zeros; f32 is refused (expertLinear takes it).
TEST(Cuda, GroupedExpertLinearMatchesTheCpu) {
  const int64_t N = 200, E = 3, width = 70;
  struct Case {
    cu::Storage s;
    const char *activation;
    int64_t K, repeat, group;
    bool biased;
    int64_t chunk; // ids the scratch holds at once; 0: every one
    float alpha = 1.702f, upOffset = 1.0f; // of a clamped swiglu (HY V4's: 1 and 0)
  };
  const Case cases[] = {{cu::Storage::BF16, "none", 40, 1, 0, false, 0},
                        {cu::Storage::F16, "swiglu", 37, 4, 4, true, 0},
                        {cu::Storage::BF16, "clamped_swiglu", 40, 2, 2, false, 0},
                        {cu::Storage::F16, "none", 40, 2, 0, true, 64},
                        {cu::Storage::BF16, "swiglu", 37, 1, 8, true, 96},
                        {cu::Storage::BF16, "clamped_swiglu", 40, 1, 4, true, 0, 1.0f, 0.0f}};
  std::vector<int64_t> picks(N);
  for (int64_t i = 0; i < N; ++i)
    picks[size_t(i)] = std::vector<int64_t>{0, 0, -3, 1, -2}[size_t(i * 7 % 5)];
  for (const Case &c : cases) {
    const cu::Storage s = c.s;
    const bool swiglu = std::string(c.activation) != "none", combined = c.group > 0;
    const int64_t M = swiglu ? 2 * width : width, T = N / c.repeat, rows = combined ? N / c.group : N;
    const std::string what = std::string("grouped expert_linear ") + name(s) + " " + c.activation + " K " +
                             std::to_string(c.K) + (combined ? " combined" : "") + (c.biased ? " biased" : "") +
                             (c.chunk ? " in chunks" : "") + (c.upOffset == 0.0f ? " (HY V4's)" : "");
    Buf<float> x(DType::F32, {T, c.K}, rounded(randomFloats(T * c.K, 101), s)),
        w(DType::F32, {E, M, c.K}, rounded(randomFloats(E * M * c.K, 102), s)),
        cw(DType::F32, {rows, combined ? c.group : 1}, rounded(randomFloats(N, 103), s)),
        b(DType::F32, {E, M}, rounded(randomFloats(E * M, 104), s)), none(DType::F32, {0}),
        want(DType::F32, {rows, width});
    Buf<int64_t> ids(DType::I64, {N}, picks);
    const AttrList at = attrs({intAttr("repeat", c.repeat), stringAttr("activation", c.activation),
                               floatAttr("alpha", c.alpha), floatAttr("limit", 1.0),
                               floatAttr("up_offset", c.upOffset)});
    std::vector<TensorRef> ins = {x.ref(), w.ref(), ids.ref()};
    if (combined || c.biased)
      ins.push_back(combined ? cw.ref() : none.ref());
    if (c.biased)
      ins.push_back(b.ref());
    ASSERT_EQ(call("expert_linear", at, ins, {want.ref()}), "") << what;
    cu::ExpertLinearArgs a;
    a.N = N, a.M = M, a.K = c.K, a.E = E, a.repeat = c.repeat, a.group = combined ? c.group : 1;
    a.swiglu = swiglu, a.clamped = std::string(c.activation) == "clamped_swiglu", a.alpha = c.alpha, a.limit = 1.0f;
    a.upOffset = c.upOffset;
    ASSERT_TRUE(cu::groupedExpertsPay(int(storageDType(s)), a)) << what;
    auto dx = upload(x.data, s), dw = upload(w.data, s), dc = upload(cw.data, s), db = upload(b.data, s),
         di = uploadRaw(picks), error = uploadRaw(std::vector<int>{0});
    a.bias = c.biased ? db->p : nullptr;
    const size_t bytes = cu::groupedExpertScratchBytes(a, c.chunk ? c.chunk : N, combined);
    if (c.chunk) // not enough for one more group
      ASSERT_LT(bytes, cu::groupedExpertScratchBytes(a, c.chunk + (combined ? c.group : 1), combined)) << what;
    Device scratch(bytes), out(size_t(rows * width) * cu::storageBytes(s));
    ASSERT_EQ(cu::groupedExpertLinear(int(storageDType(s)), dx->p, dw->p, di->as<int64_t>(), combined ? dc->p : nullptr,
                                      out.p, a, scratch.p, bytes, error->as<int>(), nullptr),
              "")
        << what;
    expectClose(download(out, size_t(rows * width), s), want.data, tolerance(s) * 8, what);
    int flag = 0;
    cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
    EXPECT_EQ(flag, 0) << what;
  }
  // An id out of range: the flag, and zeros in its row (row 1 of 16, no combine); the others
  // are the CPU's.
  cu::ExpertLinearArgs a;
  a.N = 16, a.M = 16, a.K = 8, a.E = 3;
  std::vector<int64_t> bad(16, 1);
  bad[1] = 3;
  const cu::Storage s = cu::Storage::BF16;
  Buf<float> x(DType::F32, {16, 8}, rounded(randomFloats(16 * 8, 105), s)),
      w(DType::F32, {3, 16, 8}, rounded(randomFloats(3 * 16 * 8, 106), s));
  auto dx = upload(x.data, s), dw = upload(w.data, s), di = uploadRaw(bad), error = uploadRaw(std::vector<int>{0});
  const size_t bytes = cu::groupedExpertScratchBytes(a, 16, false);
  Device scratch(bytes), out(16 * 16 * cu::storageBytes(s));
  ASSERT_EQ(cu::groupedExpertLinear(int(storageDType(s)), dx->p, dw->p, di->as<int64_t>(), nullptr, out.p, a,
                                    scratch.p, bytes, error->as<int>(), nullptr),
            "");
  const std::vector<float> got = download(out, 16 * 16, s);
  for (int64_t n = 0; n < 16; ++n)
    for (int64_t m = 0; m < 16; ++m) {
      float want = 0.0f;
      for (int64_t k = 0; k < 8 && n != 1; ++k)
        want += x.data[size_t(n * 8 + k)] * w.data[size_t((16 + m) * 8 + k)];
      ASSERT_NEAR(got[size_t(n * 16 + m)], want, tolerance(s) * 8 * (1 + std::fabs(want))) << n << ", " << m;
    }
  int flag = 0;
  cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
  EXPECT_EQ(flag, 1);
  EXPECT_NE(cu::groupedExpertLinear(int(storageDType(cu::Storage::F32)), dx->p, dw->p, di->as<int64_t>(), nullptr,
                                    out.p, a, scratch.p, bytes, error->as<int>(), nullptr),
            "");
  EXPECT_NE(cu::groupedExpertLinear(int(storageDType(s)), dx->p, dw->p, di->as<int64_t>(), nullptr, out.p, a,
                                    scratch.p, 64, error->as<int>(), nullptr),
            "");
}

// gemm against the CPU's: each of transA and transB, alpha and beta not 1, an addend C of every
// rank that broadcasts ([M, N], [M, 1], [N], a scalar), and none; M and N past one tile.
TEST(Cuda, GemmMatchesTheCpu) {
  const int64_t M = 19, N = 21, K = 9;
  const std::vector<std::vector<int64_t>> addends = {{M, N}, {M, 1}, {N}, {}};
  for (cu::Storage s : kStorages)
    for (int transA : {0, 1})
      for (int transB : {0, 1})
        for (size_t ci = 0; ci <= addends.size(); ++ci) {
          const bool hasC = ci < addends.size();
          const std::vector<int64_t> aDims = transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K},
                                     bDims = transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N},
                                     cDims = hasC ? addends[ci] : std::vector<int64_t>{};
          Buf<float> a(DType::F32, aDims, rounded(randomFloats(M * K, 93), s)),
              b(DType::F32, bDims, rounded(randomFloats(K * N, 94), s)),
              c(DType::F32, cDims, rounded(randomFloats(elementsOf(cDims), 95), s)), want(DType::F32, {M, N});
          const AttrList at = attrs({floatAttr("alpha", 0.5), floatAttr("beta", 2.0), intAttr("transA", transA),
                                     intAttr("transB", transB)});
          std::vector<TensorRef> ins = {a.ref(), b.ref()};
          if (hasC)
            ins.push_back(c.ref());
          ASSERT_EQ(call("gemm", at, ins, {want.ref()}), "");
          cu::MatmulArgs m;
          ASSERT_EQ(cu::gemmArgsOf(aDims.data(), bDims.data(), transA, transB, int(cDims.size()), cDims.data(), m), "");
          m.alpha = 0.5, m.beta = 2.0;
          auto da = upload(a.data, s), db = upload(b.data, s), dc = upload(c.data, s);
          Device out(size_t(M * N) * cu::storageBytes(s));
          ASSERT_EQ(cu::matmul(int(storageDType(s)), da->p, db->p, out.p, m, nullptr, hasC ? dc->p : nullptr), "");
          expectClose(download(out, size_t(M * N), s), want.data, std::max(tolerance(s), 1e-5f) * 8,
                      std::string("gemm ") + name(s) + " transA " + std::to_string(transA) + " transB " +
                          std::to_string(transB) + " C of rank " + (hasC ? std::to_string(cDims.size()) : "none"));
        }
  cu::MatmulArgs m;
  const int64_t a[2] = {4, 3}, b[2] = {3, 5}, c[2] = {2, 5};
  EXPECT_EQ(cu::gemmArgsOf(a, b, false, true, 0, nullptr, m), "inner dimensions differ");
  EXPECT_EQ(cu::gemmArgsOf(a, b, false, false, 2, c, m), "C does not broadcast to the product's shape");
}

// einsum against the CPU's, the loops from einsumLoops as the executor takes them: a batched
// matrix product, attention scores, a transpose, a sum of everything, a broadcast "..." batch, a
// diagonal (a label twice in one operand), three operands, and three of 22 labels.
TEST(Cuda, EinsumMatchesTheCpu) {
  struct Case {
    const char *equation;
    std::vector<std::vector<int64_t>> operands;
    std::vector<int64_t> out;
  };
  const Case cases[] = {{"bij,bjk->bik", {{2, 3, 5}, {2, 5, 4}}, {2, 3, 4}},
                        {"bhqd,bhkd->bhqk", {{1, 2, 3, 8}, {1, 2, 5, 8}}, {1, 2, 3, 5}},
                        {"ij->ji", {{3, 7}}, {7, 3}},
                        {"bij->", {{2, 3, 4}}, {}},
                        {"...ij,...jk->...ik", {{1, 3, 4}, {2, 4, 2}}, {2, 3, 2}},
                        {"ii->i", {{5, 5}}, {5}},
                        {"i,i,i->", {{6}, {6}, {6}}, {}},
                        // 22 labels (the kernel took 16 until session 24)
                        {"abcdefgh,hijklmno,opqrstuv->av",
                         {{2, 1, 1, 1, 1, 1, 1, 2}, {2, 1, 1, 1, 1, 1, 1, 2}, {2, 1, 1, 1, 1, 1, 1, 2}},
                         {2, 2}}};
  for (cu::Storage s : kStorages)
    for (const Case &c : cases) {
      std::vector<Buf<float>> operands;
      std::vector<int> ranks;
      for (size_t k = 0; k < c.operands.size(); ++k) {
        operands.emplace_back(DType::F32, c.operands[k],
                              rounded(randomFloats(elementsOf(c.operands[k]), 96 + int(k)), s));
        ranks.push_back(int(c.operands[k].size()));
      }
      std::vector<TensorRef> ins;
      for (Buf<float> &b : operands)
        ins.push_back(b.ref());
      Buf<float> want(DType::F32, c.out);
      ASSERT_EQ(call("einsum", attrs({stringAttr("equation", c.equation)}), ins, {want.ref()}), "");
      EinsumSpec spec;
      ASSERT_EQ(parseEinsum(c.equation, ranks, spec), "");
      EinsumLoops loops;
      ASSERT_EQ(einsumLoops(spec, c.operands, loops), "");
      std::vector<std::unique_ptr<Device>> uploaded;
      std::vector<const void *> in;
      for (Buf<float> &b : operands) {
        uploaded.push_back(upload(b.data, s));
        in.push_back(uploaded.back()->p);
      }
      cu::EinsumArgs a;
      ASSERT_EQ(cu::einsumArgsOf(loops, int(spec.output.size()), in, a), "");
      Device out(size_t(want.numel()) * cu::storageBytes(s));
      ASSERT_EQ(cu::einsum(int(storageDType(s)), a, out.p, nullptr), "");
      expectClose(download(out, size_t(want.numel()), s), want.data, std::max(tolerance(s), 1e-5f) * 8,
                  std::string("einsum ") + c.equation + " " + name(s));
    }
  // Integers and doubles, summed exactly (sums past f32's 24 bits of mantissa), over four operands.
  const std::string equation = "ij,jk,k,k->i";
  const std::vector<std::vector<int64_t>> dims = {{3, 4}, {4, 5}, {5}, {5}};
  auto exact = [&](auto zero, DType type) {
    using T = decltype(zero);
    std::vector<Buf<T>> operands;
    std::vector<TensorRef> ins;
    for (size_t k = 0; k < dims.size(); ++k) {
      operands.emplace_back(type, dims[k]);
      for (size_t i = 0; i < operands[k].data.size(); ++i)
        operands[k].data[i] = T(int64_t((i * 31 + k) % 7) - 3 + (k == 0 && sizeof(T) == 8 ? int64_t(1) << 30 : 0));
    }
    for (Buf<T> &b : operands)
      ins.push_back(b.ref());
    Buf<T> want(type, {3});
    ASSERT_EQ(call("einsum", attrs({stringAttr("equation", equation)}), ins, {want.ref()}), "");
    EinsumSpec spec;
    ASSERT_EQ(parseEinsum(equation, {2, 2, 1, 1}, spec), "");
    EinsumLoops loops;
    ASSERT_EQ(einsumLoops(spec, dims, loops), "");
    std::vector<std::unique_ptr<Device>> uploaded;
    std::vector<const void *> in;
    for (Buf<T> &b : operands) {
      uploaded.push_back(uploadRaw(b.data));
      in.push_back(uploaded.back()->p);
    }
    cu::EinsumArgs a;
    ASSERT_EQ(cu::einsumArgsOf(loops, 1, in, a), "");
    Device out(3 * sizeof(T));
    ASSERT_EQ(cu::einsum(int(type), a, out.p, nullptr), "");
    EXPECT_EQ(downloadRaw<T>(out, 3), want.data) << "einsum " << equation << " of " << dtypeName(type);
  };
  exact(int64_t(0), DType::I64);
  exact(int32_t(0), DType::I32);
  exact(double(0), DType::F64); // (a sum past f32's 24 bits, exact in f64)
}

// What EinsumArgs holds: up to eight operands and 256 operand-label pairs, so every einsum of
// at most five operands fits (of rank 8 at most, as every plan's values: 40 labels), which are
// the ones llmc-split-einsum leaves.
TEST(Cuda, EinsumLimits) {
  EXPECT_EQ(cu::einsumFits(5, 40), "");
  EXPECT_EQ(cu::einsumFits(8, 32), "");
  EXPECT_NE(cu::einsumFits(1, 65), "");
  EXPECT_EQ(cu::einsumFits(8, 33), "8 operands of 33 labels: at most 256 operand-label pairs");
  EXPECT_EQ(cu::einsumFits(9, 2), "supports 1 to 8 operands");
  EXPECT_NE(cu::einsumFits(0, 1), "");
  EinsumLoops loops;
  loops.labels = "ij", loops.sizes = {2, 3}, loops.strides = {{3, 1}};
  cu::EinsumArgs a;
  EXPECT_EQ(cu::einsumArgsOf(loops, 3, {nullptr}, a), "einsum: loops and operands differ");
  EXPECT_EQ(cu::einsumArgsOf(loops, 2, {nullptr, nullptr}, a), "einsum: loops and operands differ");
  ASSERT_EQ(cu::einsumArgsOf(loops, 1, {nullptr}, a), "");
  EXPECT_EQ(a.strides[0], 3);
  EXPECT_EQ(a.strides[1], 1);
}

// The product of dims[from..to).
int64_t sizeBetween(const int64_t *dims, int64_t from, int64_t to) {
  int64_t size = 1;
  for (int64_t d = from; d < to; ++d)
    size *= dims[d];
  return size;
}

// arg_max and arg_min against the CPU's, in every storage type, along each axis of [3, 7, 5] whose
// values have ties (small integers), ties to the first index and to the last.

TEST(Cuda, ArgReduceMatchesTheCpu) {
  std::vector<float> values(105);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float((i * 7919) % 5); // exact in every storage type
  for (cu::Storage s : kStorages)
    for (bool max : {true, false})
      for (int64_t axis : {0, 1, 2})
        for (int last : {0, 1}) {
          const int64_t dims[3] = {3, 7, 5};
          std::vector<int64_t> outDims = {3, 7, 5};
          outDims[size_t(axis)] = 1;
          Buf<float> x(DType::F32, {3, 7, 5}, values);
          Buf<int64_t> want(DType::I64, outDims);
          ASSERT_EQ(call(max ? "arg_max" : "arg_min", attrs({intAttr("axis", axis), intAttr("select_last_index", last)}),
                         {x.ref()}, {want.ref()}),
                    "");
          const int64_t outer = sizeBetween(dims, 0, axis), inner = sizeBetween(dims, axis + 1, 3);
          auto dx = upload(x.data, s);
          Device out(size_t(want.numel()) * 8);
          ASSERT_EQ(cu::argReduce(int(storageDType(s)), max, dx->p, static_cast<int64_t *>(out.p), outer, dims[axis],
                                  inner, last != 0, nullptr),
                    "");
          EXPECT_EQ(downloadRaw<int64_t>(out, size_t(want.numel())), want.data)
              << (max ? "arg_max" : "arg_min") << " axis " << axis << " last " << last << " " << name(s);
        }
  // int64 values that differ past f32's 24 bits of mantissa (as floats, all ties), and int32 ones.
  for (DType type : {DType::I64, DType::I32})
    for (bool max : {true, false}) {
      Buf<int64_t> x64(DType::I64, {3, 7}), want(DType::I64, {3, 1});
      Buf<int32_t> x32(DType::I32, {3, 7});
      for (size_t i = 0; i < x64.data.size(); ++i)
        x64.data[i] = (int64_t(1) << 40) + int64_t((i * 7919) % 5), x32.data[i] = int32_t((i * 7919) % 5) - 2;
      const bool wide = type == DType::I64;
      ASSERT_EQ(call(max ? "arg_max" : "arg_min", attrs({intAttr("axis", 1)}), {wide ? x64.ref() : x32.ref()}, {want.ref()}),
                "");
      auto dx = wide ? uploadRaw(x64.data) : uploadRaw(x32.data);
      Device out(3 * 8);
      ASSERT_EQ(cu::argReduce(int(type), max, dx->p, static_cast<int64_t *>(out.p), 3, 7, 1, false, nullptr), "");
      EXPECT_EQ(downloadRaw<int64_t>(out, 3), want.data) << (max ? "arg_max of " : "arg_min of ") << dtypeName(type);
    }
}

// softmax_top_k (a router: softmax over the last axis, its top k, normalized or not) against the
// CPU's: rows of 4, 60 and 300 logits (a block of 32 to 256 threads), k 1, 2 and 8, in f32, f16
// and bf16, with two equal logits at the top of the first row (picked by index).
TEST(Cuda, SoftmaxTopKMatchesTheCpu) {
  const int64_t rows = 5;
  for (int64_t n : {4, 60, 300})
    for (cu::Storage s : kStorages) {
      std::vector<float> logits = rounded(randomFloats(size_t(rows * n), 40, -4, 4), s);
      logits[1] = logits[n - 1] = 6.0f;
      Buf<float> x(DType::F32, {rows, n}, logits);
      auto dx = upload(x.data, s);
      for (int64_t k : {int64_t(1), int64_t(2), int64_t(8)})
        for (bool normalize : {false, true}) {
          if (k > n)
            continue;
          Buf<float> want(DType::F32, {rows, k});
          Buf<int64_t> wantIds(DType::I64, {rows, k});
          ASSERT_EQ(call("softmax_top_k", attrs({intAttr("k", k), intAttr("normalize", normalize)}), {x.ref()},
                         {want.ref(), wantIds.ref()}),
                    "");
          Device got(size_t(rows * k) * cu::storageBytes(s)), gotIds(size_t(rows * k) * 8);
          ASSERT_EQ(cu::softmaxTopK(s, dx->p, got.p, static_cast<int64_t *>(gotIds.p), rows, n, k, normalize, nullptr),
                    "");
          const std::string what = "softmax_top_k n " + std::to_string(n) + " k " + std::to_string(k) +
                                   (normalize ? " normalized " : " ") + name(s);
          EXPECT_EQ(downloadRaw<int64_t>(gotIds, size_t(rows * k)), wantIds.data) << what;
          const std::vector<int64_t> ids = downloadRaw<int64_t>(gotIds, size_t(rows * k));
          EXPECT_EQ(ids[0], 1) << what;
          if (k > 1)
            EXPECT_EQ(ids[1], n - 1) << what;
          expectClose(download(got, size_t(rows * k), s), want.data, s == cu::Storage::F32 ? 1e-6f : 1e-2f, what);
        }
    }
  Device none(8);
  EXPECT_NE(cu::softmaxTopK(cu::Storage::F32, none.p, none.p, nullptr, 1, 4, 5, false, nullptr), "");
}

// grouped_top_k (DeepSeek-V3's router) against the CPU's: 4 experts in 2 groups keeping 1 (the
// architecture test's), 64 in 8 keeping 3, and DeepSeek-V3's 256 in 8 keeping 4 with k 8 (a block
// of 256 threads); the top 2 or 3 of each group summed; a fill of -inf or 0, normalized with an
// epsilon or not, scaled; in f32, f16 and bf16; two equal groups at the top of row 0 (the lower
// one kept first). Too many experts for a block's shared memory is an error.
TEST(Cuda, GroupedTopKMatchesTheCpu) {
  struct Config {
    int64_t n, groups, kept, k, top;
    float fill;
  };
  const int64_t rows = 6;
  for (Config c : {Config{4, 2, 1, 2, 2, -INFINITY}, Config{64, 8, 3, 5, 3, 0.0f}, Config{256, 8, 4, 8, 2, -INFINITY}})
    for (cu::Storage s : kStorages)
      for (bool normalize : {false, true}) {
        const int64_t size = c.n / c.groups;
        std::vector<float> logits = rounded(randomFloats(size_t(rows * c.n), 50, -4, 4), s);
        std::vector<float> biasValues = rounded(randomFloats(size_t(c.n), 51, -0.25f, 0.25f), s);
        for (int64_t e = 0; e < size; ++e) { // row 0: groups 0 and 1 alike and the best
          logits[size_t(e)] = logits[size_t(size + e)] = 5.0f;
          biasValues[size_t(e)] = biasValues[size_t(size + e)] = 0.25f;
        }
        Buf<float> x(DType::F32, {rows, c.n}, logits), bias(DType::F32, {c.n}, biasValues);
        Buf<float> want(DType::F32, {rows, c.k});
        Buf<int64_t> wantIds(DType::I64, {rows, c.k});
        const double epsilon = normalize ? 1e-20 : 0.0;
        ASSERT_EQ(call("grouped_top_k",
                       attrs({intAttr("k", c.k), intAttr("groups", c.groups), intAttr("kept_groups", c.kept),
                              intAttr("group_top", c.top), floatAttr("fill", c.fill), intAttr("normalize", normalize),
                              floatAttr("epsilon", epsilon), floatAttr("scale", 2.5)}),
                       {x.ref(), bias.ref()}, {want.ref(), wantIds.ref()}),
                  "");
        auto dx = upload(x.data, s), dbias = upload(bias.data, s);
        Device got(size_t(rows * c.k) * cu::storageBytes(s)), gotIds(size_t(rows * c.k) * 8);
        cu::GroupedTopKArgs a;
        a.n = c.n, a.k = c.k, a.groups = c.groups, a.keptGroups = c.kept, a.top = c.top;
        a.fill = c.fill, a.epsilon = float(epsilon), a.scale = 2.5f, a.normalize = normalize;
        ASSERT_EQ(cu::groupedTopK(s, dx->p, dbias->p, got.p, static_cast<int64_t *>(gotIds.p), rows, a, nullptr), "");
        const std::string what = "grouped_top_k n " + std::to_string(c.n) + " groups " + std::to_string(c.groups) +
                                 " k " + std::to_string(c.k) + (normalize ? " normalized " : " ") + name(s);
        const std::vector<int64_t> ids = downloadRaw<int64_t>(gotIds, size_t(rows * c.k));
        EXPECT_EQ(ids, wantIds.data) << what;
        EXPECT_LT(ids[0], size) << what; // the lower of the two equal groups comes first
        expectClose(download(got, size_t(rows * c.k), s), want.data, s == cu::Storage::F32 ? 1e-6f : 1e-2f, what);
      }
  cu::GroupedTopKArgs tooMany;
  tooMany.n = 16384, tooMany.k = 2, tooMany.groups = 8, tooMany.keptGroups = 4;
  Device none(8);
  EXPECT_NE(cu::groupedTopK(cu::Storage::F32, none.p, none.p, none.p, nullptr, 1, tooMany, nullptr), "");
}

// grouped_top_k with softmax scores and one group (ERNIE 4.5's router) against the CPU's: 4
// experts (the architecture test's), 64 and 300 (more than a block's 256 threads, so the row's max
// and sum are block reductions); k 2 and 6; normalized by max(sum, norm_min) with a norm_min that
// clamps some rows (0.5), by the sum plus nothing, or not at all; f32, f16 and bf16.
TEST(Cuda, CorrectedSoftmaxTopKMatchesTheCpu) {
  const int64_t rows = 6;
  for (int64_t n : {4, 64, 300})
    for (cu::Storage s : kStorages)
      for (int normalize : {0, 1, 2}) {
        const int64_t k = n == 4 ? 2 : 6;
        const float normMin = normalize == 2 ? 0.5f : 0.0f;
        Buf<float> x(DType::F32, {rows, n}, rounded(randomFloats(size_t(rows * n), 52, -4, 4), s));
        Buf<float> bias(DType::F32, {n}, rounded(randomFloats(size_t(n), 53, -0.05f, 0.05f), s));
        Buf<float> want(DType::F32, {rows, k});
        Buf<int64_t> wantIds(DType::I64, {rows, k});
        ASSERT_EQ(call("grouped_top_k",
                       attrs({intAttr("k", k), intAttr("groups", 1), intAttr("kept_groups", 1), intAttr("group_top", 1),
                              stringAttr("scores", "softmax"), intAttr("normalize", normalize),
                              floatAttr("epsilon", normMin)}),
                       {x.ref(), bias.ref()}, {want.ref(), wantIds.ref()}),
                  "");
        auto dx = upload(x.data, s), dbias = upload(bias.data, s);
        Device got(size_t(rows * k) * cu::storageBytes(s)), gotIds(size_t(rows * k) * 8);
        cu::GroupedTopKArgs a;
        a.n = n, a.k = k, a.groups = 1, a.keptGroups = 1, a.top = 1;
        a.epsilon = normMin, a.normalize = normalize, a.softmax = true;
        ASSERT_EQ(cu::groupedTopK(s, dx->p, dbias->p, got.p, static_cast<int64_t *>(gotIds.p), rows, a, nullptr), "");
        const std::string what = "softmax grouped_top_k n " + std::to_string(n) + " normalize " +
                                 std::to_string(normalize) + " " + name(s);
        EXPECT_EQ(downloadRaw<int64_t>(gotIds, size_t(rows * k)), wantIds.data) << what;
        expectClose(download(got, size_t(rows * k), s), want.data, s == cu::Storage::F32 ? 1e-6f : 1e-2f, what);
      }
  cu::GroupedTopKArgs badNormalize;
  badNormalize.n = 4, badNormalize.k = 2, badNormalize.normalize = 3;
  Device none(8);
  EXPECT_NE(cu::groupedTopK(cu::Storage::F32, none.p, none.p, none.p, nullptr, 1, badNormalize, nullptr), "");
}

// top_k against the CPU's: values with many ties (exact in every storage type), so that equal
// values must come in index order; a line longer than the kernel's block (300) with k of 1 and 40,
// a line sorted whole (k = n = 5); the largest and the smallest; along each axis.
TEST(Cuda, TopKMatchesTheCpu) {
  const int64_t dims[3] = {3, 300, 5};
  std::vector<float> values(size_t(dims[0] * dims[1] * dims[2]));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(int((i * 7919) % 37) - 18);
  const std::pair<int64_t, int64_t> cases[] = {{1, 1}, {1, 40}, {0, 2}, {2, 5}}; // (axis, k)
  for (cu::Storage s : kStorages)
    for (int largest : {1, 0})
      for (const auto &[axis, k] : cases) {
        std::vector<int64_t> outDims = {dims[0], dims[1], dims[2]};
        outDims[size_t(axis)] = k;
        Buf<float> x(DType::F32, {dims[0], dims[1], dims[2]}, values), want(DType::F32, outDims);
        Buf<int64_t> wantIndices(DType::I64, outDims);
        ASSERT_EQ(call("top_k", attrs({intAttr("axis", axis), intAttr("k", k), intAttr("largest", largest)}), {x.ref()},
                       {want.ref(), wantIndices.ref()}),
                  "");
        const int64_t outer = sizeBetween(dims, 0, axis), inner = sizeBetween(dims, axis + 1, 3);
        auto dx = upload(x.data, s);
        const size_t count = size_t(want.numel());
        Device got(count * 4), gotIndices(count * 8);
        ASSERT_EQ(cu::topK(int(storageDType(s)), dx->p, got.p, static_cast<int64_t *>(gotIndices.p), outer, dims[axis],
                           inner, k, largest != 0, nullptr),
                  "");
        const std::string what = "top_k axis " + std::to_string(axis) + " k " + std::to_string(k) +
                                 (largest ? " largest " : " smallest ") + name(s);
        EXPECT_EQ(downloadRaw<int64_t>(gotIndices, count), wantIndices.data) << what;
        expectClose(download(got, count, s), want.data, 0.0f, what.c_str());
      }
  // Integers, compared exactly: int64 values beyond f32's 24 bits of mantissa that differ by one
  // (as floats they would tie), and int32 ones.
  for (DType type : {DType::I64, DType::I32})
    for (int largest : {1, 0}) {
      const int64_t n = 70, k = 6;
      std::vector<int64_t> values(size_t(2 * n));
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = (int64_t(1) << 40) + int64_t((i * 7919) % 23) * (type == DType::I64 ? 1 : 1000);
      Buf<int64_t> x64(DType::I64, {2, n}, values), want64(DType::I64, {2, k});
      std::vector<int32_t> values32(values.size());
      for (size_t i = 0; i < values.size(); ++i)
        values32[i] = int32_t(values[i] - (int64_t(1) << 40)) - 5000;
      Buf<int32_t> x32(DType::I32, {2, n}, values32), want32(DType::I32, {2, k});
      Buf<int64_t> wantIndices(DType::I64, {2, k});
      const bool wide = type == DType::I64;
      ASSERT_EQ(call("top_k", attrs({intAttr("axis", 1), intAttr("k", k), intAttr("largest", largest)}),
                     {wide ? x64.ref() : x32.ref()}, {wide ? want64.ref() : want32.ref(), wantIndices.ref()}),
                "");
      auto dx = wide ? uploadRaw(x64.data) : uploadRaw(x32.data);
      Device got(size_t(2 * k) * 8), gotIndices(size_t(2 * k) * 8);
      ASSERT_EQ(cu::topK(int(type), dx->p, got.p, static_cast<int64_t *>(gotIndices.p), 2, n, 1, k, largest != 0,
                         nullptr),
                "");
      const std::string what = std::string("top_k of ") + (wide ? "int64" : "int32") + (largest ? " largest" : " smallest");
      EXPECT_EQ(downloadRaw<int64_t>(gotIndices, size_t(2 * k)), wantIndices.data) << what;
      if (wide)
        EXPECT_EQ(downloadRaw<int64_t>(got, size_t(2 * k)), want64.data) << what;
      else
        EXPECT_EQ(downloadRaw<int32_t>(got, size_t(2 * k)), want32.data) << what;
    }
  Device unused(8);
  EXPECT_NE(cu::topK(int(DType::F32), unused.p, unused.p, nullptr, 1, 2, 1, 3, true, nullptr), "") << "k > n";
  EXPECT_NE(cu::topK(0, unused.p, unused.p, nullptr, 1, 2, 1, 1, true, nullptr), "") << "an unknown type";
}

// trilu against the CPU's: upper and lower, k of -1, 0 and 2, on f32 [2, 3, 5] and on bool [4, 3]
// (1-byte elements; 2- and 8-byte ones take the same template).
TEST(Cuda, TriluMatchesTheCpu) {
  for (bool upper : {true, false})
    for (int64_t k : {-1, 0, 2}) {
      const AttrList a = attrs({intAttr("upper", upper ? 1 : 0)});
      Buf<int64_t> kb(DType::I64, {}, {k});
      Buf<float> x(DType::F32, {2, 3, 5}, randomFloats(30, 95)), want(DType::F32, {2, 3, 5});
      ASSERT_EQ(call("trilu", a, {x.ref(), kb.ref()}, {want.ref()}), "");
      auto dx = uploadRaw(x.data);
      Device out(30 * 4);
      ASSERT_EQ(cu::trilu(dx->p, out.p, 30, 3, 5, k, upper, 4, nullptr), "");
      EXPECT_EQ(downloadRaw<float>(out, 30), want.data) << "f32, upper " << upper << ", k " << k;
      auto dk = uploadRaw(kb.data); // k read on the device (its argument, 7, ignored)
      cudaMemset(out.p, 0, out.bytes);
      ASSERT_EQ(cu::trilu(dx->p, out.p, 30, 3, 5, 7, upper, 4, nullptr, dk->as<int64_t>()), "");
      EXPECT_EQ(downloadRaw<float>(out, 30), want.data) << "f32, upper " << upper << ", k " << k << " on the device";
      Buf<uint8_t> flags(DType::Bool, {4, 3}, std::vector<uint8_t>(12, 1)), wantFlags(DType::Bool, {4, 3});
      ASSERT_EQ(call("trilu", a, {flags.ref(), kb.ref()}, {wantFlags.ref()}), "");
      auto df = uploadRaw(flags.data);
      Device outFlags(12);
      ASSERT_EQ(cu::trilu(df->p, outFlags.p, 12, 4, 3, k, upper, 1, nullptr), "");
      EXPECT_EQ(downloadRaw<uint8_t>(outFlags, 12), wantFlags.data) << "bool, upper " << upper << ", k " << k;
    }
}

// transposeBatched against the transpose on the host, 2- and 4-byte elements, matrices whose
// sides are and are not multiples of its 32 x 32 tiles.
TEST(Cuda, TransposeBatchedTransposesEachMatrix) {
  struct Case {
    int64_t n, rows, cols;
  };
  for (const Case &c : {Case{3, 45, 70}, Case{1, 1, 1}, Case{2, 64, 32}, Case{5, 7, 200}}) {
    const size_t count = size_t(c.n * c.rows * c.cols);
    std::vector<uint32_t> words(count);
    for (size_t i = 0; i < count; ++i)
      words[i] = uint32_t(i * 2654435761u);
    std::vector<uint32_t> want(count);
    for (int64_t b = 0; b < c.n; ++b)
      for (int64_t r = 0; r < c.rows; ++r)
        for (int64_t k = 0; k < c.cols; ++k)
          want[size_t((b * c.cols + k) * c.rows + r)] = words[size_t((b * c.rows + r) * c.cols + k)];
    auto src = uploadRaw(words);
    Device out(count * 4);
    ASSERT_EQ(cu::transposeBatched(src->p, out.p, c.n, c.rows, c.cols, 4, nullptr), "");
    EXPECT_EQ(downloadRaw<uint32_t>(out, count), want) << c.n << "x" << c.rows << "x" << c.cols;
    std::vector<uint16_t> halves(words.begin(), words.end()), wantHalves(want.begin(), want.end());
    auto src16 = uploadRaw(halves);
    Device out16(count * 2);
    ASSERT_EQ(cu::transposeBatched(src16->p, out16.p, c.n, c.rows, c.cols, 2, nullptr), "");
    EXPECT_EQ(downloadRaw<uint16_t>(out16, count), wantHalves) << c.n << "x" << c.rows << "x" << c.cols << " (2 bytes)";
  }
}

// im2col's rows times the weight (a convolution of one group as the executor runs it on
// cuBLASLt: PrepareConv.cpp) against the CPU conv, in every storage type: padded, strided and
// dilated in 2-D, and a 1-D window with padding at both ends. The GEMM here is the host's, in f32.
TEST(Cuda, Im2colRowsTimesTheWeightAreTheCpuConv) {
  struct Case {
    std::vector<int64_t> x, w, y, pads, strides, dilations;
  };
  const Case cases[] = {{{2, 4, 6, 5}, {6, 4, 3, 2}, {2, 6, 3, 4}, {1, 0, 1, 1}, {2, 1}, {1, 2}},
                        {{3, 2, 7}, {5, 2, 3}, {3, 5, 7}, {1, 1}, {1}, {1}}};
  for (cu::Storage s : kStorages) {
    for (const Case &c : cases) {
      const int spatial = int(c.x.size()) - 2;
      const int64_t N = c.x[0], C = c.x[1], M = c.w[0], K = elementsOf(c.w) / M, P = elementsOf(c.y) / (N * M);
      Buf<float> x(DType::F32, c.x, rounded(randomFloats(elementsOf(c.x), 81), s)),
          w(DType::F32, c.w, rounded(randomFloats(elementsOf(c.w), 82), s)),
          bias(DType::F32, {M}, rounded(randomFloats(M, 83), s)),
          want(DType::F32, c.y);
      const AttrList window =
          attrs({intsAttr("pads", c.pads), intsAttr("strides", c.strides), intsAttr("dilations", c.dilations)});
      ASSERT_EQ(call("conv", window, {x.ref(), w.ref(), bias.ref()}, {want.ref()}), "");
      cu::Window win;
      win.spatial = spatial;
      for (int d = 0; d < spatial; ++d)
        win.in[d] = c.x[size_t(d + 2)], win.out[d] = c.y[size_t(d + 2)], win.kernel[d] = c.w[size_t(d + 2)],
        win.padBegin[d] = c.pads[size_t(d)], win.stride[d] = c.strides[size_t(d)],
        win.dilation[d] = c.dilations[size_t(d)];
      auto dx = upload(x.data, s);
      Device col(size_t(N * P * K) * cu::storageBytes(s));
      ASSERT_EQ(cu::im2col(s, dx->p, col.p, N, C, win, nullptr), "");
      const std::vector<float> rows = download(col, size_t(N * P * K), s);
      std::vector<float> got(size_t(N * M * P));
      for (int64_t b = 0; b < N; ++b)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t o = 0; o < P; ++o) {
            double acc = bias.data[size_t(m)];
            for (int64_t k = 0; k < K; ++k)
              acc += double(rows[size_t((b * P + o) * K + k)]) * w.data[size_t(m * K + k)];
            got[size_t((b * M + m) * P + o)] = float(acc);
          }
      expectClose(got, want.data, 1e-4f, "im2col " + std::to_string(spatial) + "-D " + name(s));
    }
  }
}

// The latent attention kernels against the CPU latent_attention, with both factors, in every
// storage type; with an additive mask, and causal with an i64 attention_mask: 3 heads (a block per
// head), 8, 4 and 2 (a block per group of 8, 4 and 2 heads sharing the cache's reads), over 7,
// 1100 and 9000 keys, the keys in one block or split among several; with sinks.
TEST(Cuda, LatentAttentionMatchesTheCpu) {
  const int64_t B = 2, Sq = 2, Sk = 7, n = 4, R = 2, L = 8, v = 3;
  cu::latentAttentionSetup();
  Device workspace(cu::latentAttentionWorkspaceBytes(B, 8, Sq, L, R, 40));
  cudaMemset(workspace.p, 0, workspace.bytes); // the arrival counters start at 0
  for (int64_t H : {3, 8, 4, 2})
  for (cu::Storage s : kStorages) {
    SCOPED_TRACE(std::to_string(H) + " heads");
    Buf<float> q(DType::F32, {B, H, Sq, n + R}, rounded(randomFloats(B * H * Sq * (n + R), 37), s)),
        cache(DType::F32, {Sk, B, L + R}, rounded(randomFloats(Sk * B * (L + R), 38), s)),
        uk(DType::F32, {H, n, L}, rounded(randomFloats(H * n * L, 39), s)),
        uv(DType::F32, {H, L, v}, rounded(randomFloats(H * L * v, 40), s)),
        mask(DType::F32, {B, 1, Sq, Sk}, rounded(randomFloats(B * Sq * Sk, 41), s)), want(DType::F32, {B, H, Sq, v});
    const AttrList a = attrs({floatAttr("scale", 0.35), intAttr("rope_dim", R)});
    ASSERT_EQ(call("latent_attention", a, {q.ref(), cache.ref(), uk.ref(), uv.ref(), mask.ref()}, {want.ref()}), "");
    auto dq = upload(q.data, s), dc = upload(cache.data, s), duk = upload(uk.data, s), duv = upload(uv.data, s),
         dm = upload(mask.data, s);
    cu::LatentMask lm;
    lm.data = dm->p, lm.strides[0] = Sq * Sk, lm.strides[2] = Sk, lm.strides[3] = 1;
    Device out(size_t(want.numel()) * cu::storageBytes(s));
    ASSERT_EQ(cu::latentAttention(s, dq->p, dc->p, duk->p, duv->p, lm, out.p, B, H, Sq, Sk, n, R, L, v,
                                  0.35f, nullptr, 1, nullptr, nullptr),
              "");
    expectClose(download(out, size_t(want.numel()), s), want.data, std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention ") + name(s));
    // The key count read from the device, the launch sized for a cache of 20000 rows: the same result.
    auto keys = uploadRaw(std::vector<int64_t>{Sk});
    cudaMemset(out.p, 0, out.bytes);
    ASSERT_EQ(cu::latentAttention(s, dq->p, dc->p, duk->p, duv->p, lm, out.p, B, H, Sq, 20000, n, R, L,
                                  v, 0.35f, keys->as<int64_t>(), 1, nullptr, nullptr),
              "");
    expectClose(download(out, size_t(want.numel()), s), want.data, std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention, key count on the device, ") + name(s));
    // is_causal with a left-padded attention_mask input (i64 [B, 1, 1, Sk]) as the mask, as
    // llmc-raise-attention-mask leaves a DeepSeek plan: the same key count on the device.
    Buf<int64_t> padding(DType::I64, {B, 1, 1, Sk});
    for (int64_t k = 0; k < B * Sk; ++k)
      padding.data[size_t(k)] = k >= Sk && k < Sk + 2 ? 0 : 1;
    const AttrList causal = attrs({floatAttr("scale", 0.35), intAttr("rope_dim", R), intAttr("is_causal", 1)});
    ASSERT_EQ(call("latent_attention", causal, {q.ref(), cache.ref(), uk.ref(), uv.ref(), padding.ref()}, {want.ref()}),
              "");
    auto dpadding = uploadRaw(padding.data);
    cu::LatentMask pm;
    pm.data = dpadding->p, pm.type = cu::AttentionArgs::Mask::Int64, pm.causal = true, pm.rowPerBatch = true;
    pm.strides[0] = 1, pm.strides[3] = 1; // the batch stride comes from the key count on the device
    cudaMemset(out.p, 0, out.bytes);
    ASSERT_EQ(cu::latentAttention(s, dq->p, dc->p, duk->p, duv->p, pm, out.p, B, H, Sq, 20000, n, R, L, v, 0.35f,
                                  keys->as<int64_t>(), 1, nullptr, nullptr),
              "");
    expectClose(download(out, size_t(want.numel()), s), want.data, std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention, causal, attention_mask as the mask, ") + name(s));
    // A cache of 9000 rows: 36 steps of 256 keys, causal.
    const int64_t rows = 9000;
    Buf<float> longCache(DType::F32, {rows, B, L + R}, rounded(randomFloats(size_t(rows * B * (L + R)), 42), s)),
        wantLong(DType::F32, {B, H, Sq, v});
    Buf<float> none(DType::F32, {0});
    ASSERT_EQ(call("latent_attention", causal, {q.ref(), longCache.ref(), uk.ref(), uv.ref(), none.ref()}, {wantLong.ref()}),
              "");
    auto dlong = upload(longCache.data, s);
    cu::LatentMask causalOnly;
    causalOnly.causal = true;
    ASSERT_EQ(cu::latentAttention(s, dq->p, dlong->p, duk->p, duv->p, causalOnly, out.p, B, H, Sq, rows, n, R, L, v,
                                  0.35f, nullptr, 1, nullptr, nullptr),
              "");
    expectClose(download(out, size_t(wantLong.numel()), s), wantLong.data, std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention over 9000 keys, ") + name(s));
    // The keys shared among blocks, over a cache of 1100 rows (4 steps of 256 keys and 76): 2
    // splits of 3 steps and 1; 5 of a step each, the last with 76 keys; 8, of which 3 without
    // keys; the key count on the device (1100 under a bound of 20000) in 3 splits of 2 steps; the
    // 7 keys of the short cache under 40 splits (one with keys: no partial results). Twice each: a
    // launch leaves the counters at 0 for the next.
    const int64_t splitRows = 1100;
    Buf<float> splitCache(DType::F32, {splitRows, B, L + R},
                          rounded(randomFloats(size_t(splitRows * B * (L + R)), 43), s)),
        wantSplit(DType::F32, {B, H, Sq, v});
    ASSERT_EQ(call("latent_attention", causal, {q.ref(), splitCache.ref(), uk.ref(), uv.ref(), none.ref()},
                   {wantSplit.ref()}),
              "");
    auto dsplit = upload(splitCache.data, s);
    auto rowsOnDevice = uploadRaw(std::vector<int64_t>{splitRows});
    struct Split {
      int splits;
      bool onDevice;
    };
    for (Split sp : {Split{2, false}, Split{5, false}, Split{8, false}, Split{3, true}})
      for (int twice = 0; twice < 2; ++twice) {
        ASSERT_LE(cu::latentAttentionWorkspaceBytes(B, H, Sq, L, R, sp.splits), workspace.bytes);
        cudaMemset(out.p, 0, out.bytes);
        ASSERT_EQ(cu::latentAttention(s, dq->p, dsplit->p, duk->p, duv->p, causalOnly, out.p, B, H, Sq,
                                      sp.onDevice ? 20000 : splitRows, n, R, L, v, 0.35f,
                                      sp.onDevice ? rowsOnDevice->as<int64_t>() : nullptr, sp.splits, workspace.p,
                                      nullptr),
                  "");
        expectClose(download(out, size_t(wantSplit.numel()), s), wantSplit.data, std::max(tolerance(s), 1e-4f) * 2,
                    "latent attention over 1100 keys in " + std::to_string(sp.splits) + " splits, " + name(s));
      }
    // With sinks (a logit per head joining each row's softmax), in one block and in 5 splits.
    std::vector<float> sinkLogits(static_cast<size_t>(H));
    for (int64_t h = 0; h < H; ++h)
      sinkLogits[size_t(h)] = h % 2 ? 2.5f : -1.0f;
    Buf<float> sinks(DType::F32, {H}, rounded(sinkLogits, s)), wantSinks(DType::F32, {B, H, Sq, v});
    ASSERT_EQ(call("latent_attention", causal, {q.ref(), splitCache.ref(), uk.ref(), uv.ref(), none.ref(), sinks.ref()},
                   {wantSinks.ref()}),
              "");
    auto dsinks = upload(sinks.data, s);
    cu::LatentMask causalSinks = causalOnly;
    causalSinks.sinks = dsinks->p;
    for (int splits : {1, 5}) {
      cudaMemset(out.p, 0, out.bytes);
      ASSERT_EQ(cu::latentAttention(s, dq->p, dsplit->p, duk->p, duv->p, causalSinks, out.p, B, H, Sq, splitRows, n, R,
                                    L, v, 0.35f, nullptr, splits, workspace.p, nullptr),
                "");
      expectClose(download(out, size_t(wantSinks.numel()), s), wantSinks.data, std::max(tolerance(s), 1e-4f) * 2,
                  "latent attention with sinks in " + std::to_string(splits) + " splits, " + name(s));
    }
    // Without W_UK and W_UV (the query comes in the latent space, the output leaves in it), in 5
    // splits, and with W_UV alone.
    Buf<float> latentQ(DType::F32, {B, H, Sq, L + R}, rounded(randomFloats(B * H * Sq * (L + R), 44), s)),
        wantLatentOut(DType::F32, {B, H, Sq, L}), wantWithUv(DType::F32, {B, H, Sq, v});
    ASSERT_EQ(call("latent_attention", causal, {latentQ.ref(), splitCache.ref(), none.ref(), none.ref(), none.ref()},
                   {wantLatentOut.ref()}),
              "");
    ASSERT_EQ(call("latent_attention", causal, {latentQ.ref(), splitCache.ref(), none.ref(), uv.ref(), none.ref()},
                   {wantWithUv.ref()}),
              "");
    auto dlatentQ = upload(latentQ.data, s);
    Device latentOut(size_t(wantLatentOut.numel()) * cu::storageBytes(s));
    ASSERT_EQ(cu::latentAttention(s, dlatentQ->p, dsplit->p, nullptr, nullptr, causalOnly, latentOut.p, B, H, Sq,
                                  splitRows, 0, R, L, L, 0.35f, nullptr, 5, workspace.p, nullptr),
              "");
    expectClose(download(latentOut, size_t(wantLatentOut.numel()), s), wantLatentOut.data,
                std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention without W_UK and W_UV in 5 splits, ") + name(s));
    ASSERT_EQ(cu::latentAttention(s, dlatentQ->p, dsplit->p, nullptr, duv->p, causalOnly, out.p, B, H, Sq, splitRows, 0,
                                  R, L, v, 0.35f, nullptr, 5, workspace.p, nullptr),
              "");
    expectClose(download(out, size_t(wantWithUv.numel()), s), wantWithUv.data, std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention without W_UK in 5 splits, ") + name(s));
    cudaMemset(out.p, 0, out.bytes);
    ASSERT_EQ(cu::latentAttention(s, dq->p, dc->p, duk->p, duv->p, pm, out.p, B, H, Sq, 20000, n, R, L, v, 0.35f,
                                  keys->as<int64_t>(), 40, workspace.p, nullptr),
              "");
    expectClose(download(out, size_t(want.numel()), s), want.data, std::max(tolerance(s), 1e-4f) * 2,
                std::string("latent attention, 7 keys under 40 splits, ") + name(s));
  }
}

// gather along an axis other than 0 with int32 indices of rank 2 (some negative), of int64 data
// along axis 0, and of bool data along the last axis, against the CPU kernel; an index out of
// range sets the error flag.
TEST(Cuda, GatherAxisMatchesTheCpu) {
  auto error = uploadRaw(std::vector<int>{0});
  { // f32 [2, 5, 3] along axis 1 by int32 [2, 2]: out [2, 2, 2, 3]
    Buf<float> data(DType::F32, {2, 5, 3}, randomFloats(30, 97)), want(DType::F32, {2, 2, 2, 3});
    Buf<int32_t> idx(DType::I32, {2, 2}, {4, -1, 0, 2});
    ASSERT_EQ(call("gather", attrs({intAttr("axis", 1)}), {data.ref(), idx.ref()}, {want.ref()}), "");
    auto dd = uploadRaw(data.data), di = uploadRaw(idx.data);
    Device out(24 * 4);
    ASSERT_EQ(cu::gatherAxis(dd->p, di->p, 4, out.p, 2, 5, 4, 3, 4, error->as<int>(), nullptr), "");
    expectClose(downloadRaw<float>(out, 24), want.data, 0.0f, "gather f32 axis 1 int32 indices");
  }
  { // int64 [4, 3] along axis 0 by int64 [3]
    Buf<int64_t> data(DType::I64, {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), want(DType::I64, {3, 3});
    Buf<int64_t> idx(DType::I64, {3}, {3, -4, 1});
    ASSERT_EQ(call("gather", attrs({intAttr("axis", 0)}), {data.ref(), idx.ref()}, {want.ref()}), "");
    auto dd = uploadRaw(data.data), di = uploadRaw(idx.data);
    Device out(9 * 8);
    ASSERT_EQ(cu::gatherAxis(dd->p, di->p, 8, out.p, 1, 4, 3, 3, 8, error->as<int>(), nullptr), "");
    EXPECT_EQ(downloadRaw<int64_t>(out, 9), want.data) << "gather int64 axis 0";
  }
  { // bool [2, 4] along the last axis by int64 [2]
    Buf<uint8_t> data(DType::Bool, {2, 4}, {1, 0, 0, 1, 0, 1, 1, 0}), want(DType::Bool, {2, 2});
    Buf<int64_t> idx(DType::I64, {2}, {3, 1});
    ASSERT_EQ(call("gather", attrs({intAttr("axis", -1)}), {data.ref(), idx.ref()}, {want.ref()}), "");
    auto dd = uploadRaw(data.data), di = uploadRaw(idx.data);
    Device out(4);
    ASSERT_EQ(cu::gatherAxis(dd->p, di->p, 8, out.p, 2, 4, 2, 1, 1, error->as<int>(), nullptr), "");
    EXPECT_EQ(downloadRaw<uint8_t>(out, 4), want.data) << "gather bool last axis";
  }
  EXPECT_EQ(downloadRaw<int>(*error, 1)[0], 0);
  Buf<int64_t> bad(DType::I64, {1}, {5});
  auto dd = uploadRaw(std::vector<float>(30, 1.0f)), di = uploadRaw(bad.data);
  Device out(6 * 4);
  ASSERT_EQ(cu::gatherAxis(dd->p, di->p, 8, out.p, 2, 5, 1, 3, 4, error->as<int>(), nullptr), "");
  EXPECT_EQ(downloadRaw<int>(*error, 1)[0], 1);
}

// gather_elements along each axis of a [3, 4, 5] f32 tensor (indices [2, 4, 3]-ish, some negative),
// against the CPU kernel; an index out of range sets the error flag.
TEST(Cuda, GatherElementsMatchesTheCpu) {
  const std::vector<int64_t> dataShape = {3, 4, 5};
  Buf<float> data(DType::F32, dataShape, randomFloats(60, 81));
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<int64_t> idxShape = {2, 4, 3};
    const int64_t n = 24, dim = dataShape[size_t(axis)];
    std::vector<int64_t> idx(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i)
      idx[size_t(i)] = (i * 5 + axis) % (2 * dim) - dim; // -dim .. dim - 1
    Buf<int64_t> indices(DType::I64, idxShape, idx);
    Buf<float> want(DType::F32, idxShape);
    ASSERT_EQ(call("gather_elements", attrs({intAttr("axis", axis)}), {data.ref(), indices.ref()}, {want.ref()}), "");
    auto dd = uploadRaw(data.data);
    auto di = uploadRaw(indices.data), error = uploadRaw(std::vector<int>{0});
    Device out(size_t(n) * sizeof(float));
    ASSERT_EQ(cu::gatherElements(dd->p, di->as<int64_t>(), out.p, 3, axis, idxShape.data(), dataShape.data(), 4,
                                 error->as<int>(), nullptr),
              "");
    expectClose(download(out, size_t(n), cu::Storage::F32), want.data, 0.0f, "gather_elements axis " + std::to_string(axis));
    auto bad = uploadRaw(std::vector<int64_t>(size_t(n), dim));
    ASSERT_EQ(cu::gatherElements(dd->p, bad->as<int64_t>(), out.p, 3, axis, idxShape.data(), dataShape.data(), 4,
                                 error->as<int>(), nullptr),
              "");
    int flag = 0;
    cudaMemcpy(&flag, error->p, sizeof flag, cudaMemcpyDeviceToHost);
    EXPECT_EQ(flag, 1);
  }
}

// cumsum along the middle axis of [2, 5, 3], i64 and f32, every exclusive/reverse combination,
// against the CPU kernel (a mask built from position ids uses it); the axis known at the launch or
// read on the device (int64 and int32, counted from the back), and a device axis out of range.
TEST(Cuda, CumSumMatchesTheCpu) {
  const std::vector<int64_t> shape = {2, 5, 3};
  std::vector<int64_t> ints(30);
  for (size_t i = 0; i < ints.size(); ++i)
    ints[i] = int64_t(i * 7919 % 13) - 6;
  Buf<int64_t> x(DType::I64, shape, ints), axis(DType::I64, {1}, {1});
  Buf<float> xf(DType::F32, shape, randomFloats(30, 71));
  auto dx = uploadRaw(x.data);
  auto dxf = uploadRaw(xf.data);
  auto axis64 = uploadRaw(std::vector<int64_t>{-2}), axis32 = uploadRaw(std::vector<int32_t>{1});
  Device error(4);
  cudaMemset(error.p, 0, 4);
  for (int exclusive = 0; exclusive < 2; ++exclusive)
    for (int reverse = 0; reverse < 2; ++reverse) {
      const AttrList a = attrs({intAttr("exclusive", exclusive), intAttr("reverse", reverse)});
      Buf<int64_t> want(DType::I64, shape);
      Buf<float> wantf(DType::F32, shape);
      ASSERT_EQ(call("cumsum", a, {x.ref(), axis.ref()}, {want.ref()}), "");
      ASSERT_EQ(call("cumsum", a, {xf.ref(), axis.ref()}, {wantf.ref()}), "");
      for (int from = 0; from < 3; ++from) { // the axis: known, on the device as int64, as int32
        const std::string what = std::string("exclusive ") + std::to_string(exclusive) + " reverse " +
                                 std::to_string(reverse) + (from == 0 ? "" : from == 1 ? " axis i64" : " axis i32");
        cu::CumsumArgs c;
        c.rank = 3, c.dims[0] = 2, c.dims[1] = 5, c.dims[2] = 3, c.axis = 1;
        c.axisValue = from == 0 ? nullptr : from == 1 ? axis64->p : axis32->p, c.axisInt32 = from == 2;
        c.exclusive = exclusive, c.reverse = reverse;
        Device out(30 * sizeof(int64_t)), outf(30 * sizeof(float));
        ASSERT_EQ(cu::cumsum(int(DType::I64), dx->p, out.p, c, error.as<int>(), nullptr), "");
        ASSERT_EQ(cu::cumsum(int(DType::F32), dxf->p, outf.p, c, error.as<int>(), nullptr), "");
        EXPECT_EQ(downloadRaw<int64_t>(out, 30), want.data) << what;
        expectClose(download(outf, 30, cu::Storage::F32), wantf.data, 1e-5f, "cumsum f32 " + what);
      }
    }
  EXPECT_EQ(downloadRaw<int>(error, 1)[0], 0);
  auto outside = uploadRaw(std::vector<int64_t>{3});
  cu::CumsumArgs c;
  c.rank = 3, c.dims[0] = 2, c.dims[1] = 5, c.dims[2] = 3, c.axisValue = outside->p;
  Device out(30 * sizeof(int64_t));
  ASSERT_EQ(cu::cumsum(int(DType::I64), dx->p, out.p, c, error.as<int>(), nullptr), "");
  EXPECT_EQ(downloadRaw<int>(error, 1)[0], 1) << "an axis out of range raises the error flag";
}

// Greedy decoding on the device: the argmax of each batch's last row, the first of equal maxima,
// NaN never chosen, as the CPU context's (Context.cpp) over the same values.
TEST(Cuda, ArgmaxLastRowsMatchesTheCpu) {
  const int64_t B = 3, rows = 2, V = 50021;
  for (cu::Storage s : kStorages) {
    std::vector<float> x = rounded(randomFloats(B * rows * V, 61), s);
    float *last1 = x.data() + (1 * rows + 1) * V, *last2 = x.data() + (2 * rows + 1) * V;
    last1[100] = last1[40000] = 8.0f;  // a tie: the first wins
    last2[7] = NAN, last2[V - 1] = 9.0f; // NaN is not a maximum
    std::vector<int32_t> want(static_cast<size_t>(B), 0);
    for (int64_t b = 0; b < B; ++b) {
      const float *row = x.data() + (b * rows + rows - 1) * V;
      float top = -INFINITY;
      for (int64_t j = 0; j < V; ++j)
        if (row[j] > top)
          top = row[j], want[size_t(b)] = int32_t(j);
    }
    // V = 50021 is no multiple of 8 (the rows are not 16-byte aligned: the scalar path); the
    // first V - 5 = 50016 of each row are (the 16-byte loads). Each twice: the second launch
    // finds the workspace as the first left it.
    Device workspace(cu::argmaxWorkspaceBytes(B));
    cudaMemset(workspace.p, 0, workspace.bytes);
    for (int64_t width : {V, V - 5})
      for (int launch = 0; launch < 2; ++launch) {
        std::vector<float> packed;
        for (int64_t r = 0; r < B * rows; ++r)
          packed.insert(packed.end(), x.begin() + r * V, x.begin() + r * V + width);
        auto dx = upload(packed, s);
        Device out(size_t(B) * sizeof(int32_t));
        ASSERT_EQ(cu::argmaxLastRows(s, dx->p, B, rows, width, static_cast<int32_t *>(out.p), workspace.p, nullptr), "");
        std::vector<int32_t> got(static_cast<size_t>(B), -1);
        cudaMemcpy(got.data(), out.p, out.bytes, cudaMemcpyDeviceToHost);
        std::vector<int32_t> expected = want;
        for (int64_t b = 0; b < B && width < V; ++b) { // the CPU's answer over the shorter rows
          const float *row = packed.data() + (b * rows + rows - 1) * width;
          float top = -INFINITY;
          for (int64_t j = 0; j < width; ++j)
            if (row[j] > top)
              top = row[j], expected[size_t(b)] = int32_t(j);
        }
        EXPECT_EQ(got, expected) << name(s) << " V=" << width << " launch " << launch;
        EXPECT_EQ(got[1], 100) << name(s);
      }
  }
}

// Values crossing the API of a reduced-precision plan: f32 to 16 bits and back, saturating.
TEST(Cuda, ConvertFloatsRoundsAndSaturates) {
  const std::vector<float> values = {1.0f, -2.5f, 3.14159265f, 1e-3f, -3.4e38f, 70000.0f, 0.0f};
  auto in = uploadRaw(values);
  for (cu::Storage s : {cu::Storage::F16, cu::Storage::BF16}) {
    Device narrow(values.size() * 2), back(values.size() * 4);
    ASSERT_EQ(cu::convertFloats(cu::Storage::F32, in->p, s, narrow.p, int64_t(values.size()), nullptr), "");
    ASSERT_EQ(cu::convertFloats(s, narrow.p, cu::Storage::F32, back.p, int64_t(values.size()), nullptr), "");
    const DType d = s == cu::Storage::F16 ? DType::F16 : DType::BF16;
    std::vector<float> want;
    for (float v : values)
      want.push_back(llmc::rt::widenFloat(llmc::rt::narrowFloat(v, d), d));
    expectClose(downloadRaw<float>(back, values.size()), want, 0.0f, std::string("convert ") + name(s));
  }
}

} // namespace
