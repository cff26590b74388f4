// The attention's output read as heads, [B, S, H, D], before they merge: Laguna multiplies each
// head's output by a gate (softplus of a projection, one value per head) and merges them after.
// The transpose of P·V to [B, S, H, D] becomes the fused attention's rows viewed as heads.
// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// CHECK-LABEL: func.func @gated_heads
// CHECK: %[[A:.*]] = llmc.fused_attention {{.*}} -> tensor<1x3x8xf32>
// CHECK: %[[H:.*]] = llmc.reshape %[[A]], %{{.*}} : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
// CHECK: %[[G:.*]] = llmc.mul %[[H]], %arg3 : (tensor<1x3x2x4xf32>, tensor<1x3x2x1xf32>)
// CHECK: llmc.reshape %[[G]]
// CHECK-NOT: llmc.softmax
// CHECK-NOT: llmc.transpose
func.func @gated_heads(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %gate: tensor<1x3x2x1xf32>) -> tensor<1x3x8xf32> {
  %split = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %s : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %g = llmc.mul %ot, %gate : (tensor<1x3x2x4xf32>, tensor<1x3x2x1xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %g, %merge : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// P·V transposed to another layout than [B, S, H, D] ([B, H, D, S]): not the heads' output, left
// as it is.
// CHECK-LABEL: func.func @heads_other_layout
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @heads_other_layout(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x2x2x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
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
  %ot = llmc.transpose %o {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  return %ot : tensor<1x2x2x4xf32>
}
