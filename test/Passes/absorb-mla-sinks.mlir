// RUN: %llmc-opt %s -llmc-absorb-mla | FileCheck %s
// The sinks' column a constant with one logit per head: the same.
// RUN: sed 's/%col = llmc.expand %hsinks, %cshape : (tensor<1x2x1x1xf32>, tensor<4xi64>)/%col = llmc.constant dense<[[[[0.5], [0.5]], [[-1.25], [-1.25]]]]> : (/; s/: ( -> tensor<1x2x2x1xf32>/: tensor<1x2x2x1xf32>/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=CONSTANT
// Not absorbed (the IR stays as it is): a sink logit per query row, not per head; a slice that
// keeps the sinks' column; the masked scores read elsewhere too.
// RUN: sed 's/%col = llmc.expand %hsinks, %cshape : (tensor<1x2x1x1xf32>, tensor<4xi64>)/%col = llmc.constant dense<[[[[0.5], [0.25]], [[-1.25], [-1.25]]]]> : (/; s/: ( -> tensor<1x2x2x1xf32>/: tensor<1x2x2x1xf32>/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED
// RUN: sed 's/ends = array<i64: -1>/ends = array<i64: 9223372036854775807>/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED
// RUN: sed 's/^  %col = llmc.expand/  %extra = llmc.neg %masked : (tensor<1x2x2x?xf32>) -> tensor<1x2x2x?xf32>\n  %col = llmc.expand/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED

// absorb-mla-latent-cache.mlir's layer with attention sinks as HY V4 (transformers' HYV4)
// exports them: softmax(concat(scores + mask, sinks expanded to [B, H, Sq, 1]) - its row max),
// the sinks' column sliced off. The attention becomes llmc.latent_attention with the sinks [H]
// as its sixth operand.
// CHECK-LABEL: func.func @mla_sinks
// CHECK: %[[SINKS:.*]] = llmc.reshape %{{.*}}, %{{.*}} : (tensor<1x2x1x1xf32>, tensor<1xi64>) -> tensor<2xf32>
// CHECK: llmc.latent_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg3, %[[SINKS]] {rope_dim = 2 : i64, scale = 0.49999997 : f32}
// CHECK-NOT: llmc.softmax
// CHECK: return

// CONSTANT-LABEL: func.func @mla_sinks
// CONSTANT: %[[SINKS:.*]] = llmc.constant dense<[5.000000e-01, -1.250000e+00]> : tensor<2xf32>
// CONSTANT: llmc.latent_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg3, %[[SINKS]]
// CONSTANT-NOT: llmc.softmax

// UNCHANGED-NOT: latent_attention
// UNCHANGED: llmc.softmax
// UNCHANGED-NOT: latent_attention

