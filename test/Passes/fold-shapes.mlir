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

// -----

// A top_k whose K is counted from shapes (ONNX TopK's K = min(keys, 4)) takes it as its `k`
// attribute once the count is constant.
// CHECK-LABEL: func.func @counted_k_constant
// CHECK: llmc.top_k %{{[^,]*}} {k = 4 : i64} : (tensor<2x6xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
func.func @counted_k_constant(%x: tensor<2x6xf32>) -> tensor<?x?xi64> {
  %n = llmc.shape %x {end = 2 : i64, start = 1 : i64} : (tensor<2x6xf32>) -> tensor<1xi64>
  %four = llmc.constant dense<4> : tensor<1xi64>
  %k = llmc.min %n, %four : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %v, %i = llmc.top_k %x, %k {k = -1 : i64} : (tensor<2x6xf32>, tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
  return %i : tensor<?x?xi64>
}

// -----

// DeepSeek-V3.2's index mask, ones.scatter(-1, top_k(scores, min(keys, 2048)).indices, False),
// with at most 32 keys: the top_k takes every key, so the scatter writes False everywhere; the
// mask becomes False in the data's shape and the top_k (the indexer) goes unused. Negative: with
// up to 4096 keys the top_k may take fewer than all, and both stay.
// CHECK-LABEL: func.func @index_mask_hides_nothing
// CHECK-NOT: llmc.top_k
// CHECK-NOT: llmc.scatter_elements
// CHECK: %[[S:.*]] = llmc.shape %[[DATA:.*]] : (tensor<1x?x?xi1>) -> tensor<3xi64>
// CHECK: %[[F:.*]] = llmc.constant_of_shape %[[S]] {dtype = i1} : (tensor<3xi64>) -> tensor<1x?x?xi1>
// CHECK: return %[[F]]
func.func @index_mask_hides_nothing(%ids: tensor<1x?xi64> {llmc.name = "input_ids", llmc.dim_symbols = ["", "seq"]},
                                    %scores: tensor<1x?x?xf32> {llmc.name = "scores", llmc.dim_symbols = ["", "seq", "seq"]})
    -> tensor<1x?x?xi1>
    attributes {llmc.symbol_bounds = {seq = 32 : i64}} {
  %keys = llmc.shape %ids {end = 2 : i64, start = 1 : i64} : (tensor<1x?xi64>) -> tensor<1xi64>
  %most = llmc.constant dense<2048> : tensor<1xi64>
  %k = llmc.min %keys, %most : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %values, %indices = llmc.top_k %scores, %k {k = -1 : i64} : (tensor<1x?x?xf32>, tensor<1xi64>) -> (tensor<1x?x?xf32>, tensor<1x?x?xi64>)
  %i32 = llmc.cast %indices {to = i32} : (tensor<1x?x?xi64>) -> tensor<1x?x?xi32>
  %i64 = llmc.cast %i32 {to = i64} : (tensor<1x?x?xi32>) -> tensor<1x?x?xi64>
  %one = llmc.constant dense<1> : tensor<1xi64>
  %dims = llmc.concat %one, %keys, %keys {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %ones = llmc.constant_of_shape %dims {dtype = i1, value = 1.0 : f64} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %shape = llmc.shape %i64 : (tensor<1x?x?xi64>) -> tensor<3xi64>
  %false = llmc.constant_of_shape %shape {dtype = i1} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %mask = llmc.scatter_elements %ones, %i64, %false {axis = -1 : i64} : (tensor<1x?x?xi1>, tensor<1x?x?xi64>, tensor<1x?x?xi1>) -> tensor<1x?x?xi1>
  return %mask : tensor<1x?x?xi1>
}

// -----

// CHECK-LABEL: func.func @index_mask_may_hide_keys
// CHECK: llmc.top_k {{.*}} {k = -1 : i64}
// CHECK: llmc.scatter_elements
func.func @index_mask_may_hide_keys(%ids: tensor<1x?xi64> {llmc.name = "input_ids", llmc.dim_symbols = ["", "seq"]},
                                    %scores: tensor<1x?x?xf32> {llmc.name = "scores", llmc.dim_symbols = ["", "seq", "seq"]})
    -> tensor<1x?x?xi1>
    attributes {llmc.symbol_bounds = {seq = 4096 : i64}} {
  %keys = llmc.shape %ids {end = 2 : i64, start = 1 : i64} : (tensor<1x?xi64>) -> tensor<1xi64>
  %most = llmc.constant dense<2048> : tensor<1xi64>
  %k = llmc.min %keys, %most : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %values, %indices = llmc.top_k %scores, %k {k = -1 : i64} : (tensor<1x?x?xf32>, tensor<1xi64>) -> (tensor<1x?x?xf32>, tensor<1x?x?xi64>)
  %one = llmc.constant dense<1> : tensor<1xi64>
  %dims = llmc.concat %one, %keys, %keys {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %ones = llmc.constant_of_shape %dims {dtype = i1, value = 1.0 : f64} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %shape = llmc.shape %indices : (tensor<1x?x?xi64>) -> tensor<3xi64>
  %false = llmc.constant_of_shape %shape {dtype = i1} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %mask = llmc.scatter_elements %ones, %indices, %false {axis = -1 : i64} : (tensor<1x?x?xi1>, tensor<1x?x?xi64>, tensor<1x?x?xi1>) -> tensor<1x?x?xi1>
  return %mask : tensor<1x?x?xi1>
}

// -----

// Negatives: updates that differ from one key to the next (a permutation reorders them), a
// top_k along another axis than the scatter's, and a top 5 of 8 (its indices fill the data's
// shape, but not every position need be written).
// CHECK-LABEL: func.func @covering_scatter_kept
// CHECK: llmc.scatter_elements
// CHECK: llmc.scatter_elements
// CHECK: llmc.scatter_elements
func.func @covering_scatter_kept(%scores: tensor<2x5x5xf32>, %updates: tensor<2x5x5xf32>, %wide: tensor<2x5x8xf32>)
    -> (tensor<2x5x5xf32>, tensor<2x5x5xf32>, tensor<2x5x5xf32>) {
  %values, %indices = llmc.top_k %scores {k = 5 : i64} : (tensor<2x5x5xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi64>)
  %zeros = llmc.constant dense<0.0> : tensor<2x5x5xf32>
  %a = llmc.scatter_elements %zeros, %indices, %updates {axis = -1 : i64} : (tensor<2x5x5xf32>, tensor<2x5x5xi64>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %v2, %i2 = llmc.top_k %scores {k = 5 : i64, axis = 1 : i64} : (tensor<2x5x5xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi64>)
  %ones = llmc.constant dense<1.0> : tensor<2x5x5xf32>
  %b = llmc.scatter_elements %zeros, %i2, %ones {axis = -1 : i64} : (tensor<2x5x5xf32>, tensor<2x5x5xi64>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %v3, %i3 = llmc.top_k %wide {k = 5 : i64} : (tensor<2x5x8xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi64>)
  %c = llmc.scatter_elements %zeros, %i3, %ones {axis = -1 : i64} : (tensor<2x5x5xf32>, tensor<2x5x5xi64>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  return %a, %b, %c : tensor<2x5x5xf32>, tensor<2x5x5xf32>, tensor<2x5x5xf32>
}

// -----

// The same scatter along the top_k's axis, with one value for every key: folded (static shapes).
// CHECK-LABEL: func.func @covering_scatter_folded
// CHECK-NOT: llmc.scatter_elements
// CHECK: %[[ONES:.*]] = llmc.constant dense<1.000000e+00> : tensor<2x5x5xf32>
// CHECK: return %[[ONES]]
func.func @covering_scatter_folded(%scores: tensor<2x5x5xf32>) -> tensor<2x5x5xf32> {
  %values, %indices = llmc.top_k %scores {k = 5 : i64} : (tensor<2x5x5xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi64>)
  %zeros = llmc.constant dense<0.0> : tensor<2x5x5xf32>
  %ones = llmc.constant dense<1.0> : tensor<2x5x5xf32>
  %a = llmc.scatter_elements %zeros, %indices, %ones {axis = -1 : i64} : (tensor<2x5x5xf32>, tensor<2x5x5xi64>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  return %a : tensor<2x5x5xf32>
}

// -----

// A selection whose condition holds one value (an index mask folded to false, above, viewed with
// its head axis): HY V4's masked_fill of its additive mask becomes that mask; with true, the other
// operand where it has the result's shape. Negatives: the chosen operand a scalar, or broadcast
// (one row where the result has seq), which the selection widens: they stay.
// CHECK-LABEL: func.func @uniform_selections
// CHECK: %[[SCALAR:.*]] = llmc.where
// CHECK: return %arg1, %arg2, %[[SCALAR]]
// CHECK-LABEL: func.func @uniform_selection_widens
// CHECK: llmc.where
func.func @uniform_selections(%ids: tensor<1x?xi64> {llmc.name = "input_ids", llmc.dim_symbols = ["", "seq"]},
                              %mask: tensor<1x1x?x?xf32> {llmc.name = "mask", llmc.dim_symbols = ["", "", "seq", "seq"]},
                              %other: tensor<1x1x?x?xf32> {llmc.name = "other", llmc.dim_symbols = ["", "", "seq", "seq"]})
    -> (tensor<1x1x?x?xf32>, tensor<1x1x?x?xf32>, tensor<1x1x?x?xf32>) attributes {llmc.symbol_bounds = {seq = 32 : i64}} {
  %keys = llmc.shape %ids {end = 2 : i64, start = 1 : i64} : (tensor<1x?xi64>) -> tensor<1xi64>
  %one = llmc.constant dense<1> : tensor<1xi64>
  %dims = llmc.concat %one, %keys, %keys {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %none = llmc.constant_of_shape %dims {dtype = i1} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %hidden = llmc.unsqueeze %none {axes = array<i64: 1>} : (tensor<1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %a = llmc.where %hidden, %lowest, %mask : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32>
  %all = llmc.constant_of_shape %dims {dtype = i1, value = 1.0 : f64} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %kept = llmc.unsqueeze %all {axes = array<i64: 1>} : (tensor<1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %b = llmc.where %kept, %other, %mask : (tensor<1x1x?x?xi1>, tensor<1x1x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32>
  %c = llmc.where %kept, %lowest, %mask : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32>
  return %a, %b, %c : tensor<1x1x?x?xf32>, tensor<1x1x?x?xf32>, tensor<1x1x?x?xf32>
}

// -----

func.func @uniform_selection_widens(%ids: tensor<1x?xi64> {llmc.name = "input_ids", llmc.dim_symbols = ["", "seq"]},
                                    %row: tensor<1x1x?x?xf32> {llmc.name = "row", llmc.dim_symbols = ["", "", "", "seq"]})
    -> tensor<1x1x?x?xf32> attributes {llmc.symbol_bounds = {seq = 32 : i64}} {
  %keys = llmc.shape %ids {end = 2 : i64, start = 1 : i64} : (tensor<1x?xi64>) -> tensor<1xi64>
  %one = llmc.constant dense<1> : tensor<1xi64>
  %dims = llmc.concat %one, %keys, %keys {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %none = llmc.constant_of_shape %dims {dtype = i1} : (tensor<3xi64>) -> tensor<1x?x?xi1>
  %hidden = llmc.unsqueeze %none {axes = array<i64: 1>} : (tensor<1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %a = llmc.where %hidden, %lowest, %row : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32>
  return %a : tensor<1x1x?x?xf32>
}
