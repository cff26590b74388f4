// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// Scores that a boolean mask selects, under an additive mask added after (GPT-Neo's: its causal
// or local buffer sliced to the scores, where(keep, q k^T, lowest) + the causal mask; unscaled).
// Since session 36 the attention forms, reading one mask: where the additive mask is itself
// where(c, 0, lowest), where(keep and c, 0, lowest), which llmc-raise-attention-mask can then
// raise; else where(keep, mask, lowest). Its scale is 1 (the scores are not scaled).
// CHECK-LABEL: func.func @selected_under_causal_mask
// CHECK: %[[BOTH:.*]] = llmc.and %arg3, %arg4 : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
// CHECK: %[[MASK:.*]] = llmc.where %[[BOTH]], %{{.*}}, %{{.*}} : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x3xf32>
// CHECK: llmc.fused_attention %arg0, %arg1, %arg2, %[[MASK]], %{{.*}}, %{{.*}} {{.*}}scale = 1.000000e+00 : f32
// CHECK-NOT: llmc.softmax
func.func @selected_under_causal_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %keep: tensor<1x1x3x3xi1>, %c: tensor<1x1x3x3xi1>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %ktt = llmc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %scores = llmc.matmul %qt, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %additive = llmc.where %c, %f0, %lowest : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %selected = llmc.where %keep, %scores, %lowest : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %sum = llmc.add %selected, %additive : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %sum : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// An additive mask whose hidden value does not hide (where(c, 0, -5)): a score that keep hides
// must stay hidden, so the two are not ANDed; the attention reads where(keep, mask, lowest).
// CHECK-LABEL: func.func @selected_under_weak_mask
// CHECK-NOT: llmc.and
// CHECK: %[[MASK:.*]] = llmc.where %arg3, %{{.*}}, %{{.*}} : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
// CHECK: llmc.fused_attention %arg0, %arg1, %arg2, %[[MASK]], %{{.*}}, %{{.*}}
// CHECK-NOT: llmc.softmax
func.func @selected_under_weak_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %keep: tensor<1x1x3x3xi1>, %c: tensor<1x1x3x3xi1>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %ktt = llmc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %scores = llmc.matmul %qt, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %weak = llmc.constant dense<-5.000000e+00> : tensor<f32>
  %additive = llmc.where %c, %f0, %weak : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %selected = llmc.where %keep, %scores, %lowest : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %sum = llmc.add %selected, %additive : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %sum : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Under a float mask of another form (an input): where(keep, mask, lowest); the mask added first.
// CHECK-LABEL: func.func @selected_under_float_mask
// CHECK: %[[MASK:.*]] = llmc.where %arg3, %arg4, %{{.*}} : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
// CHECK: llmc.fused_attention %arg0, %arg1, %arg2, %[[MASK]], %{{.*}}, %{{.*}}
// CHECK-NOT: llmc.softmax
func.func @selected_under_float_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %keep: tensor<1x1x3x3xi1>, %m: tensor<1x1x3x3xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %ktt = llmc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %scores = llmc.matmul %qt, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %selected = llmc.where %keep, %scores, %lowest : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %sum = llmc.add %m, %selected : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %sum : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// A mask that hides: where(hide, lowest, scores), negated for the attention.
// CHECK-LABEL: func.func @hidden_under_float_mask
// CHECK: %[[KEEP:.*]] = llmc.not %arg3
// CHECK: %[[MASK:.*]] = llmc.where %[[KEEP]], %arg4, %{{.*}}
// CHECK: llmc.fused_attention %arg0, %arg1, %arg2, %[[MASK]], %{{.*}}, %{{.*}}
// CHECK-NOT: llmc.softmax
func.func @hidden_under_float_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %keep: tensor<1x1x3x3xi1>, %m: tensor<1x1x3x3xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %ktt = llmc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %scores = llmc.matmul %qt, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %selected = llmc.where %keep, %lowest, %scores : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %sum = llmc.add %selected, %m : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %sum : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Left as they are: a hidden value that hides nothing (where(keep, scores, 0)), and scores that
// something besides the selection reads (the selection does not hold all their uses).
// CHECK-LABEL: func.func @selected_by_zero
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @selected_by_zero(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %keep: tensor<1x1x3x3xi1>, %m: tensor<1x1x3x3xf32>) -> tensor<1x3x8xf32> {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %ktt = llmc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %scores = llmc.matmul %qt, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %selected = llmc.where %keep, %scores, %f0 : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %sum = llmc.add %selected, %m : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %sum : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// CHECK-LABEL: func.func @scores_read_twice
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @scores_read_twice(%q: tensor<1x3x8xf32>, %k: tensor<1x3x8xf32>, %v: tensor<1x3x8xf32>, %keep: tensor<1x1x3x3xi1>, %m: tensor<1x1x3x3xf32>) -> (tensor<1x3x8xf32>, tensor<1x2x3x3xf32>) {
  %heads = llmc.constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %merged = llmc.constant dense<[1, 3, 8]> : tensor<3xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %q4 = llmc.reshape %q, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %k4 = llmc.reshape %k, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %ktt = llmc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %v4 = llmc.reshape %v, %heads : (tensor<1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
  %scores = llmc.matmul %qt, %ktt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %selected = llmc.where %keep, %scores, %lowest : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %sum = llmc.add %selected, %m : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llmc.softmax %sum : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %y = llmc.reshape %ot, %merged : (tensor<1x3x2x4xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  return %y, %scores : tensor<1x3x8xf32>, tensor<1x2x3x3xf32>
}
