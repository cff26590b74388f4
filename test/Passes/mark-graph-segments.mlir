// RUN: %llmc-opt %s -llmc-mark-graph-segments -split-input-file | FileCheck %s

// Static shapes: one segment holds every op (a whole run is one graph launch).
// CHECK-LABEL: func.func @static
// CHECK: llmc.neg %{{.*}} {llmc.graph_segment = 0 : i64}
// CHECK: llmc.exp %{{.*}} {llmc.graph_segment = 0 : i64}
// CHECK-NOT: llmc.graph_segment = 1
func.func @static(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = llmc.constant dense<1.0> : tensor<3xf32>
  %0 = llmc.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = llmc.add %0, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = llmc.exp %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// Dynamic dimensions that follow from a bounded input symbol: fixed within a shape bucket.
// CHECK-LABEL: func.func @bucketed
// CHECK: llmc.neg %{{.*}} {llmc.graph_segment = 0 : i64}
// CHECK: llmc.concat %{{.*}} {axis = 1 : i64, llmc.graph_segment = 0 : i64}
func.func @bucketed(%x: tensor<1x?xf32> {llmc.name = "x", llmc.dim_symbols = ["", "seq"]}) -> tensor<1x?xf32>
    attributes {llmc.symbol_bounds = {seq = 64 : i64}} {
  %0 = llmc.neg %x : (tensor<1x?xf32>) -> tensor<1x?xf32>
  %1 = llmc.concat %0, %x {axis = 1 : i64} : (tensor<1x?xf32>, tensor<1x?xf32>) -> tensor<1x?xf32>
  return %1 : tensor<1x?xf32>
}

// -----

// A shape that no input shape fixes (no symbols to express it) cannot be in a graph: those ops
// get no mark, and the next op with a fixed shape starts the next segment.
// CHECK-LABEL: func.func @unfixed
// CHECK: llmc.neg %{{.*}} {llmc.graph_segment = 0 : i64}
// CHECK: llmc.reshape %{{[^{]*}} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<?xf32>
// CHECK: llmc.exp %{{[^{]*}} : (tensor<?xf32>) -> tensor<?xf32>
// CHECK: llmc.shape %{{.*}} {llmc.graph_segment = 1 : i64}
func.func @unfixed(%x: tensor<2x3xf32>, %s: tensor<1xi64>) -> (tensor<?xf32>, tensor<1xi64>) {
  %0 = llmc.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = llmc.reshape %0, %s : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<?xf32>
  %2 = llmc.exp %1 : (tensor<?xf32>) -> tensor<?xf32>
  %3 = llmc.shape %2 : (tensor<?xf32>) -> tensor<1xi64>
  return %2, %3 : tensor<?xf32>, tensor<1xi64>
}
