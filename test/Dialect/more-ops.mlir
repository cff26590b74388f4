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
