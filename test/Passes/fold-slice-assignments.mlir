// RUN: %llmc-opt %s -llmc-fold-slice-assignments -split-input-file | FileCheck %s

// DeepSeek-V3's keys as torch exports `k = new_empty(...); k[..., :16] = nope; k[..., 16:] = rope`:
// the last axis moved to the front, rows 0..15 and 16..23 scattered, moved back. One concatenation
// of the two parts on the last axis; nothing of the empty tensor, the scatters or the transposes.
// CHECK-LABEL: func.func @deepseek_keys
// CHECK-NEXT: %[[K:.*]] = llmc.concat %arg0, %arg1 {axis = 3 : i64} : (tensor<1x4x5x16xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x24xf32>
// CHECK-NEXT: return %[[K]]
func.func @deepseek_keys(%nope: tensor<1x4x5x16xf32>, %rope: tensor<1x4x5x8xf32>) -> tensor<1x4x5x24xf32> {
  %shape = llmc.constant dense<[1, 4, 5, 24]> : tensor<4xi64>
  %first = llmc.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13], [14], [15]]> : tensor<16x1xi64>
  %second = llmc.constant dense<[[16], [17], [18], [19], [20], [21], [22], [23]]> : tensor<8x1xi64>
  %empty = llmc.constant_of_shape %shape {dtype = f32} : (tensor<4xi64>) -> tensor<1x4x5x24xf32>
  %t = llmc.transpose %empty {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x24xf32>) -> tensor<24x4x5x1xf32>
  %nt = llmc.transpose %nope {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x16xf32>) -> tensor<16x4x5x1xf32>
  %a = llmc.scatter_nd %t, %first, %nt : (tensor<24x4x5x1xf32>, tensor<16x1xi64>, tensor<16x4x5x1xf32>) -> tensor<24x4x5x1xf32>
  %rt = llmc.transpose %rope {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x8xf32>) -> tensor<8x4x5x1xf32>
  %b = llmc.scatter_nd %a, %second, %rt : (tensor<24x4x5x1xf32>, tensor<8x1xi64>, tensor<8x4x5x1xf32>) -> tensor<24x4x5x1xf32>
  %k = llmc.transpose %b {perm = array<i64: 3, 1, 2, 0>} : (tensor<24x4x5x1xf32>) -> tensor<1x4x5x24xf32>
  return %k : tensor<1x4x5x24xf32>
}

// -----

// Rows 2..3 of 6 written (indices -4 and -3, from the end): the data's rows before and after stay.
// CHECK-LABEL: func.func @middle_rows
// CHECK-DAG: %[[BEFORE:.*]] = llmc.slice %arg0 {axes = array<i64: 0>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK-DAG: %[[AFTER:.*]] = llmc.slice %arg0 {axes = array<i64: 0>, ends = array<i64: 6>, starts = array<i64: 4>, steps = array<i64: 1>}
// CHECK: llmc.concat %[[BEFORE]], %arg1, %[[AFTER]] {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
// CHECK-NOT: llmc.scatter_nd
func.func @middle_rows(%data: tensor<6x3xf32>, %rows: tensor<2x3xf32>) -> tensor<6x3xf32> {
  %at = llmc.constant dense<[[-4], [-3]]> : tensor<2x1xi64>
  %y = llmc.scatter_nd %data, %at, %rows : (tensor<6x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<6x3xf32>
  return %y : tensor<6x3xf32>
}

// -----

// Left as they are: rows out of order, rows added to rather than written, index tuples of two
// axes, and indices that are not constants.
// CHECK-LABEL: func.func @not_slice_assignments
// CHECK-COUNT-4: llmc.scatter_nd
// CHECK-NOT: llmc.concat
func.func @not_slice_assignments(%data: tensor<6x3xf32>, %rows: tensor<2x3xf32>, %dyn: tensor<2x1xi64>) -> (tensor<6x3xf32>, tensor<6x3xf32>, tensor<6x3xf32>, tensor<6x3xf32>) {
  %swapped = llmc.constant dense<[[3], [2]]> : tensor<2x1xi64>
  %in_order = llmc.constant dense<[[2], [3]]> : tensor<2x1xi64>
  %cells = llmc.constant dense<[[2, 0], [3, 1]]> : tensor<2x2xi64>
  %one = llmc.constant dense<1.000000e+00> : tensor<2xf32>
  %a = llmc.scatter_nd %data, %swapped, %rows : (tensor<6x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %b = llmc.scatter_nd %data, %in_order, %rows {reduction = "add"} : (tensor<6x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %c = llmc.scatter_nd %data, %cells, %one : (tensor<6x3xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<6x3xf32>
  %d = llmc.scatter_nd %data, %dyn, %rows : (tensor<6x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<6x3xf32>
  return %a, %b, %c, %d : tensor<6x3xf32>, tensor<6x3xf32>, tensor<6x3xf32>, tensor<6x3xf32>
}

// -----

// A slice that cuts a piece of a concatenation stays. A transpose that does not undo its pieces'
// transposes (since session 38): the pieces concatenated as they are, then one transpose, the
// two's composition (r[j] = p[q[j]]: (2, 0, 1) then (0, 2, 1) is (2, 1, 0)).
// CHECK-LABEL: func.func @cut_piece_and_other_transpose
// CHECK: llmc.slice
// CHECK: %[[CAT:.*]] = llmc.concat %arg2, %arg3 {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
// CHECK: llmc.transpose %[[CAT]] {perm = array<i64: 2, 1, 0>} : (tensor<2x6x4xf32>) -> tensor<4x6x2xf32>
func.func @cut_piece_and_other_transpose(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<3x3xf32>, tensor<4x6x2xf32>) {
  %cat = llmc.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %s = llmc.slice %cat {axes = array<i64: 0>, ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<6x3xf32>) -> tensor<3x3xf32>
  %xt = llmc.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %yt = llmc.transpose %y {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %c2 = llmc.concat %xt, %yt {axis = 2 : i64} : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x6xf32>
  %t = llmc.transpose %c2 {perm = array<i64: 0, 2, 1>} : (tensor<4x2x6xf32>) -> tensor<4x6x2xf32>
  return %s, %t : tensor<3x3xf32>, tensor<4x6x2xf32>
}

// -----

// A slice of whole pieces (the middle two of three, ends past the end clamped) is their
// concatenation; with the start counted from the end, the last piece alone.
// CHECK-LABEL: func.func @whole_pieces
// CHECK: %[[MID:.*]] = llmc.concat %arg1, %arg2 {axis = 0 : i64} : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<5x3xf32>
// CHECK: return %[[MID]], %arg2
func.func @whole_pieces(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<1x3xf32>) -> (tensor<5x3xf32>, tensor<1x3xf32>) {
  %cat = llmc.concat %a, %b, %c {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<7x3xf32>
  %s = llmc.slice %cat {axes = array<i64: 0>, ends = array<i64: 9223372036854775807>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<7x3xf32>) -> tensor<5x3xf32>
  %t = llmc.slice %cat {axes = array<i64: 0>, ends = array<i64: 7>, starts = array<i64: -1>, steps = array<i64: 1>} : (tensor<7x3xf32>) -> tensor<1x3xf32>
  return %s, %t : tensor<5x3xf32>, tensor<1x3xf32>
}

// -----

// Pieces transposed by (1, 2, 0), the concatenation by (1, 0, 2): the same type as the pieces'
// concatenation on axis 1, but not the same elements: that concatenation transposed by (2, 1, 0).
// CHECK-LABEL: func.func @other_transpose_same_type
// CHECK: %[[CAT:.*]] = llmc.concat %arg0, %arg1 {axis = 1 : i64}
// CHECK: llmc.transpose %[[CAT]] {perm = array<i64: 2, 1, 0>}
func.func @other_transpose_same_type(%x: tensor<2x2x2xf32>, %y: tensor<2x2x2xf32>) -> tensor<2x4x2xf32> {
  %xt = llmc.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %yt = llmc.transpose %y {perm = array<i64: 1, 2, 0>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %c = llmc.concat %xt, %yt {axis = 0 : i64} : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<4x2x2xf32>
  %t = llmc.transpose %c {perm = array<i64: 1, 0, 2>} : (tensor<4x2x2xf32>) -> tensor<2x4x2xf32>
  return %t : tensor<2x4x2xf32>
}

// -----

// HY V4's keys: `k[..., :nope] = k_nope; k[..., nope:] = k_rot` exported with the head axis to the
// front (pieces transposed by (3, 1, 2, 0), concatenated on axis 0), then transposed by (3, 1, 0,
// 2) for Q·Kᵀ: the pieces concatenated on their last axis, transposed by (0, 1, 3, 2), the Kᵀ
// llmc-raise-attention knows.
// CHECK-LABEL: func.func @keys_transposed_for_scores
// CHECK: %[[K:.*]] = llmc.concat %arg0, %arg1 {axis = 3 : i64} : (tensor<1x4x5x6xf32>, tensor<1x4x5x2xf32>) -> tensor<1x4x5x8xf32>
// CHECK: llmc.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x5x8xf32>) -> tensor<1x4x8x5xf32>
func.func @keys_transposed_for_scores(%nope: tensor<1x4x5x6xf32>, %rot: tensor<1x4x5x2xf32>) -> tensor<1x4x8x5xf32> {
  %a = llmc.transpose %nope {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x6xf32>) -> tensor<6x4x5x1xf32>
  %b = llmc.transpose %rot {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x2xf32>) -> tensor<2x4x5x1xf32>
  %c = llmc.concat %a, %b {axis = 0 : i64} : (tensor<6x4x5x1xf32>, tensor<2x4x5x1xf32>) -> tensor<8x4x5x1xf32>
  %kt = llmc.transpose %c {perm = array<i64: 3, 1, 0, 2>} : (tensor<8x4x5x1xf32>) -> tensor<1x4x8x5xf32>
  return %kt : tensor<1x4x8x5xf32>
}

// -----

// Concatenations along a negative axis (until session 38 read as unsigned: the slice's pieces
// were missed, the transposes' axis read out of bounds): the same rewrites as on axis 1 and 0.
// CHECK-LABEL: func.func @negative_concat_axes
// CHECK: %[[K:.*]] = llmc.concat %arg2, %arg3 {axis = 3 : i64}
// CHECK: llmc.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: return %arg1, %{{.*}}
func.func @negative_concat_axes(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>, %nope: tensor<1x4x5x6xf32>, %rot: tensor<1x4x5x2xf32>)
    -> (tensor<3x4xf32>, tensor<1x4x8x5xf32>) {
  %cat = llmc.concat %a, %b {axis = -1 : i64} : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<3x6xf32>
  %s = llmc.slice %cat {axes = array<i64: 1>, ends = array<i64: 6>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x6xf32>) -> tensor<3x4xf32>
  %x = llmc.transpose %nope {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x6xf32>) -> tensor<6x4x5x1xf32>
  %y = llmc.transpose %rot {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x4x5x2xf32>) -> tensor<2x4x5x1xf32>
  %c = llmc.concat %x, %y {axis = -4 : i64} : (tensor<6x4x5x1xf32>, tensor<2x4x5x1xf32>) -> tensor<8x4x5x1xf32>
  %kt = llmc.transpose %c {perm = array<i64: 3, 1, 0, 2>} : (tensor<8x4x5x1xf32>) -> tensor<1x4x8x5xf32>
  return %s, %kt : tensor<3x4xf32>, tensor<1x4x8x5xf32>
}
