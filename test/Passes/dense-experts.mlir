// RUN: %llmc-opt %s -llmc-fuse-linear -split-input-file | FileCheck %s

// Llama 4's experts as transformers computes them: every expert on every token, each token's
// row scaled first by sigmoid(scatter(-inf, top-k)), zero for the experts it did not choose. Only
// the chosen (token, expert) rows are computed: two expert_linear on the chosen ids. (The weights
// turned to [E, M, K]; the expand by ones and the reshape to its own type are identities.)
// CHECK-LABEL: func.func @dense_top1
// CHECK: %[[V:.*]], %[[I:.*]] = llmc.top_k
// CHECK: %[[S:.*]] = llmc.sigmoid %[[V]] : (tensor<?x1xf32>)
// CHECK: %[[C:.*]] = llmc.unsqueeze %[[S]] {axes = array<i64: 2>}
// CHECK: %[[R:.*]] = llmc.unsqueeze %arg0 {axes = array<i64: 1>}
// CHECK: %[[M:.*]] = llmc.mul %[[R]], %[[C]] : (tensor<?x1x8xf32>, tensor<?x1x1xf32>) -> tensor<?x1x8xf32>
// CHECK: %[[ROWS:.*]] = llmc.reshape %[[M]], %{{.*}} : (tensor<?x1x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
// CHECK: %[[IDS:.*]] = llmc.reshape %[[I]], %{{.*}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x1xi64>
// CHECK: %[[G:.*]] = llmc.expert_linear %[[ROWS]], %{{.*}}, %[[IDS]] {activation = "swiglu"} : (tensor<?x8xf32>, tensor<4x8x8xf32>, tensor<?x1xi64>) -> tensor<?x4xf32>
// CHECK: %[[D:.*]] = llmc.expert_linear %[[G]], %{{.*}}, %[[IDS]] : (tensor<?x4xf32>, tensor<4x8x4xf32>, tensor<?x1xi64>) -> tensor<?x8xf32>
// CHECK-NOT: llmc.tile
// CHECK: return %[[D]]
func.func @dense_top1(%x: tensor<?x8xf32>, %r: tensor<8x4xf32>) -> (tensor<?x8xf32>) {
  %wgu = llmc.constant dense<0.5> : tensor<4x8x8xf32>
  %wd = llmc.constant dense<0.25> : tensor<4x4x8xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %ones = llmc.constant dense<1> : tensor<2xi64>
  %rows = llmc.constant dense<[-1, 1]> : tensor<2xi64>
  %ets = llmc.constant dense<[4, -1, 8]> : tensor<3xi64>
  %logits = llmc.matmul %x, %r : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %logits {axis = 1 : i64, k = 1 : i64} : (tensor<?x4xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %shape = llmc.shape %logits : (tensor<?x4xf32>) -> tensor<2xi64>
  %full = llmc.expand %fill, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
  %scattered = llmc.scatter_elements %full, %indices, %values {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x1xi64>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %scores = llmc.sigmoid %scattered : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %same = llmc.expand %x, %ones : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %copies = llmc.tile %same {repeats = array<i64: 4, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %byexpert = llmc.transpose %scores {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %column = llmc.reshape %byexpert, %rows : (tensor<4x?xf32>, tensor<2xi64>) -> tensor<?x1xf32>
  %scaled = llmc.mul %copies, %column : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %X = llmc.reshape %scaled, %ets : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %gu = llmc.matmul %X, %wgu : (tensor<4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<4x?x8xf32>
  %halves:2 = llmc.split %gu {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<4x?x8xf32>) -> (tensor<4x?x4xf32>, tensor<4x?x4xf32>)
  %act = llmc.silu %halves#0 : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %h = llmc.mul %halves#1, %act : (tensor<4x?x4xf32>, tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %Y = llmc.matmul %h, %wd : (tensor<4x?x4xf32>, tensor<4x4x8xf32>) -> tensor<4x?x8xf32>
  %Y2 = llmc.reshape %Y, %ets : (tensor<4x?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %out = llmc.reduce_sum %Y2 {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// -----

// Two experts per token: each token's two rows summed after the down projection.
// CHECK-LABEL: func.func @dense_top2
// CHECK: %[[IDS:.*]] = llmc.reshape %{{.*}} : (tensor<?x2xi64>, tensor<2xi64>) -> tensor<?x1xi64>
// CHECK: %[[G:.*]] = llmc.expert_linear %{{.*}}, %{{.*}}, %[[IDS]] {activation = "swiglu"}
// CHECK: %[[D:.*]] = llmc.expert_linear %[[G]], %{{.*}}, %[[IDS]] :
// CHECK: %[[T:.*]] = llmc.reshape %[[D]], %{{.*}} : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x2x8xf32>
// CHECK: %[[SUM:.*]] = llmc.reduce_sum %[[T]] {axes = array<i64: 1>, keepdims = 0 : i64}
// CHECK-NOT: llmc.tile
// CHECK: return %[[SUM]]
func.func @dense_top2(%x: tensor<?x8xf32>, %r: tensor<8x4xf32>) -> (tensor<?x8xf32>) {
  %wgu = llmc.constant dense<0.5> : tensor<4x8x8xf32>
  %wd = llmc.constant dense<0.25> : tensor<4x4x8xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %ones = llmc.constant dense<1> : tensor<2xi64>
  %rows = llmc.constant dense<[-1, 1]> : tensor<2xi64>
  %ets = llmc.constant dense<[4, -1, 8]> : tensor<3xi64>
  %logits = llmc.matmul %x, %r : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %logits {axis = 1 : i64, k = 2 : i64} : (tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %shape = llmc.shape %logits : (tensor<?x4xf32>) -> tensor<2xi64>
  %full = llmc.expand %fill, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
  %scattered = llmc.scatter_elements %full, %indices, %values {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<?x4xf32>
  %scores = llmc.sigmoid %scattered : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %same = llmc.expand %x, %ones : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %copies = llmc.tile %same {repeats = array<i64: 4, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %byexpert = llmc.transpose %scores {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %column = llmc.reshape %byexpert, %rows : (tensor<4x?xf32>, tensor<2xi64>) -> tensor<?x1xf32>
  %scaled = llmc.mul %copies, %column : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %X = llmc.reshape %scaled, %ets : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %gu = llmc.matmul %X, %wgu : (tensor<4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<4x?x8xf32>
  %halves:2 = llmc.split %gu {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<4x?x8xf32>) -> (tensor<4x?x4xf32>, tensor<4x?x4xf32>)
  %act = llmc.silu %halves#0 : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %h = llmc.mul %halves#1, %act : (tensor<4x?x4xf32>, tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %Y = llmc.matmul %h, %wd : (tensor<4x?x4xf32>, tensor<4x4x8xf32>) -> tensor<4x?x8xf32>
  %Y2 = llmc.reshape %Y, %ets : (tensor<4x?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %out = llmc.reduce_sum %Y2 {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// -----

// Unchosen experts scored sigmoid(0) = 0.5: they contribute, so every expert stays.
// CHECK-LABEL: func.func @fill_not_hiding
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.tile
// CHECK: llmc.reduce_sum
func.func @fill_not_hiding(%x: tensor<?x8xf32>, %r: tensor<8x4xf32>) -> (tensor<?x8xf32>) {
  %wgu = llmc.constant dense<0.5> : tensor<4x8x8xf32>
  %wd = llmc.constant dense<0.25> : tensor<4x4x8xf32>
  %fill = llmc.constant dense<0.000000e+00> : tensor<f32>
  %ones = llmc.constant dense<1> : tensor<2xi64>
  %rows = llmc.constant dense<[-1, 1]> : tensor<2xi64>
  %ets = llmc.constant dense<[4, -1, 8]> : tensor<3xi64>
  %logits = llmc.matmul %x, %r : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %logits {axis = 1 : i64, k = 1 : i64} : (tensor<?x4xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %shape = llmc.shape %logits : (tensor<?x4xf32>) -> tensor<2xi64>
  %full = llmc.expand %fill, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
  %scattered = llmc.scatter_elements %full, %indices, %values {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x1xi64>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %scores = llmc.sigmoid %scattered : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %same = llmc.expand %x, %ones : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %copies = llmc.tile %same {repeats = array<i64: 4, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %byexpert = llmc.transpose %scores {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %column = llmc.reshape %byexpert, %rows : (tensor<4x?xf32>, tensor<2xi64>) -> tensor<?x1xf32>
  %scaled = llmc.mul %copies, %column : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %X = llmc.reshape %scaled, %ets : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %gu = llmc.matmul %X, %wgu : (tensor<4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<4x?x8xf32>
  %halves:2 = llmc.split %gu {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<4x?x8xf32>) -> (tensor<4x?x4xf32>, tensor<4x?x4xf32>)
  %act = llmc.silu %halves#0 : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %h = llmc.mul %halves#1, %act : (tensor<4x?x4xf32>, tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %Y = llmc.matmul %h, %wd : (tensor<4x?x4xf32>, tensor<4x4x8xf32>) -> tensor<4x?x8xf32>
  %Y2 = llmc.reshape %Y, %ets : (tensor<4x?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %out = llmc.reduce_sum %Y2 {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// -----

// Scattered at indices that may repeat (not a top-k's): left as it is.
// CHECK-LABEL: func.func @indices_not_top_k
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.tile
// CHECK: llmc.reduce_sum
func.func @indices_not_top_k(%x: tensor<?x8xf32>, %r: tensor<8x4xf32>, %idx_in: tensor<?x1xi64>) -> (tensor<?x8xf32>) {
  %wgu = llmc.constant dense<0.5> : tensor<4x8x8xf32>
  %wd = llmc.constant dense<0.25> : tensor<4x4x8xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %ones = llmc.constant dense<1> : tensor<2xi64>
  %rows = llmc.constant dense<[-1, 1]> : tensor<2xi64>
  %ets = llmc.constant dense<[4, -1, 8]> : tensor<3xi64>
  %logits = llmc.matmul %x, %r : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %logits {axis = 1 : i64, k = 1 : i64} : (tensor<?x4xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %shape = llmc.shape %logits : (tensor<?x4xf32>) -> tensor<2xi64>
  %full = llmc.expand %fill, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
  %scattered = llmc.scatter_elements %full, %idx_in, %values {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x1xi64>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %scores = llmc.sigmoid %scattered : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %same = llmc.expand %x, %ones : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %copies = llmc.tile %same {repeats = array<i64: 4, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %byexpert = llmc.transpose %scores {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %column = llmc.reshape %byexpert, %rows : (tensor<4x?xf32>, tensor<2xi64>) -> tensor<?x1xf32>
  %scaled = llmc.mul %copies, %column : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %X = llmc.reshape %scaled, %ets : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %gu = llmc.matmul %X, %wgu : (tensor<4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<4x?x8xf32>
  %halves:2 = llmc.split %gu {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<4x?x8xf32>) -> (tensor<4x?x4xf32>, tensor<4x?x4xf32>)
  %act = llmc.silu %halves#0 : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %h = llmc.mul %halves#1, %act : (tensor<4x?x4xf32>, tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %Y = llmc.matmul %h, %wd : (tensor<4x?x4xf32>, tensor<4x4x8xf32>) -> tensor<4x?x8xf32>
  %Y2 = llmc.reshape %Y, %ets : (tensor<4x?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %out = llmc.reduce_sum %Y2 {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// -----

// The scores' column not transposed to expert-major order: row e * T + t would not be
// token t's score for expert e. Left as it is.
// CHECK-LABEL: func.func @scores_not_by_expert
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.tile
// CHECK: llmc.reduce_sum
func.func @scores_not_by_expert(%x: tensor<?x8xf32>, %r: tensor<8x4xf32>) -> (tensor<?x8xf32>) {
  %wgu = llmc.constant dense<0.5> : tensor<4x8x8xf32>
  %wd = llmc.constant dense<0.25> : tensor<4x4x8xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %ones = llmc.constant dense<1> : tensor<2xi64>
  %rows = llmc.constant dense<[-1, 1]> : tensor<2xi64>
  %ets = llmc.constant dense<[4, -1, 8]> : tensor<3xi64>
  %logits = llmc.matmul %x, %r : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %logits {axis = 1 : i64, k = 1 : i64} : (tensor<?x4xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %shape = llmc.shape %logits : (tensor<?x4xf32>) -> tensor<2xi64>
  %full = llmc.expand %fill, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
  %scattered = llmc.scatter_elements %full, %indices, %values {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x1xi64>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %scores = llmc.sigmoid %scattered : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %same = llmc.expand %x, %ones : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %copies = llmc.tile %same {repeats = array<i64: 4, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %column = llmc.reshape %scores, %rows : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x1xf32>
  %scaled = llmc.mul %copies, %column : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %X = llmc.reshape %scaled, %ets : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %gu = llmc.matmul %X, %wgu : (tensor<4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<4x?x8xf32>
  %halves:2 = llmc.split %gu {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<4x?x8xf32>) -> (tensor<4x?x4xf32>, tensor<4x?x4xf32>)
  %act = llmc.silu %halves#0 : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %h = llmc.mul %halves#1, %act : (tensor<4x?x4xf32>, tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %Y = llmc.matmul %h, %wd : (tensor<4x?x4xf32>, tensor<4x4x8xf32>) -> tensor<4x?x8xf32>
  %Y2 = llmc.reshape %Y, %ets : (tensor<4x?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %out = llmc.reduce_sum %Y2 {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}

// -----

// The experts' dense products read elsewhere: they are computed anyway, left as they are.
// CHECK-LABEL: func.func @dense_products_used_twice
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.tile
// CHECK: llmc.reduce_sum
func.func @dense_products_used_twice(%x: tensor<?x8xf32>, %r: tensor<8x4xf32>) -> (tensor<?x8xf32>, tensor<4x?x8xf32>) {
  %wgu = llmc.constant dense<0.5> : tensor<4x8x8xf32>
  %wd = llmc.constant dense<0.25> : tensor<4x4x8xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %ones = llmc.constant dense<1> : tensor<2xi64>
  %rows = llmc.constant dense<[-1, 1]> : tensor<2xi64>
  %ets = llmc.constant dense<[4, -1, 8]> : tensor<3xi64>
  %logits = llmc.matmul %x, %r : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %logits {axis = 1 : i64, k = 1 : i64} : (tensor<?x4xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %shape = llmc.shape %logits : (tensor<?x4xf32>) -> tensor<2xi64>
  %full = llmc.expand %fill, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
  %scattered = llmc.scatter_elements %full, %indices, %values {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x1xi64>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %scores = llmc.sigmoid %scattered : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %same = llmc.expand %x, %ones : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %copies = llmc.tile %same {repeats = array<i64: 4, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %byexpert = llmc.transpose %scores {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %column = llmc.reshape %byexpert, %rows : (tensor<4x?xf32>, tensor<2xi64>) -> tensor<?x1xf32>
  %scaled = llmc.mul %copies, %column : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %X = llmc.reshape %scaled, %ets : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %gu = llmc.matmul %X, %wgu : (tensor<4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<4x?x8xf32>
  %halves:2 = llmc.split %gu {axis = 2 : i64, split = array<i64: 4, 4>} : (tensor<4x?x8xf32>) -> (tensor<4x?x4xf32>, tensor<4x?x4xf32>)
  %act = llmc.silu %halves#0 : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %h = llmc.mul %halves#1, %act : (tensor<4x?x4xf32>, tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %Y = llmc.matmul %h, %wd : (tensor<4x?x4xf32>, tensor<4x4x8xf32>) -> tensor<4x?x8xf32>
  %Y2 = llmc.reshape %Y, %ets : (tensor<4x?x8xf32>, tensor<3xi64>) -> tensor<4x?x8xf32>
  %out = llmc.reduce_sum %Y2 {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  return %out, %Y : tensor<?x8xf32>, tensor<4x?x8xf32>
}
