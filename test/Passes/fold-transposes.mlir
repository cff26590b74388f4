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

// -----

// The keys of a KV-cache export: heads split, rotated, then the cache layout. The rotary takes the
// rows [1, 7, 3 * 64] instead, and the two transposes then meet and move only the unit batch.
// CHECK-LABEL: func.func @cache_keys
// CHECK-NOT: llmc.transpose
// CHECK: %[[ROWS:.*]] = llmc.reshape %arg0, %{{.*}} : (tensor<1x7x3x64xf32>, tensor<3xi64>) -> tensor<1x7x192xf32>
// CHECK: %[[ROT:.*]] = llmc.rotary %[[ROWS]], %arg1, %arg2, %arg3 {num_heads = 3 : i64, rotary_embedding_dim = 64 : i64} : {{.*}} -> tensor<1x7x192xf32>
// CHECK: %[[HEADS:.*]] = llmc.reshape %[[ROT]], %{{.*}} : (tensor<1x7x192xf32>, tensor<4xi64>) -> tensor<1x7x3x64xf32>
// CHECK: %[[S:.*]] = llmc.squeeze %[[HEADS]] {axes = array<i64: 0>}
// CHECK: llmc.unsqueeze %[[S]] {axes = array<i64: 1>} : (tensor<7x3x64xf32>) -> tensor<7x1x3x64xf32>
// CHECK-NOT: llmc.transpose
func.func @cache_keys(%k: tensor<1x7x3x64xf32>, %cos: tensor<1x7x32xf32>, %sin: tensor<1x7x32xf32>, %none: tensor<0xi64>) -> tensor<7x1x3x64xf32> {
  %0 = llmc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x64xf32>) -> tensor<1x3x7x64xf32>
  %1 = llmc.rotary %0, %cos, %sin, %none {rotary_embedding_dim = 64 : i64} : (tensor<1x3x7x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>, tensor<0xi64>) -> tensor<1x3x7x64xf32>
  %2 = llmc.transpose %1 {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x3x7x64xf32>) -> tensor<7x1x3x64xf32>
  return %2 : tensor<7x1x3x64xf32>
}

// -----

// With a dynamic sequence, position ids and the heads-major value used elsewhere: the rotary
// still takes the rows, and the transpose stays for its other reader.
// CHECK-LABEL: func.func @dynamic_seq_shared
// CHECK: %[[T:.*]] = llmc.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x3x64xf32>) -> tensor<2x3x?x64xf32>
// CHECK: %[[ROT:.*]] = llmc.rotary %{{.*}}, %arg1, %arg2, %arg3 {num_heads = 3 : i64} : (tensor<2x?x192xf32>
// CHECK: %[[R:.*]] = llmc.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x3x64xf32>) -> tensor<2x3x?x64xf32>
// CHECK: return %[[R]], %[[T]]
func.func @dynamic_seq_shared(%k: tensor<2x?x3x64xf32>, %cos: tensor<64x32xf32>, %sin: tensor<64x32xf32>, %ids: tensor<2x?xi64>) -> (tensor<2x3x?x64xf32>, tensor<2x3x?x64xf32>) {
  %0 = llmc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x3x64xf32>) -> tensor<2x3x?x64xf32>
  %1 = llmc.rotary %0, %cos, %sin, %ids : (tensor<2x3x?x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<2x?xi64>) -> tensor<2x3x?x64xf32>
  return %1, %0 : tensor<2x3x?x64xf32>, tensor<2x3x?x64xf32>
}

// -----

// Not the heads/sequence swap, or dynamic heads: the rotary keeps its transposed input.
// CHECK-LABEL: func.func @other_transposes
// CHECK: %[[A:.*]] = llmc.transpose %arg0 {perm = array<i64: 0, 1, 3, 2>}
// CHECK: llmc.rotary %[[A]], %arg2, %arg3, %arg4 :
// CHECK: %[[B:.*]] = llmc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: llmc.rotary %[[B]], %arg2, %arg3, %arg4 :
// CHECK-NOT: num_heads
func.func @other_transposes(%a: tensor<1x3x64x7xf32>, %b: tensor<1x7x?x64xf32>, %cos: tensor<64x32xf32>, %sin: tensor<64x32xf32>, %ids: tensor<1x7xi64>) -> (tensor<1x3x7x64xf32>, tensor<1x?x7x64xf32>) {
  %0 = llmc.transpose %a {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x3x64x7xf32>) -> tensor<1x3x7x64xf32>
  %1 = llmc.rotary %0, %cos, %sin, %ids : (tensor<1x3x7x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<1x7xi64>) -> tensor<1x3x7x64xf32>
  %2 = llmc.transpose %b {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x?x64xf32>) -> tensor<1x?x7x64xf32>
  %3 = llmc.rotary %2, %cos, %sin, %ids : (tensor<1x?x7x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<1x7xi64>) -> tensor<1x?x7x64xf32>
  return %1, %3 : tensor<1x3x7x64xf32>, tensor<1x?x7x64xf32>
}

// -----

// An attention that reads its keys and values as [B, H, S, D] transposes of [B, S, H, D] values
// reads their rows [B, S, H * D] in place: the values' 3-D source, the keys (a rotation's rows,
// not split from a 3-D value here) reshaped; the tables it has turn the query only
// (rotate_keys = 0, as the 4-D keys were not turned).
// CHECK-LABEL: func.func @attention_rows
// CHECK-NOT: llmc.reshape %arg2
// CHECK: %[[KROWS:.*]] = llmc.reshape %arg1, %{{.*}} : (tensor<1x5x2x4xf32>, tensor<3xi64>) -> tensor<1x5x8xf32>
// CHECK: llmc.fused_attention %arg0, %[[KROWS]], %arg2, %{{.*}}, %arg4, %arg4 {{{.*}}rotary_dim = 2 : i64, rotate_keys = 0 : i64}
// CHECK-NOT: llmc.transpose
func.func @attention_rows(%q: tensor<1x5x8xf32>, %k: tensor<1x5x2x4xf32>, %v: tensor<1x5x8xf32>, %shape: tensor<4xi64>,
                          %table: tensor<1x5x1xf32>) -> tensor<1x5x8xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %kt = llmc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x5x4xf32>
  %v4 = llmc.reshape %v, %shape : (tensor<1x5x8xf32>, tensor<4xi64>) -> tensor<1x5x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x5x4xf32>
  %o = llmc.fused_attention %q, %kt, %vt, %e, %table, %table {is_causal = 1 : i64, kv_num_heads = 2 : i64, q_num_heads = 2 : i64, rotary_dim = 2 : i64} : (tensor<1x5x8xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<0xf32>, tensor<1x5x1xf32>, tensor<1x5x1xf32>) -> tensor<1x5x8xf32>
  return %o : tensor<1x5x8xf32>
}

// -----

// Kept: the values read 4-D as they are (no transpose to take), so the keys stay 4-D too.
// CHECK-LABEL: func.func @attention_values_4d
// CHECK: %[[KT:.*]] = llmc.transpose %arg1
// CHECK: llmc.fused_attention %arg0, %[[KT]], %arg2,
func.func @attention_values_4d(%q: tensor<1x5x8xf32>, %k: tensor<1x5x2x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x5x8xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %kt = llmc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x5x4xf32>
  %o = llmc.fused_attention %q, %kt, %v, %e, %e, %e {kv_num_heads = 2 : i64, q_num_heads = 2 : i64} : (tensor<1x5x8xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x5x8xf32>
  return %o : tensor<1x5x8xf32>
}
