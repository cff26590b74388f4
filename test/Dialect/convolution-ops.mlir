// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the convolution and pooling family.

// CHECK-LABEL: func.func @conv_pool
func.func @conv_pool(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>, %s: tensor<8xf32>) -> (tensor<1x8x5x5xf32>, tensor<1x8x3x3xf32>, tensor<1x8x2x2xf32>) {
  // CHECK: llmc.conv {{.*}} -> tensor<1x8x5x5xf32>
  %0 = llmc.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
  // CHECK: llmc.batch_norm
  %1 = llmc.batch_norm %0, %s, %s, %s, %s : (tensor<1x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
  // CHECK: llmc.max_pool {{.*}} -> tensor<1x8x3x3xf32>
  %2 = llmc.max_pool %1 {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x8x5x5xf32>) -> tensor<1x8x3x3xf32>
  // CHECK: llmc.average_pool {{.*}} -> tensor<1x8x2x2xf32>
  %3 = llmc.average_pool %1 {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (tensor<1x8x5x5xf32>) -> tensor<1x8x2x2xf32>
  return %0, %2, %3 : tensor<1x8x5x5xf32>, tensor<1x8x3x3xf32>, tensor<1x8x2x2xf32>
}

// CHECK-LABEL: func.func @pool_indices
func.func @pool_indices(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xi64> {
  // CHECK: llmc.max_pool_with_indices {{.*}} -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
  %0:2 = llmc.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, storage_order = 1 : i64} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
  return %0#1 : tensor<1x2x2x2xi64>
}

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  // CHECK: llmc.elu %{{.*}} {alpha = 5.000000e-01 : f32}
  %0 = llmc.elu %x {alpha = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: llmc.hard_sigmoid
  %1 = llmc.hard_sigmoid %0 : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: llmc.mod %{{.*}}, %{{.*}} :
  %2 = llmc.mod %i, %i {fmod = 0 : i64} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %1, %2 : tensor<4xf32>, tensor<4xi64>
}
