// RUN: %llmc-opt %s -llmc-drop-identities | FileCheck %s

// CHECK-LABEL: func.func @drop
// CHECK-NOT: llmc.identity
// CHECK-NOT: llmc.cast
// CHECK: %[[A:.*]] = llmc.add %arg0, %arg0
// CHECK: %[[C:.*]] = llmc.cast %[[A]] {to = i64}
// CHECK: return %[[A]], %[[C]]
func.func @drop(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xi64>) {
  %i = llmc.identity %x : (tensor<2xf32>) -> tensor<2xf32>
  %c = llmc.cast %i {to = f32} : (tensor<2xf32>) -> tensor<2xf32>
  %a = llmc.add %c, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // Negative: a cast to another type stays.
  %k = llmc.cast %a {to = i64} : (tensor<2xf32>) -> tensor<2xi64>
  return %a, %k : tensor<2xf32>, tensor<2xi64>
}
