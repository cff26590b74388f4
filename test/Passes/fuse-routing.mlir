// RUN: %llmc-opt %s -llmc-fuse-routing -split-input-file | FileCheck %s

// Mixtral's router: softmax over the experts, the top 2, their weights divided by their sum. One
// softmax_top_k with normalize; the ids and weights read where the parts' were.
// CHECK-LABEL: func.func @normalized
// CHECK-NEXT: %[[W:.*]], %[[IDS:.*]] = llmc.softmax_top_k %arg0 {k = 2 : i64, normalize = 1 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK-NEXT: return %[[W]], %[[IDS]]
func.func @normalized(%logits: tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %p = llmc.softmax %logits : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %values, %indices = llmc.top_k %p {k = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %sum = llmc.reduce_sum %values {axes = array<i64: -1>} : (tensor<?x2xf32>) -> tensor<?x1xf32>
  %w = llmc.div %values, %sum : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
  return %w, %indices : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// DBRX's: the top 2 probabilities divided by their L1 norm (ReduceL1 imported as the sum of
// their magnitudes), which is their sum: the same softmax_top_k with normalize.
// CHECK-LABEL: func.func @normalized_by_l1
// CHECK-NEXT: %[[W:.*]], %[[IDS:.*]] = llmc.softmax_top_k %arg0 {k = 2 : i64, normalize = 1 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK-NEXT: return %[[W]], %[[IDS]]
func.func @normalized_by_l1(%logits: tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %p = llmc.softmax %logits : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %values, %indices = llmc.top_k %p {k = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %m = llmc.abs %values : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %sum = llmc.reduce_sum %m {axes = array<i64: -1>} : (tensor<?x2xf32>) -> tensor<?x1xf32>
  %w = llmc.div %values, %sum : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
  return %w, %indices : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// The magnitudes read elsewhere too: the division stays.
// CHECK-LABEL: func.func @l1_magnitudes_kept
// CHECK: llmc.softmax_top_k %arg0 {k = 2 : i64} :
// CHECK: llmc.div
func.func @l1_magnitudes_kept(%logits: tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %p = llmc.softmax %logits : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %values, %indices = llmc.top_k %p {k = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %m = llmc.abs %values : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %sum = llmc.reduce_sum %m {axes = array<i64: -1>} : (tensor<?x2xf32>) -> tensor<?x1xf32>
  %w = llmc.div %values, %sum : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
  return %w, %m : tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// Qwen2-MoE's (norm_topk_prob off): the top 2 probabilities as they are, in bf16.
// CHECK-LABEL: func.func @plain
// CHECK-NEXT: %[[W:.*]], %[[IDS:.*]] = llmc.softmax_top_k %arg0 {k = 2 : i64} : (tensor<3x60xbf16>) -> (tensor<3x2xbf16>, tensor<3x2xi64>)
// CHECK-NEXT: return %[[W]], %[[IDS]]
func.func @plain(%logits: tensor<3x60xbf16>) -> (tensor<3x2xbf16>, tensor<3x2xi64>) {
  %p = llmc.softmax %logits {axis = 1 : i64} : (tensor<3x60xbf16>) -> tensor<3x60xbf16>
  %values, %indices = llmc.top_k %p {k = 2 : i64, axis = 1 : i64} : (tensor<3x60xbf16>) -> (tensor<3x2xbf16>, tensor<3x2xi64>)
  return %values, %indices : tensor<3x2xbf16>, tensor<3x2xi64>
}

// -----

// DeepSeek-V2's: an unsorted top 2 (torch.topk(sorted=False)), whose order ONNX leaves to the
// implementation; softmax_top_k's, sorted, is one.
// CHECK-LABEL: func.func @unsorted
// CHECK-NEXT: %[[W:.*]], %[[IDS:.*]] = llmc.softmax_top_k %arg0 {k = 2 : i64} : (tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK-NEXT: return %[[W]], %[[IDS]]
func.func @unsorted(%logits: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %p = llmc.softmax %logits : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %values, %indices = llmc.top_k %p {k = 2 : i64, sorted = 0 : i64} : (tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  return %values, %indices : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// Negative: the probabilities read elsewhere too (the router's logits output, say); the
// smallest k; a softmax over another axis.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: llmc.softmax_top_k
// CHECK-COUNT-3: llmc.top_k
// CHECK-NOT: llmc.softmax_top_k
func.func @kept(%logits: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x8xf32>) {
  %p = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v1, %i1 = llmc.top_k %p {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %q = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v2, %i2 = llmc.top_k %q {k = 2 : i64, largest = 0 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %r = llmc.softmax %logits {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v3, %i3 = llmc.top_k %r {k = 2 : i64, axis = 0 : i64} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi64>)
  return %p, %v1, %v2, %v3 : tensor<4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x8xf32>
}

// -----

// Negative for the normalization: the weights read before their division too, and a sum over
// both axes. The softmax and top-k still fuse.
// CHECK-LABEL: func.func @unnormalized
// CHECK: %[[A:.*]], %{{.*}} = llmc.softmax_top_k %arg0 {k = 2 : i64} :
// CHECK: llmc.reduce_sum %[[A]]
// CHECK: llmc.div %[[A]]
// CHECK: %[[B:.*]], %{{.*}} = llmc.softmax_top_k %arg0 {k = 2 : i64} :
// CHECK: llmc.reduce_sum %[[B]] {axes = array<i64: 0, 1>}
// CHECK: llmc.div %[[B]]
func.func @unnormalized(%logits: tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %p = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v, %i = llmc.top_k %p {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %sum = llmc.reduce_sum %v {axes = array<i64: -1>} : (tensor<4x2xf32>) -> tensor<4x1xf32>
  %w = llmc.div %v, %sum : (tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %q = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %u, %j = llmc.top_k %q {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %all = llmc.reduce_sum %u {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<1x1xf32>
  %x = llmc.div %u, %all : (tensor<4x2xf32>, tensor<1x1xf32>) -> tensor<4x2xf32>
  return %v, %w, %x : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// DeepSeek-V3's router as transformers 5 writes it (sigmoid scores, a correction bias, the experts
// of the 2 best of 4 groups, masked_fill with -inf, weights normalized with + 1e-20 and scaled):
// one llmc.grouped_top_k, nothing of the chain left.
// CHECK-LABEL: func.func @deepseek_v3
// CHECK: %[[W:.*]], %[[IDS:.*]] = llmc.grouped_top_k %arg0, %arg1 {epsilon = 9.99999968E-21 : f32, fill = 0xFF800000 : f32, groups = 4 : i64, k = 3 : i64, kept_groups = 2 : i64, normalize = 1 : i64, scale = 2.500000e+00 : f32}
// CHECK: return %[[W]], %[[IDS]]
// CHECK-NOT: llmc.top_k
// CHECK-NOT: llmc.scatter_elements
func.func @deepseek_v3(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 4, 2]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %c, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 1 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x4x1xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %denominator = llmc.add %sum, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %denominator : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %scaled = llmc.mul %normalized, %scale : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  return %scaled, %ids : tensor<3x3xf32>, tensor<3x3xi64>
}

// -----

// Without a correction bias (c is the sigmoid scores), the mask as where(mask, c, fill), no
// epsilon and no scale: a zero bias, the defaults.
// CHECK-LABEL: func.func @without_bias_epsilon_scale
// CHECK: %[[ZERO:.*]] = llmc.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK: llmc.grouped_top_k %arg0, %[[ZERO]] {fill = 0xFF800000 : f32, groups = 4 : i64, k = 3 : i64, kept_groups = 2 : i64, normalize = 1 : i64}
// CHECK-NOT: llmc.top_k
func.func @without_bias_epsilon_scale(%logits: tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 4, 2]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %s, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 1 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x4x1xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %masked = llmc.where %flags, %s, %fill : (tensor<3x8xi1>, tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %sum : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  return %normalized, %ids : tensor<3x3xf32>, tensor<3x3xi64>
}

// -----

// Kept groups marked with 2 (still true as a mask, but not the form matched), the groups' smallest
// scores summed, the chosen experts' scores read too, the kept groups' flags spread across the
// groups rather than along them: each leaves the chain as it is.
// CHECK-LABEL: func.func @groups_not_marked_with_ones
// CHECK-NOT: llmc.grouped_top_k
// CHECK: llmc.scatter_elements
func.func @groups_not_marked_with_ones(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 4, 2]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<2.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %c, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 1 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x4x1xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %denominator = llmc.add %sum, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %denominator : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %scaled = llmc.mul %normalized, %scale : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  return %scaled, %ids : tensor<3x3xf32>, tensor<3x3xi64>
}

// -----

// CHECK-LABEL: func.func @groups_smallest_summed
// CHECK-NOT: llmc.grouped_top_k
// CHECK: llmc.scatter_elements
func.func @groups_smallest_summed(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 4, 2]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %c, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 0 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x4x1xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %denominator = llmc.add %sum, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %denominator : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %scaled = llmc.mul %normalized, %scale : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  return %scaled, %ids : tensor<3x3xf32>, tensor<3x3xi64>
}

// -----

// CHECK-LABEL: func.func @chosen_scores_read
// CHECK-NOT: llmc.grouped_top_k
// CHECK: llmc.scatter_elements
func.func @chosen_scores_read(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>, tensor<3x3xf32>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 4, 2]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %c, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 1 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x4x1xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %denominator = llmc.add %sum, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %denominator : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %scaled = llmc.mul %normalized, %scale : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  return %scaled, %ids, %chosen : tensor<3x3xf32>, tensor<3x3xi64>, tensor<3x3xf32>
}

// -----

// CHECK-LABEL: func.func @mask_over_other_groups
// CHECK-NOT: llmc.grouped_top_k
// CHECK: llmc.scatter_elements
func.func @mask_over_other_groups(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 2, 4]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %c, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 1 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1x4xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x1x4xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x2x4xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %denominator = llmc.add %sum, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %denominator : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %scaled = llmc.mul %normalized, %scale : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  return %scaled, %ids : tensor<3x3xf32>, tensor<3x3xi64>
}

// -----

// The chosen experts' indices read before their weights are gathered (an op between the top_k and
// the gather): the fused op takes the top_k's place, before that reader.
// CHECK-LABEL: func.func @indices_read_early
// CHECK: %[[W:.*]], %[[IDS:.*]] = llmc.grouped_top_k
// CHECK-NEXT: llmc.cast %[[IDS]]
func.func @indices_read_early(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>, tensor<3x3xf32>) {
  %groups_shape = llmc.constant dense<[-1, 4, 2]> : tensor<3xi64>
  %spread_shape = llmc.constant dense<[1, 4, 2]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %zero = llmc.constant dense<0.000000e+00> : tensor<3x4xf32>
  %ones = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %scale = llmc.constant dense<2.500000e+00> : tensor<f32>
  %eps = llmc.constant dense<9.99999968E-21> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %grouped = llmc.reshape %c, %groups_shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %best, %best_ids = llmc.top_k %grouped {k = 2 : i64, largest = 1 : i64} : (tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xi64>)
  %group_scores = llmc.reduce_sum %best {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<3x4x2xf32>) -> tensor<3x4xf32>
  %kept_scores, %kept_ids = llmc.top_k %group_scores {k = 2 : i64, sorted = 0 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %kept = llmc.scatter_elements %zero, %kept_ids, %ones {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x4x1xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %early = llmc.cast %ids {to = f32} : (tensor<3x3xi64>) -> tensor<3x3xf32>
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %denominator = llmc.add %sum, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %denominator : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %scaled = llmc.mul %normalized, %scale : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  return %scaled, %ids, %early : tensor<3x3xf32>, tensor<3x3xi64>, tensor<3x3xf32>
}

// -----

// GPT-OSS's router: the top 4 logits, then a softmax of those, which is the chosen probabilities
// divided by their sum: one softmax_top_k with normalize. The ids are read before the softmax
// (the fused op is made where the top_k was, so that it comes before that reader).
// CHECK-LABEL: func.func @softmax_of_top_k
// CHECK-NEXT: %[[W:.*]], %[[IDS:.*]] = llmc.softmax_top_k %arg0 {k = 4 : i64, normalize = 1 : i64} : (tensor<?x32xf32>) -> (tensor<?x4xf32>, tensor<?x4xi64>)
// CHECK-NEXT: %[[E:.*]] = llmc.add %[[IDS]], %[[IDS]]
// CHECK-NEXT: return %[[W]], %[[E]]
func.func @softmax_of_top_k(%logits: tensor<?x32xf32>) -> (tensor<?x4xf32>, tensor<?x4xi64>) {
  %values, %indices = llmc.top_k %logits {k = 4 : i64} : (tensor<?x32xf32>) -> (tensor<?x4xf32>, tensor<?x4xi64>)
  %early = llmc.add %indices, %indices : (tensor<?x4xi64>, tensor<?x4xi64>) -> tensor<?x4xi64>
  %w = llmc.softmax %values : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %w, %early : tensor<?x4xf32>, tensor<?x4xi64>
}

// -----

// The chosen logits read elsewhere too, and the top_k unsorted: both stay.
// CHECK-LABEL: func.func @softmax_of_top_k_not
// CHECK-NOT: llmc.softmax_top_k
// CHECK: llmc.top_k
// CHECK: llmc.softmax
// CHECK: llmc.top_k
// CHECK: llmc.softmax
func.func @softmax_of_top_k_not(%logits: tensor<3x32xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %values, %indices = llmc.top_k %logits {k = 4 : i64} : (tensor<3x32xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
  %w = llmc.softmax %values : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %v2, %i2 = llmc.top_k %logits {k = 4 : i64, sorted = 0 : i64} : (tensor<3x32xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
  %w2 = llmc.softmax %v2 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %w, %values, %w2 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}

// -----

// ERNIE 4.5's router (Ernie4_5_MoeTopKRouter): softmax scores, a correction bias that chooses
// the top 2 without groups, the chosen scores divided by max(their sum, norm_min). One
// grouped_top_k of one group with softmax scores and normalize 2; nothing of the chain left.
// CHECK-LABEL: func.func @ernie
// CHECK: %[[W:.*]], %[[IDS:.*]] = llmc.grouped_top_k %arg0, %arg1 {epsilon = 9.99999996E-13 : f32, fill = 0.000000e+00 : f32, group_top = 1 : i64, groups = 1 : i64, k = 2 : i64, kept_groups = 1 : i64, normalize = 2 : i64, scores = "softmax"} : (tensor<?x4xf32>, tensor<4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK-NEXT: return %[[W]], %[[IDS]]
func.func @ernie(%logits: tensor<?x4xf32>, %bias: tensor<4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %norm_min = llmc.constant dense<9.99999996E-13> : tensor<f32>
  %s = llmc.softmax %logits {axis = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %c = llmc.add %s, %bias : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %values, %ids = llmc.top_k %c {k = 2 : i64} : (tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %w = llmc.gather_elements %s, %ids {axis = -1 : i64} : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<?x2xf32>) -> tensor<?x1xf32>
  %at_least = llmc.max %sum, %norm_min : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %normalized = llmc.div %w, %at_least : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
  return %normalized, %ids : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

// Left as they are: the sum clamped by another tensor (not a constant), and a softmax over the
// rows rather than the experts.
// CHECK-LABEL: func.func @ernie_clamped_by_a_tensor
// CHECK-NOT: llmc.grouped_top_k
// CHECK: llmc.gather_elements
func.func @ernie_clamped_by_a_tensor(%logits: tensor<3x4xf32>, %bias: tensor<4xf32>, %floor: tensor<3x1xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %s = llmc.softmax %logits {axis = 1 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %c = llmc.add %s, %bias : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %values, %ids = llmc.top_k %c {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %w = llmc.gather_elements %s, %ids {axis = -1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x2xf32>) -> tensor<3x1xf32>
  %at_least = llmc.max %sum, %floor : (tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %at_least : (tensor<3x2xf32>, tensor<3x1xf32>) -> tensor<3x2xf32>
  return %normalized, %ids : tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

// CHECK-LABEL: func.func @softmax_over_rows
// CHECK-NOT: llmc.grouped_top_k
// CHECK: llmc.gather_elements
func.func @softmax_over_rows(%logits: tensor<3x4xf32>, %bias: tensor<4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %s = llmc.softmax %logits {axis = 0 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %c = llmc.add %s, %bias : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %values, %ids = llmc.top_k %c {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %w = llmc.gather_elements %s, %ids {axis = -1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %w, %ids : tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

// One group (GLM-4-MoE's, GLM-5's n_group 1): llmc-fold-shapes has folded the scatter from the
// top 1 of that one group to ones, and the mask of ones keeps every expert: grouped_top_k with one
// group. Negative: ones over two groups are not a router's kept groups, and the chain stays.
// CHECK-LABEL: func.func @one_group_of_ones
// CHECK: llmc.grouped_top_k %arg0, %arg1 {fill = 0xFF800000 : f32, group_top = 1 : i64, groups = 1 : i64, k = 3 : i64, kept_groups = 1 : i64, normalize = 1 : i64}
// CHECK: llmc.top_k
// CHECK-NOT: llmc.grouped_top_k
func.func @one_group_of_ones(%logits: tensor<3x8xf32>, %bias: tensor<8xf32>)
    -> (tensor<3x3xf32>, tensor<3x3xi64>, tensor<3x3xf32>) {
  %spread_shape = llmc.constant dense<[1, 1, 8]> : tensor<3xi64>
  %flat_shape = llmc.constant dense<[-1, 8]> : tensor<2xi64>
  %kept = llmc.constant dense<1.000000e+00> : tensor<3x1xf32>
  %fill = llmc.constant dense<0xFF800000> : tensor<f32>
  %s = llmc.sigmoid %logits : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %c = llmc.add %s, %bias : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %column = llmc.unsqueeze %kept {axes = array<i64: -1>} : (tensor<3x1xf32>) -> tensor<3x1x1xf32>
  %spread = llmc.expand %column, %spread_shape : (tensor<3x1x1xf32>, tensor<3xi64>) -> tensor<3x1x8xf32>
  %mask = llmc.reshape %spread, %flat_shape : (tensor<3x1x8xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags = llmc.cast %mask {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden = llmc.not %flags : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked = llmc.where %hidden, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen, %ids = llmc.top_k %masked {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w = llmc.gather_elements %s, %ids {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  %sum = llmc.reduce_sum %w {axes = array<i64: -1>} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %normalized = llmc.div %w, %sum : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  %spread_shape2 = llmc.constant dense<[1, 2, 4]> : tensor<3xi64>
  %kept2 = llmc.constant dense<1.000000e+00> : tensor<3x2xf32>
  %column2 = llmc.unsqueeze %kept2 {axes = array<i64: -1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
  %spread2 = llmc.expand %column2, %spread_shape2 : (tensor<3x2x1xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
  %mask2 = llmc.reshape %spread2, %flat_shape : (tensor<3x2x4xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %flags2 = llmc.cast %mask2 {to = i1} : (tensor<3x8xf32>) -> tensor<3x8xi1>
  %hidden2 = llmc.not %flags2 : (tensor<3x8xi1>) -> tensor<3x8xi1>
  %masked2 = llmc.where %hidden2, %fill, %c : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %chosen2, %ids2 = llmc.top_k %masked2 {k = 3 : i64, sorted = 0 : i64} : (tensor<3x8xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %w2 = llmc.gather_elements %s, %ids2 {axis = 1 : i64} : (tensor<3x8xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  return %normalized, %ids, %w2 : tensor<3x3xf32>, tensor<3x3xi64>, tensor<3x3xf32>
}
