// Hand-written CUDA kernels of the CUDA executor (issue 7, in progress), callable from C++
// compiled without nvcc: pointers are device pointers, `stream` a cudaStream_t. Activations and
// weights are stored as f32, f16 or bf16 (`Storage`: llmc --precision); every kernel accumulates
// in f32, and f16/bf16 results saturate at the type's largest finite value. Each returns
// an error message (bad arguments, a failed launch), empty on success. Their semantics are the
// CPU kernels' of the same name (runtime/kernels), which test/cuda checks them against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::rt {
struct EinsumLoops; // kernels/Einsum.h
}

namespace llmc::rt::cuda {

enum class Storage { F32, F16, BF16 };

size_t storageBytes(Storage s);

// add_rms_norm / add_layer_norm over the last axis of [rows, cols] of DType number `type` (a float:
// in f32, doubles in f64): sum = x + residual (residual may be null: plain rms_norm / layer_norm),
// out = norm(sum) * scale (+ bias). `sum` (nullable) receives x + residual. scale and bias are
// [cols] of the same type; bias may be null. A row is staged in shared memory up to 12288 columns
// (6144 doubles); a longer one is read again for each pass (its sum from `sum` where given).
std::string addNorm(int type, bool layerNorm, const void *x, const void *residual, const void *scale,
                    const void *bias, void *out, void *sum, int64_t rows, int64_t cols, double epsilon, void *stream);

// Softmax over the last axis of [rows, cols] of DType number `type` (a float: in f32, doubles in
// f64); with `log`, its logarithm (log_softmax: x - max - log(sum of exp(x - max)), never through
// exp and log of a tiny value). Rows as addNorm's. With `inner` > 1, over the middle axis of
// [rows / inner, cols, inner] (an axis before the last).
std::string softmax(int type, const void *x, void *y, int64_t rows, int64_t cols, void *stream, bool log = false,
                    int64_t inner = 1);

// An output at `base`, moved by *shift * shiftStride elements where `shift` (device memory) is
// given: a cache's new rows written after the rows already there, whose count the launch does
// not know (a graph replayed for every cache length; PlanShortcuts.h, InPlace). With
// batchStride, the output's rows [B, S, W] are not one after another: row (b, s) starts at
// b * batchStride + s * tokenStride (a batch's rows stored token-major in a [length, B, W]
// cache); only the split's copies and the rotary kernel on rows [B, S, H * D] take it.
struct ShiftedOutput {
  void *base = nullptr;
  const int64_t *shift = nullptr;
  int64_t shiftStride = 0;
  int64_t batchStride = 0, tokenStride = 0;
};

// Rotary embedding of x [B, H, S, D] (or [B, S, H * D] with `flat`) into y: the first `rotaryDim`
// dimensions of each head turn by the angles of each token's position (cos/sin tables
// [positions, rotaryDim / 2] in the same storage; positions [B, S] int64, or null with tables
// [B, S, rotaryDim / 2]: row b * S + s), pairs (i, i + rotaryDim/2) or, with `interleaved`,
// (2i, 2i + 1). A position outside the tables sets *error (device int) to 1. With `flat`, x's rows
// may be pieces of wider ones: `xRowStride` elements from one token's row to the next (0: H * D),
// such as the keys within a merged QKV projection's output.
struct RotaryArgs {
  const void *x = nullptr;
  int64_t xRowStride = 0;
  ShiftedOutput y;
  const void *cos = nullptr, *sin = nullptr;
  int64_t tableRows = 0; // rows of the tables: positions must lie below
  const int64_t *positions = nullptr;
  bool sharedTables = false; // without positions: tables [1, S, .] that every batch reads
  int64_t B = 0, H = 0, S = 0, D = 0, rotaryDim = 0;
  bool interleaved = false, flat = false;
  int *error = nullptr;
};
std::string rotary(Storage s, const RotaryArgs &a, void *stream);

// Embedding lookup: out[i, :] = table[ids[i], :] for `count` ids into a [rows, width] table. An id
// outside [0, rows) (negative ids count from the end, as ONNX Gather) sets *error to 1 and writes zeros.
std::string gatherRows(Storage s, const void *table, int64_t rows, int64_t width, const int64_t *ids, int64_t count,
                       void *out, int *error, void *stream);

// Where element (b, h, i, d) of q, k or v lies: base + b * batch + i * token + h * head + d.
struct HeadStrides {
  int64_t batch, token, head;
};

// Attention for any number of queries (prefill), the fused_attention op's semantics: per (b, h,
// query i) scores over the Sk keys, scale, the softcap, then the mask ([B, H, Sq, Sk] broadcast through
// `maskStrides`, 0 where it broadcasts; added in the storage type, or bool bytes or int64 values
// keeping where non-zero: an attention_mask input, see llmc-raise-attention-mask), causal
// hiding of keys after i + Sk - Sq, the sliding window's hiding of keys `window` or more positions
// before it, softmax, weighted sum of values into out [B, Sq, Hq * Dv]. With
// cos/sin ([B or 1, Sq, D] in the storage type, `tablesPerBatch`) q is rotated (rotate-half), and k too with `rotateKeys`
// (then Sk == Sq). A fully masked row is zeros. One block per query row, which takes its keys 4096
// at a time (an online softmax: any Sk); head sizes at most 12288.
struct AttentionArgs {
  const void *q, *k, *v;
  HeadStrides qs, ks, vs;
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
  float scale;
  bool causal;
  float softcap = 0.0f; // > 0: each scaled score s is softcap * tanh(s / softcap) before the mask
  int64_t window = 0;   // > 0: keys `window` or more positions before the query hidden (sliding_window)
  const void *mask = nullptr; // null: none
  enum class Mask : uint8_t { Additive, Bool, Int64 } maskType = Mask::Additive;
  int64_t maskStrides[4] = {};
  const void *cos = nullptr, *sin = nullptr;
  bool tablesPerBatch = false, rotateKeys = false;
  // The tables have D / 2 columns, which both halves of a head share (tables that are a
  // concatenation of one table with itself, as a Hugging Face export makes them, read once).
  bool halfTables = false;
  // > 0: q turns as llmc.rotary turns it (fused_attention's rotary_dim): its first rotaryDim
  // features in pairs (i, i + rotaryDim / 2), or (2i, 2i + 1) with `interleaved`, by tables of
  // rotaryDim / 2 columns; the keys are not rotated (rotateKeys false).
  int64_t rotaryDim = 0;
  bool interleaved = false;
  // [Hq] in the storage type, or null: a logit per query head that joins each row's softmax
  // with no value (fused_attention's sinks, GPT-OSS): the row's weights sum to less than 1.
  const void *sinks = nullptr;
  void *out;
  // decodeAttention only: the key count in device memory, Sk being its upper bound (a graph
  // replayed for every cache length launches with the same arguments). The keys' and values'
  // memory must hold Sk rows (a cache at its bound): a launch may load rows past the count
  // before it knows it (it uses none of them). Where the mask's batch or head stride is rows of
  // that count (a mask [B, 1, 1, keys] or [B or 1, Hq, 1, keys]: a batch's attention_mask, ALiBi's
  // bias per head), maskRowsPerBatch and maskRowsPerHead > 0 give it in rows, and maskStrides[0]
  // and [1] do not count there.
  const int64_t *skOnDevice = nullptr;
  int64_t maskRowsPerBatch = 0, maskRowsPerHead = 0;
  // decodeAttention only: its plain kernel even where the tiled one takes the call, and one
  // block per query head even where the tiled kernel takes the heads that share a key/value
  // head together (tests and benchmarks compare them; DecodeAttention.cu).
  bool plainDecode = false;
  bool oneHeadPerBlock = false;
  // decodeAttention only: a programmatic dependent launch (DeviceUtil.cuh; compute capability
  // 9.0 and newer), as SmallLinearArgs::overlapPrevious.
  bool overlapPrevious = false;
  // decodeAttention only (compute capability 9.0 and newer): bytes that its blocks ask the L2
  // cache to fetch for a later kernel (the output projection's weight), 16-byte aligned; null:
  // none. A decode attention waits on latency while the memory is mostly idle.
  const void *prefetchL2 = nullptr;
  size_t prefetchL2Bytes = 0;
};
std::string attention(Storage s, const AttentionArgs &a, void *stream);

// The same for one query per sequence (a decode step: Sq == 1), any layout but packed QKV, no
// key rotation (a cache holds its keys rotated; the query is rotated when a.cos is given): the
// key length is split across `splits` blocks per head (0: chosen from Sk), whose partial results
// `workspace` holds (decodeAttentionWorkspaceBytes; zeroed before its first use, and left so),
// and the last block of each head to finish combines them (DecodeAttention.cu). With
// a.skOnDevice the blocks divide the keys that it counts (at most a.Sk) among themselves; with a
// window, the last a.window of them (the splits: decodeAttentionSplits(decodeKeysSeen(a))).
constexpr int64_t kMaxDecodeHeadDim = 256;
size_t decodeAttentionWorkspaceBytes(int64_t B, int64_t Hq, int64_t Dv, int splits);
int decodeAttentionSplits(int64_t T);
// The most keys one decode query attends to: Sk (a bound where skOnDevice), or the window.
inline int64_t decodeKeysSeen(const AttentionArgs &a) { return a.window > 0 && a.window < a.Sk ? a.window : a.Sk; }
std::string decodeAttention(Storage s, const AttentionArgs &a, int splits, void *workspace, void *stream);

// The same on tensor cores, flash-attention style (FlashAttention.cu): 64 query rows per block,
// keys 64 at a time, online softmax, so any Sk fits. For f16/bf16 storage and head sizes D, Dv
// that are multiples of 16 up to 128; flashAttentionFits also checks that the tiles fit in
// `sharedLimit` bytes (the device's cudaDevAttrMaxSharedMemoryPerBlockOptin) and in what
// flashAttentionSetup allowed (none before it).
// flashAttentionSetup lets the kernels use up to `sharedLimit` bytes (call it once, outside any
// graph capture: it sets a function attribute).
//
// With `splits` > 1 the keys of each block of query rows are shared out among that many blocks
// (a causal prompt's last rows walk all the keys, its first rows few: the last ones set the
// launch's time), each writing its partial results to `workspace`, whose counters (at its start,
// as decodeAttention's: the launch leaves them 0) it finds at 0, and the last block of the rows
// merges them. flashAttentionSplits: how many a launch should take on a GPU of `sms`
// multiprocessors (1 where the launch fills the GPU already, or where the partial results would
// not fit `workspaceBytes`).
void flashAttentionSetup(size_t sharedLimit);
bool flashAttentionFits(Storage s, int64_t D, int64_t Dv, size_t sharedLimit);
int flashAttentionSplits(const AttentionArgs &a, int sms, size_t workspaceBytes);
std::string flashAttention(Storage s, const AttentionArgs &a, void *stream, int splits = 1, void *workspace = nullptr);

// ONNX Attention as the CPU's `attention` kernel computes it (kernels/Attention.cpp): the
// llmc.attention that llmc-raise-attention leaves (a softcap, a sliding window, nonpad_kv_seqlen,
// its scores read). First the present keys and values [B, Hkv, past + Skv, D or Dv]: the past
// ([B, Hkv, past, ...], where given), then the new ones (read through ks, vs). Then per (b, h,
// query i), over those T = past + Skv keys: scores times scale, the softcap (c * tanh(s / c)), the
// bias (the mask, [B, Hq, Sq, maskKeys] broadcast through maskStrides, keys from maskKeys on
// hidden; causal hiding after i + offset; the window's keys further than leftWindow before or
// rightWindow after i + offset; keys from nonpad[b] on), softmax, weighted sum of the values into
// out (through outs). offset is past where there is a past, nonpad[b] - Sq where nonpad is given,
// else 0. scores [B, Hq, Sq, T], where given: the scores (scoresMode 0 or 1), with the bias
// (2), or after the softmax (3). A fully masked row is zeros. One block per query row, keys 4096 at
// a time (correct first, not fast: the probabilities of mode 3 take a second pass over the keys,
// which reads back the scores written in the first, or computes them again in 16-bit storage);
// any T, head sizes at most 12288. Every float operand of DType number `type` (a float: in f32,
// doubles in f64; a mask of that type, bool or int64).
struct OnnxAttentionArgs {
  const void *q, *k, *v;
  HeadStrides qs, ks, vs;
  const void *pastK = nullptr, *pastV = nullptr; // null: no past
  int64_t B, Hq, Hkv, Sq, Skv, past = 0, D, Dv;
  void *presentK, *presentV, *out;
  HeadStrides outs;
  void *scores = nullptr;
  int scoresMode = 0;
  double scale, softcap = 0.0; // (in the element type's precision: f32, or f64 for doubles)
  bool causal = false;
  int64_t leftWindow = -1, rightWindow = -1; // -1: no bound on that side
  const void *mask = nullptr;
  AttentionArgs::Mask maskType = AttentionArgs::Mask::Additive;
  int64_t maskStrides[4] = {}, maskKeys = 0;
  const void *nonpad = nullptr; // B integers, int64 or (nonpad32) int32
  bool nonpad32 = false;
};
std::string onnxAttention(int type, const OnnxAttentionArgs &a, void *stream);

// The epilogue of a linear that cuBLASLt has no exact epilogue for: from y [M, N] (or [M, 2N]
// with `swiglu`, bias already added), out = act(y) (silu(y[:, :N]) * y[:, N:] with swiglu),
// times `gate` when given, plus `residual` when given ([M, N] each). `activation`: "none", "relu",
// "silu", "gelu" (erf), "gelu_tanh".
std::string linearEpilogue(Storage s, const void *y, void *out, const void *gate, const void *residual, int64_t M,
                           int64_t N, const std::string &activation, bool swiglu, void *stream);

// A linear for a few rows (SmallLinear.cu): out [M, Nout] = epilogue(x [M, K] · Wᵀ + bias) with
// W [N, K] row-major (a linear's transB layout), bias [N] (nullable), then the activation
// ("none", "relu", "silu", "gelu", "gelu_tanh"; or with `swiglu`, Nout = N / 2 and
// silu(y[:, :Nout]) * y[:, Nout:]), times `gate` and plus `residual` ([M, Nout] each, nullable),
// as the linear op computes it but without rounding y to the storage type in between. For
// decode steps, where cuBLASLt's GEMMs are not made for M = 1: smallLinearTakes says whether
// the kernel takes a call (M <= kSmallLinearMaxM, K a multiple of 16 bytes, x, w and the norm's
// tensors 16-byte aligned). With `normScale` an RMS norm comes first, as the rms_norm /
// add_rms_norm op before the linear would compute it: x is replaced by
// rms_norm(x + normResidual) * normScale over K (normResidual nullable), and normSum (nullable;
// only with normResidual) receives x + normResidual, [M, K] each, normScale [K]. With output
// pieces (LinearPiece, SmallLinearArgs::piece) the columns go to places of their own instead of out.
constexpr int64_t kSmallLinearMaxM = 8;

// Where a linear's output goes instead of `out` (SmallLinearArgs::piece): its columns in
// consecutive pieces, each stored as rows [M, columns] of its own at `to` (a linked cache's end
// where shifted), and where rotary.cos is given turned as the rotary op turns rows [B, S, H * D]
// (H = columns / rotary.D heads, row m = b * S + s: rotary's positions, or tables by row,
// tableRows, rotaryDim, interleaved and error; its x, y, B, H, S and flat are not read): a merged
// QKV projection's split, key rotation and cache appends in the GEMV's epilogue.
struct LinearPiece {
  int64_t columns = 0;
  ShiftedOutput to;
  RotaryArgs rotary;
};
constexpr int kMaxLinearPieces = 4;

struct SmallLinearArgs {
  const void *x = nullptr, *w = nullptr, *bias = nullptr, *gate = nullptr, *residual = nullptr;
  void *out = nullptr;
  int64_t M = 0, N = 0, K = 0;
  bool swiglu = false;
  const void *normScale = nullptr, *normResidual = nullptr;
  void *normSum = nullptr;
  float normEpsilon = 0.0f;
  // Warps that share an output column, each over a slice of K: 1, 2 or 4; 0 lets the kernel
  // choose from the shape (tests set it, to cover each).
  int slices = 0;
  // A programmatic dependent launch (compute capability 9.0 and newer; DeviceUtil.cuh): the
  // kernel starts loading its weights while the kernel before it in the stream finishes, and
  // waits for it before reading x. The executor sets it on Hopper unless told not to.
  bool overlapPrevious = false;
  // Blocks launched: 0, one per group of columns (kWarps / slices of them); n > 0, at most n;
  // -1, at most as many as the GPU holds at once (a persistent launch). A block takes groups
  // blockIdx.x, + gridDim.x, ...: fewer blocks stage the norm in front fewer times, and issue a
  // group's first weight loads before the previous group's reductions. Only for 16-bit weights
  // and M <= 2 (decode steps at batch 1 or 2); elsewhere a block per group whatever it says.
  // Tests set n > 0 to cover it; the executor sets -1 with LLMC_CUDA_GEMV_BLOCKS=resident (for
  // comparison, until measured).
  int64_t blocks = 0;
  // With a norm in front: each block prepares x for the norm once in shared memory (where M * K
  // fits) rather than each warp; false keeps it per warp (benchmarks compare the two).
  bool stageNorm = true;
  // With pieces > 0 the output goes to piece[0, pieces) (LinearPiece), whose columns add up to
  // N, rather than to `out`: no activation, gate or residual, and every piece of an even width
  // (a warp computes two columns of one piece, as two rows with SwiGLU; a rotated piece's pairs
  // are the rotation's).
  int pieces = 0;
  LinearPiece piece[kMaxLinearPieces];
};
bool smallLinearTakes(Storage s, const SmallLinearArgs &a);
std::string smallLinear(Storage s, const SmallLinearArgs &a, const std::string &activation, void *stream);
// The slices of K that smallLinear would run `a` with (a.slices, or its choice for this GPU);
// 0 where it does not take `a`.
int smallLinearSlices(Storage s, const SmallLinearArgs &a);

// One step of a chained launch (decodeChain): a linear of one row and bf16 storage
// (smallLinearChainTakes: smallLinear's arguments and `activation`), or with `attention` a decode
// attention (decodeAttentionChainTakes: decodeAttention's arguments, `splits` and `workspace`; its
// tiled kernel with 2, 3 or 4 query heads per key/value head; only as the first step, since it reads
// its inputs through the read-only path, which holds only what no one writes during the launch).
struct ChainStep {
  SmallLinearArgs linear;
  std::string activation = "none";
  bool attention = false;
  AttentionArgs attentionArgs = {};
  int splits = 0;
  void *workspace = nullptr;
};
// Up to kMaxChainSteps steps of bf16 storage one after another in one cooperative launch,
// each computed as smallLinear or decodeAttention computes it, a grid-wide barrier between two (a
// decode layer's attention, output projection, gate/up, down and the next layer's QKV
// projection: one launch where they take five). Each linear's first weight loads go out before
// the barrier it waits at. `blocks`: 0 for as many as the GPU holds at once, n > 0 at most n
// (tests). `barrier`: decodeChainBarrierBytes of device memory, zero before its first launch
// (each launch leaves it so), used by one launch at a time.
constexpr int kMaxChainSteps = 5;
// Lets the chained kernel use its shared memory (call it once, outside any graph capture, before
// decodeChain).
void decodeChainSetup();
size_t decodeChainBarrierBytes();
bool smallLinearChainTakes(Storage s, const SmallLinearArgs &a);
bool decodeAttentionChainTakes(Storage s, const AttentionArgs &a, int splits);
std::string decodeChain(Storage s, const ChainStep *steps, int count, int64_t blocks, void *barrier, void *stream);

// --- data movement and small ops (shape subgraphs, masks, caches) ----------------------------
// Element types are the plan's DType numbers (1 f32, 2 f16, 3 f64, 4 i64, 5 i32, 6 i8, 7 u8, 8 bool,
// 9 bf16).

constexpr int kMaxDims = 8;

// dst[dstBase + Σ i_d * dstStrides[d]] = src[srcBase + Σ i_d * srcStrides[d]] for every index of
// `dims` (element offsets; a source stride of 0 broadcasts): transpose, slice, concat, split and
// expand are each one or a few of these. With `dstShift` (device memory), the destination also
// moves by *dstShift * dstShiftStride: a cache's new rows placed after a past whose length the
// launch does not know (a graph replayed for every cache length; PlanShortcuts.h, InPlace).
struct StridedCopy {
  int rank = 0;
  int64_t dims[kMaxDims] = {}, src[kMaxDims] = {}, dst[kMaxDims] = {};
  int64_t srcBase = 0, dstBase = 0;
  const int64_t *dstShift = nullptr;
  int64_t dstShiftStride = 0;
  int elemBytes = 4;
};
std::string stridedCopy(const void *src, void *dst, const StridedCopy &c, void *stream);

// A slice whose starts the device computed: `values`, `count` int64 (int32 with `int32`), one per
// axis axes[i]. slicedCopy copies as stridedCopy does with `c` (the output's dims, the input's
// strides times the steps), its source moved by each start, wrapped when negative and clamped as
// ONNX Slice does (to [0, dim], or [0, dim - 1] with a negative step; dim = inDims[i]), times
// inStrides[i]. A slice that would read outside the input copies nothing and sets *error.
struct SliceStarts {
  const void *values = nullptr;
  bool int32 = false;
  int count = 0;
  int axes[kMaxDims] = {};
  int64_t inDims[kMaxDims] = {}, inStrides[kMaxDims] = {}, steps[kMaxDims] = {};
};
std::string slicedCopy(const void *src, void *dst, const StridedCopy &c, const SliceStarts &s, int *error,
                       void *stream);

// dst [n, cols, rows] = src [n, rows, cols] with each matrix transposed, elements of 2 or 4 bytes,
// through tiles of 32 x 32 in shared memory so that both the reads and the writes go along rows
// (a strided copy's would go across one of them): a convolution's GEMM rows to NCHW, a 1x1
// convolution's input to its GEMM's rows (PrepareConv.cpp). n at most 65535.
std::string transposeBatched(const void *src, void *dst, int64_t n, int64_t rows, int64_t cols, int elemBytes,
                             void *stream);

// ONNX Trilu: out = in with the elements outside the triangle of each matrix [rows, cols] (its
// last two dims) zero: kept where j - i >= k (`upper`) or j - i <= k. Elements of 1, 2, 4 or 8
// bytes, `count` of them. With kOnDevice, k is the int64 there (an input the device computed).
std::string trilu(const void *in, void *out, int64_t count, int64_t rows, int64_t cols, int64_t k, bool upper,
                  int elemBytes, void *stream, const int64_t *kOnDevice = nullptr);

// numpy's matmul of two activations (Matmul.cu): C [batch..., M, N] = A [..., M, K] x B [..., K, N],
// elements of DType number `type` (a float or an integer; f32 accumulation for f32, f16 and bf16),
// C's matrix z at z * M * N; batch[d] C's batch dims, aStride[d] and bStride[d] the element
// strides of A's and B's matrices along them (0 where that operand broadcasts).
// Tiles in shared memory, correct first: an attention left as matmuls, not the linears. A gemm
// (ONNX Gemm that no linear took) is one matrix: transposed operands through their row and
// column strides, C = alpha * A x B + beta * addend, the addend broadcast through its strides.
struct MatmulArgs {
  int batchRank = 0;
  int64_t batch[kMaxDims] = {}, aStride[kMaxDims] = {}, bStride[kMaxDims] = {};
  int64_t M = 0, N = 0, K = 0;
  // Element strides within a matrix: A's (row, k) at row * aRow + k * aCol, B's (k, col) at
  // k * bRow + col * bCol, the addend's (row, col) at row * addRow + col * addCol (matmulArgsOf and
  // gemmArgsOf set them; a default MatmulArgs has none).
  int64_t aRow = 0, aCol = 1, bRow = 0, bCol = 1, addRow = 0, addCol = 0;
  double alpha = 1.0, beta = 0.0;
};
std::string matmul(int type, const void *a, const void *b, void *c, const MatmulArgs &m, void *stream,
                   const void *addend = nullptr);
// The same product where A, B and C differ in type, each f32 or one 16-bit type (a reduced-
// precision plan's f32 scores from 16-bit queries and keys: DevicePrecision.h), no addend;
// mixedMatmulTakes says whether it takes those types.
bool mixedMatmulTakes(int aType, int bType, int cType);
std::string mixedMatmul(int aType, int bType, int cType, const void *a, const void *b, void *c, const MatmulArgs &m,
                        void *stream);
// A gemm's arguments: A [M, K] ([K, M] with transA), B [K, N] ([N, K] with transB), an addend
// (C) of rank 0 to 2 that broadcasts to [M, N], or why they do not fit.
std::string gemmArgsOf(const int64_t *aDims, const int64_t *bDims, bool transA, bool transB, int addRank,
                       const int64_t *addDims, MatmulArgs &m);
// A mixture of experts' projection (Matmul.cu; the op expert_linear): y [N, M] row n =
// w[ids[n]] · x[n / repeat], x [N / repeat, K], w [E, M, K]; with swiglu y [N, M / 2] =
// silu(first half) * second half; with a combine [N / group, group] (not null), y [N / group, .]
// row r = sum over j of combine[r * group + j] * row r * group + j; with `bias` [E, M] (not
// null), bias[ids[n]] added to row n's products before the activation. Elements of DType number
// `type` (f32, f16 or bf16; f32 accumulation); an id outside [-E, E) sets *error. A warp per
// output, every matrix row it needs (a group's ids, gate and up) read in one pass.
struct ExpertLinearArgs {
  int64_t N = 0, M = 0, K = 0, E = 0, repeat = 1, group = 1;
  bool swiglu = false;  // the rows' halves gated: silu(first) * second
  bool clamped = false; // with swiglu: clampedSwigluOf(first, second, alpha, limit, upOffset) instead (GPT-OSS)
  float alpha = 1.0f, limit = 0.0f, upOffset = 1.0f;
  const void *bias = nullptr;
};
// Why expert_linear's arguments are not whole (a bad repeat, group or gating), or empty.
std::string expertLinearArgsError(const ExpertLinearArgs &a, bool combined);
std::string expertLinear(int type, const void *x, const void *w, const int64_t *ids, const void *combine, void *y,
                         const ExpertLinearArgs &a, int *error, void *stream);
// expertLinear for many ids (a prompt's rows; GroupedExperts.cu), f16 and bf16 only: the ids
// grouped by the expert they pick, then each expert's rows times its matrix on tensor cores, 64
// rows by 64 outputs per block, so that a matrix is read once per 64 rows that pick it rather
// than once per row. `scratch` (device memory, `scratchBytes`) holds the grouping and, with a
// combine, the rows' f32 results until they are summed; where it cannot hold every id the ids go
// in chunks of whole groups (groupedExpertScratchBytes says what a chunk needs). Each result is
// the same whatever the order of the rows within an expert, so runs repeat bit for bit.
std::string groupedExpertLinear(int type, const void *x, const void *w, const int64_t *ids, const void *combine,
                                void *y, const ExpertLinearArgs &a, void *scratch, size_t scratchBytes, int *error,
                                void *stream);
// The scratch groupedExpertLinear needs to take `rows` ids at once, with a combine or none; the
// most ids (whole groups, at most a.N) that `bytes` of it take at once, 0 for none.
size_t groupedExpertScratchBytes(const ExpertLinearArgs &a, int64_t rows, bool combined);
int64_t groupedExpertRowsWithin(const ExpertLinearArgs &a, bool combined, size_t bytes);
// Whether groupedExpertLinear is the better of the two for these arguments: a 16-bit type, and
// ids enough that an expert's matrix tiles serve several rows on average (a prompt, not a
// decode step's few).
bool groupedExpertsPay(int type, const ExpertLinearArgs &a);
// The arguments of A [aDims] x B [bDims] as numpy broadcasts them (a rank-1 A is [1, K], a rank-1
// B [K, 1]; C's shape leaves those out), or why they do not multiply.
std::string matmulArgsOf(int aRank, const int64_t *aDims, int bRank, const int64_t *bDims, MatmulArgs &m);

// einsum of up to kMaxEinsumOperands operands of DType number `type` (a float, an integer
// or bool: dispatchNumeric; Einsum.cu), its loops as einsumLoops gives them (kernels/Einsum.h): labels [0, outLabels)
// are the output's (row-major), the rest summed (`summed` index tuples); strides[k * labels + l]
// operand k's element stride along label l. Every einsum of at most five operands fits (each of
// rank 8 at most, as every value of a plan: 40 labels, 200 pairs); llmc-split-einsum makes
// chains of two of einsums of more.
constexpr int kMaxEinsumOperands = 8, kMaxEinsumLabels = 64, kMaxEinsumStrides = 256;
struct EinsumArgs {
  int operands = 0, labels = 0, outLabels = 0;
  const void *in[kMaxEinsumOperands] = {};
  int64_t sizes[kMaxEinsumLabels] = {};
  int64_t strides[kMaxEinsumStrides] = {};
  int64_t outCount = 0, summed = 1;
};
// Whether an einsum of `operands` operands and `labels` labels fits EinsumArgs: "" or why not.
std::string einsumFits(int operands, int labels);
// EinsumArgs of `loops` (einsumLoops), the output's first `outLabels` labels, operands at `in`.
std::string einsumArgsOf(const EinsumLoops &loops, int outLabels, const std::vector<const void *> &in, EinsumArgs &a);
std::string einsum(int type, const EinsumArgs &a, void *out, void *stream);

// Up to kMaxCopies strided copies of one element size in one launch: the pieces of a split or a
// concat (piece i copies copy[i] from src[i] to dst[i]).
constexpr int kMaxCopies = 8;
struct StridedCopies {
  int count = 0;
  const void *src[kMaxCopies] = {};
  void *dst[kMaxCopies] = {};
  StridedCopy copy[kMaxCopies];
};
std::string stridedCopies(const StridedCopies &batch, void *stream);

// A split's pieces (`copies`, of the storage's element size) and one more piece rotated
// (`rotary`, reading its rows within the split's input through xRowStride) in one launch: a merged
// QKV projection's queries and values copied, its keys rotated into the cache. `overlapPrevious`:
// a programmatic dependent launch, as SmallLinearArgs::overlapPrevious.
std::string stridedCopiesAndRotary(Storage s, const StridedCopies &copies, const RotaryArgs &rotary, void *stream,
                                   bool overlapPrevious = false);

// One elementwise op of any element type with numpy broadcasting, computed in f64: the ops of
// shape subgraphs and masks (integer and bool ones included) that no fused region took.
// `op` from elementwiseOp() ("fmod" for a mod whose fmod attribute is 1); a cast's target is
// outType.
int elementwiseOp(const std::string &name); // -1 when not an elementwise op this kernel has
int elementwiseArity(int op);                // inputs it reads: 1, 2 (binary) or 3 (where)
struct ElementwiseArgs {
  int op = 0, numInputs = 0;
  const void *in[3] = {};
  int inType[3] = {};
  int64_t inStrides[3][kMaxDims] = {};
  void *out = nullptr;
  int outType = 1;
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  double alpha = 0, beta = 0; // elu's, leaky_relu's and hard_sigmoid's attributes
};
std::string elementwise(const ElementwiseArgs &a, void *stream);

// cumsum (ONNX CumSum) of x (dims) along an axis into y, elements of `type` (DType number: a float
// or an integer), with ONNX's `exclusive` and `reverse`. The axis is `axis`, or where `axisValue` is
// set, the scalar (int32 or int64) it points to on the device, negative from the back; one out of
// range raises `error` and writes nothing.
struct CumsumArgs {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int axis = 0;
  const void *axisValue = nullptr;
  bool axisInt32 = false;
  bool exclusive = false, reverse = false;
};
std::string cumsum(int type, const void *x, void *y, const CumsumArgs &a, int *error, void *stream);

// out[i] = start + i * delta for `count` elements of `type`, start and delta read on the device.
std::string range(int type, const void *start, const void *delta, void *out, int64_t count, void *stream);

// quantize_linear (`quantize`: out = saturate(round_half_even(x / scale) + zero)) or
// dequantize_linear (out = (x - zero) * scale) of n elements (Quantize.cu). Types are DType
// numbers; zero may be null. The scale element of element i: the only one (count 1), that of its
// index along the axis (x is [outer, dim, inner]; count == dim), or with block > 0 that of its
// block of `block` indices along it (count == outer * ceil(dim / block) * inner).
struct QuantArgs {
  const void *x = nullptr, *scale = nullptr, *zero = nullptr;
  void *out = nullptr;
  int xType = 0, scaleType = 0, zeroType = 0, outType = 0;
  int64_t n = 0, dim = 1, inner = 1, block = 0, count = 1;
};
std::string quantizeLinear(bool quantize, const QuantArgs &a, void *stream);

// out[i] = value for `count` elements of DType number `type` (constant_of_shape).
std::string fill(void *out, int type, double value, int64_t count, void *stream);

// Writes `count` int64 values known on the host when the launch is recorded (a Shape op's dims).
std::string writeInt64s(void *out, const int64_t *values, int count, void *stream);

// ONNX Gather along any axis of data [outer, dim, inner] (`elemBytes` elements), `count` indices of
// `indexBytes` (4 or 8: int32 or int64, negative from the end) into out [outer, count, inner]. An
// index out of range sets *error. (GatherScatter.cu; an embedding lookup takes gatherRows.)
std::string gatherAxis(const void *data, const void *indices, int indexBytes, void *out, int64_t outer, int64_t dim,
                       int64_t count, int64_t inner, int elemBytes, int *error, void *stream);

// gather_nd: `tuples` index tuples [..., k] into k dimensions of the data, each picking a slice
// of `slice` elements; `dims`/`strides` are those k dims and their element strides. With
// batch_dims, the tuples come in `batches` equal runs, run b into the data's elements from
// b * batchStride (the data's dims after its batch dims are the indexed ones). An index out of
// range sets *error.
// gather_elements (ONNX GatherElements): out has the indices' shape [rank dims], each element the
// data's at its coordinates with the `axis` one replaced by the index there (negative from the
// end); the indices' other dims at most the data's. An index out of range sets *error. Both take
// indices of `indexBytes` (8: int64, 4: int32).
// (GatherScatter.cu)
std::string gatherElements(const void *data, const void *indices, void *out, int rank, int axis,
                           const int64_t *indexDims, const int64_t *dataDims, int elemBytes, int *error, void *stream,
                           int indexBytes = 8);

std::string gatherNd(const void *data, const void *indices, void *out, int64_t tuples, int k, const int64_t *dims,
                     const int64_t *strides, int64_t slice, int elemBytes, int *error, void *stream,
                     int indexBytes = 8, int64_t batches = 1, int64_t batchStride = 0);

// The scatters (ONNX ScatterND and ScatterElements, GatherScatter.cu) into `out`, which holds a
// copy of the data already: gatherNd's and gatherElements's arguments, the updates in the
// indices' places. `dtype` is the elements' DType number; `reduction` ONNX's: "" or "none" (with
// duplicate indices one of the updates lands, which one unspecified, as ONNX leaves it), "add",
// "mul", "max" or "min" (atomic, so that duplicates all count; 16-bit floats compute in f32).
std::string scatterNd(void *out, const void *indices, const void *updates, int64_t tuples, int k,
                      const int64_t *dims, const int64_t *strides, int64_t slice, int dtype,
                      const std::string &reduction, int *error, void *stream, int indexBytes = 8);
std::string scatterElements(void *out, const void *indices, const void *updates, int rank, int axis,
                            const int64_t *indexDims, const int64_t *dataDims, int dtype,
                            const std::string &reduction, int *error, void *stream, int indexBytes = 8);

// --- reductions, convolution, pooling, padding ------------------------------------------------

// Reduces the input [dims] over the dimensions with reduced[d] into out (kept dims in order), of
// DType number `type` (floats: in f64; integers and bool: in int64, as the CPU kernel).
// kind: "sum", "mean", "max", "min", "l2", "sum_square", "prod".
std::string reduce(int type, const std::string &kind, const void *in, void *out, int rank, const int64_t *dims,
                   const bool *reduced, void *stream);

// group_norm, instance_norm and layer_norm_stats (GroupNorm.cu): x is `rows` groups of rowLen
// elements, each normalized by its own mean and variance (+ eps). With y: y = (x - mean) / std *
// scale[c] + bias[c], a group holding channelsPerGroup channels of `spatial` elements, group g of
// its image the channels from (row % groups) * channelsPerGroup on (instance_norm: a channel per
// group). Without: each group's mean and 1/std into mean[row] and invStd[row] (layer_norm_stats).
// Every operand of DType number `type` (a float: in f32, doubles in f64).
std::string groupNorm(int type, const void *x, void *y, const void *scale, const void *bias, void *mean,
                      void *invStd, int64_t rows, int64_t rowLen, int64_t groups, int64_t channelsPerGroup,
                      int64_t spatial, double eps, void *stream);

// batch_norm in inference: x [N, channels, inner...] (n elements) normalized by each channel's
// mean and var (+ eps), times its scale plus its bias; types as groupNorm's.
std::string batchNorm(int type, const void *x, void *y, const void *scale, const void *bias, const void *mean,
                      const void *var, int64_t n, int64_t channels, int64_t inner, double eps, void *stream);

// arg_max (`max`) or arg_min of in [outer, n, inner] along n: out [outer, inner] int64, ties to the
// first index, or to the last with `last` (select_last_index), as the CPU kernel compares; of DType
// number `type` (a float, an integer or bool: dispatchNumeric).
std::string argReduce(int type, bool max, const void *in, int64_t *out, int64_t outer, int64_t n, int64_t inner,
                      bool last, void *stream);

// top_k of x [outer, n, inner] along n: the k largest (smallest with !largest) elements of each
// line into values [outer, k, inner] and their positions into indices, sorted, equal values in
// index order (as the CPU's stable sort); a NaN counts as the largest value. Elements of DType
// number `type`: f32, f16, bf16 (compared as f32), f64, an integer or bool (compared exactly). (TopK.cu)
std::string topK(int type, const void *x, void *values, int64_t *indices, int64_t outer, int64_t n, int64_t inner,
                 int64_t k, bool largest, void *stream);

// softmax_top_k of logits [rows, n] in storage `s`: per row the k largest softmax probabilities,
// the largest first and equal ones by index (topK's order), into values [rows, k] (divided by
// their sum with `normalize`) and their indices [rows, k]; k at most kMaxSoftmaxTopK. (TopK.cu)
constexpr int64_t kMaxSoftmaxTopK = 8192;
std::string softmaxTopK(Storage s, const void *logits, void *values, int64_t *indices, int64_t rows, int64_t n,
                        int64_t k, bool normalize, void *stream);

// grouped_top_k (DeepSeek-V3's and ERNIE 4.5's routers, the op's semantics in FusedOps.td) of
// logits [rows, n] and a bias [n] in storage `s`, into weights [rows, k] and indices [rows, k];
// n + groups + k floats (and groups ints) of shared memory per block, at most
// kMaxGroupedTopKShared bytes. `normalize`: 0 none, 1 by sum + epsilon, 2 by max(sum, epsilon);
// `softmax`: softmax scores, else sigmoid. (TopK.cu)
struct GroupedTopKArgs {
  int64_t n = 0, k = 0, groups = 1, keptGroups = 1, top = 2, normalize = 0;
  float fill = 0.0f, epsilon = 0.0f, scale = 1.0f;
  bool softmax = false;
};
constexpr size_t kMaxGroupedTopKShared = 48 * 1024;
std::string groupedTopK(Storage s, const void *logits, const void *bias, void *weights, int64_t *indices, int64_t rows,
                        const GroupedTopKArgs &a, void *stream);

// The product of n dims (the elements of a window's plane, its taps, a shape's elements).
int64_t productOf(const int64_t *dims, int n);

// A convolution or pooling window over 1 to 3 spatial dimensions (NC + spatial layout).
struct Window {
  int spatial = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t padBegin[3] = {}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t padEnd[3] = {}; // (an average pool with count_include_pad counts the taps up to it)
};

// y [N, M, out...] = conv(x [N, C, in...], w [M, C / group, kernel...]) + bias [M] (nullable), all
// of DType number `type` (a float: in f32, doubles in f64).
std::string conv(int type, const void *x, const void *w, const void *bias, void *y, int64_t N, int64_t C, int64_t M,
                 int64_t group, const Window &win, void *stream);

// A convolution's input as the rows of a GEMM (im2col): col [N * P, C * K], P the output's
// spatial size and K the kernel's, row b * P + o holding image b's window at output position o,
// channel after channel, each channel's taps in the weight's order [M, C, kernel...]; 0 where a
// tap falls in the padding. A convolution of one group is then col times the weight [M, C * K]
// transposed (PrepareConv.cpp).
std::string im2col(Storage s, const void *x, void *col, int64_t N, int64_t C, const Window &win, void *stream);

// Max or average pooling per plane (planes = N * C) of elements of DType number `type` (a float
// or, for a max, an integer); padding taps are skipped, and counted in the average only with
// countPad. With `indices` (max_pool_with_indices): each maximum's place in x, flattened over the
// planes (its first tap where several hold it; -1 where every tap is padding; within a plane
// column-major with `columnMajor`, two spatial dimensions), as the CPU's.
std::string pool(int type, bool max, const void *x, void *y, int64_t planes, const Window &win, bool countPad,
                 void *stream, int64_t *indices = nullptr, bool columnMajor = false);

// Padding of elements of DType number `type` (a float, an integer or bool): in [inDims] lands in
// out [outDims] at padBegin; the rest is `value` (mode "constant", converted as a cast), the
// nearest edge ("edge"), the mirror image without the edge ("reflect") or the other end ("wrap").
std::string pad(int type, const std::string &mode, const void *in, void *out, int rank, const int64_t *inDims,
                const int64_t *outDims, const int64_t *padBegin, double value, void *stream);

// A latent attention's mask: [B, H, Sq, Sk] through `strides` (0 where it broadcasts), added in
// the storage type or keeping where non-zero (AttentionArgs::Mask); null data: none. `causal`
// hides the keys after i + Sk - Sq, Sk being the key count of the run; `rowPerBatch`: the mask
// is [B, 1, 1, Sk] and its batch stride that count (read on the device), not strides[0].
struct LatentMask {
  const void *data = nullptr;
  int64_t strides[4] = {};
  AttentionArgs::Mask type = AttentionArgs::Mask::Additive;
  bool causal = false, rowPerBatch = false;
  const void *sinks = nullptr; // a sink logit per head [H] (the storage type) joining each softmax, or null
};

// latent_attention (DeepSeek MLA, see the op): q [B, H, Sq, nope + rope] (or [.., latent + rope]
// without w_uk), cache [Sk, B, latent + rope], w_uk [H, nope, latent] and w_uv [H, latent, v]
// (either null when multiplied into a projection), the mask, out [B, H, Sq, v] (latent without
// w_uv). Absorbed form, a block per query row and group of 8, 4, 2 or 1 heads, the most that
// divide H (each step of 256 keys read once for the group; any Sk, its shared memory holds a
// step's scores), with `skOnDevice` the key count read there, Sk being its upper bound.
// latentAttentionSetup lets the kernel use kMaxLatentAttentionShared bytes (call it once, outside
// any graph capture: it sets a function attribute); without it, 48 KiB. latentAttentionFits: a
// head's latent row fits it (a width of some thousands would not).
// Where the groups' blocks are few (a decode step: DeepSeek-V3 at batch 1 has 16 per layer),
// `splits` > 1 shares each group's keys among that many blocks (whole steps of 256 keys each; with
// skOnDevice, of the count found there): each writes its partial result to `workspace` (the
// attention workspace, splitWorkspaceBytes's layout: latentAttentionWorkspaceBytes) and the last
// to arrive merges them; with W_UK, a launch before takes every row's query up to the latent space
// once, for all splits, and with W_UV, a launch after multiplies each row's merged output by it
// (a block per row, where the last block of a group would read its heads' W_UV alone).
// latentAttentionSplits picks `splits` for `sms` multiprocessors.
constexpr size_t kMaxLatentAttentionShared = 96 * 1024;
void latentAttentionSetup();
bool latentAttentionFits(int64_t latent, int64_t rope);
int latentAttentionSplits(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t latent, int64_t rope, int sms,
                          size_t workspaceBytes);
size_t latentAttentionWorkspaceBytes(int64_t B, int64_t H, int64_t Sq, int64_t latent, int64_t rope, int splits);
std::string latentAttention(Storage s, const void *q, const void *cache, const void *wuk, const void *wuv,
                            const LatentMask &mask, void *out, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                            int64_t nope, int64_t rope, int64_t latent, int64_t v, float scale,
                            const int64_t *skOnDevice, int splits, void *workspace, void *stream);

// Greedy decoding: out[b] = the index of the largest of the V values in row (b, rows - 1) of x
// [B, rows, V] (the first of equal ones; NaN counts as -inf), as the CPU's std::max_element.
// Several blocks share a row; `workspace` (argmaxWorkspaceBytes(B), zeroed before its first use
// and left so) holds their running best and arrival counts.
size_t argmaxWorkspaceBytes(int64_t B);
std::string argmaxLastRows(Storage s, const void *x, int64_t B, int64_t rows, int64_t V, int32_t *out,
                           void *workspace, void *stream);

// count floats from one storage type to another (the inputs and outputs of a reduced-precision
// plan cross the API as f32).
std::string convertFloats(Storage from, const void *in, Storage to, void *out, int64_t count, void *stream);

} // namespace llmc::rt::cuda
