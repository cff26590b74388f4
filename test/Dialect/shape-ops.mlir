// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the shape and data movement family.

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>, %s: tensor<3xi64>) -> (tensor<3xi64>, tensor<4x2x3xf32>, tensor<2x5x4xf32>, tensor<1x3x4xf32>, tensor<?x?x?xf32>) {
  // CHECK: llmc.constant dense<[4, 6]> : tensor<2xi64>
  %c = llmc.constant dense<[4, 6]> : tensor<2xi64>
  // CHECK: llmc.shape {{.*}} -> tensor<3xi64>
  %0 = llmc.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  // CHECK: llmc.reshape {{.*}} -> tensor<4x6xf32>
  %1 = llmc.reshape %x, %c : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  // CHECK: llmc.transpose %{{.*}} {perm = array<i64: 2, 0, 1>}
  %2 = llmc.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK: llmc.gather {{.*}} {axis = 1 : i64} {{.*}} -> tensor<2x5x4xf32>
  %3 = llmc.gather %x, %i {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  // CHECK: llmc.slice {{.*}} -> tensor<1x3x4xf32>
  %4 = llmc.slice %x {starts = array<i64: 1>, ends = array<i64: 9>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  // CHECK: llmc.unsqueeze {{.*}} -> tensor<2x1x3x4xf32>
  %5 = llmc.unsqueeze %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
  // CHECK: llmc.squeeze {{.*}} -> tensor<2x3x4xf32>
  %6 = llmc.squeeze %5 {axes = array<i64: 1>} : (tensor<2x1x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: llmc.concat {{.*}} -> tensor<2x6x4xf32>
  %7 = llmc.concat %6, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK: llmc.split {{.*}} -> (tensor<2x2x4xf32>, tensor<2x4x4xf32>)
  %8:2 = llmc.split %7 {axis = 1 : i64, split = array<i64: 2, 4>} : (tensor<2x6x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x4x4xf32>)
  // A shape that is not a constant gives dynamic dimensions.
  // CHECK: llmc.expand {{.*}} -> tensor<?x?x?xf32>
  %9 = llmc.expand %x, %s : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %0, %2, %3, %4, %9 : tensor<3xi64>, tensor<4x2x3xf32>, tensor<2x5x4xf32>, tensor<1x3x4xf32>, tensor<?x?x?xf32>
}

// CHECK-LABEL: func.func @generators
func.func @generators(%shape: tensor<2xi64>, %m: tensor<4x4xf32>) -> (tensor<?x?xf32>, tensor<4x4xf32>) {
  // CHECK: llmc.constant_of_shape {{.*}} {dtype = f32, value = 1.000000e+00 : f64}
  %0 = llmc.constant_of_shape %shape {dtype = f32, value = 1.0 : f64} : (tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: llmc.trilu
  %1 = llmc.trilu %m {upper = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<4x4xf32>
}
