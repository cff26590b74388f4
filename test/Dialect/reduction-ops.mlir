// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the reduction family.

// CHECK-LABEL: func.func @reduce
func.func @reduce(%x: tensor<2x3x4xf32>, %axis: tensor<i64>) -> (tensor<2x1x1xf32>, tensor<3xf32>, tensor<f32>, tensor<2x3x4xf32>) {
  // CHECK: llmc.reduce_mean %{{.*}} {axes = array<i64: 1, -1>} {{.*}} -> tensor<2x1x1xf32>
  %0 = llmc.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  // CHECK: llmc.reduce_sum {{.*}} -> tensor<3xf32>
  %1 = llmc.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK: llmc.reduce_max {{.*}} -> tensor<f32>
  %2 = llmc.reduce_max %x {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK: llmc.cumsum
  %3 = llmc.cumsum %x, %axis {reverse = 1 : i64} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3 : tensor<2x1x1xf32>, tensor<3xf32>, tensor<f32>, tensor<2x3x4xf32>
}