func.func @mla_sinks(%latent: tensor<1x1x2x4xf32> {llmc.name = "latent"}, %rope: tensor<1x1x2x2xf32> {llmc.name = "rope"},
               %xq: tensor<1x2x3xf32> {llmc.name = "xq"}, %mask: tensor<1x1x2x?xf32> {llmc.name = "mask"},
               %pk: tensor<?x1x4xf32> {llmc.name = "past_key_values.0.key"},
               %pv: tensor<?x1x2xf32> {llmc.name = "past_key_values.0.value"})
    -> (tensor<1x2x4xf32> {llmc.name = "out"}, tensor<?x1x4xf32> {llmc.name = "present.0.key"},
        tensor<?x1x2xf32> {llmc.name = "present.0.value"}) {
  %wkv = llmc.constant dense<[[0.27, -0.46, -0.92, -0.97, 0.63, 0.83, 0.21, 0.46], [0.09, 0.87, 0.63, -0.99, 0.71, -0.93, 0.46, -0.65], [0.73, 0.08, -0.40, -0.15, -0.94, -0.75, 0.34, 0.29], [0.23, -0.23, 0.99, 0.96, 0.37, 0.30, 0.38, -0.22]]> : tensor<4x8xf32>
  %wqb = llmc.constant dense<[[-0.73, 0.44, 0.05, -0.38, -0.03, 0.78, 0.87, -0.28], [0.14, -0.36, 0.19, -0.32, -0.22, 0.78, -0.55, 0.25], [-0.83, 0.67, 0.57, -0.52, 0.75, -0.88, -0.33, -0.70]]> : tensor<3x8xf32>
  %wo = llmc.constant dense<[[-0.10, 0.59, -0.54, -0.90], [-0.19, -0.60, -0.82, 0.16], [-0.40, 0.34, -0.60, 0.88], [-0.27, -0.79, 0.26, 0.85]]> : tensor<4x4xf32>
  %heads = llmc.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %qheads = llmc.constant dense<[1, 2, 2, 4]> : tensor<4xi64>
  %widen = llmc.constant dense<[1, 2, 1, 1]> : tensor<4xi64>
  %flatl = llmc.constant dense<[0, 0, 4]> : tensor<3xi64>
  %viewl = llmc.constant dense<[0, 0, 1, 4]> : tensor<4xi64>
  %flatr = llmc.constant dense<[0, 0, 2]> : tensor<3xi64>
  %viewr = llmc.constant dense<[0, 0, 1, 2]> : tensor<4xi64>
  %merged = llmc.constant dense<[2, -1, 4]> : tensor<3xi64>
  %unmerged = llmc.constant dense<[1, 2, 4, -1]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 2, 4]> : tensor<3xi64>
  %root = llmc.constant dense<0.707106769> : tensor<f32>
  %hsinks = llmc.constant dense<[[[[0.5]], [[-1.25]]]]> : tensor<1x2x1x1xf32>
  %cshape = llmc.constant dense<[1, 2, 2, 1]> : tensor<4xi64>
  // the caches, length-major: the latents and the rotated keys
  %lt = llmc.transpose %latent {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x1x2x4xf32>) -> tensor<2x1x1x4xf32>
  %lf = llmc.reshape %lt, %flatl : (tensor<2x1x1x4xf32>, tensor<3xi64>) -> tensor<2x1x4xf32>
  %lc = llmc.concat %pk, %lf {axis = 0 : i64} : (tensor<?x1x4xf32>, tensor<2x1x4xf32>) -> tensor<?x1x4xf32>
  %lr = llmc.reshape %lc, %viewl : (tensor<?x1x4xf32>, tensor<4xi64>) -> tensor<?x1x1x4xf32>
  %lall = llmc.transpose %lr {perm = array<i64: 1, 2, 0, 3>} : (tensor<?x1x1x4xf32>) -> tensor<1x1x?x4xf32>
  %rt = llmc.transpose %rope {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x1x2x2xf32>) -> tensor<2x1x1x2xf32>
  %rf = llmc.reshape %rt, %flatr : (tensor<2x1x1x2xf32>, tensor<3xi64>) -> tensor<2x1x2xf32>
  %rc = llmc.concat %pv, %rf {axis = 0 : i64} : (tensor<?x1x2xf32>, tensor<2x1x2xf32>) -> tensor<?x1x2xf32>
  %rr = llmc.reshape %rc, %viewr : (tensor<?x1x2xf32>, tensor<4xi64>) -> tensor<?x1x1x2xf32>
  %rall = llmc.transpose %rr {perm = array<i64: 1, 2, 0, 3>} : (tensor<?x1x1x2xf32>) -> tensor<1x1x?x2xf32>
  // kv_b_proj over the whole latent cache, split per head into [k_nope | v]; the keys get the
  // rotated keys, repeated for every head
  %kv = llmc.matmul %lall, %wkv : (tensor<1x1x?x4xf32>, tensor<4x8xf32>) -> tensor<1x1x?x8xf32>
  %kv4 = llmc.reshape %kv, %heads : (tensor<1x1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %kvt = llmc.transpose %kv4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kn, %v = llmc.split %kvt {axis = 3 : i64, split = array<i64: 2, 2>} : (tensor<1x2x?x4xf32>) -> (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>)
  %re = llmc.expand %rall, %widen : (tensor<1x1x?x2xf32>, tensor<4xi64>) -> tensor<1x2x?x2xf32>
  %k = llmc.concat %kn, %re {axis = -1 : i64} : (tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32>) -> tensor<1x2x?x4xf32>
  // the query: q_b_proj split per head into [q_nope | q_rope], q_rope rotated (a negation here)
  %qp = llmc.matmul %xq, %wqb : (tensor<1x2x3xf32>, tensor<3x8xf32>) -> tensor<1x2x8xf32>
  %q4 = llmc.reshape %qp, %qheads : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %qn, %qr = llmc.split %qt {axis = 3 : i64, split = array<i64: 2, 2>} : (tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>)
  %qrot = llmc.neg %qr : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %q = llmc.concat %qn, %qrot {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  // scaled_dot_product_attention, then o_proj
  %qs = llmc.mul %q, %root : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %km = llmc.reshape %k, %merged : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<2x?x4xf32>
  %kmt = llmc.transpose %km {perm = array<i64: 0, 2, 1>} : (tensor<2x?x4xf32>) -> tensor<2x4x?xf32>
  %kT = llmc.reshape %kmt, %unmerged : (tensor<2x4x?xf32>, tensor<4xi64>) -> tensor<1x2x4x?xf32>
  %kTs = llmc.mul %kT, %root : (tensor<1x2x4x?xf32>, tensor<f32>) -> tensor<1x2x4x?xf32>
  %scores = llmc.matmul %qs, %kTs : (tensor<1x2x2x4xf32>, tensor<1x2x4x?xf32>) -> tensor<1x2x2x?xf32>
  %masked = llmc.add %scores, %mask : (tensor<1x2x2x?xf32>, tensor<1x1x2x?xf32>) -> tensor<1x2x2x?xf32>
  // GPT-OSS's sinks: a column of a logit per head joins the scores, the row max is subtracted,
  // and the column is sliced off the probabilities
  %col = llmc.expand %hsinks, %cshape : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x2x1xf32>
  %withsinks = llmc.concat %masked, %col {axis = -1 : i64} : (tensor<1x2x2x?xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x?xf32>
  %rowmax = llmc.reduce_max %withsinks {axes = array<i64: -1>} : (tensor<1x2x2x?xf32>) -> tensor<1x2x2x1xf32>
  %shifted = llmc.sub %withsinks, %rowmax : (tensor<1x2x2x?xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x?xf32>
  %all = llmc.softmax %shifted : (tensor<1x2x2x?xf32>) -> tensor<1x2x2x?xf32>
  %attn = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x2x?xf32>) -> tensor<1x2x2x?xf32>
  %o = llmc.matmul %attn, %v : (tensor<1x2x2x?xf32>, tensor<1x2x?x2xf32>) -> tensor<1x2x2x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %o3 = llmc.reshape %ot, %merge : (tensor<1x2x2x2xf32>, tensor<3xi64>) -> tensor<1x2x4xf32>
  %out = llmc.matmul %o3, %wo : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return %out, %lc, %rc : tensor<1x2x4xf32>, tensor<?x1x4xf32>, tensor<?x1x2xf32>
}
