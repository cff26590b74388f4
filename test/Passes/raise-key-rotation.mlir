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

// One table for a batch of two (broadcast over the batch): the rotary op reads a table of batch
// 1 for every batch (since session 31; before, this was left as it is).
// CHECK-LABEL: func.func @broadcast_batch
// CHECK-DAG: %[[C:.*]] = llmc.cos %arg1 : (tensor<1x7x8xf32>)
// CHECK-DAG: %[[S:.*]] = llmc.sin %arg1 : (tensor<1x7x8xf32>)
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %[[C]], %[[S]], %{{.*}} {rotary_embedding_dim = 16 : i64} : (tensor<2x2x7x16xf32>, tensor<1x7x8xf32>, tensor<1x7x8xf32>, tensor<0xi64>) -> tensor<2x2x7x16xf32>
// CHECK-NEXT: return %[[R]]
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

// -----

// Neighbouring features paired (Cohere's rotate_half: stack(-x[..., 1::2], x[..., 0::2])
// flattened), tables cos/sin of repeat_interleave(a, 2) unsqueezed on the heads axis: one
// interleaved llmc.rotary on cos(a), sin(a).
// CHECK-LABEL: func.func @neighbours
// CHECK-DAG: %[[COS:.*]] = llmc.cos %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK-DAG: %[[SIN:.*]] = llmc.sin %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK: llmc.rotary %arg0, %[[COS]], %[[SIN]], %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 16 : i64}
// CHECK-NOT: llmc.neg
func.func @neighbours(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %two = llmc.constant dense<[1, 1, 1, 2]> : tensor<4xi64>
  %flat = llmc.constant dense<[1, 7, 16]> : tensor<3xi64>
  %heads = llmc.constant dense<[1, 2, 7, 16]> : tensor<4xi64>
  %a1 = llmc.unsqueeze %a {axes = array<i64: 3>} : (tensor<1x7x8xf32>) -> tensor<1x7x8x1xf32>
  %a2 = llmc.expand %a1, %two : (tensor<1x7x8x1xf32>, tensor<4xi64>) -> tensor<1x7x8x2xf32>
  %angles = llmc.reshape %a2, %flat : (tensor<1x7x8x2xf32>, tensor<3xi64>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %even = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %odd = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %odd : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %e1 = llmc.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %pairs = llmc.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x2x7x8x1xf32>, tensor<1x2x7x8x1xf32>) -> tensor<1x2x7x8x2xf32>
  %rot = llmc.reshape %pairs, %heads : (tensor<1x2x7x8x2xf32>, tensor<4xi64>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// GPT-J's: [B, S, H, D] before the heads move, the first 8 of 16 features turned (partial),
// neighbours paired, the tables given (sin and cos gathered from a table, repeated with one
// unsqueeze that also adds the heads axis). One interleaved llmc.rotary of the whole head with
// rotary_embedding_dim 8 on the tables as they are, between transposes to [B, H, S, D] and back;
// no slice, negation or concatenation left.
// CHECK-LABEL: func.func @neighbours_partial_sequence_first
// CHECK: %[[IN:.*]] = llmc.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[R:.*]] = llmc.rotary %[[IN]], %arg1, %arg2, %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 8 : i64} : (tensor<1x2x7x16xf32>
// CHECK: %[[OUT:.*]] = llmc.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: return %[[OUT]]
// CHECK-NOT: llmc.concat
func.func @neighbours_partial_sequence_first(%x: tensor<1x7x2x16xf32>, %cos: tensor<1x7x4xf32>, %sin: tensor<1x7x4xf32>) -> tensor<1x7x2x16xf32> {
  %two = llmc.constant dense<[1, 7, 1, 4, 2]> : tensor<5xi64>
  %table = llmc.constant dense<[1, 7, 1, 8]> : tensor<4xi64>
  %heads = llmc.constant dense<[1, 7, 2, 8]> : tensor<4xi64>
  %c1 = llmc.unsqueeze %cos {axes = array<i64: 2, 4>} : (tensor<1x7x4xf32>) -> tensor<1x7x1x4x1xf32>
  %c2 = llmc.expand %c1, %two : (tensor<1x7x1x4x1xf32>, tensor<5xi64>) -> tensor<1x7x1x4x2xf32>
  %c4 = llmc.reshape %c2, %table : (tensor<1x7x1x4x2xf32>, tensor<4xi64>) -> tensor<1x7x1x8xf32>
  %s1 = llmc.unsqueeze %sin {axes = array<i64: 2, 4>} : (tensor<1x7x4xf32>) -> tensor<1x7x1x4x1xf32>
  %s2 = llmc.expand %s1, %two : (tensor<1x7x1x4x1xf32>, tensor<5xi64>) -> tensor<1x7x1x4x2xf32>
  %s4 = llmc.reshape %s2, %table : (tensor<1x7x1x4x2xf32>, tensor<4xi64>) -> tensor<1x7x1x8xf32>
  %part = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x7x2x16xf32>) -> tensor<1x7x2x8xf32>
  %pass = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x7x2x16xf32>) -> tensor<1x7x2x8xf32>
  %direct = llmc.mul %part, %c4 : (tensor<1x7x2x8xf32>, tensor<1x7x1x8xf32>) -> tensor<1x7x2x8xf32>
  %even = llmc.slice %part {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x7x2x8xf32>) -> tensor<1x7x2x4xf32>
  %odd = llmc.slice %part {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x7x2x8xf32>) -> tensor<1x7x2x4xf32>
  %neg = llmc.neg %odd : (tensor<1x7x2x4xf32>) -> tensor<1x7x2x4xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x7x2x4xf32>) -> tensor<1x7x2x4x1xf32>
  %e1 = llmc.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x7x2x4xf32>) -> tensor<1x7x2x4x1xf32>
  %pairs = llmc.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x7x2x4x1xf32>, tensor<1x7x2x4x1xf32>) -> tensor<1x7x2x4x2xf32>
  %rot = llmc.reshape %pairs, %heads : (tensor<1x7x2x4x2xf32>, tensor<4xi64>) -> tensor<1x7x2x8xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x7x2x8xf32>, tensor<1x7x1x8xf32>) -> tensor<1x7x2x8xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x7x2x8xf32>, tensor<1x7x2x8xf32>) -> tensor<1x7x2x8xf32>
  %whole = llmc.concat %y, %pass {axis = -1 : i64} : (tensor<1x7x2x8xf32>, tensor<1x7x2x8xf32>) -> tensor<1x7x2x16xf32>
  return %whole : tensor<1x7x2x16xf32>
}

