// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the ops added for ONNX op breadth, across families.

// CHECK-LABEL: func.func @breadth
func.func @breadth(%x: tensor<2x3x4xf32>, %i: tensor<2x3x4xi64>, %g: tensor<3xf32>, %s: tensor<f32>, %z: tensor<ui8>) -> (tensor<2x1x4xi64>, tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<2x3x4xui8>, tensor<2x3x4xf32>) {
  // CHECK: llmc.arg_max {{.*}} -> tensor<2x1x4xi64>
  %0 = llmc.arg_max %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  // CHECK: llmc.top_k {{.*}} -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  %1:2 = llmc.top_k %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  // CHECK: llmc.tile {{.*}} -> tensor<4x3x8xf32>
  %2 = llmc.tile %x {repeats = array<i64: 2, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<4x3x8xf32>
  // CHECK: llmc.scatter_elements
  %3 = llmc.scatter_elements %x, %i, %x {axis = 2 : i64, reduction = "add"} : (tensor<2x3x4xf32>, tensor<2x3x4xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: llmc.group_norm
  %4 = llmc.group_norm %3, %g, %g {num_groups = 3 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  // CHECK: llmc.einsum {{.*}} {equation = "bij->bj"} {{.*}} -> tensor<2x4xf32>
  %5 = llmc.einsum %4 {equation = "bij->bj"} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK: llmc.quantize_linear {{.*}} -> tensor<2x3x4xui8>
  %6 = llmc.quantize_linear %x, %s, %z {output_type = ui8} : (tensor<2x3x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x3x4xui8>
  // CHECK: llmc.dequantize_linear {{.*}} -> tensor<2x3x4xf32>
  %7 = llmc.dequantize_linear %6, %s, %z : (tensor<2x3x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x3x4xf32>
  return %0, %1#0, %1#1, %2, %4, %5, %6, %7 : tensor<2x1x4xi64>, tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<2x3x4xui8>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>, %past: tensor<1x2x5x8xf32>, %none: tensor<0xf32>, %nonpad: tensor<0xi64>) -> tensor<1x4x3x8xf32> {
  // CHECK: llmc.attention {{.*}} -> (tensor<1x4x3x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x4x3x8xf32>)
  %0:4 = llmc.attention %q, %k, %v, %none, %past, %past, %nonpad {is_causal = 1 : i64} : (tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<0xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<0xi64>) -> (tensor<1x4x3x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x4x3x8xf32>)
  return %0#0 : tensor<1x4x3x8xf32>
}
