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

// Negative: the probabilities read elsewhere too (the router's logits output, say); the
// smallest k; a softmax over another axis; unsorted picks (DeepSeek's group choice).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: llmc.softmax_top_k
// CHECK-COUNT-4: llmc.top_k
// CHECK-NOT: llmc.softmax_top_k
func.func @kept(%logits: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x8xf32>, tensor<4x2xf32>) {
  %p = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v1, %i1 = llmc.top_k %p {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %q = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v2, %i2 = llmc.top_k %q {k = 2 : i64, largest = 0 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %r = llmc.softmax %logits {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v3, %i3 = llmc.top_k %r {k = 2 : i64, axis = 0 : i64} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi64>)
  %s = llmc.softmax %logits : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v4, %i4 = llmc.top_k %s {k = 2 : i64, sorted = 0 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  return %p, %v1, %v2, %v3, %v4 : tensor<4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x8xf32>, tensor<4x2xf32>
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
