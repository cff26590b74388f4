// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the normalization family.

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  // CHECK: llmc.softmax %{{.*}} {axis = 1 : i64}
  %0 = llmc.softmax %x {axis = 1 : i64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: llmc.log_softmax
  %1 = llmc.log_softmax %x : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: llmc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32}
  %2 = llmc.layer_norm %x, %g, %b {epsilon = 1.0e-6 : f32} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: llmc.rms_norm %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<16xf32>)
  %3 = llmc.rms_norm %x, %g {axis = -1 : i64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %0, %1, %2, %3 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}
