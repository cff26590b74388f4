// RUN: %llmc-opt %s -llmc-pipeline | FileCheck %s
// RUN: %llmc-opt %s -llmc-pipeline=verify-static-shapes=false | FileCheck %s

// The default pipeline folds the shape computation, removes the identity and dead code, and
// merges duplicate constants.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> tensor<4x6xf32>
// CHECK-COUNT-1: llmc.constant
// CHECK-NOT: llmc.identity
// CHECK-NOT: llmc.shape
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<?x?xf32> {
  %s = llmc.constant dense<[4, 6]> : tensor<2xi64>
  %t = llmc.constant dense<[4, 6]> : tensor<2xi64>
  %i = llmc.identity %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %r = llmc.reshape %i, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %q = llmc.reshape %i, %t : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %shape = llmc.shape %q : (tensor<?x?xf32>) -> tensor<2xi64>
  return %r : tensor<?x?xf32>
}
