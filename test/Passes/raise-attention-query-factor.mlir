// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// Queries scaled per position after their rotation (Ministral 3's and Llama 4's attention
// temperature: q * s, s [1, 1, S, 1]): the rotation commutes with the factor, so the attention
// takes both rotations (the tables as its cos and sin) and reads the query sequence times s.
// CHECK-LABEL: func.func @query_factor_per_position
// CHECK: %[[F:.*]] = llmc.reshape %arg5, %{{.*}} : (tensor<1x1x3x1xf32>, tensor<3xi64>) -> tensor<1x3x1xf32>
// CHECK: %[[Q:.*]] = llmc.mul %arg0, %[[F]] : (tensor<1x3x8xf32>, tensor<1x3x1xf32>) -> tensor<1x3x8xf32>
// CHECK: %[[C:.*]] = llmc.reshape %arg3
// CHECK: %[[S:.*]] = llmc.reshape %arg4
// CHECK: llmc.fused_attention %[[Q]], %arg1, %arg2, %{{.*}}, %[[C]], %[[S]]
// CHECK-NOT: llmc.softmax
func.func @query_factor_per_position(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %cos: tensor<1x1x3x4xf32>, %sin: tensor<1x1x3x4xf32>, %s: tensor<1x1x3x1xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %half = llmc.constant dense<5.000000e-01> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %kt = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %q1 = llmc.slice %qt {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %q2 = llmc.slice %qt {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %nq2 = llmc.neg %q2 : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %qh = llmc.concat %nq2, %q1 {axis = -1 : i64} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %qc = llmc.mul %qt, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qs = llmc.mul %qh, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qr = llmc.add %qc, %qs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %k1 = llmc.slice %kt {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %k2 = llmc.slice %kt {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %nk2 = llmc.neg %k2 : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %kh = llmc.concat %nk2, %k1 {axis = -1 : i64} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %kc = llmc.mul %kt, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ks = llmc.mul %kh, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %kr = llmc.add %kc, %ks : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qf = llmc.mul %qr, %s : (tensor<1x2x3x4xf32>, tensor<1x1x3x1xf32>) -> tensor<1x2x3x4xf32>
  %qscaled = llmc.mul %qf, %half : (tensor<1x2x3x4xf32>, tensor<f32>) -> tensor<1x2x3x4xf32>
  %ktt = llmc.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %scores = llmc.matmul %qscaled, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %scores : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}


// -----

// Left as it is: a factor per feature too ([1, 1, S, D]), which the rotation does not commute
// with; the attention still forms, its query rotated and scaled before it.
// CHECK-LABEL: func.func @query_factor_per_feature
// CHECK-NOT: llmc.mul %arg0
// CHECK: llmc.fused_attention
func.func @query_factor_per_feature(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %cos: tensor<1x1x3x4xf32>, %sin: tensor<1x1x3x4xf32>, %s: tensor<1x1x3x4xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %half = llmc.constant dense<5.000000e-01> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %kt = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %q1 = llmc.slice %qt {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %q2 = llmc.slice %qt {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %nq2 = llmc.neg %q2 : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %qh = llmc.concat %nq2, %q1 {axis = -1 : i64} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %qc = llmc.mul %qt, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qs = llmc.mul %qh, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qr = llmc.add %qc, %qs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %k1 = llmc.slice %kt {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %k2 = llmc.slice %kt {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %nk2 = llmc.neg %k2 : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %kh = llmc.concat %nk2, %k1 {axis = -1 : i64} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %kc = llmc.mul %kt, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ks = llmc.mul %kh, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %kr = llmc.add %kc, %ks : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qf = llmc.mul %qr, %s : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %qscaled = llmc.mul %qf, %half : (tensor<1x2x3x4xf32>, tensor<f32>) -> tensor<1x2x3x4xf32>
  %ktt = llmc.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %scores = llmc.matmul %qscaled, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %scores : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

