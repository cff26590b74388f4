// RUN: %llmc-opt %s -split-input-file -llmc-merge-parallel-linears | FileCheck %s

// Three linears of different widths on one input (one with a bias) become one linear over
// [W1 | W2 | W3] with the biases side by side (zeros where there was none), split back.
// CHECK-LABEL: func.func @qkv
// CHECK: %[[ALL:.*]] = llmc.linear %arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x4xf32>
// CHECK: llmc.split %[[ALL]] {axis = 1 : i64, split = array<i64: 2, 1, 1>}
// CHECK-NOT: llmc.linear
func.func @qkv(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x1xf32>, tensor<3x1xf32>) {
  %none = llmc.constant dense<> : tensor<0xf32>
  %wq = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = llmc.constant dense<[[5.0], [6.0]]> : tensor<2x1xf32>
  %wv = llmc.constant dense<[[7.0], [8.0]]> : tensor<2x1xf32>
  %bk = llmc.constant dense<[0.5]> : tensor<1xf32>
  %q = llmc.linear %x, %wq, %none, %none, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  %k = llmc.linear %x, %wk, %bk, %none, %none : (tensor<3x2xf32>, tensor<2x1xf32>, tensor<1xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x1xf32>
  %v = llmc.linear %x, %wv, %none, %none, %none : (tensor<3x2xf32>, tensor<2x1xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x1xf32>
  return %q, %k, %v : tensor<3x2xf32>, tensor<3x1xf32>, tensor<3x1xf32>
}

// -----

// SwiGLU: the up projection gated by silu of the gate projection becomes one swiglu linear.
// CHECK-LABEL: func.func @swiglu
// CHECK: llmc.linear %arg0, %{{.*}} {activation = "swiglu"} : ({{.*}}tensor<2x4xf32>{{.*}}) -> tensor<3x2xf32>
func.func @swiglu(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %none = llmc.constant dense<> : tensor<0xf32>
  %wg = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wu = llmc.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %g = llmc.linear %x, %wg, %none, %none, %none {activation = "silu"} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  %u = llmc.linear %x, %wu, %none, %g, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<3x2xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  return %u : tensor<3x2xf32>
}

// -----

// Not merged: different inputs; a weight that is not constant.
// CHECK-LABEL: func.func @not_merged
// CHECK-COUNT-3: llmc.linear
// CHECK-NOT: llmc.split
func.func @not_merged(%x: tensor<3x2xf32>, %y: tensor<3x2xf32>, %w: tensor<2x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %none = llmc.constant dense<> : tensor<0xf32>
  %wq = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a = llmc.linear %x, %wq, %none, %none, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  %b = llmc.linear %y, %wq, %none, %none, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  %c = llmc.linear %x, %w, %none, %none, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  return %a, %b, %c : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Not merged: a quantized weight (int8 dequantized at run time) beside a float one on the same
// input. (Weights of f16 and bf16 are merged as f32 ones are: @qk_bf16 and @swiglu_f16_transposed
// below; until session 23 the pass merged f32 weights only.)
// CHECK-LABEL: func.func @not_merged_quantized
// CHECK-COUNT-2: llmc.linear
// CHECK-NOT: llmc.split
func.func @not_merged_quantized(%y: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %none = llmc.constant dense<> : tensor<0xf32>
  %q = llmc.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %s = llmc.constant dense<0.5> : tensor<f32>
  %wd = llmc.dequantize_linear %q, %s : (tensor<2x2xi8>, tensor<f32>) -> tensor<2x2xf32>
  %wf = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c = llmc.linear %y, %wf, %none, %none, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  %d = llmc.linear %y, %wd, %none, %none, %none : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x2xf32>
  return %c, %d : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// bf16 weights (a model exported in bf16) are merged byte for byte, in bf16: [Wq | Wk] with the
// missing bias as zeros.
// CHECK-LABEL: func.func @qk_bf16
// CHECK-DAG: llmc.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 5.000000e+00], [3.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xbf16>
// CHECK-DAG: llmc.constant dense<[0.000000e+00, 0.000000e+00, 5.000000e-01]> : tensor<3xbf16>
// CHECK: %[[ALL:.*]] = llmc.linear %arg0, {{.*}} : (tensor<3x2xbf16>, tensor<2x3xbf16>, tensor<3xbf16>, tensor<0xbf16>, tensor<0xbf16>) -> tensor<3x3xbf16>
// CHECK: llmc.split %[[ALL]] {axis = 1 : i64, split = array<i64: 2, 1>}
func.func @qk_bf16(%x: tensor<3x2xbf16>) -> (tensor<3x2xbf16>, tensor<3x1xbf16>) {
  %none = llmc.constant dense<> : tensor<0xbf16>
  %wq = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %wk = llmc.constant dense<[[5.0], [6.0]]> : tensor<2x1xbf16>
  %bk = llmc.constant dense<[0.5]> : tensor<1xbf16>
  %q = llmc.linear %x, %wq, %none, %none, %none : (tensor<3x2xbf16>, tensor<2x2xbf16>, tensor<0xbf16>, tensor<0xbf16>, tensor<0xbf16>) -> tensor<3x2xbf16>
  %k = llmc.linear %x, %wk, %bk, %none, %none : (tensor<3x2xbf16>, tensor<2x1xbf16>, tensor<1xbf16>, tensor<0xbf16>, tensor<0xbf16>) -> tensor<3x1xbf16>
  return %q, %k : tensor<3x2xbf16>, tensor<3x1xbf16>
}

// -----

// f16 gate and up projections of [N, K] weights (transB): one swiglu linear over [Wg; Wu].
// CHECK-LABEL: func.func @swiglu_f16_transposed
// CHECK: %[[W:.*]] = llmc.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<4x2xf16>
// CHECK: llmc.linear %arg0, %[[W]], {{.*}} {activation = "swiglu", transB = 1 : i64} : ({{.*}}) -> tensor<3x2xf16>
func.func @swiglu_f16_transposed(%x: tensor<3x2xf16>) -> tensor<3x2xf16> {
  %none = llmc.constant dense<> : tensor<0xf16>
  %wg = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %wu = llmc.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf16>
  %g = llmc.linear %x, %wg, %none, %none, %none {activation = "silu", transB = 1 : i64} : (tensor<3x2xf16>, tensor<2x2xf16>, tensor<0xf16>, tensor<0xf16>, tensor<0xf16>) -> tensor<3x2xf16>
  %u = llmc.linear %x, %wu, %none, %g, %none {transB = 1 : i64} : (tensor<3x2xf16>, tensor<2x2xf16>, tensor<0xf16>, tensor<3x2xf16>, tensor<0xf16>) -> tensor<3x2xf16>
  return %u : tensor<3x2xf16>
}
