// ONNX Attention in full (CudaKernels.h, onnxAttention): the present keys and values as strided
// copies, then a block per query row that computes the row's scores, their bias, the softmax and
// the weighted sum (attendRow: the keys a chunk at a time), as the CPU's `attention` kernel does.
// Correct first: the fused attention kernels take what llmc-raise-attention recognizes, this one
// the rest.
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace llmc::rt::cuda {
namespace {

// The bias of key j for query i (of batch b, head h): the mask's value, or -inf where a key is
// hidden (past the mask, after the causal frontier, outside the window, past the valid keys).
template <typename T>
__device__ Wide<T> biasOf(const OnnxAttentionArgs &a, int64_t b, int64_t h, int64_t i, int64_t j, int64_t offset,
                          int64_t valid) {
  using Acc = Wide<T>;
  Acc bias = 0;
  if (a.mask)
    bias = j >= a.maskKeys ? Acc(-INFINITY)
                           : maskedBy<T>(a.mask, a.maskType, Acc(0),
                                         b * a.maskStrides[0] + h * a.maskStrides[1] + i * a.maskStrides[2] +
                                             j * a.maskStrides[3]);
  const int64_t at = i + offset; // the query's position among the keys
  if ((a.causal && j > at) || (a.leftWindow >= 0 && at - j > a.leftWindow) ||
      (a.rightWindow >= 0 && j - at > a.rightWindow) || j >= valid)
    bias = -INFINITY;
  return bias;
}

// Computed in Wide<T>: f32, or f64 for doubles (the query row, the scores and the sums in shared
// memory as such).
template <typename T> __global__ void onnxAttentionKernel(OnnxAttentionArgs a) {
  using Acc = Wide<T>;
  extern __shared__ __align__(8) unsigned char onnxAttentionShared[];
  Acc *smem = reinterpret_cast<Acc *>(onnxAttentionShared); // the query row (D), a chunk of scores, sums (Dv)
  const int64_t keys = a.past + a.Skv;
  Acc *qrow = smem, *chunk = smem + a.D, *acc = chunk + (keys < kAttendChunk ? keys : kAttendChunk);
  const int64_t row = blockIdx.x, i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
  const int64_t kvh = h / (a.Hq / a.Hkv);
  const T *q = static_cast<const T *>(a.q) + b * a.qs.batch + i * a.qs.token + h * a.qs.head;
  for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
    qrow[d] = widen(q[d]);
  __syncthreads();
  const int64_t valid = !a.nonpad    ? keys
                        : a.nonpad32 ? static_cast<const int32_t *>(a.nonpad)[b]
                                     : static_cast<const int64_t *>(a.nonpad)[b];
  const int64_t offset = a.pastK ? a.past : a.nonpad ? valid - a.Sq : 0;
  const T *kb = static_cast<const T *>(a.presentK) + (b * a.Hkv + kvh) * keys * a.D;
  const T *vb = static_cast<const T *>(a.presentV) + (b * a.Hkv + kvh) * keys * a.Dv;
  T *scores = a.scores ? static_cast<T *>(a.scores) + row * keys : nullptr; // row: (b, h, i)
  const Acc scale = Acc(a.scale), softcap = Acc(a.softcap);
  auto scaled = [&](int64_t j) { // times scale, softcapped
    Acc s = 0;
    for (int64_t d = 0; d < a.D; ++d)
      s += qrow[d] * widen(kb[j * a.D + d]);
    s *= scale;
    return softcap > Acc(0) ? softcap * tanhOf(s / softcap) : s;
  };
  // Mode 3's probabilities need each score again once the max and sum are known: kept in the
  // scores' row where T holds them exactly (f32, f64), computed again where it would round them.
  constexpr bool kKeepScores = sizeof(T) == sizeof(Acc);
  auto score = [&](int64_t j) { // with the bias, and the scores of modes 0 to 2 (or 3's, kept) written
    const Acc s = scaled(j), bias = biasOf<T>(a, b, h, i, j, offset, valid);
    if (scores && (a.scoresMode != 3 || kKeepScores))
      scores[j] = narrow<T>(a.scoresMode == 2 || a.scoresMode == 3 ? s + bias : s);
    return s + bias;
  };
  auto value = [&](int64_t j, int64_t dv) { return widen(vb[j * a.Dv + dv]); };
  Acc best;
  const Acc total = attendRow(keys, a.Dv, chunk, acc, &best, score, value);
  const Acc inv = total > Acc(0) ? Acc(1) / total : Acc(0); // a fully masked row attends to nothing
  if (scores && a.scoresMode == 3) // the probabilities, now that the max and sum are known
    // (attendRow's barriers have made every thread's kept scores visible to the block)
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
      const Acc s = kKeepScores ? widen(scores[j]) : scaled(j) + biasOf<T>(a, b, h, i, j, offset, valid);
      scores[j] = narrow<T>(total > Acc(0) ? fastExpOf(s - best) * inv : Acc(0));
    }
  T *out = static_cast<T *>(a.out) + b * a.outs.batch + i * a.outs.token + h * a.outs.head;
  for (int64_t dv = threadIdx.x; dv < a.Dv; dv += blockDim.x)
    out[dv] = narrow<T>(acc[dv] * inv);
}

// One piece of the present keys or values [B, Hkv, keys, width]: `count` rows from `first` on,
// read from `src` through `from` (element (b, h, t, d) at b * batch + t * token + h * head + d).
void presentPiece(StridedCopies &c, const void *src, HeadStrides from, void *present, int64_t B, int64_t H,
                  int64_t keys, int64_t first, int64_t count, int64_t width, int elemBytes) {
  if (count == 0)
    return;
  StridedCopy &piece = c.copy[c.count];
  c.src[c.count] = src, c.dst[c.count] = present, ++c.count;
  piece.rank = 4, piece.elemBytes = elemBytes;
  const int64_t dims[4] = {B, H, count, width}, srcStrides[4] = {from.batch, from.head, from.token, 1},
                dstStrides[4] = {H * keys * width, keys * width, width, 1};
  for (int d = 0; d < 4; ++d)
    piece.dims[d] = dims[d], piece.src[d] = srcStrides[d], piece.dst[d] = dstStrides[d];
  piece.dstBase = first * width;
}

} // namespace

