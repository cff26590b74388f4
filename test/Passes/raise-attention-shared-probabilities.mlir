// DiffLlama's two attention calls per layer: the same queries, keys and mask, two halves of the
// value heads; CSE leaves one chain of scores and probabilities (NaN-guarded, as torch's
// scaled_dot_product_attention exports them) that both weighted sums read. llmc-raise-attention
// gives the second its own copy of the chain, and each becomes a fused attention.
// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// CHECK-LABEL: func.func @shared_probabilities
// CHECK-NOT: llmc.softmax
// CHECK: llmc.fused_attention %{{.*}}, %{{.*}}, %arg2, %arg4
// CHECK: llmc.fused_attention %{{.*}}, %{{.*}}, %arg3, %arg4
// CHECK-NOT: llmc.softmax
func.func @shared_probabilities(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %w: tensor<1x4x4xf32>, %mask: tensor<1x1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>) {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %scale = llmc.constant dense<0.707106769> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %w4 = llmc.reshape %w, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %wt = llmc.transpose %w4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = llmc.mul %s, %scale : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %sm = llmc.add %ss, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p0 = llmc.softmax %sm : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = llmc.is_nan %p0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %p = llmc.where %nan, %zero, %p0 : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o1 = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %o1t = llmc.transpose %o1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y1 = llmc.reshape %o1t, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %o2 = llmc.matmul %p, %wt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %o2t = llmc.transpose %o2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y2 = llmc.reshape %o2t, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y1, %y2 : tensor<1x4x4xf32>, tensor<1x4x4xf32>
}

// -----

// Left shared (neither raised): the probabilities returned too; the scores read elsewhere too.
// CHECK-LABEL: func.func @probabilities_read_elsewhere
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
// CHECK-NOT: llmc.fused_attention
func.func @probabilities_read_elsewhere(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %w: tensor<1x4x4xf32>, %mask: tensor<1x1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x2x4x4xf32>) {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %scale = llmc.constant dense<0.707106769> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %w4 = llmc.reshape %w, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %wt = llmc.transpose %w4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = llmc.mul %s, %scale : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %sm = llmc.add %ss, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p0 = llmc.softmax %sm : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = llmc.is_nan %p0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %p = llmc.where %nan, %zero, %p0 : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o1 = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %o1t = llmc.transpose %o1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y1 = llmc.reshape %o1t, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %o2 = llmc.matmul %p, %wt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %o2t = llmc.transpose %o2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y2 = llmc.reshape %o2t, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y1, %y2, %p : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @scores_read_elsewhere
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
// CHECK-NOT: llmc.fused_attention
func.func @scores_read_elsewhere(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %w: tensor<1x4x4xf32>, %mask: tensor<1x1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x2x4x4xf32>) {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %scale = llmc.constant dense<0.707106769> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %w4 = llmc.reshape %w, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %wt = llmc.transpose %w4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = llmc.mul %s, %scale : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %sm = llmc.add %ss, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p0 = llmc.softmax %sm : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = llmc.is_nan %p0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %p = llmc.where %nan, %zero, %p0 : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o1 = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %o1t = llmc.transpose %o1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y1 = llmc.reshape %o1t, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %o2 = llmc.matmul %p, %wt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %o2t = llmc.transpose %o2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y2 = llmc.reshape %o2t, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y1, %y2, %ss : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x2x4x4xf32>
}
