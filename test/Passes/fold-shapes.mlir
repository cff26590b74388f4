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

// -----

// A reshape's inferred dimension where the others hold a sum of symbols: [1, 1, past + seq, 512]
// to [1, past + seq, -1, 64] (transformers 5's DeepSeek-V3 latent cache expanded by kv_b_proj,
// exported with a dynamic batch) has 8 heads, past + seq dividing out. Negative: a length that
// does not divide the input's (past + 2 seq) leaves the dimension dynamic.
// CHECK-LABEL: func.func @sum_divides_out
// CHECK: llmc.reshape {{.*}} -> tensor<1x?x8x64xf32>
// CHECK: llmc.reshape {{.*}} -> tensor<1x?x?x64xf32>
func.func @sum_divides_out(%a: tensor<1x1x?x512xf32> {llmc.name = "a", llmc.dim_symbols = ["", "", "past", ""]},
                           %b: tensor<1x1x?x512xf32> {llmc.name = "b", llmc.dim_symbols = ["", "", "seq", ""]})
    -> (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) attributes {llmc.symbol_bounds = {past = 64 : i64, seq = 16 : i64}} {
  %c = llmc.concat %a, %b {axis = 2 : i64} : (tensor<1x1x?x512xf32>, tensor<1x1x?x512xf32>) -> tensor<1x1x?x512xf32>
  %p = llmc.shape %a {end = 3 : i64, start = 2 : i64} : (tensor<1x1x?x512xf32>) -> tensor<1xi64>
  %s = llmc.shape %b {end = 3 : i64, start = 2 : i64} : (tensor<1x1x?x512xf32>) -> tensor<1xi64>
  %t = llmc.add %p, %s : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %t2 = llmc.add %t, %s : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %one = llmc.constant dense<1> : tensor<1xi64>
  %infer = llmc.constant dense<-1> : tensor<1xi64>
  %width = llmc.constant dense<64> : tensor<1xi64>
  %shape = llmc.concat %one, %t, %infer, %width {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %shape2 = llmc.concat %one, %t2, %infer, %width {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = llmc.reshape %c, %shape : (tensor<1x1x?x512xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %r2 = llmc.reshape %c, %shape2 : (tensor<1x1x?x512xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r, %r2 : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>
}
