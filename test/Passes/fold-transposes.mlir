// RUN: %llmc-opt %s -llmc-fold-transposes -split-input-file | FileCheck %s

// The values of a KV-cache export: heads split, then the cache layout; together they only move
// the unit batch dimension, so no data moves.
// CHECK-LABEL: func.func @cache_values
// CHECK-NOT: llmc.transpose
// CHECK: %[[S:.*]] = llmc.squeeze %arg0 {axes = array<i64: 0>} : (tensor<1x7x3x64xf32>) -> tensor<7x3x64xf32>
// CHECK: llmc.unsqueeze %[[S]] {axes = array<i64: 1>} : (tensor<7x3x64xf32>) -> tensor<7x1x3x64xf32>
func.func @cache_values(%v: tensor<1x7x3x64xf32>) -> tensor<7x1x3x64xf32> {
  %0 = llmc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x64xf32>) -> tensor<1x3x7x64xf32>
  %1 = llmc.transpose %0 {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x3x7x64xf32>) -> tensor<7x1x3x64xf32>
  return %1 : tensor<7x1x3x64xf32>
}

// -----

// Two transposes that cancel: nothing is left.
// CHECK-LABEL: func.func @cancel
// CHECK-NOT: llmc.transpose
// CHECK: return %arg0
func.func @cancel(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = llmc.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = llmc.transpose %0 {perm = array<i64: 1, 0, 2>} : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// A batch of two: the composed transpose moves data, so one transpose stays (the inner one,
// used elsewhere too, stays as well).
// CHECK-LABEL: func.func @batch_two
// CHECK: %[[A:.*]] = llmc.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[B:.*]] = llmc.transpose %arg0 {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x7x3x64xf32>) -> tensor<7x2x3x64xf32>
// CHECK: return %[[B]], %[[A]]
func.func @batch_two(%v: tensor<2x7x3x64xf32>) -> (tensor<7x2x3x64xf32>, tensor<2x3x7x64xf32>) {
  %0 = llmc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x64xf32>) -> tensor<2x3x7x64xf32>
  %1 = llmc.transpose %0 {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x3x7x64xf32>) -> tensor<7x2x3x64xf32>
  return %1, %0 : tensor<7x2x3x64xf32>, tensor<2x3x7x64xf32>
}
