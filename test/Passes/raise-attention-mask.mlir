// RUN: %llmc-opt %s -llmc-raise-attention-mask -split-input-file | FileCheck %s

// Hugging Face's causal and padding mask of a decoder with a KV cache, as transformers exports
// it (ranges from the cache's shape, a gather of attention_mask at [0, j], the additive form):
// the attention gets is_causal and reads attention_mask itself, and the ops that built the mask
// are gone.
// CHECK-LABEL: func.func @hf_causal_padding
// CHECK: %[[VIEW:.*]] = llmc.unsqueeze %arg1 {axes = array<i64: 1, 2>} : (tensor<1x?xi64>) -> tensor<1x1x1x?xi64>
// CHECK-NOT: llmc.range
// CHECK-NOT: llmc.gather_nd
// CHECK-NOT: llmc.where
// CHECK: llmc.fused_attention %arg0, %{{.*}}, %{{.*}}, %[[VIEW]], %{{.*}}, %{{.*}} {is_causal = 1 : i64
func.func @hf_causal_padding(%q: tensor<1x?x64xf32> {llmc.name = "q", llmc.dim_symbols = ["", "seq", ""]},
                             %am: tensor<1x?xi64> {llmc.name = "attention_mask", llmc.dim_symbols = ["", "total"]},
                             %past: tensor<?x1x32xf32> {llmc.name = "past", llmc.dim_symbols = ["past", "", ""]},
                             %new: tensor<?x1x32xf32> {llmc.name = "new", llmc.dim_symbols = ["seq", "", ""]})
    -> tensor<1x?x64xf32> attributes {llmc.symbol_bounds = {past = 64 : i64, seq = 16 : i64, total = 80 : i64},
                                      llmc.symbol_minima = {past = 0 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %one = llmc.constant dense<1> : tensor<1xi64>
  %two = llmc.constant dense<2> : tensor<1xi64>
  %c16 = llmc.constant dense<16> : tensor<1xi64>
  %zero4 = llmc.constant dense<0> : tensor<1x1x1x1xi64>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %minus1 = llmc.constant dense<-1> : tensor<1xi64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %k = llmc.concat %past, %new {axis = 0 : i64} : (tensor<?x1x32xf32>, tensor<?x1x32xf32>) -> tensor<?x1x32xf32>
  %seqShape = llmc.shape %q {end = 2 : i64, start = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1xi64>
  %seq = llmc.squeeze %seqShape : (tensor<1xi64>) -> tensor<i64>
  %pastShape = llmc.shape %past {end = 1 : i64} : (tensor<?x1x32xf32>) -> tensor<1xi64>
  %shape4 = llmc.concat %one, %two, %pastShape, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %pastSlice = llmc.slice %shape4 {axes = array<i64: 0>, ends = array<i64: 3>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<1xi64>
  %pastLen = llmc.squeeze %pastSlice : (tensor<1xi64>) -> tensor<i64>
  %total = llmc.add %pastLen, %seq : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %keep = llmc.cast %am {to = i1} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %rows = llmc.range %i0, %seq, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %positions = llmc.add %rows, %pastLen : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %keys = llmc.range %i0, %total, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %p2 = llmc.unsqueeze %positions {axes = array<i64: 0, 1>} : (tensor<?xi64>) -> tensor<1x1x?xi64>
  %p3 = llmc.unsqueeze %p2 {axes = array<i64: 3>} : (tensor<1x1x?xi64>) -> tensor<1x1x?x1xi64>
  %k2 = llmc.unsqueeze %keys {axes = array<i64: 0, 1>} : (tensor<?xi64>) -> tensor<1x1x?xi64>
  %k3 = llmc.unsqueeze %k2 {axes = array<i64: 2>} : (tensor<1x1x?xi64>) -> tensor<1x1x1x?xi64>
  %causal = llmc.less_equal %k3, %p3 : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %kmax = llmc.max %zero4, %k3 : (tensor<1x1x1x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x1x?xi64>
  %kshape = llmc.shape %kmax : (tensor<1x1x1x?xi64>) -> tensor<4xi64>
  %batchIdx = llmc.expand %zero4, %kshape : (tensor<1x1x1x1xi64>, tensor<4xi64>) -> tensor<1x1x1x?xi64>
  %b5 = llmc.unsqueeze %batchIdx {axes = array<i64: -1>} : (tensor<1x1x1x?xi64>) -> tensor<1x1x1x?x1xi64>
  %keyIdx = llmc.expand %k3, %kshape : (tensor<1x1x1x?xi64>, tensor<4xi64>) -> tensor<1x1x1x?xi64>
  %j5 = llmc.unsqueeze %keyIdx {axes = array<i64: -1>} : (tensor<1x1x1x?xi64>) -> tensor<1x1x1x?x1xi64>
  %tuples = llmc.concat %b5, %j5 {axis = -1 : i64} : (tensor<1x1x1x?x1xi64>, tensor<1x1x1x?x1xi64>) -> tensor<1x1x1x?x2xi64>
  %padding = llmc.gather_nd %keep, %tuples : (tensor<1x?xi1>, tensor<1x1x1x?x2xi64>) -> tensor<1x1x1x?xi1>
  %true = llmc.constant dense<true> : tensor<i1>
  %both0 = llmc.and %true, %causal : (tensor<i1>, tensor<1x1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %both = llmc.and %both0, %padding : (tensor<1x1x?x?xi1>, tensor<1x1x1x?xi1>) -> tensor<1x1x?x?xi1>
  %additive = llmc.where %both, %f0, %lowest : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32>
  %out = llmc.fused_attention %q, %k, %k, %additive, %e, %e {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 2 : i64} : (tensor<1x?x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>, tensor<1x1x?x?xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  return %out : tensor<1x?x64xf32>
}

// -----

// A causal mask alone (boolean, built inside a fused region): is_causal, no mask.
// CHECK-LABEL: func.func @causal_only
// CHECK-NOT: llmc.range
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}} {is_causal = 1 : i64{{.*}} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<0xf32>,
func.func @causal_only(%q: tensor<1x?x64xf32> {llmc.name = "q", llmc.dim_symbols = ["", "seq", ""]},
                       %k: tensor<1x?x64xf32> {llmc.name = "k", llmc.dim_symbols = ["", "seq", ""]})
    -> tensor<1x?x64xf32> attributes {llmc.symbol_bounds = {seq = 16 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %seqShape = llmc.shape %q {end = 2 : i64, start = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1xi64>
  %seq = llmc.squeeze %seqShape : (tensor<1xi64>) -> tensor<i64>
  %r = llmc.range %i0, %seq, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %rows = llmc.unsqueeze %r {axes = array<i64: 1>} : (tensor<?xi64>) -> tensor<?x1xi64>
  %mask = llmc.fused_elementwise %r, %rows : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1> {
  ^bb0(%j: tensor<i64>, %i: tensor<i64>):
    %t = llmc.constant dense<true> : tensor<i1>
    %le = llmc.greater_equal %i, %j : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %both = llmc.and %t, %le : (tensor<i1>, tensor<i1>) -> tensor<i1>
    llmc.yield %both : tensor<i1>
  }
  %out = llmc.fused_attention %q, %k, %k, %mask, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  return %out : tensor<1x?x64xf32>
}

// -----

// A causal mask and the negation of a mask filled with false (DeepSeek-V3.2's index mask where
// its top-k takes every key, after llmc-fold-shapes): is_causal, no mask. Negative: filled with
// true, the negation hides every key, and the mask stays.
// CHECK-LABEL: func.func @causal_and_nothing_hidden
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}} {is_causal = 1 : i64{{.*}} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<0xf32>,
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<?x?xi1>,
func.func @causal_and_nothing_hidden(%q: tensor<1x?x64xf32> {llmc.name = "q", llmc.dim_symbols = ["", "seq", ""]},
                                     %k: tensor<1x?x64xf32> {llmc.name = "k", llmc.dim_symbols = ["", "seq", ""]})
    -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>) attributes {llmc.symbol_bounds = {seq = 16 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %seqShape = llmc.shape %q {end = 2 : i64, start = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1xi64>
  %seq = llmc.squeeze %seqShape : (tensor<1xi64>) -> tensor<i64>
  %r = llmc.range %i0, %seq, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %rows = llmc.unsqueeze %r {axes = array<i64: 1>} : (tensor<?xi64>) -> tensor<?x1xi64>
  %causal = llmc.greater_equal %rows, %r : (tensor<?x1xi64>, tensor<?xi64>) -> tensor<?x?xi1>
  %dims = llmc.concat %seqShape, %seqShape {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %none = llmc.constant_of_shape %dims {dtype = i1} : (tensor<2xi64>) -> tensor<?x?xi1>
  %keepAll = llmc.not %none : (tensor<?x?xi1>) -> tensor<?x?xi1>
  %mask = llmc.and %causal, %keepAll : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %out = llmc.fused_attention %q, %k, %k, %mask, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  %all = llmc.constant_of_shape %dims {dtype = i1, value = 1.0 : f64} : (tensor<2xi64>) -> tensor<?x?xi1>
  %keepNone = llmc.not %all : (tensor<?x?xi1>) -> tensor<?x?xi1>
  %mask2 = llmc.and %causal, %keepNone : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %out2 = llmc.fused_attention %q, %k, %k, %mask2, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  return %out, %out2 : tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// A batch of two left-padded sequences, static shapes (3 cached tokens, 4 new): attention_mask
// [2, 7] is read at [b, j].
// CHECK-LABEL: func.func @padded_batch
// CHECK: %[[VIEW:.*]] = llmc.unsqueeze %arg2 {axes = array<i64: 1, 2>} : (tensor<2x7xi64>) -> tensor<2x1x1x7xi64>
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %[[VIEW]], %{{.*}}, %{{.*}} {is_causal = 1 : i64
func.func @padded_batch(%q: tensor<2x4x64xf32>, %k: tensor<2x7x64xf32>, %am: tensor<2x7xi64>) -> tensor<2x4x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i3 = llmc.constant dense<3> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %i7 = llmc.constant dense<7> : tensor<i64>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %pos = llmc.add %r, %i3 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %pos {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %keys = llmc.range %i0, %i7, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<7xi64>
  %causal = llmc.less_equal %keys, %rows : (tensor<7xi64>, tensor<4x1xi64>) -> tensor<4x7xi1>
  %keep = llmc.cast %am {to = i1} : (tensor<2x7xi64>) -> tensor<2x7xi1>
  %keep4 = llmc.unsqueeze %keep {axes = array<i64: 1, 2>} : (tensor<2x7xi1>) -> tensor<2x1x1x7xi1>
  %mask = llmc.and %causal, %keep4 : (tensor<4x7xi1>, tensor<2x1x1x7xi1>) -> tensor<2x1x4x7xi1>
  %out = llmc.fused_attention %q, %k, %k, %mask, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<2x4x64xf32>, tensor<2x7x64xf32>, tensor<2x7x64xf32>, tensor<2x1x4x7xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<2x4x64xf32>
  return %out : tensor<2x4x64xf32>
}

// -----

// Not raised: the frontier is one key off (j <= i + 4 where the keys end at i + 3), the padding
// is read one key late, and the additive mask hides with -1 (a score could survive it).
// CHECK-LABEL: func.func @not_raised
// CHECK-COUNT-3: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 1 : i64}
func.func @not_raised(%q: tensor<2x4x64xf32>, %k: tensor<2x7x64xf32>, %am: tensor<1x8xi64>)
    -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<2x4x64xf32>) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i3 = llmc.constant dense<3> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %i7 = llmc.constant dense<7> : tensor<i64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %fm1 = llmc.constant dense<-1.000000e+00> : tensor<f32>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %pos = llmc.add %r, %i4 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %pos {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %keys = llmc.range %i0, %i7, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<7xi64>
  %offByOne = llmc.less_equal %keys, %rows : (tensor<7xi64>, tensor<4x1xi64>) -> tensor<4x7xi1>
  %a = llmc.fused_attention %q, %k, %k, %offByOne, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<2x4x64xf32>, tensor<2x7x64xf32>, tensor<2x7x64xf32>, tensor<4x7xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<2x4x64xf32>
  %keys1 = llmc.add %keys, %i1 : (tensor<7xi64>, tensor<i64>) -> tensor<7xi64>
  %batch = llmc.range %i0, %i1, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1xi64>
  %s7 = llmc.constant dense<7> : tensor<1xi64>
  %b7 = llmc.expand %batch, %s7 : (tensor<1xi64>, tensor<1xi64>) -> tensor<7xi64>
  %b71 = llmc.unsqueeze %b7 {axes = array<i64: 1>} : (tensor<7xi64>) -> tensor<7x1xi64>
  %j71 = llmc.unsqueeze %keys1 {axes = array<i64: 1>} : (tensor<7xi64>) -> tensor<7x1xi64>
  %tuples = llmc.concat %b71, %j71 {axis = 1 : i64} : (tensor<7x1xi64>, tensor<7x1xi64>) -> tensor<7x2xi64>
  %keep = llmc.cast %am {to = i1} : (tensor<1x8xi64>) -> tensor<1x8xi1>
  %late = llmc.gather_nd %keep, %tuples : (tensor<1x8xi1>, tensor<7x2xi64>) -> tensor<7xi1>
  %b = llmc.fused_attention %q, %k, %k, %late, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<2x4x64xf32>, tensor<2x7x64xf32>, tensor<2x7x64xf32>, tensor<7xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<2x4x64xf32>
  %pos3 = llmc.add %r, %i3 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %rows3 = llmc.unsqueeze %pos3 {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %causal = llmc.less_equal %keys, %rows3 : (tensor<7xi64>, tensor<4x1xi64>) -> tensor<4x7xi1>
  %soft = llmc.where %causal, %f0, %fm1 : (tensor<4x7xi1>, tensor<f32>, tensor<f32>) -> tensor<4x7xf32>
  %c = llmc.fused_attention %q, %k, %k, %soft, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<2x4x64xf32>, tensor<2x7x64xf32>, tensor<2x7x64xf32>, tensor<4x7xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<2x4x64xf32>
  return %a, %b, %c : tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<2x4x64xf32>
}

// -----

// DeepSeek's latent attention (llmc-absorb-mla's op) with an additive causal and padding mask:
// the same, its scores [batch, heads, queries, cache rows].
// CHECK-LABEL: func.func @latent
// CHECK: %[[VIEW:.*]] = llmc.unsqueeze %arg4 {axes = array<i64: 1, 2>} : (tensor<1x7xi64>) -> tensor<1x1x1x7xi64>
// CHECK-NOT: llmc.where
// CHECK: llmc.latent_attention %arg0, %arg1, %arg2, %arg3, %[[VIEW]] {is_causal = 1 : i64
func.func @latent(%q: tensor<1x2x4x6xf32>, %cache: tensor<7x1x10xf32>, %uk: tensor<2x4x8xf32>, %uv: tensor<2x8x3xf32>,
                  %am: tensor<1x7xi64>) -> tensor<1x2x4x3xf32> {
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i3 = llmc.constant dense<3> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %i7 = llmc.constant dense<7> : tensor<i64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %pos = llmc.add %r, %i3 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %pos {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %keys = llmc.range %i0, %i7, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<7xi64>
  %causal = llmc.greater_equal %rows, %keys : (tensor<4x1xi64>, tensor<7xi64>) -> tensor<4x7xi1>
  %keep = llmc.cast %am {to = i1} : (tensor<1x7xi64>) -> tensor<1x7xi1>
  %mask = llmc.and %causal, %keep : (tensor<4x7xi1>, tensor<1x7xi1>) -> tensor<4x7xi1>
  %additive = llmc.where %mask, %f0, %lowest : (tensor<4x7xi1>, tensor<f32>, tensor<f32>) -> tensor<4x7xf32>
  %out = llmc.latent_attention %q, %cache, %uk, %uv, %additive {rope_dim = 2 : i64, scale = 0.5 : f32} : (tensor<1x2x4x6xf32>, tensor<7x1x10xf32>, tensor<2x4x8xf32>, tensor<2x8x3xf32>, tensor<4x7xf32>) -> tensor<1x2x4x3xf32>
  return %out : tensor<1x2x4x3xf32>
}

// -----

// Not raised: positions cast to i8 before the comparison (they would wrap past 127); with i64
// they would be raised (@padded_batch).
// CHECK-LABEL: func.func @narrow_positions
// CHECK: llmc.cast %{{.*}} {to = i8}
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 1 : i64}
func.func @narrow_positions(%q: tensor<1x4x64xf32>, %k: tensor<1x7x64xf32>) -> tensor<1x4x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i3 = llmc.constant dense<3> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %i7 = llmc.constant dense<7> : tensor<i64>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %pos = llmc.add %r, %i3 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %pos {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %rows8 = llmc.cast %rows {to = i8} : (tensor<4x1xi64>) -> tensor<4x1xi8>
  %keys = llmc.range %i0, %i7, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<7xi64>
  %keys8 = llmc.cast %keys {to = i8} : (tensor<7xi64>) -> tensor<7xi8>
  %causal = llmc.less_equal %keys8, %rows8 : (tensor<7xi8>, tensor<4x1xi8>) -> tensor<4x7xi1>
  %out = llmc.fused_attention %q, %k, %k, %causal, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x4x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<4x7xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x4x64xf32>
  return %out : tensor<1x4x64xf32>
}

// -----

// A sliding window (Mistral's: key j after position i - window) with a cache: with the plan's
// bounds (at most 64 cached and 16 new tokens) no query reaches 4096 keys back, so the window
// hides nothing and the mask is causal. A window of 8 hides keys at those bounds: it becomes
// sliding_window = 8 (since session 27). Negative: a comparison with the query's place among the
// new tokens (top-left, not its position after the past) and one that hides the query itself
// and 8 keys behind it (`j > i + 8`) stay masks.
// CHECK-LABEL: func.func @sliding_window
// CHECK: %[[WIDE:.*]] = llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {is_causal = 1 : i64, kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<0xf32>,
// CHECK: %[[NARROW:.*]] = llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {is_causal = 1 : i64, kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64, sliding_window = 8 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<0xf32>,
// CHECK: %[[TOPLEFT:.*]] = llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x1x?x?xi1>,
// CHECK: %[[AHEAD:.*]] = llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x1x?x?xi1>,
func.func @sliding_window(%q: tensor<1x?x64xf32> {llmc.name = "q", llmc.dim_symbols = ["", "seq", ""]},
                          %k: tensor<?x1x64xf32> {llmc.name = "k", llmc.dim_symbols = ["total", "", ""]})
    -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>)
    attributes {llmc.symbol_bounds = {seq = 16 : i64, total = 80 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %w4096 = llmc.constant dense<4096> : tensor<i64>
  %w8 = llmc.constant dense<8> : tensor<i64>
  %seqShape = llmc.shape %q {end = 2 : i64, start = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1xi64>
  %seq = llmc.squeeze %seqShape : (tensor<1xi64>) -> tensor<i64>
  %totalShape = llmc.shape %k {end = 1 : i64} : (tensor<?x1x64xf32>) -> tensor<1xi64>
  %total = llmc.squeeze %totalShape : (tensor<1xi64>) -> tensor<i64>
  %past = llmc.sub %total, %seq : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = llmc.range %i0, %seq, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = llmc.add %r, %past : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %rows = llmc.unsqueeze %pos {axes = array<i64: 1>} : (tensor<?xi64>) -> tensor<?x1xi64>
  %keys = llmc.range %i0, %total, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %causal = llmc.less_equal %keys, %rows : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %from4096 = llmc.sub %rows, %w4096 : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi64>
  %in4096 = llmc.greater %keys, %from4096 : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %wide = llmc.and %causal, %in4096 : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %wide4 = llmc.unsqueeze %wide {axes = array<i64: 0, 1>} : (tensor<?x?xi1>) -> tensor<1x1x?x?xi1>
  %a = llmc.fused_attention %q, %k, %k, %wide4, %e, %e {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x1x?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  %from8 = llmc.sub %rows, %w8 : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi64>
  %in8 = llmc.greater %keys, %from8 : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %narrow = llmc.and %causal, %in8 : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %narrow4 = llmc.unsqueeze %narrow {axes = array<i64: 0, 1>} : (tensor<?x?xi1>) -> tensor<1x1x?x?xi1>
  %b = llmc.fused_attention %q, %k, %k, %narrow4, %e, %e {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x1x?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  %places = llmc.unsqueeze %r {axes = array<i64: 1>} : (tensor<?xi64>) -> tensor<?x1xi64>
  %fromPlace = llmc.sub %places, %w8 : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi64>
  %inPlace = llmc.greater %keys, %fromPlace : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %topLeft = llmc.and %causal, %inPlace : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %topLeft4 = llmc.unsqueeze %topLeft {axes = array<i64: 0, 1>} : (tensor<?x?xi1>) -> tensor<1x1x?x?xi1>
  %c = llmc.fused_attention %q, %k, %k, %topLeft4, %e, %e {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x1x?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  %past8 = llmc.add %rows, %w8 : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi64>
  %beyond = llmc.greater %keys, %past8 : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %beyond4 = llmc.unsqueeze %beyond {axes = array<i64: 0, 1>} : (tensor<?x?xi1>) -> tensor<1x1x?x?xi1>
  %d = llmc.fused_attention %q, %k, %k, %beyond4, %e, %e {kv_num_heads = 1 : i64, kv_time_major = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x1x?x?xi1>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  return %a, %b, %c, %d : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// A decoder exported without attention_mask: transformers looks for packed sequences in its
// position ids (a new sequence wherever a position is not the one before plus one: the cumsum of
// `not(pos[t] - pos[t - 1] == 1)`, read at each query and key), then ANDs "the same sequence"
// with the causal comparison of the positions, each gathered at [0, i] and [0, j]. Positions
// that are a range make every step 1, the cumsum 0 everywhere: causal only. Negative: positions
// that are an input (position_ids) may jump, and that mask stays.
// CHECK-LABEL: func.func @packed_sequences
// CHECK-NOT: llmc.cumsum %{{.*}} : (tensor<1x?xi64>
// CHECK: %[[RANGE:.*]] = llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}} {is_causal = 1 : i64, kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<0xf32>,
// CHECK: llmc.cumsum
// CHECK: %[[INPUT:.*]] = llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x1x?x?xf32>,
func.func @packed_sequences(%q: tensor<1x?x64xf32> {llmc.name = "q", llmc.dim_symbols = ["", "seq", ""]},
                            %k: tensor<1x?x64xf32> {llmc.name = "k", llmc.dim_symbols = ["", "seq", ""]},
                            %ids: tensor<1x?xi64> {llmc.name = "position_ids", llmc.dim_symbols = ["", "seq"]})
    -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>) attributes {llmc.symbol_bounds = {seq = 32 : i64}} {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %m1 = llmc.constant dense<-1> : tensor<i64>
  %z1 = llmc.constant dense<0> : tensor<1xi64>
  %o1 = llmc.constant dense<1> : tensor<1xi64>
  %flat = llmc.constant dense<-1> : tensor<1xi64>
  %zero4 = llmc.constant dense<0> : tensor<1x1x1x1xi64>
  %true = llmc.constant dense<true> : tensor<i1>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %seqShape = llmc.shape %q {end = 2 : i64, start = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1xi64>
  %seq = llmc.squeeze %seqShape : (tensor<1xi64>) -> tensor<i64>
  %r = llmc.range %i0, %seq, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %range = llmc.unsqueeze %r {axes = array<i64: 0>} : (tensor<?xi64>) -> tensor<1x?xi64>
  %seqPlus1 = llmc.add %i1, %seq : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %end1 = llmc.reshape %seqPlus1, %flat : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  // Query positions [1, 1, seq, 1] and key positions [1, 1, 1, seq] as index tuples (0, t).
  %r4 = llmc.unsqueeze %r {axes = array<i64: 0, 1>} : (tensor<?xi64>) -> tensor<1x1x?xi64>
  %qi = llmc.unsqueeze %r4 {axes = array<i64: 3>} : (tensor<1x1x?xi64>) -> tensor<1x1x?x1xi64>
  %kj = llmc.unsqueeze %r4 {axes = array<i64: 2>} : (tensor<1x1x?xi64>) -> tensor<1x1x1x?xi64>
  %qShape = llmc.shape %qi : (tensor<1x1x?x1xi64>) -> tensor<4xi64>
  %qb = llmc.expand %zero4, %qShape : (tensor<1x1x1x1xi64>, tensor<4xi64>) -> tensor<1x1x?x1xi64>
  %qb5 = llmc.unsqueeze %qb {axes = array<i64: -1>} : (tensor<1x1x?x1xi64>) -> tensor<1x1x?x1x1xi64>
  %qi5 = llmc.unsqueeze %qi {axes = array<i64: -1>} : (tensor<1x1x?x1xi64>) -> tensor<1x1x?x1x1xi64>
  %qTuples = llmc.concat %qb5, %qi5 {axis = -1 : i64} : (tensor<1x1x?x1x1xi64>, tensor<1x1x?x1x1xi64>) -> tensor<1x1x?x1x2xi64>
  %kShape = llmc.shape %kj : (tensor<1x1x1x?xi64>) -> tensor<4xi64>
  %kb = llmc.expand %zero4, %kShape : (tensor<1x1x1x1xi64>, tensor<4xi64>) -> tensor<1x1x1x?xi64>
  %kb5 = llmc.unsqueeze %kb {axes = array<i64: -1>} : (tensor<1x1x1x?xi64>) -> tensor<1x1x1x?x1xi64>
  %kj5 = llmc.unsqueeze %kj {axes = array<i64: -1>} : (tensor<1x1x1x?xi64>) -> tensor<1x1x1x?x1xi64>
  %kTuples = llmc.concat %kb5, %kj5 {axis = -1 : i64} : (tensor<1x1x1x?x1xi64>, tensor<1x1x1x?x1xi64>) -> tensor<1x1x1x?x2xi64>
  // The mask of positions %range (a) and of %ids (b), op for op the same.
  %first_a = llmc.slice %range {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x?xi64>) -> tensor<1x1xi64>
  %before_a = llmc.sub %first_a, %i1 : (tensor<1x1xi64>, tensor<i64>) -> tensor<1x1xi64>
  %prev_a = llmc.concat %before_a, %range {axis = -1 : i64} : (tensor<1x1xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %lo_a = llmc.dynamic_slice %prev_a, %z1, %seqShape {axes = array<i64: -1>, steps = array<i64: 1>} : (tensor<1x?xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %hi_a = llmc.dynamic_slice %prev_a, %o1, %end1 {axes = array<i64: -1>, steps = array<i64: 1>} : (tensor<1x?xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %step_a = llmc.sub %hi_a, %lo_a : (tensor<1x?xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %cont_a = llmc.equal %step_a, %i1 : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi1>
  %new_a = llmc.not %cont_a : (tensor<1x?xi1>) -> tensor<1x?xi1>
  %newI_a = llmc.cast %new_a {to = i64} : (tensor<1x?xi1>) -> tensor<1x?xi64>
  %packed_a = llmc.cumsum %newI_a, %m1 : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %qpos_a = llmc.gather_nd %range, %qTuples : (tensor<1x?xi64>, tensor<1x1x?x1x2xi64>) -> tensor<1x1x?x1xi64>
  %kpos_a = llmc.gather_nd %range, %kTuples : (tensor<1x?xi64>, tensor<1x1x1x?x2xi64>) -> tensor<1x1x1x?xi64>
  %causal_a = llmc.less_equal %kpos_a, %qpos_a : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %qseq_a = llmc.gather_nd %packed_a, %qTuples : (tensor<1x?xi64>, tensor<1x1x?x1x2xi64>) -> tensor<1x1x?x1xi64>
  %kseq_a = llmc.gather_nd %packed_a, %kTuples : (tensor<1x?xi64>, tensor<1x1x1x?x2xi64>) -> tensor<1x1x1x?xi64>
  %same_a = llmc.equal %qseq_a, %kseq_a : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both0_a = llmc.and %true, %causal_a : (tensor<i1>, tensor<1x1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %both_a = llmc.and %both0_a, %same_a : (tensor<1x1x?x?xi1>, tensor<1x1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %mask_a = llmc.where %both_a, %f0, %lowest : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32>
  %a = llmc.fused_attention %q, %k, %k, %mask_a, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x1x?x?xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  %first_b = llmc.slice %ids {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x?xi64>) -> tensor<1x1xi64>
  %before_b = llmc.sub %first_b, %i1 : (tensor<1x1xi64>, tensor<i64>) -> tensor<1x1xi64>
  %prev_b = llmc.concat %before_b, %ids {axis = -1 : i64} : (tensor<1x1xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %lo_b = llmc.dynamic_slice %prev_b, %z1, %seqShape {axes = array<i64: -1>, steps = array<i64: 1>} : (tensor<1x?xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %hi_b = llmc.dynamic_slice %prev_b, %o1, %end1 {axes = array<i64: -1>, steps = array<i64: 1>} : (tensor<1x?xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %step_b = llmc.sub %hi_b, %lo_b : (tensor<1x?xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %cont_b = llmc.equal %step_b, %i1 : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi1>
  %new_b = llmc.not %cont_b : (tensor<1x?xi1>) -> tensor<1x?xi1>
  %newI_b = llmc.cast %new_b {to = i64} : (tensor<1x?xi1>) -> tensor<1x?xi64>
  %packed_b = llmc.cumsum %newI_b, %m1 : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %qpos_b = llmc.gather_nd %ids, %qTuples : (tensor<1x?xi64>, tensor<1x1x?x1x2xi64>) -> tensor<1x1x?x1xi64>
  %kpos_b = llmc.gather_nd %ids, %kTuples : (tensor<1x?xi64>, tensor<1x1x1x?x2xi64>) -> tensor<1x1x1x?xi64>
  %causal_b = llmc.less_equal %kpos_b, %qpos_b : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %qseq_b = llmc.gather_nd %packed_b, %qTuples : (tensor<1x?xi64>, tensor<1x1x?x1x2xi64>) -> tensor<1x1x?x1xi64>
  %kseq_b = llmc.gather_nd %packed_b, %kTuples : (tensor<1x?xi64>, tensor<1x1x1x?x2xi64>) -> tensor<1x1x1x?xi64>
  %same_b = llmc.equal %qseq_b, %kseq_b : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both_b = llmc.and %causal_b, %same_b : (tensor<1x1x?x?xi1>, tensor<1x1x?x?xi1>) -> tensor<1x1x?x?xi1>
  %mask_b = llmc.where %both_b, %f0, %lowest : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32>
  %b = llmc.fused_attention %q, %k, %k, %mask_b, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x1x?x?xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x?x64xf32>
  return %a, %b : tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// A bias per head beside a causal and padding mask (ALiBi's, as llmc-raise-attention leaves it:
// Bloom's bias + where(m, 0, -huge)): is_causal, and the bias where attention_mask keeps a key.
// CHECK-LABEL: func.func @bias_beside_padding
// CHECK: %[[VIEW:.*]] = llmc.unsqueeze %arg2 {axes = array<i64: 1, 2>} : (tensor<2x7xi64>) -> tensor<2x1x1x7xi64>
// CHECK: %[[KEEP:.*]] = llmc.cast %[[VIEW]] {to = i1} : (tensor<2x1x1x7xi64>) -> tensor<2x1x1x7xi1>
// CHECK: %[[MASK:.*]] = llmc.where %[[KEEP]], %arg3, %{{.*}} : (tensor<2x1x1x7xi1>, tensor<1x2x1x7xf32>, tensor<f32>) -> tensor<2x2x1x7xf32>
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %[[MASK]], %{{.*}}, %{{.*}} {is_causal = 1 : i64
func.func @bias_beside_padding(%q: tensor<2x4x64xf32>, %k: tensor<2x7x32xf32>, %am: tensor<2x7xi64>,
                               %bias: tensor<1x2x1x7xf32>) -> tensor<2x4x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i3 = llmc.constant dense<3> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %i7 = llmc.constant dense<7> : tensor<i64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %pos = llmc.add %r, %i3 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %pos {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %keys = llmc.range %i0, %i7, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<7xi64>
  %causal = llmc.less_equal %keys, %rows : (tensor<7xi64>, tensor<4x1xi64>) -> tensor<4x7xi1>
  %keep = llmc.cast %am {to = i1} : (tensor<2x7xi64>) -> tensor<2x7xi1>
  %keep4 = llmc.unsqueeze %keep {axes = array<i64: 1, 2>} : (tensor<2x7xi1>) -> tensor<2x1x1x7xi1>
  %both = llmc.and %causal, %keep4 : (tensor<4x7xi1>, tensor<2x1x1x7xi1>) -> tensor<2x1x4x7xi1>
  %additive = llmc.where %both, %f0, %lowest : (tensor<2x1x4x7xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x4x7xf32>
  %mask = llmc.add %additive, %bias : (tensor<2x1x4x7xf32>, tensor<1x2x1x7xf32>) -> tensor<2x2x4x7xf32>
  %out = llmc.fused_attention %q, %k, %k, %mask, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 2 : i64} : (tensor<2x4x64xf32>, tensor<2x7x32xf32>, tensor<2x7x32xf32>, tensor<2x2x4x7xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<2x4x64xf32>
  return %out : tensor<2x4x64xf32>
}

// -----

// MPT's form: the scores kept where a causal mask, made additive and cast back to a boolean that
// says "hidden", says not hidden; elsewhere -huge: is_causal, and the bias alone as the mask.
// CHECK-LABEL: func.func @bias_where_not_hidden
// CHECK-NOT: llmc.where
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %arg2, %{{.*}}, %{{.*}} {is_causal = 1 : i64
func.func @bias_where_not_hidden(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>, %bias: tensor<2x1x4xf32>)
    -> tensor<1x4x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %r {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %causal = llmc.less_equal %r, %rows : (tensor<4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
  %additive = llmc.where %causal, %f0, %lowest : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  %hidden = llmc.cast %additive {to = i1} : (tensor<4x4xf32>) -> tensor<4x4xi1>
  %shown = llmc.not %hidden : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %mask = llmc.where %shown, %bias, %lowest : (tensor<4x4xi1>, tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %out = llmc.fused_attention %q, %k, %k, %mask, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 2 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<2x4x4xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x4x64xf32>
  return %out : tensor<1x4x64xf32>
}

// -----

// Not raised: a bias beside a boolean mask that is a graph input (no index arithmetic to prove),
// and a bias beside a negated mask that is not a double negation (not(m) of a causal m hides the
// keys up to each query: no conjunction says so).
// CHECK-LABEL: func.func @bias_not_raised
// CHECK: %[[INPUT:.*]] = llmc.where %arg2, %arg3, %{{.*}} : (tensor<1x1x4x4xi1>
// CHECK: %[[NEGATED:.*]] = llmc.where %{{.*}}, %arg3, %{{.*}} : (tensor<4x4xi1>
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %[[INPUT]], %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 2 : i64}
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %[[NEGATED]], %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 2 : i64}
func.func @bias_not_raised(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>, %keep: tensor<1x1x4x4xi1>,
                           %bias: tensor<2x1x4xf32>) -> (tensor<1x4x64xf32>, tensor<1x4x64xf32>) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %i0 = llmc.constant dense<0> : tensor<i64>
  %i1 = llmc.constant dense<1> : tensor<i64>
  %i4 = llmc.constant dense<4> : tensor<i64>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %input = llmc.where %keep, %bias, %lowest : (tensor<1x1x4x4xi1>, tensor<2x1x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %r = llmc.range %i0, %i4, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %rows = llmc.unsqueeze %r {axes = array<i64: 1>} : (tensor<4xi64>) -> tensor<4x1xi64>
  %causal = llmc.less_equal %r, %rows : (tensor<4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
  %after = llmc.not %causal : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %negated = llmc.where %after, %bias, %lowest : (tensor<4x4xi1>, tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %a = llmc.fused_attention %q, %k, %k, %input, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 2 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x2x4x4xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x4x64xf32>
  %b = llmc.fused_attention %q, %k, %k, %negated, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 2 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<2x4x4xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x4x64xf32>
  return %a, %b : tensor<1x4x64xf32>, tensor<1x4x64xf32>
}

// -----

// GPT-Neo's masks: constant buffers [1, 1, N, N], tril(ones) and its local band of 3 keys,
// sliced to the scores (rows Sk - Sq to Sk, the first Sk columns) and selected as where(m, 0,
// -big): bands about the diagonal, so is_causal and a sliding window of 3 (since session 36).
// Negatives: a buffer with a hole in its band, and the causal one read at the wrong rows (from 0
// where the queries come after two cached keys), stay masks.
// CHECK-LABEL: func.func @band_buffers
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {is_causal = 1 : i64, kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<0xf32>,
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {is_causal = 1 : i64, kv_num_heads = 1 : i64, q_num_heads = 1 : i64, sliding_window = 3 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<0xf32>,
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<1x1x3x5xf32>,
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<1x1x3x5xf32>,
func.func @band_buffers(%q: tensor<1x3x64xf32>, %k: tensor<1x5x64xf32>)
    -> (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %f0 = llmc.constant dense<0.000000e+00> : tensor<f32>
  %lowest = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %causal = llmc.constant dense<[[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]]]> : tensor<1x1x8x8xi1>
  %local = llmc.constant dense<[[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [false, true, true, true, false, false, false, false], [false, false, true, true, true, false, false, false], [false, false, false, true, true, true, false, false], [false, false, false, false, true, true, true, false], [false, false, false, false, false, true, true, true]]]]> : tensor<1x1x8x8xi1>
  %holed = llmc.constant dense<[[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, false, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]]]> : tensor<1x1x8x8xi1>
  %c = llmc.slice %causal {axes = array<i64: 2, 3>, ends = array<i64: 5, 5>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : (tensor<1x1x8x8xi1>) -> tensor<1x1x3x5xi1>
  %cm = llmc.where %c, %f0, %lowest : (tensor<1x1x3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x5xf32>
  %a = llmc.fused_attention %q, %k, %k, %cm, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<1x1x3x5xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  %l = llmc.slice %local {axes = array<i64: 2, 3>, ends = array<i64: 5, 5>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : (tensor<1x1x8x8xi1>) -> tensor<1x1x3x5xi1>
  %lm = llmc.where %l, %f0, %lowest : (tensor<1x1x3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x5xf32>
  %b = llmc.fused_attention %q, %k, %k, %lm, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<1x1x3x5xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  %h = llmc.slice %holed {axes = array<i64: 2, 3>, ends = array<i64: 5, 5>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : (tensor<1x1x8x8xi1>) -> tensor<1x1x3x5xi1>
  %hm = llmc.where %h, %f0, %lowest : (tensor<1x1x3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x5xf32>
  %d = llmc.fused_attention %q, %k, %k, %hm, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<1x1x3x5xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  %w = llmc.slice %causal {axes = array<i64: 2, 3>, ends = array<i64: 3, 5>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<1x1x8x8xi1>) -> tensor<1x1x3x5xi1>
  %wm = llmc.where %w, %f0, %lowest : (tensor<1x1x3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x5xf32>
  %f = llmc.fused_attention %q, %k, %k, %wm, %e, %e {kv_num_heads = 1 : i64, q_num_heads = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>, tensor<1x1x3x5xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  return %a, %b, %d, %f : tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>
}
