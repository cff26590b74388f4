// Granite SWA's attention sinks, applied to the attention's output as a scale:
// matmul(softmax(S), V) * unsqueeze(sigmoid(logsumexp(S) - sinks), -1), logsumexp as the export
// writes it (log of the shifted exponentials' sum plus the row max). llmc-raise-attention rewrites
// it into GPT-OSS's form (ScaledSinks.cpp), which it raises with the sinks as fused_attention's
// seventh operand. Numerically against ONNX Runtime: test/e2e/architectures.py's granite_swa.
// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// CHECK-LABEL: func.func @scaled_by_sinks
// CHECK-NOT: llmc.softmax
// CHECK-NOT: llmc.sigmoid
// CHECK: %[[SINKS:.*]] = llmc.reshape %arg3, %{{.*}} : (tensor<1x2x1xf32>, tensor<4xi64>) -> tensor<1x2x1x1xf32>
// CHECK: %[[FLAT:.*]] = llmc.reshape %[[SINKS]], %{{.*}} -> tensor<2xf32>
// CHECK: llmc.fused_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FLAT]] {{.*}} tensor<2xf32>) -> tensor<1x4x4xf32>
// CHECK-NOT: llmc.softmax
func.func @scaled_by_sinks(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %sinks: tensor<1x2x1xf32>, %other: tensor<1x2x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kept = llmc.reduce_max %s {axes = array<i64: -1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
  %shifted = llmc.sub %s, %kept : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %e = llmc.exp %shifted : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %max = llmc.reduce_max %s {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %sum = llmc.reduce_sum %e {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %log = llmc.log %sum : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %lse = llmc.add %log, %max : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %gap = llmc.sub %lse, %sinks : (tensor<1x2x4xf32>, tensor<1x2x1xf32>) -> tensor<1x2x4xf32>
  %scale = llmc.sigmoid %gap : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %column = llmc.unsqueeze %scale {axes = array<i64: -1>} : (tensor<1x2x4xf32>) -> tensor<1x2x4x1xf32>
  %scaled = llmc.mul %o, %column : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %scaled {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// Negatives: the log-sum-exp of another tensor than the scores, and the sinks less the log-sum-exp
// (the other sign): the scale is left, and no attention raised.
// CHECK-LABEL: func.func @scaled_by_another_sum
// CHECK: llmc.sigmoid
// CHECK: llmc.softmax
// CHECK-NOT: llmc.fused_attention
func.func @scaled_by_another_sum(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %sinks: tensor<1x2x1xf32>, %other: tensor<1x2x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kept = llmc.reduce_max %other {axes = array<i64: -1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
  %shifted = llmc.sub %other, %kept : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %e = llmc.exp %shifted : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %max = llmc.reduce_max %other {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %sum = llmc.reduce_sum %e {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %log = llmc.log %sum : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %lse = llmc.add %log, %max : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %gap = llmc.sub %lse, %sinks : (tensor<1x2x4xf32>, tensor<1x2x1xf32>) -> tensor<1x2x4xf32>
  %scale = llmc.sigmoid %gap : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %column = llmc.unsqueeze %scale {axes = array<i64: -1>} : (tensor<1x2x4xf32>) -> tensor<1x2x4x1xf32>
  %scaled = llmc.mul %o, %column : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %scaled {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @scaled_the_other_way
// CHECK: llmc.sigmoid
// CHECK: llmc.softmax
// CHECK-NOT: llmc.fused_attention
func.func @scaled_the_other_way(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %sinks: tensor<1x2x1xf32>, %other: tensor<1x2x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kept = llmc.reduce_max %s {axes = array<i64: -1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
  %shifted = llmc.sub %s, %kept : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %e = llmc.exp %shifted : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %max = llmc.reduce_max %s {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %sum = llmc.reduce_sum %e {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %log = llmc.log %sum : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %lse = llmc.add %log, %max : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %gap = llmc.sub %sinks, %lse : (tensor<1x2x1xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %scale = llmc.sigmoid %gap : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %column = llmc.unsqueeze %scale {axes = array<i64: -1>} : (tensor<1x2x4xf32>) -> tensor<1x2x4x1xf32>
  %scaled = llmc.mul %o, %column : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %scaled {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// Negative: a "sink" per query position [1, 1, Sq], not per head (with as many positions as
// heads, so that a reshape to [1, H, 1, 1] would fit): left alone.
// CHECK-LABEL: func.func @scaled_per_position
// CHECK: llmc.sigmoid
// CHECK-NOT: llmc.fused_attention
func.func @scaled_per_position(%q: tensor<1x2x4xf32>, %k: tensor<1x2x4xf32>, %v: tensor<1x2x4xf32>, %rows: tensor<1x1x2xf32>) -> tensor<1x2x4xf32> {
  %split = llmc.constant dense<[1, 2, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 2, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %kept = llmc.reduce_max %s {axes = array<i64: -1>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x1xf32>
  %shifted = llmc.sub %s, %kept : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32>
  %e = llmc.exp %shifted : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %max = llmc.reduce_max %s {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2xf32>
  %sum = llmc.reduce_sum %e {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2xf32>
  %log = llmc.log %sum : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %lse = llmc.add %log, %max : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %gap = llmc.sub %lse, %rows : (tensor<1x2x2xf32>, tensor<1x1x2xf32>) -> tensor<1x2x2xf32>
  %scale = llmc.sigmoid %gap : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %p = llmc.softmax %s : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %column = llmc.unsqueeze %scale {axes = array<i64: -1>} : (tensor<1x2x2xf32>) -> tensor<1x2x2x1xf32>
  %scaled = llmc.mul %o, %column : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32>
  %ot = llmc.transpose %scaled {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x2x2x2xf32>, tensor<3xi64>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// Negative: the max added back taken over the queries instead of the keys.
// CHECK-LABEL: func.func @max_of_other_axis
// CHECK: llmc.sigmoid
// CHECK-NOT: llmc.fused_attention
func.func @max_of_other_axis(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %sinks: tensor<1x2x1xf32>, %other: tensor<1x2x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kept = llmc.reduce_max %s {axes = array<i64: -1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
  %shifted = llmc.sub %s, %kept : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %e = llmc.exp %shifted : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %max = llmc.reduce_max %s {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %sum = llmc.reduce_sum %e {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4xf32>
  %log = llmc.log %sum : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %lse = llmc.add %log, %max : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %gap = llmc.sub %lse, %sinks : (tensor<1x2x4xf32>, tensor<1x2x1xf32>) -> tensor<1x2x4xf32>
  %scale = llmc.sigmoid %gap : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %p = llmc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %column = llmc.unsqueeze %scale {axes = array<i64: -1>} : (tensor<1x2x4xf32>) -> tensor<1x2x4x1xf32>
  %scaled = llmc.mul %o, %column : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %scaled {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}
