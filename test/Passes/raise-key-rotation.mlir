// RUN: %llmc-opt %s -llmc-raise-attention -split-input-file | FileCheck %s

// Keys rotated (rotate-half) on their way into a cache, tables the same angles twice: one
// llmc.rotary on the half tables cos(a), sin(a).
// CHECK-LABEL: func.func @key_rotation
// CHECK-DAG: %[[COS:.*]] = llmc.cos %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK-DAG: %[[SIN:.*]] = llmc.sin %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK: llmc.rotary %arg0, %[[COS]], %[[SIN]], %{{.*}} {rotary_embedding_dim = 16 : i64}
// CHECK-NOT: llmc.neg
func.func @key_rotation(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// The half tables come right after their angles, before the ops that make the keys (a decoder's
// projections: the CUDA executor's QKV split rotates the keys itself only with tables made
// before it).
// CHECK-LABEL: func.func @tables_after_their_angles
// CHECK: %[[A:.*]] = llmc.mul %arg1, %arg2
// CHECK-NEXT: llmc.{{sin|cos}} %[[A]]
// CHECK-NEXT: llmc.{{sin|cos}} %[[A]]
// CHECK-NEXT: llmc.exp %arg0
// CHECK: llmc.rotary
func.func @tables_after_their_angles(%in: tensor<1x2x7x16xf32>, %p: tensor<1x7x8xf32>, %f: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %a = llmc.mul %p, %f : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
  %x = llmc.exp %in : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// Tables whose halves may differ (angles a and b): left as they are.
// CHECK-LABEL: func.func @different_halves
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @different_halves(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>, %b: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %b {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// One table row for a batch of two (broadcast over the batch): the rotary op takes a row per
// sequence, so this is left as it is.
// CHECK-LABEL: func.func @broadcast_batch
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @broadcast_batch(%x: tensor<2x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<2x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<2x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<2x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x2x7x16xf32>) -> tensor<2x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x2x7x16xf32>) -> tensor<2x2x7x8xf32>
  %neg = llmc.neg %hi : (tensor<2x2x7x8xf32>) -> tensor<2x2x7x8xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>) -> tensor<2x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<2x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<2x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<2x2x7x16xf32>, tensor<2x2x7x16xf32>) -> tensor<2x2x7x16xf32>
  return %y : tensor<2x2x7x16xf32>
}
