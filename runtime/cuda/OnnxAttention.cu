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
__device__ float biasOf(const OnnxAttentionArgs &a, int64_t b, int64_t h, int64_t i, int64_t j, int64_t offset,
                        int64_t valid) {
  float bias = 0.0f;
  if (a.mask)
    bias = j >= a.maskKeys ? -INFINITY
                           : maskedBy<T>(a.mask, a.maskType, 0.0f,
                                         b * a.maskStrides[0] + h * a.maskStrides[1] + i * a.maskStrides[2] +
                                             j * a.maskStrides[3]);
  const int64_t at = i + offset; // the query's position among the keys
  if ((a.causal && j > at) || (a.leftWindow >= 0 && at - j > a.leftWindow) ||
      (a.rightWindow >= 0 && j - at > a.rightWindow) || j >= valid)
    bias = -INFINITY;
  return bias;
}

template <typename T> __global__ void onnxAttentionKernel(OnnxAttentionArgs a) {
  extern __shared__ float smem[]; // the query row (D), a chunk of scores, the weighted sums (Dv)
  const int64_t keys = a.past + a.Skv;
  float *qrow = smem, *chunk = smem + a.D, *acc = chunk + (keys < kAttendChunk ? keys : kAttendChunk);
  const int64_t row = blockIdx.x, i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
  const int64_t kvh = h / (a.Hq / a.Hkv);
  const T *q = static_cast<const T *>(a.q) + b * a.qs.batch + i * a.qs.token + h * a.qs.head;
  for (int64_t d = threadIdx.x; d < a.D; d += blockDim.x)
    qrow[d] = toF(q[d]);
  __syncthreads();
  const int64_t valid = !a.nonpad    ? keys
                        : a.nonpad32 ? static_cast<const int32_t *>(a.nonpad)[b]
                                     : static_cast<const int64_t *>(a.nonpad)[b];
  const int64_t offset = a.pastK ? a.past : a.nonpad ? valid - a.Sq : 0;
  const T *kb = static_cast<const T *>(a.presentK) + (b * a.Hkv + kvh) * keys * a.D;
  const T *vb = static_cast<const T *>(a.presentV) + (b * a.Hkv + kvh) * keys * a.Dv;
  T *scores = a.scores ? static_cast<T *>(a.scores) + row * keys : nullptr; // row: (b, h, i)
  auto scaled = [&](int64_t j) { // times scale, softcapped
    float s = 0.0f;
    for (int64_t d = 0; d < a.D; ++d)
      s += qrow[d] * toF(kb[j * a.D + d]);
    s *= a.scale;
    return a.softcap > 0.0f ? a.softcap * tanhf(s / a.softcap) : s;
  };
  auto score = [&](int64_t j) { // with the bias, and the scores of modes 0 to 2 written
    const float s = scaled(j), bias = biasOf<T>(a, b, h, i, j, offset, valid);
    if (scores && a.scoresMode != 3)
      scores[j] = fromF<T>(a.scoresMode == 2 ? s + bias : s);
    return s + bias;
  };
  auto value = [&](int64_t j, int64_t dv) { return toF(vb[j * a.Dv + dv]); };
  float best;
  const float total = attendRow(keys, a.Dv, chunk, acc, &best, score, value);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f; // a fully masked row attends to nothing
  if (scores && a.scoresMode == 3) // the probabilities: the scores again, now that the max and sum are known
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
      const float s = scaled(j) + biasOf<T>(a, b, h, i, j, offset, valid);
      scores[j] = fromF<T>(total > 0.0f ? __expf(s - best) * inv : 0.0f);
    }
  T *out = static_cast<T *>(a.out) + b * a.outs.batch + i * a.outs.token + h * a.outs.head;
  for (int64_t dv = threadIdx.x; dv < a.Dv; dv += blockDim.x)
    out[dv] = fromF<T>(acc[dv] * inv);
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

std::string onnxAttention(Storage s, const OnnxAttentionArgs &a, void *stream) {
  const int64_t keys = a.past + a.Skv;
  if (a.B <= 0 || a.Sq <= 0 || a.Hq <= 0 || a.Hkv <= 0 || a.Hq % a.Hkv || a.D <= 0 || a.Dv <= 0 || a.past < 0 ||
      a.Skv < 0 || keys < 1 || a.D > kMaxRowCols || a.Dv > kMaxRowCols || (a.past > 0 && (!a.pastK || !a.pastV)))
    return "onnxAttention: bad shapes (Hq a multiple of Hkv, past + Skv >= 1, head sizes at most " +
           std::to_string(kMaxRowCols) + ", past keys and values where past > 0)";
  if (a.scoresMode < 0 || a.scoresMode > 3)
    return "onnxAttention: scoresMode must be 0 to 3";
  const int elem = int(storageBytes(s));
  StridedCopies present;
  const HeadStrides pastKs{a.Hkv * a.past * a.D, a.D, a.past * a.D}, pastVs{a.Hkv * a.past * a.Dv, a.Dv, a.past * a.Dv};
  presentPiece(present, a.pastK, pastKs, a.presentK, a.B, a.Hkv, keys, 0, a.past, a.D, elem);
  presentPiece(present, a.k, a.ks, a.presentK, a.B, a.Hkv, keys, a.past, a.Skv, a.D, elem);
  presentPiece(present, a.pastV, pastVs, a.presentV, a.B, a.Hkv, keys, 0, a.past, a.Dv, elem);
  presentPiece(present, a.v, a.vs, a.presentV, a.B, a.Hkv, keys, a.past, a.Skv, a.Dv, elem);
  if (std::string err = stridedCopies(present, stream); !err.empty())
    return err;
  const size_t shared = size_t(a.D + std::min(keys, kAttendChunk) + a.Dv) * sizeof(float);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    allowDynamicShared(onnxAttentionKernel<T>, shared);
    onnxAttentionKernel<T><<<unsigned(a.B * a.Hq * a.Sq), kRowThreads, shared, static_cast<cudaStream_t>(stream)>>>(a);
  });
  return launched("onnxAttention");
}

} // namespace llmc::rt::cuda
