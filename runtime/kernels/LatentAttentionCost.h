// The cost model of multi-head latent attention (DeepSeek MLA), shared by the compiler's
// llmc-absorb-mla (which prints it) and the latent_attention kernel (which picks its form per
// call with it). Multiply-adds per head for Sq queries against Sk cached tokens.
#pragma once

#include <cstdint>

namespace llmc::rt::mla {

struct Dims {
  int64_t nope, rope, latent, v; // per-head widths and the latent's
};

// The query moved into the latent space (q_nope · W_UK), scores and weighted sum over the
// latent cache, then W_UV: nothing per cached token but the latent itself.
inline int64_t absorbedMacs(const Dims &d, int64_t Sq, int64_t Sk) {
  return Sq * d.nope * d.latent + Sq * Sk * (d.latent + d.rope) + Sq * Sk * d.latent + Sq * d.latent * d.v;
}

// Keys and values of every cached token expanded from the latent, then ordinary attention.
inline int64_t expandedMacs(const Dims &d, int64_t Sq, int64_t Sk) {
  return Sk * d.latent * (d.nope + d.v) + Sq * Sk * (d.nope + d.rope) + Sq * Sk * d.v;
}

// Attention over keys and values cached expanded (no latent): what the export computes.
inline int64_t uncompressedMacs(const Dims &d, int64_t Sq, int64_t Sk) {
  return Sq * Sk * (d.nope + d.rope) + Sq * Sk * d.v;
}

inline bool expandIsCheaper(const Dims &d, int64_t Sq, int64_t Sk) {
  return expandedMacs(d, Sq, Sk) < absorbedMacs(d, Sq, Sk);
}

} // namespace llmc::rt::mla