// -----

// A partial rotate-half rotary (GPT-NeoX, Phi, StableLM): concat(rotation of x[..., :8],
// x[..., 8:]) is one llmc.rotary of x with rotary_embedding_dim 8.
// CHECK-LABEL: func.func @partial_halves
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %{{.*}}, %{{.*}}, %{{.*}} {rotary_embedding_dim = 8 : i64} : (tensor<1x2x7x16xf32>
// CHECK: return %[[R]]
// CHECK-NOT: llmc.concat
func.func @partial_halves(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x4xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x4xf32>, tensor<1x7x4xf32>) -> tensor<1x7x8xf32>
  %c = llmc.cos %angles : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
  %s = llmc.sin %angles : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x8xf32>) -> tensor<1x1x7x8xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x8xf32>) -> tensor<1x1x7x8xf32>
  %part = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %pass = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %direct = llmc.mul %part, %c4 : (tensor<1x2x7x8xf32>, tensor<1x1x7x8xf32>) -> tensor<1x2x7x8xf32>
  %lo = llmc.slice %part {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x4xf32>
  %hi = llmc.slice %part {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x4xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x4xf32>) -> tensor<1x2x7x4xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x7x4xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x7x8xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x8xf32>, tensor<1x1x7x8xf32>) -> tensor<1x2x7x8xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %whole = llmc.concat %y, %pass {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  return %whole : tensor<1x2x7x16xf32>
}

// -----

