// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// XGLM's attention (since session 36): products on merged heads [B*H, S, D], the scores viewed
// as [B, H, Sq, Sk] to add the mask, clamped to the lowest float, and the softmax taken on
// [B*H, Sq, Sk] again. The softmax over the last axis commutes with that view
// (softmaxesOnSplitHeads takes it on [B, H, Sq, Sk]) and the clamp changes only scores that were
// -inf: one fused_attention reading the mask. (The query's factor, on its rows before the heads
// split, stays a multiplication there; the attention's scale is 1.)
// CHECK-LABEL: func.func @merged_softmax
// CHECK: %[[Q:.*]] = llmc.mul %arg0
// CHECK: llmc.fused_attention %[[Q]], %arg1, %arg2, %arg3, %{{.*}}, %{{.*}} {kv_num_heads = 2 : i64, q_num_heads = 2 : i64, scale = 1.000000e+00 : f32}
// CHECK-NOT: llmc.softmax
// CHECK-NOT: llmc.max
func.func @merged_softmax(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged3 = llmc.constant dense<[2, 3, 4]> : tensor<3xi64>
  %scores4 = llmc.constant dense<[1, 2, 3, 3]> : tensor<4xi64>
  %scores3 = llmc.constant dense<[2, 3, 3]> : tensor<3xi64>
  %out4 = llmc.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %rows = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %floor = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %half = llmc.constant dense<5.000000e-01> : tensor<f32>
  %qs = llmc.mul %q, %half : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %q4 = llmc.reshape %qs, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %q3 = llmc.reshape %qt, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %kt4 = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k3 = llmc.reshape %kt4, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %kt = llmc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt4 = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %v3 = llmc.reshape %vt4, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %s = llmc.matmul %q3, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %s4 = llmc.reshape %s, %scores4 : (tensor<2x3x3xf32>, tensor<4xi64>) -> tensor<1x2x3x3xf32>
  %masked = llmc.add %s4, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %clamped = llmc.max %masked, %floor : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %c3 = llmc.reshape %clamped, %scores3 : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<2x3x3xf32>
  %p = llmc.softmax %c3 : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p4 = llmc.reshape %p, %scores4 : (tensor<2x3x3xf32>, tensor<4xi64>) -> tensor<1x2x3x3xf32>
  %p3 = llmc.reshape %p4, %scores3 : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<2x3x3xf32>
  %o = llmc.matmul %p3, %v3 : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o4 = llmc.reshape %o, %out4 : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %rows : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Left as they are: a clamp at -1 (it changes scores the softmax weighs; the softmax is still
// taken on [B, H, Sq, Sk], the same values), and a softmax of the merged scores over another axis.
// CHECK-LABEL: func.func @clamped_at_minus_one
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @clamped_at_minus_one(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged3 = llmc.constant dense<[2, 3, 4]> : tensor<3xi64>
  %scores4 = llmc.constant dense<[1, 2, 3, 3]> : tensor<4xi64>
  %scores3 = llmc.constant dense<[2, 3, 3]> : tensor<3xi64>
  %out4 = llmc.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %rows = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %floor = llmc.constant dense<-1.000000e+00> : tensor<f32>
  %half = llmc.constant dense<5.000000e-01> : tensor<f32>
  %qs = llmc.mul %q, %half : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %q4 = llmc.reshape %qs, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %q3 = llmc.reshape %qt, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %kt4 = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k3 = llmc.reshape %kt4, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %kt = llmc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt4 = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %v3 = llmc.reshape %vt4, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %s = llmc.matmul %q3, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %s4 = llmc.reshape %s, %scores4 : (tensor<2x3x3xf32>, tensor<4xi64>) -> tensor<1x2x3x3xf32>
  %masked = llmc.add %s4, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %clamped = llmc.max %masked, %floor : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %c3 = llmc.reshape %clamped, %scores3 : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<2x3x3xf32>
  %p = llmc.softmax %c3 : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p4 = llmc.reshape %p, %scores4 : (tensor<2x3x3xf32>, tensor<4xi64>) -> tensor<1x2x3x3xf32>
  %p3 = llmc.reshape %p4, %scores3 : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<2x3x3xf32>
  %o = llmc.matmul %p3, %v3 : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o4 = llmc.reshape %o, %out4 : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %rows : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax %{{.*}} {axis = 1 : i64}
func.func @softmax_over_queries(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged3 = llmc.constant dense<[2, 3, 4]> : tensor<3xi64>
  %scores4 = llmc.constant dense<[1, 2, 3, 3]> : tensor<4xi64>
  %scores3 = llmc.constant dense<[2, 3, 3]> : tensor<3xi64>
  %out4 = llmc.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %rows = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %floor = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %half = llmc.constant dense<5.000000e-01> : tensor<f32>
  %qs = llmc.mul %q, %half : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %q4 = llmc.reshape %qs, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %q3 = llmc.reshape %qt, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %kt4 = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k3 = llmc.reshape %kt4, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %kt = llmc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt4 = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %v3 = llmc.reshape %vt4, %merged3 : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %s = llmc.matmul %q3, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %s4 = llmc.reshape %s, %scores4 : (tensor<2x3x3xf32>, tensor<4xi64>) -> tensor<1x2x3x3xf32>
  %masked = llmc.add %s4, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %clamped = llmc.max %masked, %floor : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %c3 = llmc.reshape %clamped, %scores3 : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<2x3x3xf32>
  %p = llmc.softmax %c3 {axis = 1 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p4 = llmc.reshape %p, %scores4 : (tensor<2x3x3xf32>, tensor<4xi64>) -> tensor<1x2x3x3xf32>
  %p3 = llmc.reshape %p4, %scores3 : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<2x3x3xf32>
  %o = llmc.matmul %p3, %v3 : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o4 = llmc.reshape %o, %out4 : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %rows : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Dynamic lengths: a reshape back to the scores' dimensions (proven by the symbolic shapes) reads
// the softmax of [B, H, Sq, Sk] itself; one to the same type with the lengths swapped ([1, 2, Sk,
// Sq]) is not the merge undone, and reads the merged probabilities reshaped as before.
// CHECK-LABEL: func.func @dynamic_reshapes_back
// CHECK: %[[P:.*]] = llmc.softmax %arg0 : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
// CHECK: %[[M:.*]] = llmc.reshape %[[P]], %{{.*}} : (tensor<1x2x?x?xf32>, tensor<3xi64>) -> tensor<2x?x?xf32>
// CHECK: %[[S:.*]] = llmc.reshape %[[M]], %{{.*}} : (tensor<2x?x?xf32>, tensor<4xi64>) -> tensor<1x2x?x?xf32>
// CHECK: return %[[P]], %[[S]]
func.func @dynamic_reshapes_back(%s: tensor<1x2x?x?xf32> {llmc.name = "s", llmc.dim_symbols = ["", "", "q", "k"]})
    -> (tensor<1x2x?x?xf32>, tensor<1x2x?x?xf32>) attributes {llmc.symbol_bounds = {k = 8 : i64, q = 8 : i64}} {
  %two = llmc.constant dense<2> : tensor<1xi64>
  %lead = llmc.constant dense<[1, 2]> : tensor<2xi64>
  %q = llmc.shape %s {end = 3 : i64, start = 2 : i64} : (tensor<1x2x?x?xf32>) -> tensor<1xi64>
  %k = llmc.shape %s {end = 4 : i64, start = 3 : i64} : (tensor<1x2x?x?xf32>) -> tensor<1xi64>
  %to3 = llmc.concat %two, %q, %k {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %back = llmc.concat %lead, %q, %k {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %swapped = llmc.concat %lead, %k, %q {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %m = llmc.reshape %s, %to3 : (tensor<1x2x?x?xf32>, tensor<3xi64>) -> tensor<2x?x?xf32>
  %p = llmc.softmax %m : (tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %a = llmc.reshape %p, %back : (tensor<2x?x?xf32>, tensor<4xi64>) -> tensor<1x2x?x?xf32>
  %b = llmc.reshape %p, %swapped : (tensor<2x?x?xf32>, tensor<4xi64>) -> tensor<1x2x?x?xf32>
  return %a, %b : tensor<1x2x?x?xf32>, tensor<1x2x?x?xf32>
}
