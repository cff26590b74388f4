// RUN: %llmc-opt %s -split-input-file -llmc-transpose-linear-weights | FileCheck %s

// A [K, N] weight becomes [N, K] with transB; the values move with it (w[k][n] at [n][k]).
// CHECK-LABEL: func.func @transposed
// CHECK: %[[W:.*]] = llmc.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK: llmc.linear %arg0, %[[W]], %{{.*}}, %{{.*}}, %{{.*}} {transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<4x3xf32>
func.func @transposed(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %none = llmc.constant dense<> : tensor<0xf32>
  %w = llmc.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = llmc.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %y = llmc.linear %x, %w, %b, %none, %none : (tensor<4x2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// One weight read by two linears: transposed once, both read the new one; a SwiGLU linear's
// [Wg | Wu] becomes [Wg; Wu] (its gate rows first), with its activation kept.
// CHECK-LABEL: func.func @shared_by_linears
// CHECK: %[[W:.*]] = llmc.constant {{.*}} : tensor<4x2xf32>
// CHECK-NOT: llmc.constant {{.*}} : tensor<2x4xf32>
// CHECK: llmc.linear %arg0, %[[W]], {{.*}} {activation = "swiglu", transB = 1 : i64}
// CHECK: llmc.linear %arg1, %[[W]], {{.*}} {transB = 1 : i64}
func.func @shared_by_linears(%x: tensor<1x2xf32>, %z: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x4xf32>) {
  %none = llmc.constant dense<> : tensor<0xf32>
  %w = llmc.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %y = llmc.linear %x, %w, %none, %none, %none {activation = "swiglu"} : (tensor<1x2xf32>, tensor<2x4xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x2xf32>
  %v = llmc.linear %z, %w, %none, %none, %none : (tensor<1x2xf32>, tensor<2x4xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x4xf32>
  return %y, %v : tensor<1x2xf32>, tensor<1x4xf32>
}

// -----

// Kept: a weight another op reads too; a weight already [N, K]; a weight that is an input.
// CHECK-LABEL: func.func @kept
// CHECK: llmc.linear %arg0, %[[S:[0-9]+]], {{.*}} : (tensor<1x2xf32>, tensor<2x3xf32>, {{.*}}) -> tensor<1x3xf32>
// CHECK: llmc.add %[[S]], %[[S]]
// CHECK: llmc.linear %arg0, %{{.*}}, {{.*}} {transB = 1 : i64} : (tensor<1x2xf32>, tensor<3x2xf32>, {{.*}}) -> tensor<1x3xf32>
// CHECK: llmc.linear %arg0, %arg1, {{.*}} : (tensor<1x2xf32>, tensor<2x3xf32>, {{.*}}) -> tensor<1x3xf32>
func.func @kept(%x: tensor<1x2xf32>, %win: tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) {
  %none = llmc.constant dense<> : tensor<0xf32>
  %shared = llmc.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a = llmc.linear %x, %shared, %none, %none, %none : (tensor<1x2xf32>, tensor<2x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3xf32>
  %twice = llmc.add %shared, %shared : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %nk = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %b = llmc.linear %x, %nk, %none, %none, %none {transB = 1 : i64} : (tensor<1x2xf32>, tensor<3x2xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3xf32>
  %c = llmc.linear %x, %win, %none, %none, %none : (tensor<1x2xf32>, tensor<2x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3xf32>
  return %a, %twice, %b, %c : tensor<1x3xf32>, tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>
}

// -----

// bf16 and f16 weights move as they are, two bytes each.
// CHECK-LABEL: func.func @transposed_16_bit
// CHECK: llmc.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xbf16>
// CHECK: llmc.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// CHECK-COUNT-2: {transB = 1 : i64}
func.func @transposed_16_bit(%x: tensor<4x2xbf16>, %z: tensor<4x2xf16>) -> (tensor<4x3xbf16>, tensor<4x2xf16>) {
  %none = llmc.constant dense<> : tensor<0xbf16>
  %nonef = llmc.constant dense<> : tensor<0xf16>
  %w = llmc.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xbf16>
  %wf = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %y = llmc.linear %x, %w, %none, %none, %none : (tensor<4x2xbf16>, tensor<2x3xbf16>, tensor<0xbf16>, tensor<0xbf16>, tensor<0xbf16>) -> tensor<4x3xbf16>
  %v = llmc.linear %z, %wf, %nonef, %nonef, %nonef : (tensor<4x2xf16>, tensor<2x2xf16>, tensor<0xf16>, tensor<0xf16>, tensor<0xf16>) -> tensor<4x2xf16>
  return %y, %v : tensor<4x3xbf16>, tensor<4x2xf16>
}
