// latent_attention: multi-head latent attention over a length-major cache of latents and rotary
// keys (see the op in FusedOps.td). Per head it runs absorbed or expanded, whichever the cost
// model (LatentAttentionCost.h) says is cheaper for this call: decode steps absorb, long prompts
// expand the cache once per head. Float32 (f16 through withHalf).
#include "AttentionRows.h"
#include "KernelUtil.h"
#include "LatentAttentionCost.h"

#include <cstring>
#include <vector>

namespace llmc::rt {
namespace {

std::string latentAttentionKernel(const KernelArgs &args) {
  if ((args.numInputs != 5 && args.numInputs != 6) || args.numOutputs != 1)
    return "expects 5 or 6 inputs (q, cache, w_uk, w_uv, mask[, sinks]) and 1 output";
  const TensorRef &q = args.in(0), &cache = args.in(1), &wuk = args.in(2), &wuv = args.in(3);
  for (int i = 0; i < 4; ++i)
    if (args.in(i).dtype != DType::F32)
      return "expects f32 q, cache and weights";
  // A factor multiplied into its projection is absent: q already in the latent space, or the
  // result left there.
  const bool hasUk = wuk.numel() > 0, hasUv = wuv.numel() > 0;
  if (q.shape.rank != 4 || cache.shape.rank != 3 || (hasUk && wuk.shape.rank != 3) || (hasUv && wuv.shape.rank != 3))
    return "expects q [B, H, Sq, nope + rope], cache [Sk, B, latent + rope], w_uk [H, nope, latent] or empty, "
           "w_uv [H, latent, v] or empty";
  const int64_t B = q.shape.dims[0], H = q.shape.dims[1], Sq = q.shape.dims[2], Sk = cache.shape.dims[0];
  mla::Dims d;
  d.rope = args.attrs.getInt("rope_dim", -1);
  d.latent = cache.shape.dims[2] - d.rope;
  d.nope = hasUk ? wuk.shape.dims[1] : 0;
  d.v = hasUv ? wuv.shape.dims[2] : d.latent;
  if (d.rope < 0 || d.latent <= 0 || cache.shape.dims[1] != B || q.shape.dims[3] != (hasUk ? d.nope : d.latent) + d.rope ||
      (hasUk && (wuk.shape.dims[0] != H || wuk.shape.dims[2] != d.latent)) ||
      (hasUv && (wuv.shape.dims[0] != H || wuv.shape.dims[1] != d.latent)))
    return "q, cache and weight shapes do not agree";
  // A sink logit per head joins each row's softmax (fused_attention's sinks).
  const float *sinks = args.numInputs > 5 && args.in(5).numel() > 0 ? args.in(5).as<const float>() : nullptr;
  if (sinks && (args.in(5).dtype != DType::F32 || args.in(5).numel() != H))
    return "expects sinks of f32 [H]";
  auto sinkOf = [&](int64_t h) { return sinks ? sinks + h : nullptr; };
  TensorRef &out = args.out(0);
  if (out.shape.rank != 4 || out.numel() != B * H * Sq * d.v)
    return "output must be [B, H, Sq, v] (latent without w_uv)";
  ScoreMask mask;
  if (std::string err = mask.init(args.in(4).numel() ? &args.in(4) : nullptr, B, H, Sq, Sk); !err.empty())
    return err;
  const float scale = float(args.attrs.getFloat("scale", 0.0));
  const bool causal = args.attrs.getInt("is_causal", 0) != 0;
  const int64_t width = d.latent + d.rope, qWidth = q.shape.dims[3], cacheRow = B * width;
  const bool expand = hasUk && hasUv && mla::expandIsCheaper(d, Sq, Sk);
  const float *uk = wuk.as<const float>(), *uv = wuv.as<const float>();
  if (expand) { // per head: keys and values rebuilt from the cache, then plain attention
    std::vector<float> scores(size_t(Sq * Sk)), keys(size_t(Sk * qWidth)), values(size_t(Sk * d.v));
    for (int64_t b = 0; b < B; ++b) {
      const float *c = cache.as<const float>() + b * width; // row t at c + t * cacheRow
      for (int64_t h = 0; h < H; ++h) {
        const float *qh = q.as<const float>() + (b * H + h) * Sq * qWidth;
        float *oh = out.as<float>() + (b * H + h) * Sq * d.v;
        // keys = [latent · w_uk[h]ᵀ, rope key], values = latent · w_uv[h]
        gemmF32(false, true, Sk, d.nope, d.latent, 1.0f, c, cacheRow, uk + h * d.nope * d.latent, d.latent, 0.0f,
                keys.data(), qWidth);
        for (int64_t t = 0; t < Sk; ++t)
          std::memcpy(keys.data() + t * qWidth + d.nope, c + t * cacheRow + d.latent, size_t(d.rope) * sizeof(float));
        gemmF32(false, false, Sk, d.v, d.latent, 1.0f, c, cacheRow, uv + h * d.latent * d.v, d.v, 0.0f, values.data(), d.v);
        gemmF32(false, true, Sq, Sk, qWidth, scale, qh, qWidth, keys.data(), qWidth, 0.0f, scores.data(), Sk);
        maskedSoftmaxRows(scores.data(), Sq, Sk, mask, b, h, causal, 0, 0, sinkOf(h));
        gemmF32(false, false, Sq, d.v, Sk, 1.0f, scores.data(), Sk, values.data(), d.v, 0.0f, oh, d.v);
      }
    }
    return {};
  }
  // Absorbed: every head reads the same latent cache, so the heads' latent-space queries stack
  // into one [H * Sq, latent + rope] matrix and scores and weighted sums are one GEMM each.
  std::vector<float> scores(size_t(H * Sq * Sk)), qLatent(hasUk ? size_t(H * Sq * width) : 0),
      oLatent(hasUv ? size_t(H * Sq * d.latent) : 0);
  for (int64_t b = 0; b < B; ++b) {
    const float *c = cache.as<const float>() + b * width;
    const float *qb = q.as<const float>() + b * H * Sq * qWidth;
    const float *qa = qb; // without w_uk, q already is [H * Sq, latent + rope]
    if (hasUk) {
      for (int64_t h = 0; h < H; ++h) {
        const float *qh = qb + h * Sq * qWidth;
        float *qlh = qLatent.data() + h * Sq * width;
        gemmF32(false, false, Sq, d.latent, d.nope, 1.0f, qh, qWidth, uk + h * d.nope * d.latent, d.latent, 0.0f, qlh,
                width);
        for (int64_t i = 0; i < Sq; ++i)
          std::memcpy(qlh + i * width + d.latent, qh + i * qWidth + d.nope, size_t(d.rope) * sizeof(float));
      }
      qa = qLatent.data();
    }
    gemmF32(false, true, H * Sq, Sk, width, scale, qa, width, c, cacheRow, 0.0f, scores.data(), Sk);
    for (int64_t h = 0; h < H; ++h)
      maskedSoftmaxRows(scores.data() + h * Sq * Sk, Sq, Sk, mask, b, h, causal, 0, 0, sinkOf(h));
    float *ob = out.as<float>() + b * H * Sq * d.v;
    float *ol = hasUv ? oLatent.data() : ob; // without w_uv the result is the latent-space output
    gemmF32(false, false, H * Sq, d.latent, Sk, 1.0f, scores.data(), Sk, c, cacheRow, 0.0f, ol, d.latent);
    if (hasUv)
      for (int64_t h = 0; h < H; ++h)
        gemmF32(false, false, Sq, d.v, d.latent, 1.0f, ol + h * Sq * d.latent, d.latent, uv + h * d.latent * d.v, d.v,
                0.0f, ob + h * Sq * d.v, d.v);
  }
  return {};
}

} // namespace

extern const KernelEntry kLatentAttentionKernels[] = {
    {"latent_attention", withHalf<latentAttentionKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt
