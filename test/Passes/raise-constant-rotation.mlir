// RUN: %llmc-opt %s -llmc-raise-attention -split-input-file | FileCheck %s

// Rotary tables that are constants (a static sequence's, folded from the angles at import), as
// tiny_neox's are with --input-shape: the rotation becomes one llmc.rotary when every row holds
// each angle twice. Its half tables are new constants [batch, seq, r / 2], here a batch of 1
// tiled to x's 2; a partial rotary (the first 4 of 8 features) turns on its own.
// CHECK-LABEL: func.func @partial_halves_batch_tiled
// CHECK-DAG: %[[COS:.*]] = llmc.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]], {{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]]> : tensor<2x3x2xf32>
// CHECK-DAG: %[[SIN:.*]] = llmc.constant dense<{{\[\[\[}}7.000000e+00, 8.000000e+00], {{.*}}> : tensor<2x3x2xf32>
// CHECK: llmc.rotary %arg0, %[[COS]], %[[SIN]], %{{.*}} {rotary_embedding_dim = 4 : i64}
// CHECK-NOT: llmc.neg
// CHECK-NOT: llmc.concat
func.func @partial_halves_batch_tiled(%x: tensor<2x2x3x8xf32>) -> tensor<2x2x3x8xf32> {
  %c4 = llmc.constant dense<[[[[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.0, 4.0], [5.0, 6.0, 5.0, 6.0]]]]> : tensor<1x1x3x4xf32>
  %s4 = llmc.constant dense<[[[[7.0, 8.0, 7.0, 8.0], [9.0, 10.0, 9.0, 10.0], [11.0, 12.0, 11.0, 12.0]]]]> : tensor<1x1x3x4xf32>
  %head = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x2x3x8xf32>) -> tensor<2x2x3x4xf32>
  %pass = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<2x2x3x8xf32>) -> tensor<2x2x3x4xf32>
  %direct = llmc.mul %head, %c4 : (tensor<2x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<2x2x3x4xf32>
  %lo = llmc.slice %head {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x2x3x4xf32>) -> tensor<2x2x3x2xf32>
  %hi = llmc.slice %head {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<2x2x3x4xf32>) -> tensor<2x2x3x2xf32>
  %neg = llmc.neg %hi : (tensor<2x2x3x2xf32>) -> tensor<2x2x3x2xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32>) -> tensor<2x2x3x4xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<2x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<2x2x3x4xf32>
  %sum = llmc.add %direct, %rotated : (tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %y = llmc.concat %sum, %pass {axis = -1 : i64} : (tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x8xf32>
  return %y : tensor<2x2x3x8xf32>
}

// -----

// Two rotations by the same constant tables (queries and keys, every layer): one pair of half
// tables serves both (the full ones, read by nothing else, are gone).
// CHECK-LABEL: func.func @shared_tables
// CHECK-NOT: tensor<1x1x2x4xf32>
// CHECK: %[[CH:.*]] = llmc.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]]> : tensor<1x2x2xf32>
// CHECK-NEXT: %[[SH:.*]] = llmc.constant dense<{{\[\[\[}}5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]]> : tensor<1x2x2xf32>
// CHECK-NOT: llmc.constant {{.*}} tensor<1x2x2xf32>
// CHECK: llmc.rotary %arg0, %[[CH]], %[[SH]]
// CHECK: llmc.rotary %arg1, %[[CH]], %[[SH]]
func.func @shared_tables(%q: tensor<1x2x2x4xf32>, %k: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) {
  %c4 = llmc.constant dense<[[[[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.0, 4.0]]]]> : tensor<1x1x2x4xf32>
  %s4 = llmc.constant dense<[[[[5.0, 6.0, 5.0, 6.0], [7.0, 8.0, 7.0, 8.0]]]]> : tensor<1x1x2x4xf32>
  %qd = llmc.mul %q, %c4 : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %qlo = llmc.slice %q {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %qhi = llmc.slice %q {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %qneg = llmc.neg %qhi : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qrot = llmc.concat %qneg, %qlo {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qr = llmc.mul %qrot, %s4 : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %qy = llmc.add %qd, %qr : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kd = llmc.mul %k, %c4 : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %klo = llmc.slice %k {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %khi = llmc.slice %k {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %kneg = llmc.neg %khi : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %krot = llmc.concat %kneg, %klo {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %kr = llmc.mul %krot, %s4 : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %ky = llmc.add %kd, %kr : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %qy, %ky : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
}

// -----

// The same with tables whose halves are large enough to be stored as resource blobs, which the
// rewriter's constant folding does not merge: the second rotation finds the half tables made for
// the first, right after the full ones.
// CHECK-LABEL: func.func @shared_large_tables
// CHECK-COUNT-2: llmc.constant dense_resource<{{.*}}> : tensor<1x64x32xf32>
// CHECK-NOT: llmc.constant {{.*}} tensor<1x64x32xf32>
// CHECK: llmc.rotary %arg0
// CHECK: llmc.rotary %arg1
func.func @shared_large_tables(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) {
  %c4 = llmc.constant dense<5.000000e-01> : tensor<1x1x64x64xf32>
  %s4 = llmc.constant dense<2.500000e-01> : tensor<1x1x64x64xf32>
  %qd = llmc.mul %q, %c4 : (tensor<1x2x64x64xf32>, tensor<1x1x64x64xf32>) -> tensor<1x2x64x64xf32>
  %qlo = llmc.slice %q {axes = array<i64: 3>, ends = array<i64: 32>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x64x64xf32>) -> tensor<1x2x64x32xf32>
  %qhi = llmc.slice %q {axes = array<i64: 3>, ends = array<i64: 64>, starts = array<i64: 32>, steps = array<i64: 1>} : (tensor<1x2x64x64xf32>) -> tensor<1x2x64x32xf32>
  %qneg = llmc.neg %qhi : (tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  %qrot = llmc.concat %qneg, %qlo {axis = -1 : i64} : (tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> tensor<1x2x64x64xf32>
  %qr = llmc.mul %qrot, %s4 : (tensor<1x2x64x64xf32>, tensor<1x1x64x64xf32>) -> tensor<1x2x64x64xf32>
  %qy = llmc.add %qd, %qr : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  %kd = llmc.mul %k, %c4 : (tensor<1x2x64x64xf32>, tensor<1x1x64x64xf32>) -> tensor<1x2x64x64xf32>
  %klo = llmc.slice %k {axes = array<i64: 3>, ends = array<i64: 32>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x64x64xf32>) -> tensor<1x2x64x32xf32>
  %khi = llmc.slice %k {axes = array<i64: 3>, ends = array<i64: 64>, starts = array<i64: 32>, steps = array<i64: 1>} : (tensor<1x2x64x64xf32>) -> tensor<1x2x64x32xf32>
  %kneg = llmc.neg %khi : (tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  %krot = llmc.concat %kneg, %klo {axis = -1 : i64} : (tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> tensor<1x2x64x64xf32>
  %kr = llmc.mul %krot, %s4 : (tensor<1x2x64x64xf32>, tensor<1x1x64x64xf32>) -> tensor<1x2x64x64xf32>
  %ky = llmc.add %kd, %kr : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return %qy, %ky : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>
}

// -----

// Neighbours paired (GPT-J's rotate_every_two), tables [S, r] (broadcast over batch and heads)
// with each angle twice side by side: an interleaved llmc.rotary on [1, S, r / 2].
// CHECK-LABEL: func.func @neighbours_two_dimensional
// CHECK-DAG: %[[COS:.*]] = llmc.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]]> : tensor<1x2x2xf32>
// CHECK-DAG: %[[SIN:.*]] = llmc.constant dense<{{\[\[\[}}5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]]> : tensor<1x2x2xf32>
// CHECK: llmc.rotary %arg0, %[[COS]], %[[SIN]], %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 4 : i64}
func.func @neighbours_two_dimensional(%x: tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32> {
  %c = llmc.constant dense<[[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0]]> : tensor<2x4xf32>
  %s = llmc.constant dense<[[5.0, 5.0, 6.0, 6.0], [7.0, 7.0, 8.0, 8.0]]> : tensor<2x4xf32>
  %shape = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %direct = llmc.mul %x, %c : (tensor<1x3x2x4xf32>, tensor<2x4xf32>) -> tensor<1x3x2x4xf32>
  %even = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2xf32>
  %odd = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2xf32>
  %neg = llmc.neg %odd : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2x1xf32>
  %e1 = llmc.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2x1xf32>
  %pairs = llmc.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x3x2x2x1xf32>, tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x2xf32>
  %rot = llmc.reshape %pairs, %shape : (tensor<1x3x2x2x2xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %rotated = llmc.mul %rot, %s : (tensor<1x3x2x4xf32>, tensor<2x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  return %y : tensor<1x3x2x4xf32>
}

// -----

// A table whose halves differ in one place (row 2: 3 beside 3.5), and one that differs from
// head to head ([1, 2, S, r]): no rotation is read, the ops stay.
// CHECK-LABEL: func.func @not_each_angle_twice
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
// CHECK-LABEL: func.func @table_per_head
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @not_each_angle_twice(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %c4 = llmc.constant dense<[[[[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.5, 4.0]]]]> : tensor<1x1x2x4xf32>
  %s4 = llmc.constant dense<[[[[5.0, 6.0, 5.0, 6.0], [7.0, 8.0, 7.0, 8.0]]]]> : tensor<1x1x2x4xf32>
  %d = llmc.mul %x, %c4 : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %neg = llmc.neg %hi : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %r = llmc.mul %rot, %s4 : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %y = llmc.add %d, %r : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %y : tensor<1x2x2x4xf32>
}
func.func @table_per_head(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %c4 = llmc.constant dense<[[[[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.0, 4.0]], [[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.0, 4.0]]]]> : tensor<1x2x2x4xf32>
  %s4 = llmc.constant dense<[[[[5.0, 6.0, 5.0, 6.0], [7.0, 8.0, 7.0, 8.0]], [[5.0, 6.0, 5.0, 6.0], [7.0, 8.0, 7.0, 8.0]]]]> : tensor<1x2x2x4xf32>
  %d = llmc.mul %x, %c4 : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %neg = llmc.neg %hi : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %r = llmc.mul %rot, %s4 : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %y = llmc.add %d, %r : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %y : tensor<1x2x2x4xf32>
}