// The rest appended from another tensor: only the rotation becomes llmc.rotary (of x[..., :8]);
// the concatenation stays.
// CHECK-LABEL: func.func @partial_rest_elsewhere
// CHECK: %[[R:.*]] = llmc.rotary %{{.*}} {rotary_embedding_dim = 8 : i64} : (tensor<1x2x7x8xf32>
// CHECK: llmc.concat %[[R]], %{{.*}}
func.func @partial_rest_elsewhere(%x: tensor<1x2x7x16xf32>, %other: tensor<1x2x7x16xf32>, %a: tensor<1x7x4xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x4xf32>, tensor<1x7x4xf32>) -> tensor<1x7x8xf32>
  %c = llmc.cos %angles : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
  %s = llmc.sin %angles : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x8xf32>) -> tensor<1x1x7x8xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x8xf32>) -> tensor<1x1x7x8xf32>
  %part = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %pass = llmc.slice %other {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %direct = llmc.mul %part, %c4 : (tensor<1x2x7x8xf32>, tensor<1x1x7x8xf32>) -> tensor<1x2x7x8xf32>
  %lo = llmc.slice %part {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x4xf32>
  %hi = llmc.slice %part {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x4xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x4xf32>) -> tensor<1x2x7x4xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x7x4xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x7x8xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x8xf32>, tensor<1x1x7x8xf32>) -> tensor<1x2x7x8xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %whole = llmc.concat %y, %pass {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  return %whole : tensor<1x2x7x16xf32>
}

// -----

// Neighbours paired with tables that double the angles the halves' way (concat(a, a)): the
// angle of feature 2i + 1 would be a[2i + 1 mod 8], not a[i]. Left as it is.
// CHECK-LABEL: func.func @neighbours_with_halves_tables
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @neighbours_with_halves_tables(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %heads = llmc.constant dense<[1, 2, 7, 16]> : tensor<4xi64>
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %even = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %odd = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %odd : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %e1 = llmc.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %pairs = llmc.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x2x7x8x1xf32>, tensor<1x2x7x8x1xf32>) -> tensor<1x2x7x8x2xf32>
  %rot = llmc.reshape %pairs, %heads : (tensor<1x2x7x8x2xf32>, tensor<4xi64>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// GLM's, Helium's and ERNIE 4.5's: neighbours paired, the tables Llama's of halves (cos and sin
// of concat(a, a), unsqueezed on the heads axis) cut to their first half, then
// repeat_interleave(2): each angle a[i] twice, as the neighbours read them. One interleaved
// llmc.rotary on cos(a), sin(a).
// CHECK-LABEL: func.func @neighbours_from_first_half
// CHECK-DAG: %[[COS:.*]] = llmc.cos %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK-DAG: %[[SIN:.*]] = llmc.sin %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK: llmc.rotary %arg0, %[[COS]], %[[SIN]], %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 16 : i64}
// CHECK-NOT: llmc.neg
func.func @neighbours_from_first_half(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %heads = llmc.constant dense<[1, 2, 7, 16]> : tensor<4xi64>
  %two = llmc.constant dense<[1, 1, 1, 8, 2]> : tensor<5xi64>
  %flat = llmc.constant dense<[1, 1, 7, 16]> : tensor<4xi64>
  %halves = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %cf = llmc.cos %halves : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %sf = llmc.sin %halves : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %cu = llmc.unsqueeze %cf {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %su = llmc.unsqueeze %sf {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %ch = llmc.slice %cu {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x1x7x16xf32>) -> tensor<1x1x7x8xf32>
  %sh = llmc.slice %su {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x1x7x16xf32>) -> tensor<1x1x7x8xf32>
  %c1 = llmc.unsqueeze %ch {axes = array<i64: 4>} : (tensor<1x1x7x8xf32>) -> tensor<1x1x7x8x1xf32>
  %s1 = llmc.unsqueeze %sh {axes = array<i64: 4>} : (tensor<1x1x7x8xf32>) -> tensor<1x1x7x8x1xf32>
  %c2 = llmc.expand %c1, %two : (tensor<1x1x7x8x1xf32>, tensor<5xi64>) -> tensor<1x1x7x8x2xf32>
  %s2 = llmc.expand %s1, %two : (tensor<1x1x7x8x1xf32>, tensor<5xi64>) -> tensor<1x1x7x8x2xf32>
  %c4 = llmc.reshape %c2, %flat : (tensor<1x1x7x8x2xf32>, tensor<4xi64>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.reshape %s2, %flat : (tensor<1x1x7x8x2xf32>, tensor<4xi64>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %even = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %odd = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %odd : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %e1 = llmc.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %pairs = llmc.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x2x7x8x1xf32>, tensor<1x2x7x8x1xf32>) -> tensor<1x2x7x8x2xf32>
  %rot = llmc.reshape %pairs, %heads : (tensor<1x2x7x8x2xf32>, tensor<4xi64>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// The same tables cut in their middle (features 4 to 12 of concat(a, a): the angles a[4..8] then
// a[0..4]), which no half table of the plan holds. Left as it is.
// CHECK-LABEL: func.func @neighbours_from_middle
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @neighbours_from_middle(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %heads = llmc.constant dense<[1, 2, 7, 16]> : tensor<4xi64>
  %two = llmc.constant dense<[1, 1, 1, 8, 2]> : tensor<5xi64>
  %flat = llmc.constant dense<[1, 1, 7, 16]> : tensor<4xi64>
  %halves = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %cf = llmc.cos %halves : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %sf = llmc.sin %halves : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %cu = llmc.unsqueeze %cf {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %su = llmc.unsqueeze %sf {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %ch = llmc.slice %cu {axes = array<i64: 3>, ends = array<i64: 12>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x1x7x16xf32>) -> tensor<1x1x7x8xf32>
  %sh = llmc.slice %su {axes = array<i64: 3>, ends = array<i64: 12>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x1x7x16xf32>) -> tensor<1x1x7x8xf32>
  %c1 = llmc.unsqueeze %ch {axes = array<i64: 4>} : (tensor<1x1x7x8xf32>) -> tensor<1x1x7x8x1xf32>
  %s1 = llmc.unsqueeze %sh {axes = array<i64: 4>} : (tensor<1x1x7x8xf32>) -> tensor<1x1x7x8x1xf32>
  %c2 = llmc.expand %c1, %two : (tensor<1x1x7x8x1xf32>, tensor<5xi64>) -> tensor<1x1x7x8x2xf32>
  %s2 = llmc.expand %s1, %two : (tensor<1x1x7x8x1xf32>, tensor<5xi64>) -> tensor<1x1x7x8x2xf32>
  %c4 = llmc.reshape %c2, %flat : (tensor<1x1x7x8x2xf32>, tensor<4xi64>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.reshape %s2, %flat : (tensor<1x1x7x8x2xf32>, tensor<4xi64>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %even = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %odd = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %odd : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %e1 = llmc.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %pairs = llmc.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x2x7x8x1xf32>, tensor<1x2x7x8x1xf32>) -> tensor<1x2x7x8x2xf32>
  %rot = llmc.reshape %pairs, %heads : (tensor<1x2x7x8x2xf32>, tensor<4xi64>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// The pairs stacked the other way round (x[..., 0::2] negated first): not a rotation by these
// tables. Left as it is.
// CHECK-LABEL: func.func @neighbours_swapped
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @neighbours_swapped(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %two = llmc.constant dense<[1, 1, 1, 2]> : tensor<4xi64>
  %flat = llmc.constant dense<[1, 7, 16]> : tensor<3xi64>
  %heads = llmc.constant dense<[1, 2, 7, 16]> : tensor<4xi64>
  %a1 = llmc.unsqueeze %a {axes = array<i64: 3>} : (tensor<1x7x8xf32>) -> tensor<1x7x8x1xf32>
  %a2 = llmc.expand %a1, %two : (tensor<1x7x8x1xf32>, tensor<4xi64>) -> tensor<1x7x8x2xf32>
  %angles = llmc.reshape %a2, %flat : (tensor<1x7x8x2xf32>, tensor<3xi64>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %even = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %odd = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %even : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %n1 = llmc.unsqueeze %neg {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %o1 = llmc.unsqueeze %odd {axes = array<i64: -1>} : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8x1xf32>
  %pairs = llmc.concat %n1, %o1 {axis = -1 : i64} : (tensor<1x2x7x8x1xf32>, tensor<1x2x7x8x1xf32>) -> tensor<1x2x7x8x2xf32>
  %rot = llmc.reshape %pairs, %heads : (tensor<1x2x7x8x2xf32>, tensor<4xi64>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// One table row for seven tokens (broadcast over the sequence): the rotary op takes a row per
// token, so this is left as it is.
// CHECK-LABEL: func.func @broadcast_sequence
// CHECK-NOT: llmc.rotary
// CHECK: llmc.neg
func.func @broadcast_sequence(%x: tensor<1x2x7x16xf32>, %a: tensor<1x1x8xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x1x8xf32>, tensor<1x1x8xf32>) -> tensor<1x1x16xf32>
  %c = llmc.cos %angles : (tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  %s = llmc.sin %angles : (tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x1x16xf32>) -> tensor<1x1x1x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x1x16xf32>) -> tensor<1x1x1x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %rot = llmc.concat %neg, %lo {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// DeepSeek's rotation of de-interleaved pairs (apply_rotary_pos_emb_interleave): e = x[..., 0::2],
// o = x[..., 1::2], concat(e * cos - o * sin, o * cos + e * sin), one angle per pair (tables
// [1, 1, S, D/2]). The interleaved rotation of x, its result de-interleaved by a transpose of
// [.., D/2, 2]; no slice or concatenation left.
// CHECK-LABEL: func.func @deinterleaved_pairs
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %arg1, %arg2, %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 8 : i64}
// CHECK: %[[P:.*]] = llmc.reshape %[[R]], %{{.*}} : (tensor<1x2x5x8xf32>, tensor<5xi64>) -> tensor<1x2x5x4x2xf32>
// CHECK: %[[T:.*]] = llmc.transpose %[[P]] {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x5x4x2xf32>) -> tensor<1x2x5x2x4xf32>
// CHECK: %[[Y:.*]] = llmc.reshape %[[T]], %{{.*}} : (tensor<1x2x5x2x4xf32>, tensor<4xi64>) -> tensor<1x2x5x8xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: llmc.slice
func.func @deinterleaved_pairs(%x: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>, %other: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %e = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x5x4xf32>
  %o = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x5x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %s, %e : (tensor<1x1x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %oc, %es : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// Left as they are: the second half e * cos + o * sin (not a rotation), and the odd features of
// another tensor.
// CHECK-LABEL: func.func @not_a_rotation
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @not_a_rotation(%x: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>, %other: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %e = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x5x4xf32>
  %o = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x5x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %ec2 = llmc.mul %e, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os2 = llmc.mul %o, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %ec2, %os2 : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// CHECK-LABEL: func.func @odd_of_another
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @odd_of_another(%x: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>, %other: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %e = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x5x4xf32>
  %o = llmc.slice %other {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x5x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %s, %e : (tensor<1x1x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %oc, %es : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// GPT-OSS's rotation of each head's halves: x1, x2 = split(x) in two on the last axis,
// concat(x1 * cos - x2 * sin, x2 * cos + x1 * sin), tables [1, 1, S, D/2] of a batch of 1 that
// serve every batch (x's batch dynamic): one llmc.rotary of x (halves) on the tables as they
// are; no split, product or concatenation left.
// CHECK-LABEL: func.func @split_halves
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %arg1, %arg2, %{{.*}} {rotary_embedding_dim = 8 : i64} : (tensor<?x2x5x8xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<0xi64>) -> tensor<?x2x5x8xf32>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: llmc.split
func.func @split_halves(%x: tensor<?x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>) -> tensor<?x2x5x8xf32> {
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: -3>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %h:2 = llmc.split %x {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<?x2x5x8xf32>) -> (tensor<?x2x5x4xf32>, tensor<?x2x5x4xf32>)
  %ec = llmc.mul %h#0, %c : (tensor<?x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<?x2x5x4xf32>
  %os = llmc.mul %h#1, %s : (tensor<?x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<?x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<?x2x5x4xf32>, tensor<?x2x5x4xf32>) -> tensor<?x2x5x4xf32>
  %oc = llmc.mul %h#1, %c : (tensor<?x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<?x2x5x4xf32>
  %es = llmc.mul %h#0, %s : (tensor<?x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<?x2x5x4xf32>
  %second = llmc.add %oc, %es : (tensor<?x2x5x4xf32>, tensor<?x2x5x4xf32>) -> tensor<?x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = 3 : i64} : (tensor<?x2x5x4xf32>, tensor<?x2x5x4xf32>) -> tensor<?x2x5x8xf32>
  return %y : tensor<?x2x5x8xf32>
}

// -----

// The halves taken by two slices, the second sum's terms swapped, and constant tables [1, 1, S,
// D/2] (a static length's, folded at import): the rotary reads them as new constants [1, S, D/2]
// holding the same values.
// CHECK-LABEL: func.func @sliced_halves_constant_tables
// CHECK-DAG: %[[C:.*]] = llmc.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]]> : tensor<1x2x2xf32>
// CHECK-DAG: %[[S:.*]] = llmc.constant dense<{{\[\[\[}}5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]]> : tensor<1x2x2xf32>
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %[[C]], %[[S]], %{{.*}} {rotary_embedding_dim = 4 : i64}
// CHECK-NEXT: return %[[R]]
func.func @sliced_halves_constant_tables(%x: tensor<3x2x2x4xf32>) -> tensor<3x2x2x4xf32> {
  %c = llmc.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>
  %s = llmc.constant dense<[[[[5.0, 6.0], [7.0, 8.0]]]]> : tensor<1x1x2x2xf32>
  %e = llmc.slice %x {axes = array<i64: -1>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<3x2x2x4xf32>) -> tensor<3x2x2x2xf32>
  %o = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<3x2x2x4xf32>) -> tensor<3x2x2x2xf32>
  %ec = llmc.mul %c, %e : (tensor<1x1x2x2xf32>, tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32>
  %os = llmc.mul %o, %s : (tensor<3x2x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<3x2x2x2xf32>
  %first = llmc.sub %ec, %os : (tensor<3x2x2x2xf32>, tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32>
  %oc = llmc.mul %o, %c : (tensor<3x2x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<3x2x2x2xf32>
  %es = llmc.mul %e, %s : (tensor<3x2x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<3x2x2x2xf32>
  %second = llmc.add %es, %oc : (tensor<3x2x2x2xf32>, tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<3x2x2x2xf32>, tensor<3x2x2x2xf32>) -> tensor<3x2x2x4xf32>
  return %y : tensor<3x2x2x4xf32>
}

// -----

// Left as they are: halves in the wrong order (x2 first: the rotation by the negated angle),
// halves of two tensors, and a table per head ([1, 2, S, D/2], not one for all heads).
// CHECK-LABEL: func.func @halves_swapped
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @halves_swapped(%x: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>) -> tensor<1x2x5x8xf32> {
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %h:2 = llmc.split %x {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x5x8xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  %ec = llmc.mul %h#1, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %h#0, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %h#0, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %h#1, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %oc, %es : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// CHECK-LABEL: func.func @halves_of_two_tensors
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @halves_of_two_tensors(%x: tensor<1x2x5x8xf32>, %other: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>) -> tensor<1x2x5x8xf32> {
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %h:2 = llmc.split %x {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x5x8xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  %g:2 = llmc.split %other {axis = 3 : i64, split = array<i64: 4, 4>} : (tensor<1x2x5x8xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  %ec = llmc.mul %h#0, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %g#1, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %g#1, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %h#0, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %oc, %es : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// CHECK-LABEL: func.func @table_per_head
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @table_per_head(%x: tensor<1x2x5x8xf32>, %c: tensor<1x2x5x4xf32>, %s: tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32> {
  %h:2 = llmc.split %x {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x5x8xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  %ec = llmc.mul %h#0, %c : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %h#1, %s : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %h#1, %c : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %h#0, %s : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %oc, %es : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y = llmc.concat %first, %second {axis = -1 : i64} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// DeepSeek-V2's rotary in real arithmetic: the pairs taken as they come, e, o =
// x.reshape(.., D/2, 2)[..., 0] and [..., 1], and written back stacked,
// stack([e * cos - o * sin, o * cos + e * sin], -1), one angle per pair: the interleaved rotation
// of x, made [.., D/2, 2] again for the flatten after it; no gather or concatenation left.
// CHECK-LABEL: func.func @stacked_pairs
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %arg1, %arg2, %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 8 : i64} : (tensor<1x2x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<0xi64>) -> tensor<1x2x?x8xf32>
// CHECK: %[[P:.*]] = llmc.reshape %[[R]], %{{.*}} : (tensor<1x2x?x8xf32>, tensor<5xi64>) -> tensor<1x2x?x4x2xf32>
// CHECK: %[[Y:.*]] = llmc.reshape %[[P]], %{{.*}} : (tensor<1x2x?x4x2xf32>, tensor<4xi64>) -> tensor<1x2x?x8xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: llmc.gather
// CHECK-NOT: llmc.concat
func.func @stacked_pairs(%x: tensor<1x2x?x8xf32>, %a: tensor<1x?x4xf32>, %b: tensor<1x?x4xf32>) -> tensor<1x2x?x8xf32> {
  %pairs_shape = llmc.constant dense<[1, 2, -1, 4, 2]> : tensor<5xi64>
  %flat_shape = llmc.constant dense<[1, 2, -1, 8]> : tensor<4xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %pairs = llmc.reshape %x, %pairs_shape : (tensor<1x2x?x8xf32>, tensor<5xi64>) -> tensor<1x2x?x4x2xf32>
  %e = llmc.gather %pairs, %i0 {axis = 4 : i64} : (tensor<1x2x?x4x2xf32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  %o = llmc.gather %pairs, %i1 {axis = -1 : i64} : (tensor<1x2x?x4x2xf32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %es = llmc.mul %e, %s : (tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32>
  %second = llmc.add %es, %oc : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x?x4x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: 4>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x?x4x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x2x?x4x1xf32>, tensor<1x2x?x4x1xf32>) -> tensor<1x2x?x4x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x2x?x4x2xf32>, tensor<4xi64>) -> tensor<1x2x?x8xf32>
  return %y : tensor<1x2x?x8xf32>
}

// -----

// The same before the heads move (Llama 4's, since session 36): x [B, S, H, D], the tables
// unsqueezed on the heads axis (2): one llmc.rotary on the sequence [B, S, H * D] (num_heads = 2),
// its result viewed as x's shape and the pairs. Negative: heads not static (the sequence's width
// unknown) stay elementwise.
// CHECK-LABEL: func.func @stacked_pairs_before_heads_move
// CHECK: %[[SEQ:.*]] = llmc.reshape %arg0, %{{.*}} : (tensor<1x?x2x8xf32>, tensor<3xi64>) -> tensor<1x?x16xf32>
// CHECK: %[[R:.*]] = llmc.rotary %[[SEQ]], %arg1, %arg2, %{{.*}} {interleaved = 1 : i64, num_heads = 2 : i64, rotary_embedding_dim = 8 : i64} : (tensor<1x?x16xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<0xi64>) -> tensor<1x?x16xf32>
// CHECK: %[[X:.*]] = llmc.reshape %[[R]], %{{.*}} : (tensor<1x?x16xf32>, tensor<4xi64>) -> tensor<1x?x2x8xf32>
// CHECK: llmc.reshape %[[X]], %{{.*}} : (tensor<1x?x2x8xf32>, tensor<5xi64>) -> tensor<1x?x2x4x2xf32>
// CHECK-NOT: llmc.gather
// CHECK-NOT: llmc.concat
func.func @stacked_pairs_before_heads_move(%x: tensor<1x?x2x8xf32>, %a: tensor<1x?x4xf32>, %b: tensor<1x?x4xf32>) -> tensor<1x?x2x8xf32> {
  %pairs_shape = llmc.constant dense<[1, -1, 2, 4, 2]> : tensor<5xi64>
  %flat_shape = llmc.constant dense<[1, -1, 2, 8]> : tensor<4xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %c = llmc.unsqueeze %a {axes = array<i64: 2>} : (tensor<1x?x4xf32>) -> tensor<1x?x1x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 2>} : (tensor<1x?x4xf32>) -> tensor<1x?x1x4xf32>
  %pairs = llmc.reshape %x, %pairs_shape : (tensor<1x?x2x8xf32>, tensor<5xi64>) -> tensor<1x?x2x4x2xf32>
  %e = llmc.gather %pairs, %i0 {axis = 4 : i64} : (tensor<1x?x2x4x2xf32>, tensor<i64>) -> tensor<1x?x2x4xf32>
  %o = llmc.gather %pairs, %i1 {axis = -1 : i64} : (tensor<1x?x2x4x2xf32>, tensor<i64>) -> tensor<1x?x2x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x2x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x2x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32>
  %es = llmc.mul %e, %s : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x2x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x2x4xf32>
  %second = llmc.add %es, %oc : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x?x2x4xf32>) -> tensor<1x?x2x4x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: 4>} : (tensor<1x?x2x4xf32>) -> tensor<1x?x2x4x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x?x2x4x1xf32>, tensor<1x?x2x4x1xf32>) -> tensor<1x?x2x4x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x?x2x4x2xf32>, tensor<4xi64>) -> tensor<1x?x2x8xf32>
  return %y : tensor<1x?x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @stacked_pairs_heads_unknown
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @stacked_pairs_heads_unknown(%x: tensor<1x?x?x8xf32>, %a: tensor<1x?x4xf32>, %b: tensor<1x?x4xf32>) -> tensor<1x?x?x8xf32> {
  %pairs_shape = llmc.constant dense<[1, 0, 0, 4, 2]> : tensor<5xi64>
  %flat_shape = llmc.constant dense<[1, 0, 0, 8]> : tensor<4xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %c = llmc.unsqueeze %a {axes = array<i64: 2>} : (tensor<1x?x4xf32>) -> tensor<1x?x1x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 2>} : (tensor<1x?x4xf32>) -> tensor<1x?x1x4xf32>
  %pairs = llmc.reshape %x, %pairs_shape : (tensor<1x?x?x8xf32>, tensor<5xi64>) -> tensor<1x?x?x4x2xf32>
  %e = llmc.gather %pairs, %i0 {axis = 4 : i64} : (tensor<1x?x?x4x2xf32>, tensor<i64>) -> tensor<1x?x?x4xf32>
  %o = llmc.gather %pairs, %i1 {axis = -1 : i64} : (tensor<1x?x?x4x2xf32>, tensor<i64>) -> tensor<1x?x?x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x?x?x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x?x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x?x?x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x?x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x?x?x4xf32>, tensor<1x?x?x4xf32>) -> tensor<1x?x?x4xf32>
  %es = llmc.mul %e, %s : (tensor<1x?x?x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x?x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x?x?x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x?x4xf32>
  %second = llmc.add %es, %oc : (tensor<1x?x?x4xf32>, tensor<1x?x?x4xf32>) -> tensor<1x?x?x4xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x?x?x4xf32>) -> tensor<1x?x?x4x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: 4>} : (tensor<1x?x?x4xf32>) -> tensor<1x?x?x4x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x?x?x4x1xf32>, tensor<1x?x?x4x1xf32>) -> tensor<1x?x?x4x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x?x?x4x2xf32>, tensor<4xi64>) -> tensor<1x?x?x8xf32>
  return %y : tensor<1x?x?x8xf32>
}

// -----

// Left as they are: parts gathered on the next-to-last axis of x.reshape(.., 2, D/2) (the halves,
// here of D = 4, not pairs of neighbours); the halves split and written back stacked; and the
// odd features gathered from another tensor's pairs.
// CHECK-LABEL: func.func @stacked_halves
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @stacked_halves(%x: tensor<1x2x5x4xf32>, %a: tensor<1x5x2xf32>, %b: tensor<1x5x2xf32>) -> tensor<1x2x5x4xf32> {
  %halves_shape = llmc.constant dense<[1, 2, 5, 2, 2]> : tensor<5xi64>
  %flat_shape = llmc.constant dense<[1, 2, 5, 4]> : tensor<4xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x2xf32>) -> tensor<1x1x5x2xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x2xf32>) -> tensor<1x1x5x2xf32>
  %halves = llmc.reshape %x, %halves_shape : (tensor<1x2x5x4xf32>, tensor<5xi64>) -> tensor<1x2x5x2x2xf32>
  %e = llmc.gather %halves, %i0 {axis = 3 : i64} : (tensor<1x2x5x2x2xf32>, tensor<i64>) -> tensor<1x2x5x2xf32>
  %o = llmc.gather %halves, %i1 {axis = 3 : i64} : (tensor<1x2x5x2x2xf32>, tensor<i64>) -> tensor<1x2x5x2xf32>
  %ec = llmc.mul %e, %c : (tensor<1x2x5x2xf32>, tensor<1x1x5x2xf32>) -> tensor<1x2x5x2xf32>
  %os = llmc.mul %o, %s : (tensor<1x2x5x2xf32>, tensor<1x1x5x2xf32>) -> tensor<1x2x5x2xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x2xf32>, tensor<1x2x5x2xf32>) -> tensor<1x2x5x2xf32>
  %es = llmc.mul %e, %s : (tensor<1x2x5x2xf32>, tensor<1x1x5x2xf32>) -> tensor<1x2x5x2xf32>
  %oc = llmc.mul %o, %c : (tensor<1x2x5x2xf32>, tensor<1x1x5x2xf32>) -> tensor<1x2x5x2xf32>
  %second = llmc.add %es, %oc : (tensor<1x2x5x2xf32>, tensor<1x2x5x2xf32>) -> tensor<1x2x5x2xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x2x5x2xf32>) -> tensor<1x2x5x2x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: -1>} : (tensor<1x2x5x2xf32>) -> tensor<1x2x5x2x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x2x5x2x1xf32>, tensor<1x2x5x2x1xf32>) -> tensor<1x2x5x2x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x2x5x2x2xf32>, tensor<4xi64>) -> tensor<1x2x5x4xf32>
  return %y : tensor<1x2x5x4xf32>
}

// -----

// CHECK-LABEL: func.func @split_halves_stacked
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @split_halves_stacked(%x: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>) -> tensor<1x2x5x8xf32> {
  %flat_shape = llmc.constant dense<[1, 2, 5, 8]> : tensor<4xi64>
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %h:2 = llmc.split %x {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x5x8xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  %ec = llmc.mul %h#0, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %h#1, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %h#0, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %h#1, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %es, %oc : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x5x4x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: -1>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x5x4x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x2x5x4x1xf32>, tensor<1x2x5x4x1xf32>) -> tensor<1x2x5x4x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x2x5x4x2xf32>, tensor<4xi64>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// CHECK-LABEL: func.func @stacked_pairs_of_another
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @stacked_pairs_of_another(%x: tensor<1x2x5x8xf32>, %a: tensor<1x5x4xf32>, %b: tensor<1x5x4xf32>, %other: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %pairs_shape = llmc.constant dense<[1, 2, 5, 4, 2]> : tensor<5xi64>
  %flat_shape = llmc.constant dense<[1, 2, 5, 8]> : tensor<4xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x5x4xf32>) -> tensor<1x1x5x4xf32>
  %pairs = llmc.reshape %x, %pairs_shape : (tensor<1x2x5x8xf32>, tensor<5xi64>) -> tensor<1x2x5x4x2xf32>
  %other_pairs = llmc.reshape %other, %pairs_shape : (tensor<1x2x5x8xf32>, tensor<5xi64>) -> tensor<1x2x5x4x2xf32>
  %e = llmc.gather %pairs, %i0 {axis = 4 : i64} : (tensor<1x2x5x4x2xf32>, tensor<i64>) -> tensor<1x2x5x4xf32>
  %o = llmc.gather %other_pairs, %i1 {axis = 4 : i64} : (tensor<1x2x5x4x2xf32>, tensor<i64>) -> tensor<1x2x5x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %es = llmc.mul %e, %s : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  %second = llmc.add %es, %oc : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x5x4x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: -1>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x5x4x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x2x5x4x1xf32>, tensor<1x2x5x4x1xf32>) -> tensor<1x2x5x4x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x2x5x4x2xf32>, tensor<4xi64>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// -----

// The same with the view to [B, 1, S, D] folded into the cut into pairs (DeepSeek-V2's key
// without a cache: [B, S, D] to [B, 1, S, D/2, 2] at once): the view made again, then rotated.
// CHECK-LABEL: func.func @stacked_pairs_of_a_folded_view
// CHECK: %[[X:.*]] = llmc.reshape %arg0, %{{.*}} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x1x?x8xf32>
// CHECK: %[[R:.*]] = llmc.rotary %[[X]], %arg1, %arg2, %{{.*}} {interleaved = 1 : i64, rotary_embedding_dim = 8 : i64}
// CHECK: llmc.reshape %[[R]], %{{.*}} : (tensor<1x1x?x8xf32>, tensor<5xi64>) -> tensor<1x1x?x4x2xf32>
// CHECK-NOT: llmc.gather
func.func @stacked_pairs_of_a_folded_view(%x: tensor<1x?x8xf32>, %a: tensor<1x?x4xf32>, %b: tensor<1x?x4xf32>) -> tensor<1x1x?x8xf32> {
  %pairs_shape = llmc.constant dense<[1, 1, -1, 4, 2]> : tensor<5xi64>
  %flat_shape = llmc.constant dense<[1, 1, -1, 8]> : tensor<4xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %c = llmc.unsqueeze %a {axes = array<i64: 1>} : (tensor<1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %s = llmc.unsqueeze %b {axes = array<i64: 1>} : (tensor<1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %pairs = llmc.reshape %x, %pairs_shape : (tensor<1x?x8xf32>, tensor<5xi64>) -> tensor<1x1x?x4x2xf32>
  %e = llmc.gather %pairs, %i0 {axis = 4 : i64} : (tensor<1x1x?x4x2xf32>, tensor<i64>) -> tensor<1x1x?x4xf32>
  %o = llmc.gather %pairs, %i1 {axis = 4 : i64} : (tensor<1x1x?x4x2xf32>, tensor<i64>) -> tensor<1x1x?x4xf32>
  %ec = llmc.mul %e, %c : (tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %os = llmc.mul %o, %s : (tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %first = llmc.sub %ec, %os : (tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %es = llmc.mul %e, %s : (tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %oc = llmc.mul %o, %c : (tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %second = llmc.add %es, %oc : (tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32>
  %u1 = llmc.unsqueeze %first {axes = array<i64: -1>} : (tensor<1x1x?x4xf32>) -> tensor<1x1x?x4x1xf32>
  %u2 = llmc.unsqueeze %second {axes = array<i64: -1>} : (tensor<1x1x?x4xf32>) -> tensor<1x1x?x4x1xf32>
  %stacked = llmc.concat %u1, %u2 {axis = -1 : i64} : (tensor<1x1x?x4x1xf32>, tensor<1x1x?x4x1xf32>) -> tensor<1x1x?x4x2xf32>
  %y = llmc.reshape %stacked, %flat_shape : (tensor<1x1x?x4x2xf32>, tensor<4xi64>) -> tensor<1x1x?x8xf32>
  return %y : tensor<1x1x?x8xf32>
}

// -----

// A cut into pairs that something other than a gather of one feature reads stays one reshape.
// CHECK-LABEL: func.func @pairs_read_whole
// CHECK: llmc.reshape %arg0, %{{.*}} : (tensor<1x?x8xf32>, tensor<5xi64>) -> tensor<1x1x?x4x2xf32>
// CHECK-NOT: llmc.reshape
func.func @pairs_read_whole(%x: tensor<1x?x8xf32>) -> (tensor<1x1x?x4xf32>, tensor<1x1x?x4x2xf32>) {
  %pairs_shape = llmc.constant dense<[1, 1, -1, 4, 2]> : tensor<5xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %pairs = llmc.reshape %x, %pairs_shape : (tensor<1x?x8xf32>, tensor<5xi64>) -> tensor<1x1x?x4x2xf32>
  %e = llmc.gather %pairs, %i0 {axis = 4 : i64} : (tensor<1x1x?x4x2xf32>, tensor<i64>) -> tensor<1x1x?x4xf32>
  return %e, %pairs : tensor<1x1x?x4xf32>, tensor<1x1x?x4x2xf32>
}

// -----

// NanoChat's rotate_half, concat(x[..., D/2:], -x[..., :D/2]), the negative of Llama's partner:
// the rotation by the opposite angles, one llmc.rotary on the half tables with the sines negated.
// CHECK-LABEL: func.func @negated_partner
// CHECK-DAG: %[[COS:.*]] = llmc.cos %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK-DAG: %[[SIN:.*]] = llmc.sin %arg1 : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK: %[[NEG:.*]] = llmc.neg %[[SIN]] : (tensor<1x7x8xf32>) -> tensor<1x7x8xf32>
// CHECK: llmc.rotary %arg0, %[[COS]], %[[NEG]], %{{.*}} {rotary_embedding_dim = 16 : i64}
// CHECK-NOT: llmc.concat
func.func @negated_partner(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %lo : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %rot = llmc.concat %hi, %neg {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}

// -----

// Left as it is: concat(x[..., :D/2], -x[..., D/2:]), each half in its own place (no rotation).
// CHECK-LABEL: func.func @halves_in_place_negated
// CHECK-NOT: llmc.rotary
// CHECK: llmc.concat
func.func @halves_in_place_negated(%x: tensor<1x2x7x16xf32>, %a: tensor<1x7x8xf32>) -> tensor<1x2x7x16xf32> {
  %angles = llmc.concat %a, %a {axis = -1 : i64} : (tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x7x16xf32>
  %c = llmc.cos %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %s = llmc.sin %angles : (tensor<1x7x16xf32>) -> tensor<1x7x16xf32>
  %c4 = llmc.unsqueeze %c {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %s4 = llmc.unsqueeze %s {axes = array<i64: 1>} : (tensor<1x7x16xf32>) -> tensor<1x1x7x16xf32>
  %direct = llmc.mul %x, %c4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %lo = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %hi = llmc.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x7x16xf32>) -> tensor<1x2x7x8xf32>
  %neg = llmc.neg %hi : (tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %rot = llmc.concat %lo, %neg {axis = -1 : i64} : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x16xf32>
  %rotated = llmc.mul %rot, %s4 : (tensor<1x2x7x16xf32>, tensor<1x1x7x16xf32>) -> tensor<1x2x7x16xf32>
  %y = llmc.add %direct, %rotated : (tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x7x16xf32>
  return %y : tensor<1x2x7x16xf32>
}
