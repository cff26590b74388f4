// Each raising/fusion pass runs alone under llmc-opt (the ONNX-level tests in test/Fusion check
// more variants and the numerics).
// RUN: %llmc-opt %s -split-input-file -llmc-raise-norms | FileCheck %s --check-prefix=NORMS
// RUN: %llmc-opt %s -split-input-file -llmc-raise-activations | FileCheck %s --check-prefix=ACT
// RUN: %llmc-opt %s -split-input-file -llmc-fuse-residual-norm | FileCheck %s --check-prefix=RES
// RUN: %llmc-opt %s -split-input-file -llmc-fuse-linear | FileCheck %s --check-prefix=LIN
// RUN: %llmc-opt %s -split-input-file -llmc-fuse-elementwise | FileCheck %s --check-prefix=EW
// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s --check-prefix=ATT

// NORMS-LABEL: func.func @rms
// NORMS: llmc.rms_norm %arg0
// ACT-LABEL: func.func @rms
// ACT-NOT: llmc.gelu
func.func @rms(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0e-6> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = llmc.reduce_mean %sq {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %a = llmc.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = llmc.sqrt %a : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %y = llmc.div %x, %s : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// A mean over the first axis is not an RMSNorm over the last.
// NORMS-LABEL: func.func @rms_other_axis
// NORMS-NOT: llmc.rms_norm
func.func @rms_other_axis(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0e-6> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = llmc.reduce_mean %sq {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %a = llmc.add %m, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %s = llmc.sqrt %a : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %y = llmc.div %x, %s : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Gemma 4's form (since session 36): x * pow(mean(x^2) + eps, -0.5), the product in either order,
// times its weight.
// NORMS-LABEL: func.func @rms_pow
// NORMS: %[[W:.*]] = llmc.constant dense<2.500000e-01> : tensor<8xf32>
// NORMS: llmc.rms_norm %arg0, %[[W]] {epsilon = 9.99999997E-7 : f32}
// NORMS: llmc.rms_norm %arg0, %{{.*}} {epsilon = 9.99999997E-7 : f32}
// NORMS-NOT: llmc.pow
// NORMS-NOT: llmc.mul
func.func @rms_pow(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %w = llmc.constant dense<0.25> : tensor<8xf32>
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0e-6> : tensor<f32>
  %half = llmc.constant dense<-0.5> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = llmc.reduce_mean %sq {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %a = llmc.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = llmc.pow %a, %half : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %n = llmc.mul %x, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = llmc.mul %n, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %sq2 = llmc.mul %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m2 = llmc.reduce_mean %sq2 {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %a2 = llmc.add %eps, %m2 : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %r2 = llmc.pow %a2, %half : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %z = llmc.mul %r2, %x : (tensor<2x1xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %z : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Another power is not a root: x * pow(mean(x^2) + eps, -1) stays.
// NORMS-LABEL: func.func @rms_pow_other_exponent
// NORMS-NOT: llmc.rms_norm
func.func @rms_pow_other_exponent(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0e-6> : tensor<f32>
  %minus1 = llmc.constant dense<-1.0> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = llmc.reduce_mean %sq {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %a = llmc.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = llmc.pow %a, %minus1 : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %y = llmc.mul %x, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// NORMS-LABEL: func.func @silu
// ACT-LABEL: func.func @silu
// ACT: llmc.silu %arg0
// ACT-NOT: llmc.sigmoid
func.func @silu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = llmc.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = llmc.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The sigmoid has another use: no SiLU.
// ACT-LABEL: func.func @silu_shared
// ACT-NOT: llmc.silu
func.func @silu_shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = llmc.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = llmc.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// RES-LABEL: func.func @residual
// RES: %[[N:.*]], %[[S:.*]] = llmc.add_rms_norm %arg0, %arg1, %arg2
// RES: llmc.mul %[[S]], %[[N]]
func.func @residual(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  %s = llmc.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %n = llmc.rms_norm %s, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %y = llmc.mul %s, %n : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// A broadcasting add is not a residual connection.
// RES-LABEL: func.func @broadcast_add
// RES-NOT: llmc.add_rms_norm
func.func @broadcast_add(%a: tensor<2x8xf32>, %b: tensor<8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  %s = llmc.add %a, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %n = llmc.rms_norm %s, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %n : tensor<2x8xf32>
}

// -----

// Doubles keep the add and the norm: the fused kernels take f32, f16 and bf16.
// RES-LABEL: func.func @residual_f64
// RES-NOT: llmc.add_rms_norm
// RES: llmc.rms_norm
func.func @residual_f64(%a: tensor<2x8xf64>, %b: tensor<2x8xf64>, %w: tensor<8xf64>) -> tensor<2x8xf64> {
  %s = llmc.add %a, %b : (tensor<2x8xf64>, tensor<2x8xf64>) -> tensor<2x8xf64>
  %n = llmc.rms_norm %s, %w : (tensor<2x8xf64>, tensor<8xf64>) -> tensor<2x8xf64>
  return %n : tensor<2x8xf64>
}

// -----

// LIN-LABEL: func.func @linear
// LIN: llmc.linear %arg0, %{{.*}}, %{{.*}}, %{{.*}}, %arg1 {activation = "relu"}
// LIN-NOT: llmc.matmul
func.func @linear(%x: tensor<3x2xf32>, %r: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = llmc.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %m = llmc.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %a = llmc.add %m, %b : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %g = llmc.relu %a : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = llmc.add %g, %r : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A weight that is not constant stays a matmul.
// LIN-LABEL: func.func @dynamic_weight
// LIN: llmc.matmul
// LIN-NOT: llmc.linear
func.func @dynamic_weight(%x: tensor<3x2xf32>, %w: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %m = llmc.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %m : tensor<3x2xf32>
}

// -----

// A matmul of doubles by a constant stays a matmul (computed in f64; llmc.linear is f32, f16, bf16).
// LIN-LABEL: func.func @matmul_f64
// LIN: llmc.matmul
// LIN-NOT: llmc.linear
func.func @matmul_f64(%x: tensor<3x2xf64>) -> tensor<3x2xf64> {
  %w = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
  %m = llmc.matmul %x, %w : (tensor<3x2xf64>, tensor<2x2xf64>) -> tensor<3x2xf64>
  return %m : tensor<3x2xf64>
}

// -----

// Nor does a gemm of doubles become one.
// LIN-LABEL: func.func @gemm_f64
// LIN: llmc.gemm
// LIN-NOT: llmc.linear
func.func @gemm_f64(%x: tensor<3x2xf64>) -> tensor<3x2xf64> {
  %w = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
  %c = llmc.constant dense<[0.5, -0.5]> : tensor<2xf64>
  %m = llmc.gemm %x, %w, %c : (tensor<3x2xf64>, tensor<2x2xf64>, tensor<2xf64>) -> tensor<3x2xf64>
  return %m : tensor<3x2xf64>
}

// -----

// A GELU of doubles keeps its formula: the pattern matches its constants to 1e-4 only.
// ACT-LABEL: func.func @gelu_f64
// ACT-NOT: llmc.gelu
// ACT: llmc.erf
func.func @gelu_f64(%x: tensor<4xf64>) -> tensor<4xf64> {
  %c = llmc.constant dense<0.70710678118654757> : tensor<f64>
  %one = llmc.constant dense<1.0> : tensor<f64>
  %half = llmc.constant dense<0.5> : tensor<f64>
  %a = llmc.mul %x, %c : (tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
  %e = llmc.erf %a : (tensor<4xf64>) -> tensor<4xf64>
  %p = llmc.add %e, %one : (tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
  %h = llmc.mul %x, %half : (tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
  %y = llmc.mul %h, %p : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %y : tensor<4xf64>
}

// -----

// A tanh GELU of bf16 whose constants are sqrt(2/pi) and 0.044715 rounded to bf16 (0.796875,
// 0.0446777), as a model exported in bf16 holds them, is raised; one whose cube's factor is the
// next bf16 number (0.0449219) is not.
// ACT-LABEL: func.func @gelu_tanh_bf16
// ACT: llmc.gelu %arg0 {approximate = "tanh"} : (tensor<4xbf16>) -> tensor<4xbf16>
// ACT-NOT: llmc.tanh
// ACT-LABEL: func.func @gelu_tanh_bf16_other_constant
// ACT-NOT: llmc.gelu
// ACT: llmc.tanh
func.func @gelu_tanh_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %three = llmc.constant dense<3.0> : tensor<bf16>
  %k2 = llmc.constant dense<0.044677734375> : tensor<bf16>
  %k1 = llmc.constant dense<0.796875> : tensor<bf16>
  %one = llmc.constant dense<1.0> : tensor<bf16>
  %half = llmc.constant dense<0.5> : tensor<bf16>
  %c = llmc.pow %x, %three : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %m = llmc.mul %c, %k2 : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %a = llmc.add %x, %m : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %u = llmc.mul %a, %k1 : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %t = llmc.tanh %u : (tensor<4xbf16>) -> tensor<4xbf16>
  %p = llmc.add %t, %one : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %h = llmc.mul %x, %half : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %y = llmc.mul %h, %p : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %y : tensor<4xbf16>
}
func.func @gelu_tanh_bf16_other_constant(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %three = llmc.constant dense<3.0> : tensor<bf16>
  %k2 = llmc.constant dense<0.044921875> : tensor<bf16>
  %k1 = llmc.constant dense<0.796875> : tensor<bf16>
  %one = llmc.constant dense<1.0> : tensor<bf16>
  %half = llmc.constant dense<0.5> : tensor<bf16>
  %c = llmc.pow %x, %three : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %m = llmc.mul %c, %k2 : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %a = llmc.add %x, %m : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %u = llmc.mul %a, %k1 : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %t = llmc.tanh %u : (tensor<4xbf16>) -> tensor<4xbf16>
  %p = llmc.add %t, %one : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %h = llmc.mul %x, %half : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %y = llmc.mul %h, %p : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// -----

// Bloom's tanh GELU, its argument factored: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 *
// x * x))). Not raised with the square's factor off (0.045).
// ACT-LABEL: func.func @gelu_tanh_factored
// ACT: llmc.gelu %arg0 {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
// ACT-NOT: llmc.tanh
// ACT-LABEL: func.func @gelu_tanh_factored_other_constant
// ACT-NOT: llmc.gelu
// ACT: llmc.tanh
func.func @gelu_tanh_factored(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k2 = llmc.constant dense<0.044715> : tensor<f32>
  %k1 = llmc.constant dense<0.79788456> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %s = llmc.mul %x, %k2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %sq = llmc.mul %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = llmc.add %sq, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %kx = llmc.mul %x, %k1 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %u = llmc.mul %kx, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = llmc.tanh %u : (tensor<4xf32>) -> tensor<4xf32>
  %p = llmc.add %t, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %h = llmc.mul %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = llmc.mul %h, %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @gelu_tanh_factored_other_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k2 = llmc.constant dense<0.045> : tensor<f32>
  %k1 = llmc.constant dense<0.79788456> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %s = llmc.mul %x, %k2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %sq = llmc.mul %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = llmc.add %sq, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %kx = llmc.mul %x, %k1 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %u = llmc.mul %kx, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = llmc.tanh %u : (tensor<4xf32>) -> tensor<4xf32>
  %p = llmc.add %t, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %h = llmc.mul %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = llmc.mul %h, %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// EW-LABEL: func.func @chain
// EW: llmc.fused_elementwise %arg0, %arg1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// EW: llmc.tanh
// EW: llmc.yield
func.func @chain(%x: tensor<2x4xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %a = llmc.mul %x, %c : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %t = llmc.tanh %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = llmc.neg %t : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Integer ops are not fused (they compute shapes and indices).
// EW-LABEL: func.func @integers
// EW-NOT: llmc.fused_elementwise
func.func @integers(%x: tensor<4xi64>) -> tensor<4xi64> {
  %a = llmc.add %x, %x : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %y = llmc.neg %a : (tensor<4xi64>) -> tensor<4xi64>
  return %y : tensor<4xi64>
}

// -----

// Rotary tables as a Hugging Face export computes them: the position ids cast to floats times
// the inverse frequencies, cos and sin of those angles, and of the angles concatenated with
// themselves. The cast joins the region, sin and cos of the angles are its two results, and the
// cos and sin of the concatenation become concatenations of those.
// EW-LABEL: func.func @rotary_tables
// EW: %[[T:.*]]:2 = llmc.fused_elementwise %{{.*}}, %arg1 : (tensor<1x?x1xi64>, tensor<32xf32>) -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>)
// EW: llmc.cast
// EW: llmc.mul
// EW: llmc.cos
// EW: llmc.sin
// EW: llmc.yield
// EW: llmc.concat %[[T]]#0, %[[T]]#0
// EW: llmc.concat %[[T]]#1, %[[T]]#1
// EW-NOT: llmc.fused_elementwise
func.func @rotary_tables(%ids: tensor<1x?xi64> {llmc.dim_symbols = ["", "seq"]}, %freq: tensor<32xf32>)
    -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>)
    attributes {llmc.symbol_bounds = {seq = 16 : i64}} {
  %u = llmc.unsqueeze %ids {axes = array<i64: 2>} : (tensor<1x?xi64>) -> tensor<1x?x1xi64>
  %f = llmc.cast %u {to = f32} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %a = llmc.mul %f, %freq : (tensor<1x?x1xf32>, tensor<32xf32>) -> tensor<1x?x32xf32>
  %c = llmc.cos %a : (tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %s = llmc.sin %a : (tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %aa = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x64xf32>
  %cc = llmc.cos %aa : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %ss = llmc.sin %aa : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return %c, %s, %cc, %ss : tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// Only the concatenated angles' cos and sin (no cos or sin of the angles to reuse): the pieces go
// where the concatenation was, both before either new concatenation reads one, so the angles,
// their cos and their sin are one region with two results.
// EW-LABEL: func.func @rotary_tables_concatenated_only
// EW: %[[T:.*]]:2 = llmc.fused_elementwise %{{.*}}, %arg1 : (tensor<1x?x1xi64>, tensor<32xf32>) -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>)
// EW: llmc.cos
// EW: llmc.sin
// EW: llmc.yield
// EW: llmc.concat %[[T]]#0, %[[T]]#0
// EW: llmc.concat %[[T]]#1, %[[T]]#1
// EW-NOT: llmc.fused_elementwise
func.func @rotary_tables_concatenated_only(%ids: tensor<1x?xi64> {llmc.dim_symbols = ["", "seq"]}, %freq: tensor<32xf32>)
    -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>) attributes {llmc.symbol_bounds = {seq = 16 : i64}} {
  %u = llmc.unsqueeze %ids {axes = array<i64: 2>} : (tensor<1x?xi64>) -> tensor<1x?x1xi64>
  %f = llmc.cast %u {to = f32} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %a = llmc.mul %f, %freq : (tensor<1x?x1xf32>, tensor<32xf32>) -> tensor<1x?x32xf32>
  %aa = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x64xf32>
  %cc = llmc.cos %aa : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %ss = llmc.sin %aa : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return %cc, %ss : tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// GPT-OSS's rotary tables: cos and sin of the angles, each scaled (YaRN's attention factor). Each
// joining reader brings its scaling along: one region, its two results the scaled tables (three
// kernels before: the angles, the scaled cos, the scaled sin). A chain stops at a reader that
// also reads something of another shape (the exp of the sin, broadcast over total rows) or a
// value read twice (the scaled sin, read by the return and by that exp's reader).
// EW-LABEL: func.func @scaled_rotary_tables
// EW: %[[T:.*]]:2 = llmc.fused_elementwise %{{.*}}, %arg1 : (tensor<1x?x1xi64>, tensor<8xf32>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>)
// EW: llmc.cast
// EW: llmc.cos
// EW: llmc.mul
// EW: llmc.sin
// EW: llmc.mul
// EW: llmc.yield
// EW-NOT: llmc.fused_elementwise
// EW: return %[[T]]#0, %[[T]]#1
func.func @scaled_rotary_tables(%ids: tensor<1x?xi64> {llmc.dim_symbols = ["", "seq"]}, %freq: tensor<8xf32>)
    -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>) attributes {llmc.symbol_bounds = {seq = 16 : i64}} {
  %scale = llmc.constant dense<1.34657359> : tensor<f32>
  %u = llmc.unsqueeze %ids {axes = array<i64: 2>} : (tensor<1x?xi64>) -> tensor<1x?x1xi64>
  %f = llmc.cast %u {to = f32} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %a = llmc.mul %f, %freq : (tensor<1x?x1xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
  %c = llmc.cos %a : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %cs = llmc.mul %c, %scale : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
  %s = llmc.sin %a : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %ss = llmc.mul %s, %scale : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
  return %cs, %ss : tensor<1x?x8xf32>, tensor<1x?x8xf32>
}

// -----

// A joining reader's chain runs as long as each value has one elementwise reader of the
// root's shape: from the tanh (the root) through the sin to the angles, whose other reader, the
// cos, brings its scaling and negation; the negation (returned) is the second result.
// EW-LABEL: func.func @longer_chain
// EW: %[[R:.*]]:2 = llmc.fused_elementwise %arg0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
// EW: llmc.sin
// EW: llmc.cos
// EW: llmc.mul
// EW: llmc.neg
// EW: llmc.tanh
// EW: llmc.yield
// EW-NOT: llmc.fused_elementwise
// EW: return %[[R]]#0, %[[R]]#1
func.func @longer_chain(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %a = llmc.mul %x, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %s = llmc.sin %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = llmc.cos %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %cs = llmc.mul %c, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %cn = llmc.neg %cs : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = llmc.tanh %s : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %cn, %t : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Readers of a shared producer of different (dynamic) shapes stay apart: the exp of x broadcast
// over seq rows and over total rows. So does a concatenation of two different values.
// EW-LABEL: func.func @different_shapes
// EW: llmc.exp
// EW: llmc.fused_elementwise
// EW: llmc.fused_elementwise
// EW: llmc.concat %arg0, %arg1
// EW: llmc.cos
// EW-NOT: llmc.fused_elementwise
func.func @different_shapes(%x: tensor<1x4xf32>, %p: tensor<?x4xf32> {llmc.dim_symbols = ["seq", ""]},
                            %q: tensor<?x4xf32> {llmc.dim_symbols = ["total", ""]})
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>)
    attributes {llmc.symbol_bounds = {seq = 16 : i64, total = 32 : i64}} {
  %e = llmc.exp %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %a = llmc.add %e, %p : (tensor<1x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %b = llmc.mul %e, %q : (tensor<1x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %n = llmc.neg %a : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %m = llmc.neg %b : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %j = llmc.concat %x, %p {axis = 0 : i64} : (tensor<1x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %c = llmc.cos %j : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %n, %m, %c : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A result that an outer op reads before another result is computed cannot share its region:
// the exp's second reader needs the softmax of the first. The exp and its neg stay as they are.
// EW-LABEL: func.func @outer_op_between
// EW: %[[E:.*]] = llmc.exp
// EW: llmc.neg %[[E]]
// EW: %[[S:.*]] = llmc.softmax
// EW: llmc.fused_elementwise %[[E]], %[[S]]
// EW-NOT: llmc.fused_elementwise
func.func @outer_op_between(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = llmc.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = llmc.neg %e : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = llmc.softmax %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = llmc.add %e, %s : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = llmc.tanh %b : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}

// -----

// ATT-LABEL: func.func @sdpa
// ATT: llmc.fused_attention %arg0, %arg1, %arg2
func.func @sdpa(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// Values whose batch is not the keys' (a broadcast the product allows: a damaged export, a
// transpose that lost its perm), with the heads merged straight to 2-D: nothing is raised (the
// rewrite built an attention, then failed to reshape its result and crashed until session 29).
// ATT-LABEL: func.func @sdpa_values_other_batch
// ATT-NOT: llmc.fused_attention
// ATT: llmc.softmax
func.func @sdpa_values_other_batch(%q: tensor<1x4x4xf32>, %kh: tensor<1x2x4x2xf32>, %v: tensor<2x2x4x2xf32>) -> tensor<8x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %flat = llmc.constant dense<[8, 4]> : tensor<2xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<2x2x4x2xf32>) -> tensor<2x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x2xf32>) -> tensor<2x4x2x2xf32>
  %y = llmc.reshape %ot, %flat : (tensor<2x4x2x2xf32>, tensor<2xi64>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// The same attention of doubles stays as it is.
// ATT-LABEL: func.func @sdpa_f64
// ATT-NOT: llmc.fused_attention
// ATT: llmc.softmax
func.func @sdpa_f64(%q: tensor<1x4x4xf64>, %k: tensor<1x4x4xf64>, %v: tensor<1x4x4xf64>) -> tensor<1x4x4xf64> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf64>, tensor<4xi64>) -> tensor<1x4x2x2xf64>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf64>) -> tensor<1x2x4x2xf64>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf64>, tensor<4xi64>) -> tensor<1x4x2x2xf64>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf64>) -> tensor<1x2x4x2xf64>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf64>) -> tensor<1x2x2x4xf64>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf64>, tensor<4xi64>) -> tensor<1x4x2x2xf64>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf64>) -> tensor<1x2x4x2xf64>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf64>, tensor<1x2x2x4xf64>) -> tensor<1x2x4x4xf64>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf64>, tensor<1x2x4x2xf64>) -> tensor<1x2x4x2xf64>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf64>) -> tensor<1x4x2x2xf64>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf64>, tensor<3xi64>) -> tensor<1x4x4xf64>
  return %y : tensor<1x4x4xf64>
}

// -----

// An attention of bf16 with a constant causal mask of bf16 (0 on and below the diagonal, very
// negative above): fused, the mask turned into is_causal.
// ATT-LABEL: func.func @sdpa_causal_bf16
// ATT: llmc.fused_attention %arg0, %arg1, %arg2, %{{.*}} {{{.*}}is_causal = 1 : i64
func.func @sdpa_causal_bf16(%q: tensor<1x4x4xbf16>, %k: tensor<1x4x4xbf16>, %v: tensor<1x4x4xbf16>) -> tensor<1x4x4xbf16> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %mask = llmc.constant dense<[[0.0, -3.0e38, -3.0e38, -3.0e38], [0.0, 0.0, -3.0e38, -3.0e38], [0.0, 0.0, 0.0, -3.0e38], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xbf16>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xbf16>, tensor<4xi64>) -> tensor<1x4x2x2xbf16>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xbf16>) -> tensor<1x2x4x2xbf16>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xbf16>, tensor<4xi64>) -> tensor<1x4x2x2xbf16>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xbf16>) -> tensor<1x2x4x2xbf16>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xbf16>) -> tensor<1x2x2x4xbf16>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xbf16>, tensor<4xi64>) -> tensor<1x4x2x2xbf16>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xbf16>) -> tensor<1x2x4x2xbf16>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xbf16>, tensor<1x2x2x4xbf16>) -> tensor<1x2x4x4xbf16>
  %sm = llmc.add %s, %mask : (tensor<1x2x4x4xbf16>, tensor<4x4xbf16>) -> tensor<1x2x4x4xbf16>
  %p = llmc.softmax %sm : (tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xbf16>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xbf16>, tensor<1x2x4x2xbf16>) -> tensor<1x2x4x2xbf16>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xbf16>) -> tensor<1x4x2x2xbf16>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xbf16>, tensor<3xi64>) -> tensor<1x4x4xbf16>
  return %y : tensor<1x4x4xbf16>
}
