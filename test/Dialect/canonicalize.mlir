// RUN: %llmc-opt %s -canonicalize -split-input-file | FileCheck %s
// Folding: ops with constant operands fold (through the runtime's kernels), shape-only ops
// fold from static types, and dead code disappears.

// CHECK-LABEL: func.func @shape_chain
// CHECK-NEXT: %[[C:.*]] = llmc.constant dense<[1, 16, 4, 16]> : tensor<4xi64>
// CHECK-NEXT: return %[[C]]
func.func @shape_chain(%x: tensor<1x16x64xf32>) -> tensor<4xi64> {
  %s = llmc.shape %x : (tensor<1x16x64xf32>) -> tensor<3xi64>
  %i = llmc.constant dense<[0, 1]> : tensor<2xi64>
  %g = llmc.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %h = llmc.constant dense<[4, 16]> : tensor<2xi64>
  %c = llmc.concat %g, %h {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  return %c : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @causal_mask
// CHECK-NOT: llmc.range
// CHECK-NOT: llmc.less
// CHECK: %[[M:.*]] = llmc.constant dense<{{\[\[}}0.000000e+00, -1.000000e+09, -1.000000e+09], [0.000000e+00, 0.000000e+00, -1.000000e+09], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// CHECK: return %[[M]]
func.func @causal_mask() -> tensor<3x3xf32> {
  %zero = llmc.constant dense<0> : tensor<i64>
  %three = llmc.constant dense<3> : tensor<i64>
  %one = llmc.constant dense<1> : tensor<i64>
  %r = llmc.range %zero, %three, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  %rows = llmc.unsqueeze %r {axes = array<i64: 1>} : (tensor<3xi64>) -> tensor<3x1xi64>
  %future = llmc.less %rows, %r : (tensor<3x1xi64>, tensor<3xi64>) -> tensor<3x3xi1>
  %neg = llmc.constant dense<-1.0e9> : tensor<f32>
  %z = llmc.constant dense<0.0> : tensor<f32>
  %m = llmc.where %future, %neg, %z : (tensor<3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// -----

// Same-type reshape/identity fold away; unused ops are removed.
// CHECK-LABEL: func.func @trivial
// CHECK-NEXT: return %arg0
func.func @trivial(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = llmc.constant dense<[2, 3]> : tensor<2xi64>
  %r = llmc.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %i = llmc.identity %r : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %dead = llmc.neg %i : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %i : tensor<2x3xf32>
}

// -----

// Negative: an op with a non-constant operand does not fold.
// CHECK-LABEL: func.func @not_constant
// CHECK: llmc.add
func.func @not_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = llmc.constant dense<1.0> : tensor<2xf32>
  %a = llmc.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %a : tensor<2xf32>
}

// -----

// Negative: a kernel error (out-of-range index) is not folded; it is reported at run time.
// CHECK-LABEL: func.func @bad_index
// CHECK: llmc.gather
func.func @bad_index() -> tensor<1xi64> {
  %d = llmc.constant dense<[1, 2, 3]> : tensor<3xi64>
  %i = llmc.constant dense<[7]> : tensor<1xi64>
  %g = llmc.gather %d, %i : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %g : tensor<1xi64>
}

// -----

// Transposes whose permutations cancel disappear; others stay.
// CHECK-LABEL: func.func @transpose_pairs
// CHECK-NEXT: %[[T:.*]] = llmc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[U:.*]] = llmc.transpose %[[T]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: return %arg0, %[[U]]
func.func @transpose_pairs(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x4x2x3xf32>) {
  %a = llmc.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %b = llmc.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  %c = llmc.transpose %a {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x2x3xf32>
  return %b, %c : tensor<1x2x3x4xf32>, tensor<1x4x2x3xf32>
}