std::string onnxAttention(int type, const OnnxAttentionArgs &a, void *stream) {
  const int64_t keys = a.past + a.Skv;
  if (a.B <= 0 || a.Sq <= 0 || a.Hq <= 0 || a.Hkv <= 0 || a.Hq % a.Hkv || a.D <= 0 || a.Dv <= 0 || a.past < 0 ||
      a.Skv < 0 || keys < 1 || a.D > kMaxRowCols || a.Dv > kMaxRowCols || (a.past > 0 && (!a.pastK || !a.pastV)))
    return "onnxAttention: bad shapes (Hq a multiple of Hkv, past + Skv >= 1, head sizes at most " +
           std::to_string(kMaxRowCols) + ", past keys and values where past > 0)";
  if (a.scoresMode < 0 || a.scoresMode > 3)
    return "onnxAttention: scoresMode must be 0 to 3";
  int elem = 0;
  if (!dispatchFloat(type, [&](auto tag) { elem = int(sizeof(tag)); }))
    return "onnxAttention: supports float elements";
  StridedCopies present;
  const HeadStrides pastKs{a.Hkv * a.past * a.D, a.D, a.past * a.D}, pastVs{a.Hkv * a.past * a.Dv, a.Dv, a.past * a.Dv};
  presentPiece(present, a.pastK, pastKs, a.presentK, a.B, a.Hkv, keys, 0, a.past, a.D, elem);
  presentPiece(present, a.k, a.ks, a.presentK, a.B, a.Hkv, keys, a.past, a.Skv, a.D, elem);
  presentPiece(present, a.pastV, pastVs, a.presentV, a.B, a.Hkv, keys, 0, a.past, a.Dv, elem);
  presentPiece(present, a.v, a.vs, a.presentV, a.B, a.Hkv, keys, a.past, a.Skv, a.Dv, elem);
  if (std::string err = stridedCopies(present, stream); !err.empty())
    return err;
  dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const size_t shared = size_t(a.D + std::min(keys, kAttendChunk) + a.Dv) * sizeof(Wide<T>);
    allowDynamicShared(onnxAttentionKernel<T>, shared);
    onnxAttentionKernel<T><<<unsigned(a.B * a.Hq * a.Sq), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(a);
  });
  return launched("onnxAttention");
}

} // namespace llmc::rt::cuda
