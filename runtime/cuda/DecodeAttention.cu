// Decode attention's launches (CudaKernels.h: decodeAttention); its kernels and what they do are
// in DecodeAttentionDevice.cuh.
#include "DecodeAttentionDevice.cuh"

#include <algorithm>
#include <cstdint>

namespace llmc::rt::cuda {

// About 64 keys per block, so that each block's chains of dependent loads stay short and a head's
// keys spread over many SMs (a decode step waits on latency: a few heads, one query each); at most
// 128 blocks per head until the chunk reaches kMaxDecodeChunk.
int decodeAttentionSplits(int64_t T) {
  const int64_t chunk = std::clamp<int64_t>((T + 127) / 128, kMinDecodeChunk, kMaxDecodeChunk);
  return int(std::max<int64_t>(1, (T + chunk - 1) / chunk));
}

size_t decodeAttentionWorkspaceBytes(int64_t B, int64_t Hq, int64_t Dv, int splits) {
  return splitWorkspaceBytes(size_t(B * Hq) * size_t(splits) * size_t(Dv + 2));
}

std::string decodeAttention(Storage s, const AttentionArgs &a, int splits, void *workspace, void *stream) {
  if (splits <= 0)
    splits = decodeAttentionSplits(decodeKeysSeen(a));
  if (!decodeAttentionFits(a, splits))
    return "decodeAttention: needs one query, Hq a multiple of Hkv, keys, D <= " + std::to_string(kMaxDecodeHeadDim) +
           " (even with rotary), no key rotation, at most " + std::to_string(kMaxDecodeChunk) +
           " keys per split and splits, and " + std::to_string(kSplitCounters) + " sequences x heads";
  unsigned *arrived = splitCounters(workspace);
  float *partials = splitPartials(workspace);
  auto st = static_cast<cudaStream_t>(stream);
  const int pieces = a.plainDecode ? 0 : tiledPieces(s, a), group = tiledGroup(a, pieces);
  const dim3 grid(unsigned(a.B * a.Hq / group), unsigned(splits)), block(kDecodeThreads);
  dispatch(s, [&](auto tag) {
    using T = decltype(tag);
    if (!pieces)
      launchKernel(a.overlapPrevious, decodeAttentionKernel<T>, grid, block, 0, st, a, partials, arrived);
    else if (group == 4)
      launchKernel(a.overlapPrevious, decodeAttentionTiledKernel<T, 4>, grid, block, 0, st, a, partials, arrived, pieces);
    else if (group == 3)
      launchKernel(a.overlapPrevious, decodeAttentionTiledKernel<T, 3>, grid, block, 0, st, a, partials, arrived, pieces);
    else if (group == 2)
      launchKernel(a.overlapPrevious, decodeAttentionTiledKernel<T, 2>, grid, block, 0, st, a, partials, arrived, pieces);
    else
      launchKernel(a.overlapPrevious, decodeAttentionTiledKernel<T, 1>, grid, block, 0, st, a, partials, arrived, pieces);
  });
  return launched("decodeAttention");
}

} // namespace llmc::rt::cuda
