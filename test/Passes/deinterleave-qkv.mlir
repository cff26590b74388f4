// RUN: %llmc-opt %s -llmc-deinterleave-qkv -split-input-file | FileCheck %s

// Bloom's query_key_value: [B, S, H * 3 * D] reshaped to [B, S, H, 3, D], each part a gather on
// the parts' axis. The weight's columns (h, g, d) move to (g, h, d) (H = 2, D = 2: row 0's
// 0..11 become 0 1 6 7 | 2 3 8 9 | 4 5 10 11), the bias alike; the parts are a split, reshaped.
// CHECK-LABEL: func.func @gathered
// CHECK-DAG: %[[W:.*]] = llmc.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 6.000000e+00, 7.000000e+00, 2.000000e+00, 3.000000e+00, 8.000000e+00, 9.000000e+00, 4.000000e+00, 5.000000e+00, 1.000000e+01, 1.100000e+01], [1.200000e+01,
// CHECK-DAG: %[[B:.*]] = llmc.constant dense<[1.000000e+02, 1.010000e+02, 1.060000e+02, 1.070000e+02, 1.020000e+02, 1.030000e+02, 1.080000e+02, 1.090000e+02, 1.040000e+02, 1.050000e+02, 1.100000e+02, 1.110000e+02]>
// CHECK: %[[P:.*]] = llmc.matmul %arg0, %[[W]]
// CHECK: %[[PB:.*]] = llmc.add %[[P]], %[[B]]
// CHECK: %[[PARTS:.*]]:3 = llmc.split %[[PB]] {axis = 2 : i64, split = array<i64: 4, 4, 4>}
// CHECK: %[[Q:.*]] = llmc.reshape %[[PARTS]]#0, %{{.*}} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
// CHECK: %[[K:.*]] = llmc.reshape %[[PARTS]]#1
// CHECK: %[[V:.*]] = llmc.reshape %[[PARTS]]#2
// CHECK-NOT: llmc.gather
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @gathered(%x: tensor<1x?x4xf32>, %shape: tensor<5xi64>)
    -> (tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>) {
  %w = llmc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0]]> : tensor<4x12xf32>
  %b = llmc.constant dense<[100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0]> : tensor<12xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i2 = llmc.constant dense<2> : tensor<i64>
  %p = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %pb = llmc.add %p, %b : (tensor<1x?x12xf32>, tensor<12xf32>) -> tensor<1x?x12xf32>
  %r = llmc.reshape %pb, %shape : (tensor<1x?x12xf32>, tensor<5xi64>) -> tensor<1x?x2x3x2xf32>
  %q = llmc.gather %r, %i0 {axis = 3 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x2xf32>
  %k = llmc.gather %r, %i1 {axis = 3 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x2xf32>
  %v = llmc.gather %r, %i2 {axis = 3 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x2xf32>
  return %q, %k, %v : tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>
}

// -----

// GPT-NeoX's: [B, S, H, 3 * D], transposed to [B, H, S, 3 * D] and split into its parts. Each part
// is a split of the reordered projection, reshaped to [B, S, H, D] and transposed back.
// CHECK-LABEL: func.func @split_heads
// CHECK: %[[P:.*]] = llmc.matmul %arg0, %{{.*}} : (tensor<1x?x4xf32>, tensor<4x12xf32>)
// CHECK: %[[PARTS:.*]]:3 = llmc.split %[[P]] {axis = 2 : i64, split = array<i64: 4, 4, 4>}
// CHECK: %[[Q:.*]] = llmc.reshape %[[PARTS]]#0
// CHECK: %[[K:.*]] = llmc.reshape %[[PARTS]]#1
// CHECK: %[[V:.*]] = llmc.reshape %[[PARTS]]#2
// CHECK: %[[QT:.*]] = llmc.transpose %[[Q]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x2xf32>) -> tensor<1x2x?x2xf32>
// CHECK: %[[KT:.*]] = llmc.transpose %[[K]]
// CHECK: %[[VT:.*]] = llmc.transpose %[[V]]
// CHECK: return %[[QT]], %[[KT]], %[[VT]]
func.func @split_heads(%x: tensor<1x?x4xf32>, %shape: tensor<4xi64>)
    -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>) {
  %w = llmc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0]]> : tensor<4x12xf32>
  %p = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r = llmc.reshape %p, %shape : (tensor<1x?x12xf32>, tensor<4xi64>) -> tensor<1x?x2x6xf32>
  %t = llmc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x6xf32>) -> tensor<1x2x?x6xf32>
  %parts:3 = llmc.split %t {axis = 3 : i64, num_outputs = 3 : i64} : (tensor<1x2x?x6xf32>) -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>)
  return %parts#0, %parts#1, %parts#2 : tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>
}

// -----

