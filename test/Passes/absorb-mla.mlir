// RUN: %llmc-opt %s -llmc-absorb-mla | FileCheck %s
// RUN: %llmc-opt %s -llmc-absorb-mla=factors=separate | FileCheck %s --check-prefix=SEPARATE
// RUN: %llmc-opt %s -llmc-absorb-mla=factors=multiplied | FileCheck %s --check-prefix=MULTIPLIED
// Not absorbed (the IR stays as it is): the value cache of another layer, kv_b_proj's weight not
// a constant, the softmax over another axis, the keys view read elsewhere too.
// RUN: sed 's/past_key_values.0.value/past_key_values.1.value/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED
// RUN: sed 's/%wkv = llmc.constant .* : tensor<4x8xf32>//; s/%rope: tensor/%wkv: tensor<4x8xf32>, %rope: tensor/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED
// RUN: sed 's/llmc.softmax %masked :/llmc.softmax %masked {axis = 2 : i64} :/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED
// RUN: sed 's/return %out, %kc, %vc : tensor<1x2x4xf32>, /return %out, %kall, %kc, %vc : tensor<1x2x4xf32>, tensor<1x2x?x4xf32>, /; s/-> (tensor<1x2x4xf32> {llmc.name = "out"},/-> (tensor<1x2x4xf32> {llmc.name = "out"}, tensor<1x2x?x4xf32>,/' %s | %llmc-opt -llmc-absorb-mla | FileCheck %s --check-prefix=UNCHANGED
// RUN: not %llmc-opt %s -llmc-absorb-mla=factors=sometimes 2>&1 | FileCheck %s --check-prefix=BADOPTION

// One layer of DeepSeek-style multi-head latent attention as llmc-kv-cache-layout leaves it:
// 2 heads, nope 2, rope 2, v 2, latent 4, q_lora 3, hidden 4. The rotary embedding is stood in
// for by a negation (the pass does not look at it).
//
// The key/value pair becomes one latent cache [T, 1, 4 + 2]; attention reads it with W_UK [2, 2, 4]
// and W_UV [2, 4, 2]. At these shapes multiplying W_UK into q_b_proj costs fewer multiply-adds
// (3 * 2 * 4 = 24 < 3 * 2 * 2 + 2 * 2 * 4 = 28), W_UV into o_proj does not (32 = 32).
// CHECK-LABEL: func.func @mla
// CHECK-SAME: %arg4: tensor<?x1x6xf32> {{[{]}}llmc.name = "past_key_values.0.latent"}) -> (tensor<1x2x4xf32> {{[{]}}llmc.name = "out"}, tensor<?x1x6xf32> {{[{]}}llmc.name = "present.0.latent"}) {
// CHECK: %[[NEW:.*]] = llmc.concat %arg0, %arg1 {axis = 3 : i64}
// CHECK: %[[CACHE:.*]] = llmc.concat %arg4, %{{.*}} {axis = 0 : i64} : (tensor<?x1x6xf32>, tensor<2x1x6xf32>) -> tensor<?x1x6xf32>
// CHECK: %[[Q:.*]] = llmc.matmul %arg2, %{{.*}} : (tensor<1x2x3xf32>, tensor<3x12xf32>) -> tensor<1x2x12xf32>
// CHECK: llmc.latent_attention %{{.*}}, %[[CACHE]], %{{.*}}, %{{.*}}, %arg3 {rope_dim = 2 : i64, scale = 5.000000e-01 : f32} : (tensor<1x2x2x6xf32>, tensor<?x1x6xf32>, tensor<0xf32>, tensor<2x4x2xf32>, tensor<1x1x2x?xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NOT: llmc.softmax
// CHECK: return %{{.*}}, %[[CACHE]] :

// SEPARATE: llmc.latent_attention {{.*}} : (tensor<1x2x2x4xf32>, tensor<?x1x6xf32>, tensor<2x2x4xf32>, tensor<2x4x2xf32>, tensor<1x1x2x?xf32>) -> tensor<1x2x2x2xf32>

// MULTIPLIED: llmc.latent_attention {{.*}} : (tensor<1x2x2x6xf32>, tensor<?x1x6xf32>, tensor<0xf32>, tensor<0xf32>, tensor<1x1x2x?xf32>) -> tensor<1x2x2x4xf32>
// MULTIPLIED: llmc.reshape %{{.*}}, %{{.*}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
// MULTIPLIED: llmc.matmul %{{.*}}, %{{.*}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>

// UNCHANGED-NOT: latent_attention
// UNCHANGED: llmc.softmax
// UNCHANGED-NOT: latent_attention

// BADOPTION: factors must be auto, separate or multiplied, not 'sometimes'

