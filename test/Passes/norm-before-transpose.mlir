// RUN: %llmc-opt %s -llmc-raise-norms -split-input-file | FileCheck %s

// A norm over the last axis of a transpose that keeps that axis last (Gemma 3's per-head norm of
// queries and keys after the heads move): the norm first, then the transpose.
// CHECK-LABEL: func.func @rms_norm_after_heads_move
// CHECK: %[[N:.*]] = llmc.rms_norm %arg0, %arg1 {epsilon = 9.99999997E-7 : f32} : (tensor<1x7x2x16xf32>, tensor<16xf32>) -> tensor<1x7x2x16xf32>
// CHECK: %[[T:.*]] = llmc.transpose %[[N]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: return %[[T]]
func.func @rms_norm_after_heads_move(%x: tensor<1x7x2x16xf32>, %g: tensor<16xf32>) -> tensor<1x2x7x16xf32> {
  %t = llmc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x2x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.rms_norm %t, %g {epsilon = 1.0e-6 : f32} : (tensor<1x2x7x16xf32>, tensor<16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// The same for a layer norm with a bias.
// CHECK-LABEL: func.func @layer_norm_after_heads_move
// CHECK: %[[N:.*]] = llmc.layer_norm %arg0, %arg1, %arg2 : (tensor<1x7x2x16xf32>
// CHECK: llmc.transpose %[[N]] {perm = array<i64: 0, 2, 1, 3>}
func.func @layer_norm_after_heads_move(%x: tensor<1x7x2x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<1x2x7x16xf32> {
  %t = llmc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x2x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.layer_norm %t, %g, %b : (tensor<1x2x7x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// A transpose that moves the last axis: the rows it normalizes were columns before. Left as it is.
// CHECK-LABEL: func.func @last_axis_moved
// CHECK: llmc.transpose %arg0
// CHECK-NEXT: llmc.rms_norm
func.func @last_axis_moved(%x: tensor<1x7x16x2xf32>, %g: tensor<16xf32>) -> tensor<1x7x2x16xf32> {
  %t = llmc.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x7x16x2xf32>) -> tensor<1x7x2x16xf32>
  %y = llmc.rms_norm %t, %g : (tensor<1x7x2x16xf32>, tensor<16xf32>) -> tensor<1x7x2x16xf32>
  return %y : tensor<1x7x2x16xf32>
}

// -----

// The transposed value read elsewhere too: moving the norm would keep that transpose and add
// another. Left as it is.
// CHECK-LABEL: func.func @transpose_read_twice
// CHECK: %[[T:.*]] = llmc.transpose %arg0
// CHECK-NEXT: llmc.rms_norm %[[T]]
func.func @transpose_read_twice(%x: tensor<1x7x2x16xf32>, %g: tensor<16xf32>) -> (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) {
  %t = llmc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x2x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.rms_norm %t, %g : (tensor<1x2x7x16xf32>, tensor<16xf32>) -> tensor<1x2x7x16xf32>
  return %y, %t : tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>
}

// -----

// A norm over the last two axes (axis 2): they are not the same elements after the transpose.
// Left as it is.
// CHECK-LABEL: func.func @over_two_axes
// CHECK: llmc.transpose %arg0
// CHECK-NEXT: llmc.rms_norm
func.func @over_two_axes(%x: tensor<1x7x2x16xf32>, %g: tensor<16xf32>) -> tensor<1x2x7x16xf32> {
  %t = llmc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x2x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.rms_norm %t, %g {axis = 2 : i64} : (tensor<1x2x7x16xf32>, tensor<16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}
