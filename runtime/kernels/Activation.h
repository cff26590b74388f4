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

} // namespace llmc::rt