func.func @mla(%latent: tensor<1x1x2x4xf32> {llmc.name = "latent"}, %rope: tensor<1x1x2x2xf32> {llmc.name = "rope"},
               %xq: tensor<1x2x3xf32> {llmc.name = "xq"}, %mask: tensor<1x1x2x?xf32> {llmc.name = "mask"},
               %pk: tensor<?x1x8xf32> {llmc.name = "past_key_values.0.key"},
               %pv: tensor<?x1x4xf32> {llmc.name = "past_key_values.0.value"})
    -> (tensor<1x2x4xf32> {llmc.name = "out"}, tensor<?x1x8xf32> {llmc.name = "present.0.key"},
        tensor<?x1x4xf32> {llmc.name = "present.0.value"}) {
  %wkv = llmc.constant dense<[[0.27, -0.46, -0.92, -0.97, 0.63, 0.83, 0.21, 0.46], [0.09, 0.87, 0.63, -0.99, 0.71, -0.93, 0.46, -0.65], [0.73, 0.08, -0.40, -0.15, -0.94, -0.75, 0.34, 0.29], [0.23, -0.23, 0.99, 0.96, 0.37, 0.30, 0.38, -0.22]]> : tensor<4x8xf32>
  %wqb = llmc.constant dense<[[-0.73, 0.44, 0.05, -0.38, -0.03, 0.78, 0.87, -0.28], [0.14, -0.36, 0.19, -0.32, -0.22, 0.78, -0.55, 0.25], [-0.83, 0.67, 0.57, -0.52, 0.75, -0.88, -0.33, -0.70]]> : tensor<3x8xf32>
  %wo = llmc.constant dense<[[-0.10, 0.59, -0.54, -0.90], [-0.19, -0.60, -0.82, 0.16], [-0.40, 0.34, -0.60, 0.88], [-0.27, -0.79, 0.26, 0.85]]> : tensor<4x4xf32>
  %heads = llmc.constant dense<[1, 2, 2, 4]> : tensor<4xi64>
  %widen = llmc.constant dense<[1, 2, 1, 1]> : tensor<4xi64>
  %flatk = llmc.constant dense<[0, 0, 8]> : tensor<3xi64>
  %viewk = llmc.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %flatv = llmc.constant dense<[0, 0, 4]> : tensor<3xi64>
  %viewv = llmc.constant dense<[0, 0, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 2, 4]> : tensor<3xi64>
  %factor = llmc.constant dense<0.5> : tensor<f32>
  // kv_b_proj, split per head into [k_nope | v]; keys get the shared rotary key
  %kv = llmc.matmul %latent, %wkv : (tensor<1x1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x1x2x8xf32>
  %kv4 = llmc.reshape %kv, %heads : (tensor<1x1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %kvt = llmc.transpose %kv4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kn, %v = llmc.split %kvt {axis = 3 : i64, split = array<i64: 2, 2>} : (tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>)
  %re = llmc.expand %rope, %widen : (tensor<1x1x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x2xf32>
  %k = llmc.concat %kn, %re {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  // the caches, length-major
  %kt = llmc.transpose %k {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x2x2x4xf32>) -> tensor<2x1x2x4xf32>
  %kf = llmc.reshape %kt, %flatk : (tensor<2x1x2x4xf32>, tensor<3xi64>) -> tensor<2x1x8xf32>
  %kc = llmc.concat %pk, %kf {axis = 0 : i64} : (tensor<?x1x8xf32>, tensor<2x1x8xf32>) -> tensor<?x1x8xf32>
  %kr = llmc.reshape %kc, %viewk : (tensor<?x1x8xf32>, tensor<4xi64>) -> tensor<?x1x2x4xf32>
  %kall = llmc.transpose %kr {perm = array<i64: 1, 2, 0, 3>} : (tensor<?x1x2x4xf32>) -> tensor<1x2x?x4xf32>
  %vt = llmc.transpose %v {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<2x1x2x2xf32>
  %vf = llmc.reshape %vt, %flatv : (tensor<2x1x2x2xf32>, tensor<3xi64>) -> tensor<2x1x4xf32>
  %vc = llmc.concat %pv, %vf {axis = 0 : i64} : (tensor<?x1x4xf32>, tensor<2x1x4xf32>) -> tensor<?x1x4xf32>
  %vr = llmc.reshape %vc, %viewv : (tensor<?x1x4xf32>, tensor<4xi64>) -> tensor<?x1x2x2xf32>
  %vall = llmc.transpose %vr {perm = array<i64: 1, 2, 0, 3>} : (tensor<?x1x2x2xf32>) -> tensor<1x2x?x2xf32>
  // the query: q_b_proj split per head into [q_nope | q_rope], q_rope rotated
  %qp = llmc.matmul %xq, %wqb : (tensor<1x2x3xf32>, tensor<3x8xf32>) -> tensor<1x2x8xf32>
  %q4 = llmc.reshape %qp, %heads : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %qn, %qr = llmc.split %qt {axis = 3 : i64, split = array<i64: 2, 2>} : (tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>)
  %qrot = llmc.neg %qr : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %q = llmc.concat %qn, %qrot {axis = -1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  // attention, then o_proj
  %kT = llmc.transpose %kall {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x4x?xf32>
  %scores = llmc.matmul %q, %kT : (tensor<1x2x2x4xf32>, tensor<1x2x4x?xf32>) -> tensor<1x2x2x?xf32>
  %scaled = llmc.mul %scores, %factor : (tensor<1x2x2x?xf32>, tensor<f32>) -> tensor<1x2x2x?xf32>
  %masked = llmc.add %scaled, %mask : (tensor<1x2x2x?xf32>, tensor<1x1x2x?xf32>) -> tensor<1x2x2x?xf32>
  %p = llmc.softmax %masked : (tensor<1x2x2x?xf32>) -> tensor<1x2x2x?xf32>
  %o = llmc.matmul %p, %vall : (tensor<1x2x2x?xf32>, tensor<1x2x?x2xf32>) -> tensor<1x2x2x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %o3 = llmc.reshape %ot, %merge : (tensor<1x2x2x2xf32>, tensor<3xi64>) -> tensor<1x2x4xf32>
  %out = llmc.matmul %o3, %wo : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return %out, %kc, %vc : tensor<1x2x4xf32>, tensor<?x1x8xf32>, tensor<?x1x4xf32>
}
