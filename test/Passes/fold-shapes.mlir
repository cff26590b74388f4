// RUN: %llmc-opt %s -llmc-fold-shapes -split-input-file | FileCheck %s

// A reshape whose target shape becomes constant gets a static type; the function signature follows.
// CHECK-LABEL: func.func @refine
// CHECK-SAME: -> tensor<1x16xf32>
// CHECK: %[[C:.*]] = llmc.constant dense<[1, 16]> : tensor<2xi64>
// CHECK: llmc.reshape %{{.*}}, %[[C]] : (tensor<16xf32>, tensor<2xi64>) -> tensor<1x16xf32>
func.func @refine(%x: tensor<1x16xi64>, %y: tensor<16xf32>) -> tensor<?x?xf32> {
  %s = llmc.shape %x : (tensor<1x16xi64>) -> tensor<2xi64>
  %r = llmc.reshape %y, %s : (tensor<16xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Refinement propagates through several ops: expand's shape comes from a folded chain, then the
// elementwise op that reads it becomes static too.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> tensor<2x4xf32>
// CHECK-NOT: llmc.shape
// CHECK: llmc.expand {{.*}} -> tensor<2x4xf32>
// CHECK: llmc.add {{.*}} -> tensor<2x4xf32>
func.func @chain(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<?x?xf32> {
  %s = llmc.shape %x : (tensor<2x4xf32>) -> tensor<2xi64>
  %e = llmc.expand %b, %s : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %a = llmc.add %e, %e : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %a : tensor<?x?xf32>
}

// -----

// Negative: a dimension that depends on the input's dynamic size stays dynamic.
// CHECK-LABEL: func.func @stays_dynamic
// CHECK-SAME: -> tensor<?x?xf32>
// CHECK: llmc.shape
func.func @stays_dynamic(%x: tensor<?x16xi64>, %y: tensor<32xf32>) -> tensor<?x?xf32> {
  %s = llmc.shape %x : (tensor<?x16xi64>) -> tensor<2xi64>
  %r = llmc.reshape %y, %s : (tensor<32xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
