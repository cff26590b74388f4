// RUN: %llmc-opt %s -split-input-file -llmc-kv-cache-layout | FileCheck %s

// A past/present pair becomes [length, batch, heads * head]: the new keys are transposed and
// appended along axis 0; the old layout is rebuilt for other readers; shape readers see the old shape.
// CHECK-LABEL: func.func @pair
// CHECK-SAME: (%[[PAST:.*]]: tensor<?x1x32xf32> {llmc.dim_symbols = ["past", "", ""], llmc.name = "past_key_values.0.key"}
// CHECK-SAME: -> (tensor<?x1x32xf32> {llmc.name = "present.0.key"}, tensor<1x2x?x16xf32>, tensor<4xi64>)
// CHECK: %[[NEW:.*]] = llmc.transpose %arg1 {perm = array<i64: 2, 0, 1, 3>}
// CHECK: %[[FLAT:.*]] = llmc.reshape %[[NEW]]
// CHECK: %[[CACHE:.*]] = llmc.concat %[[PAST]], %[[FLAT]] {axis = 0 : i64}
// CHECK: %[[VIEW:.*]] = llmc.reshape %[[CACHE]]
// CHECK: llmc.transpose %[[VIEW]] {perm = array<i64: 1, 2, 0, 3>}
// CHECK: return %[[CACHE]]
func.func @pair(%past: tensor<1x2x?x16xf32> {llmc.name = "past_key_values.0.key", llmc.dim_symbols = ["", "", "past", ""]},
                %new: tensor<1x2x3x16xf32>) -> (tensor<1x2x?x16xf32> {llmc.name = "present.0.key"}, tensor<1x2x?x16xf32>, tensor<4xi64>) {
  %s = llmc.shape %past : (tensor<1x2x?x16xf32>) -> tensor<4xi64>
  %c = llmc.concat %past, %new {axis = 2 : i64} : (tensor<1x2x?x16xf32>, tensor<1x2x3x16xf32>) -> tensor<1x2x?x16xf32>
  %e = llmc.exp %c : (tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  return %c, %e, %s : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<4xi64>
}

// -----

// The past is read by something else than the concatenation: left alone.
// CHECK-LABEL: func.func @other_reader
// CHECK-SAME: tensor<1x2x?x16xf32> {llmc.name = "past_key_values.0.key"}
// CHECK: llmc.concat %arg0, %arg1 {axis = 2 : i64}
func.func @other_reader(%past: tensor<1x2x?x16xf32> {llmc.name = "past_key_values.0.key"},
                        %new: tensor<1x2x3x16xf32>) -> (tensor<1x2x?x16xf32> {llmc.name = "present.0.key"}, tensor<1x2x?x16xf32>) {
  %c = llmc.concat %past, %new {axis = 2 : i64} : (tensor<1x2x?x16xf32>, tensor<1x2x3x16xf32>) -> tensor<1x2x?x16xf32>
  %e = llmc.exp %past : (tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  return %c, %e : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>
}

// -----

// A cache of one head kept without it (DeepSeek-V3.2's indexer keys: squeezed, concatenated along
// the length, unsqueezed back as the present) is concatenated with its head first, then turned as
// any pair; the indexer's scores read the squeezed view of the new cache.
// CHECK-LABEL: func.func @one_head_squeezed
// CHECK-SAME: (%[[PAST:.*]]: tensor<?x1x16xf32> {llmc.dim_symbols = ["past", "", ""], llmc.name = "past_key_values.0.indexer"}
// CHECK: %[[CACHE:.*]] = llmc.concat %[[PAST]], %{{.*}} {axis = 0 : i64}
// CHECK: llmc.squeeze %{{.*}} {axes = array<i64: 1>} : (tensor<1x1x?x16xf32>) -> tensor<1x?x16xf32>
// CHECK: return %[[CACHE]]
func.func @one_head_squeezed(%past: tensor<1x1x?x16xf32> {llmc.name = "past_key_values.0.indexer", llmc.dim_symbols = ["", "", "past", ""]},
                             %new: tensor<1x3x16xf32>)
    -> (tensor<1x1x?x16xf32> {llmc.name = "present.0.indexer"}, tensor<1x?x16xf32>) {
  %s = llmc.squeeze %past {axes = array<i64: 1>} : (tensor<1x1x?x16xf32>) -> tensor<1x?x16xf32>
  %c = llmc.concat %s, %new {axis = 1 : i64} : (tensor<1x?x16xf32>, tensor<1x3x16xf32>) -> tensor<1x?x16xf32>
  %p = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x?x16xf32>) -> tensor<1x1x?x16xf32>
  %e = llmc.exp %c : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  return %p, %e : tensor<1x1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// Negative: the squeezed past is read by something else than the concatenation.
// CHECK-LABEL: func.func @one_head_read_apart
// CHECK-SAME: tensor<1x1x?x16xf32> {llmc.name = "past_key_values.0.indexer"}
// CHECK: llmc.squeeze %arg0
// CHECK: llmc.exp
// CHECK: llmc.concat %{{.*}}, %arg1 {axis = 1 : i64}
func.func @one_head_read_apart(%past: tensor<1x1x?x16xf32> {llmc.name = "past_key_values.0.indexer"},
                               %new: tensor<1x3x16xf32>)
    -> (tensor<1x1x?x16xf32> {llmc.name = "present.0.indexer"}, tensor<1x?x16xf32>) {
  %s = llmc.squeeze %past {axes = array<i64: 1>} : (tensor<1x1x?x16xf32>) -> tensor<1x?x16xf32>
  %e = llmc.exp %s : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %c = llmc.concat %s, %new {axis = 1 : i64} : (tensor<1x?x16xf32>, tensor<1x3x16xf32>) -> tensor<1x?x16xf32>
  %p = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x?x16xf32>) -> tensor<1x1x?x16xf32>
  return %p, %e : tensor<1x1x?x16xf32>, tensor<1x?x16xf32>
}
