// RUN: %llmc-opt %s -llmc-last-position="outputs=logits" -split-input-file | FileCheck %s

// A decoder's tail: the final residual+norm (its sum not read) and the vocabulary projection.
// The cut moves above both: they compute one position; seq >= 1, so the logits are [1, 1, 500].
// CHECK-LABEL: func.func @decoder_tail
// CHECK-SAME: -> (tensor<1x1x500xf32> {llmc.name = "logits"})
// CHECK-DAG: %[[H:.*]] = llmc.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>, steps = array<i64: 1>} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
// CHECK-DAG: %[[X:.*]] = llmc.slice %arg1 {{.*}} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
// CHECK: %[[R:.*]], %{{.*}} = llmc.add_rms_norm %[[H]], %[[X]], %arg2 : {{.*}} -> (tensor<1x1x64xf32>, tensor<1x1x64xf32>)
// CHECK: %[[L:.*]] = llmc.linear %[[R]], {{.*}} -> tensor<1x1x500xf32>
// CHECK: return %[[L]]
func.func @decoder_tail(%h: tensor<1x?x64xf32> {llmc.name = "h", llmc.dim_symbols = ["", "seq", ""]},
                        %x: tensor<1x?x64xf32> {llmc.name = "x", llmc.dim_symbols = ["", "seq", ""]},
                        %w: tensor<64xf32>, %emb: tensor<500x64xf32>) -> (tensor<1x?x500xf32> {llmc.name = "logits"})
    attributes {llmc.symbol_bounds = {seq = 64 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %r, %sum = llmc.add_rms_norm %h, %x, %w : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %l = llmc.linear %r, %emb, %e, %e, %e {transB = 1 : i64} : (tensor<1x?x64xf32>, tensor<500x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x500xf32>
  return %l : tensor<1x?x500xf32>
}

// -----

// The norm's sum is another output: the norm stays whole, the cut stops above the linear. An
// output not named stays as it is.
// CHECK-LABEL: func.func @sum_read
// CHECK: %[[R:.*]], %[[S:.*]] = llmc.add_rms_norm %arg0, %arg1, %arg2 : {{.*}} -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
// CHECK: %[[C:.*]] = llmc.slice %[[R]] {{.*}} -> tensor<1x1x64xf32>
// CHECK: %[[L:.*]] = llmc.linear %[[C]], {{.*}} -> tensor<1x1x500xf32>
// CHECK: return %[[L]], %[[S]] : tensor<1x1x500xf32>, tensor<1x?x64xf32>
func.func @sum_read(%h: tensor<1x?x64xf32> {llmc.name = "h", llmc.dim_symbols = ["", "seq", ""]},
                    %x: tensor<1x?x64xf32> {llmc.name = "x", llmc.dim_symbols = ["", "seq", ""]},
                    %w: tensor<64xf32>, %emb: tensor<500x64xf32>)
    -> (tensor<1x?x500xf32> {llmc.name = "logits"}, tensor<1x?x64xf32> {llmc.name = "hidden"})
    attributes {llmc.symbol_bounds = {seq = 64 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %r, %sum = llmc.add_rms_norm %h, %x, %w : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %l = llmc.linear %r, %emb, %e, %e, %e {transB = 1 : i64} : (tensor<1x?x64xf32>, tensor<500x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x500xf32>
  return %l, %sum : tensor<1x?x500xf32>, tensor<1x?x64xf32>
}

// -----

// A linear with a residual reads another value per position: the cut stays below it. Static
// shapes: the slice of 7 positions is 1.
// CHECK-LABEL: func.func @residual_linear
// CHECK: %[[L:.*]] = llmc.linear %arg0, %arg1, %{{.*}}, %{{.*}}, %arg2 {{.*}} -> tensor<2x7x64xf32>
// CHECK: %[[C:.*]] = llmc.slice %[[L]] {{.*}} : (tensor<2x7x64xf32>) -> tensor<2x1x64xf32>
// CHECK: return %[[C]]
func.func @residual_linear(%x: tensor<2x7x64xf32>, %w: tensor<64x64xf32>, %res: tensor<2x7x64xf32>)
    -> (tensor<2x7x64xf32> {llmc.name = "logits"}) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %l = llmc.linear %x, %w, %e, %e, %res : (tensor<2x7x64xf32>, tensor<64x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<2x7x64xf32>) -> tensor<2x7x64xf32>
  return %l : tensor<2x7x64xf32>
}

// -----

// A dynamic sequence without bounds may be empty: the cut's length stays dynamic.
// CHECK-LABEL: func.func @unbounded
// CHECK-SAME: -> (tensor<1x?x500xf32> {llmc.name = "logits"})
// CHECK: llmc.slice %arg0 {{.*}} : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
func.func @unbounded(%x: tensor<1x?x64xf32>, %emb: tensor<500x64xf32>) -> (tensor<1x?x500xf32> {llmc.name = "logits"}) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %l = llmc.linear %x, %emb, %e, %e, %e {transB = 1 : i64} : (tensor<1x?x64xf32>, tensor<500x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x500xf32>
  return %l : tensor<1x?x500xf32>
}

// -----

// A decoder's last layer: its MLP's norm is an add-norm whose result feeds the MLP and whose sum
// is the residual after it, both cut. The two cuts move above the norm together, so that the norm
// stays right before its linear (which the CUDA GEMV then computes) and runs on one row.
// CHECK-LABEL: func.func @last_layer
// CHECK-DAG: %[[H:.*]] = llmc.slice %arg0 {{.*}} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
// CHECK-DAG: %[[X:.*]] = llmc.slice %arg1 {{.*}} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
// CHECK: %[[R:.*]], %[[S:.*]] = llmc.add_rms_norm %[[H]], %[[X]], %arg2 : {{.*}} -> (tensor<1x1x64xf32>, tensor<1x1x64xf32>)
// CHECK-NEXT: %[[M:.*]] = llmc.linear %[[R]], {{.*}} -> tensor<1x1x64xf32>
// CHECK-NEXT: %[[R2:.*]], %{{.*}} = llmc.add_rms_norm %[[S]], %[[M]], %arg3
// CHECK-NEXT: %[[L:.*]] = llmc.linear %[[R2]], {{.*}} -> tensor<1x1x500xf32>
// CHECK-NEXT: return %[[L]]
func.func @last_layer(%h: tensor<1x?x64xf32> {llmc.name = "h", llmc.dim_symbols = ["", "seq", ""]},
                      %x: tensor<1x?x64xf32> {llmc.name = "x", llmc.dim_symbols = ["", "seq", ""]},
                      %w: tensor<64xf32>, %w2: tensor<64xf32>, %mlp: tensor<64x64xf32>, %emb: tensor<500x64xf32>)
    -> (tensor<1x?x500xf32> {llmc.name = "logits"})
    attributes {llmc.symbol_bounds = {seq = 64 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %r, %sum = llmc.add_rms_norm %h, %x, %w : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %m = llmc.linear %r, %mlp, %e, %e, %e {transB = 1 : i64} : (tensor<1x?x64xf32>, tensor<64x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  %r2, %sum2 = llmc.add_rms_norm %sum, %m, %w2 : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %l = llmc.linear %r2, %emb, %e, %e, %e {transB = 1 : i64} : (tensor<1x?x64xf32>, tensor<500x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x500xf32>
  return %l : tensor<1x?x500xf32>
}

// -----

// The sum is cut otherwise (its first position): the norm stays whole, the cut of its result
// stays below it.
// CHECK-LABEL: func.func @sum_cut_elsewhere
// CHECK: %[[R:.*]], %[[S:.*]] = llmc.add_rms_norm %arg0, %arg1, %arg2 : {{.*}} -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
// CHECK-DAG: llmc.slice %[[S]] {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>
// CHECK-DAG: llmc.slice %[[R]] {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>
func.func @sum_cut_elsewhere(%h: tensor<1x?x64xf32> {llmc.name = "h", llmc.dim_symbols = ["", "seq", ""]},
                             %x: tensor<1x?x64xf32> {llmc.name = "x", llmc.dim_symbols = ["", "seq", ""]},
                             %w: tensor<64xf32>, %emb: tensor<500x64xf32>)
    -> (tensor<1x?x500xf32> {llmc.name = "logits"}, tensor<1x1x64xf32> {llmc.name = "first"})
    attributes {llmc.symbol_bounds = {seq = 64 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %r, %sum = llmc.add_rms_norm %h, %x, %w : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %first = llmc.slice %sum {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
  %l = llmc.linear %r, %emb, %e, %e, %e {transB = 1 : i64} : (tensor<1x?x64xf32>, tensor<500x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x500xf32>
  return %l, %first : tensor<1x?x500xf32>, tensor<1x1x64xf32>
}