// CodeGen's: [B, S, M, 3 * D] (M model-parallel groups) split into its parts without a transpose;
// each part is a split of the reordered projection reshaped to [B, S, M, D]. One group is kept:
// its parts are one after the other already.
// CHECK-LABEL: func.func @groups
// CHECK: %[[PARTS:.*]]:3 = llmc.split %{{.*}} {axis = 2 : i64, split = array<i64: 4, 4, 4>}
// CHECK: %[[A:.*]] = llmc.reshape %[[PARTS]]#0
// CHECK: %[[B:.*]] = llmc.reshape %[[PARTS]]#1
// CHECK: %[[C:.*]] = llmc.reshape %[[PARTS]]#2
// CHECK: %[[ONE:.*]] = llmc.reshape %{{.*}}, %arg2 : (tensor<1x?x12xf32>, tensor<4xi64>) -> tensor<1x?x1x12xf32>
// CHECK: llmc.split %[[ONE]] {axis = 3 : i64, num_outputs = 3 : i64}
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @groups(%x: tensor<1x?x4xf32>, %shape: tensor<4xi64>, %one: tensor<4xi64>)
    -> (tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x1x4xf32>) {
  %w = llmc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0]]> : tensor<4x12xf32>
  %w1 = llmc.constant dense<1.0> : tensor<4x12xf32>
  %p = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r = llmc.reshape %p, %shape : (tensor<1x?x12xf32>, tensor<4xi64>) -> tensor<1x?x2x6xf32>
  %parts:3 = llmc.split %r {axis = 3 : i64, num_outputs = 3 : i64} : (tensor<1x?x2x6xf32>) -> (tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>)
  %p1 = llmc.matmul %x, %w1 : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r1 = llmc.reshape %p1, %one : (tensor<1x?x12xf32>, tensor<4xi64>) -> tensor<1x?x1x12xf32>
  %g:3 = llmc.split %r1 {axis = 3 : i64, num_outputs = 3 : i64} : (tensor<1x?x1x12xf32>) -> (tensor<1x?x1x4xf32>, tensor<1x?x1x4xf32>, tensor<1x?x1x4xf32>)
  return %parts#0, %parts#1, %parts#2, %g#0 : tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x1x4xf32>
}

// -----

// Not reordered: a weight that is not a constant; a constant weight that another op reads too
// (its reordered copy would double it); a gather on another axis; the reshaped projection read
// by something else than its parts.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: llmc.split
// CHECK-COUNT-4: llmc.gather
// CHECK-NOT: llmc.split
func.func @kept(%x: tensor<1x?x4xf32>, %wIn: tensor<4x12xf32>, %shape: tensor<5xi64>)
    -> (tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x12xf32>, tensor<1x?x2x3xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x3x2xf32>) {
  %w = llmc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0]]> : tensor<4x12xf32>
  %w2 = llmc.constant dense<1.0> : tensor<4x12xf32>
  %w3 = llmc.constant dense<2.0> : tensor<4x12xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %input = llmc.matmul %x, %wIn : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r1 = llmc.reshape %input, %shape : (tensor<1x?x12xf32>, tensor<5xi64>) -> tensor<1x?x2x3x2xf32>
  %g1 = llmc.gather %r1, %i0 {axis = 3 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x2xf32>
  %shared = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %again = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r2 = llmc.reshape %shared, %shape : (tensor<1x?x12xf32>, tensor<5xi64>) -> tensor<1x?x2x3x2xf32>
  %g2 = llmc.gather %r2, %i0 {axis = 3 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x2xf32>
  %other = llmc.matmul %x, %w2 : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r3 = llmc.reshape %other, %shape : (tensor<1x?x12xf32>, tensor<5xi64>) -> tensor<1x?x2x3x2xf32>
  %g3 = llmc.gather %r3, %i0 {axis = 4 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x3xf32>
  %read = llmc.matmul %x, %w3 : (tensor<1x?x4xf32>, tensor<4x12xf32>) -> tensor<1x?x12xf32>
  %r4 = llmc.reshape %read, %shape : (tensor<1x?x12xf32>, tensor<5xi64>) -> tensor<1x?x2x3x2xf32>
  %g4 = llmc.gather %r4, %i0 {axis = 3 : i64} : (tensor<1x?x2x3x2xf32>, tensor<i64>) -> tensor<1x?x2x2xf32>
  return %g1, %g2, %again, %g3, %g4, %r4 : tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x12xf32>, tensor<1x?x2x3xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x3x2xf32>
}

// -----

// GPT-OSS's query: each head [B, H, S, D] split in two halves that are only multiplied (by the
// rotary tables), the rotation that llmc-raise-attention makes one llmc.rotary of the heads as
// they are: kept. The same split with a half that goes elsewhere (returned) is reordered.
// CHECK-LABEL: func.func @rotation_halves
// CHECK: llmc.transpose
// CHECK: %[[H:.*]]:2 = llmc.split %{{.*}} {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x?x4xf32>)
// CHECK: llmc.mul %[[H]]#0
// CHECK: llmc.mul %[[H]]#1
// CHECK-LABEL: func.func @halves_returned
// CHECK: llmc.split %{{.*}} {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<1x?x8xf32>)
func.func @rotation_halves(%x: tensor<1x?x4xf32>, %shape: tensor<4xi64>, %c: tensor<1x1x?x2xf32>, %s: tensor<1x1x?x2xf32>)
    -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>) {
  %w = llmc.constant dense<1.0> : tensor<4x8xf32>
  %p = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x8xf32>) -> tensor<1x?x8xf32>
  %r = llmc.reshape %p, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %t = llmc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %h:2 = llmc.split %t {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x?x4xf32>) -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>)
  %a = llmc.mul %h#0, %c : (tensor<1x2x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x2x?x2xf32>
  %b = llmc.mul %h#1, %s : (tensor<1x2x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x2x?x2xf32>
  return %a, %b : tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>
}

func.func @halves_returned(%x: tensor<1x?x4xf32>, %shape: tensor<4xi64>, %c: tensor<1x1x?x2xf32>)
    -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>) {
  %w = llmc.constant dense<1.0> : tensor<4x8xf32>
  %p = llmc.matmul %x, %w : (tensor<1x?x4xf32>, tensor<4x8xf32>) -> tensor<1x?x8xf32>
  %r = llmc.reshape %p, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %t = llmc.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %h:2 = llmc.split %t {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x?x4xf32>) -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>)
  %a = llmc.mul %h#0, %c : (tensor<1x2x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x2x?x2xf32>
  return %a, %h#1 : tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>
}
