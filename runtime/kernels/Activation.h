// The activations a linear op applies after its product (its `activation` attribute), named as
// the compiler writes them; the CPU kernel and the CUDA epilogue both read the name here.
#pragma once

#include <string_view>

namespace llmc::rt {

enum class Activation { None, Relu, Silu, Gelu, GeluTanh };

// "", "none" and "swiglu" (whose gating the caller does) are None; false for an unknown name.
inline bool parseActivation(std::string_view name, Activation &out) {
  if (name.empty() || name == "none" || name == "swiglu")
    out = Activation::None;
  else if (name == "relu")
    out = Activation::Relu;
  else if (name == "silu")
    out = Activation::Silu;
  else if (name == "gelu")
    out = Activation::Gelu;
  else if (name == "gelu_tanh")
    out = Activation::GeluTanh;
  else
    return false;
  return true;
}

// expert_linear's gating of its rows' two halves (its `activation`, `alpha`, `limit` and
// `up_offset` attributes): none; "swiglu", silu(first) * second; or GPT-OSS's "clamped_swiglu"
// (clampedSwigluOf), which needs a limit above 0. False for anything else.
struct ExpertGating {
  bool halves = false, clamped = false;
  float alpha = 1.0f, limit = 0.0f, upOffset = 1.0f;
};
inline constexpr const char *kExpertGatings = "\"none\", \"swiglu\" or \"clamped_swiglu\" (with a limit above 0)";
inline bool parseExpertGating(std::string_view name, double alpha, double limit, double upOffset, ExpertGating &out) {
  out.clamped = name == "clamped_swiglu";
  out.halves = name == "swiglu" || out.clamped;
  out.alpha = float(alpha), out.limit = float(limit), out.upOffset = float(upOffset);
  return (out.halves || name.empty() || name == "none") && (!out.clamped || out.limit > 0);
}

} // namespace llmc::rt
