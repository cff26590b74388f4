// RUN: %llmc-opt %s -llmc-fuse-query-rotary -split-input-file | FileCheck %s

// GPT-J's query: a partial rotary of neighbouring pairs on its rows, reshaped to heads and back,
// read by a decode attention over a length-major cache. The attention takes the rotary's input
// and tables; the rotary and the reshapes go.
// CHECK-LABEL: func.func @partial_neighbours
// CHECK-NOT: llmc.rotary
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %arg2, %arg3 {is_causal = 1 : i64, kv_num_heads = 2 : i64, kv_time_major = 1 : i64, q_num_heads = 4 : i64, rotary_dim = 8 : i64, rotary_interleaved = 1 : i64, rotate_keys = 0 : i64}
func.func @partial_neighbours(%q: tensor<1x3x64xf32>, %k: tensor<9x1x32xf32>, %cos: tensor<1x3x4xf32>,
                              %sin: tensor<1x3x4xf32>) -> tensor<1x3x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %noIds = llmc.constant dense<> : tensor<0xi64>
  %heads = llmc.constant dense<[1, 3, 4, 16]> : tensor<4xi64>
  %rows = llmc.constant dense<[1, 3, 64]> : tensor<3xi64>
  %r = llmc.rotary %q, %cos, %sin, %noIds {interleaved = 1 : i64, num_heads = 4 : i64, rotary_embedding_dim = 8 : i64} : (tensor<1x3x64xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<0xi64>) -> tensor<1x3x64xf32>
  %h = llmc.reshape %r, %heads : (tensor<1x3x64xf32>, tensor<4xi64>) -> tensor<1x3x4x16xf32>
  %back = llmc.reshape %h, %rows : (tensor<1x3x4x16xf32>, tensor<3xi64>) -> tensor<1x3x64xf32>
  %out = llmc.fused_attention %back, %k, %k, %e, %e, %e {is_causal = 1 : i64, kv_num_heads = 2 : i64, kv_time_major = 1 : i64, q_num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<9x1x32xf32>, tensor<9x1x32xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  return %out : tensor<1x3x64xf32>
}

// -----

// A rotary over the whole head (rotary_embedding_dim 0): rotary_dim is the head, 16.
// CHECK-LABEL: func.func @whole_head
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %arg2, %arg3 {kv_num_heads = 4 : i64, q_num_heads = 4 : i64, rotary_dim = 16 : i64, rotate_keys = 0 : i64}
func.func @whole_head(%q: tensor<1x3x64xf32>, %k: tensor<1x3x64xf32>, %cos: tensor<1x3x8xf32>,
                      %sin: tensor<1x3x8xf32>) -> tensor<1x3x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %noIds = llmc.constant dense<> : tensor<0xi64>
  %r = llmc.rotary %q, %cos, %sin, %noIds {num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<0xi64>) -> tensor<1x3x64xf32>
  %out = llmc.fused_attention %r, %k, %k, %e, %e, %e {kv_num_heads = 4 : i64, q_num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  return %out : tensor<1x3x64xf32>
}

// -----

// Negative: the rotated query read elsewhere too; a rotary by position ids; an attention that
// turns its query itself already.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: llmc.rotary
// CHECK-NOT: rotary_dim
func.func @kept(%q: tensor<1x3x64xf32>, %k: tensor<1x3x64xf32>, %cos: tensor<1x3x8xf32>, %sin: tensor<1x3x8xf32>,
                %cache: tensor<10x8xf32>, %ids: tensor<1x3xi64>, %full: tensor<1x3x16xf32>)
    -> (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %noIds = llmc.constant dense<> : tensor<0xi64>
  %r = llmc.rotary %q, %cos, %sin, %noIds {num_heads = 4 : i64, rotary_embedding_dim = 8 : i64} : (tensor<1x3x64xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<0xi64>) -> tensor<1x3x64xf32>
  %a = llmc.fused_attention %r, %k, %k, %e, %e, %e {kv_num_heads = 4 : i64, q_num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  %p = llmc.rotary %q, %cache, %cache, %ids {num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<1x3xi64>) -> tensor<1x3x64xf32>
  %b = llmc.fused_attention %p, %k, %k, %e, %e, %e {kv_num_heads = 4 : i64, q_num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  %t = llmc.rotary %q, %cos, %sin, %noIds {num_heads = 4 : i64, interleaved = 1 : i64} : (tensor<1x3x64xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<0xi64>) -> tensor<1x3x64xf32>
  %c = llmc.fused_attention %t, %k, %k, %e, %full, %full {kv_num_heads = 4 : i64, q_num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<1x3x16xf32>, tensor<1x3x16xf32>) -> tensor<1x3x64xf32>
  return %r, %a, %b, %c : tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>
}

// -----

// OPT's query, scaled on its rows before the heads split (head ** -0.5 = 0.25 for heads of 16),
// read by an attention that scales by 1: the product goes, the scale becomes 0.25.
// CHECK-LABEL: func.func @scaled_query
// CHECK-NOT: llmc.mul
// CHECK: llmc.fused_attention %arg0, %arg1, %arg1, %{{.*}}, %{{.*}}, %{{.*}} {is_causal = 1 : i64, kv_num_heads = 4 : i64, q_num_heads = 4 : i64, scale = 2.500000e-01 : f32}
func.func @scaled_query(%q: tensor<1x3x64xf32>, %k: tensor<1x3x64xf32>) -> tensor<1x3x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %c = llmc.constant dense<2.500000e-01> : tensor<f32>
  %s = llmc.mul %c, %q : (tensor<f32>, tensor<1x3x64xf32>) -> tensor<1x3x64xf32>
  %out = llmc.fused_attention %s, %k, %k, %e, %e, %e {is_causal = 1 : i64, kv_num_heads = 4 : i64, q_num_heads = 4 : i64, scale = 1.000000e+00 : f32} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  return %out : tensor<1x3x64xf32>
}

// -----

// With the default scale (0: 1 / sqrt(16) = 0.25), a factor of 2 makes it 0.5.
// CHECK-LABEL: func.func @scaled_query_default_scale
// CHECK-NOT: llmc.mul
// CHECK: llmc.fused_attention %arg0, {{.*}} scale = 5.000000e-01 : f32
func.func @scaled_query_default_scale(%q: tensor<1x3x64xf32>, %k: tensor<1x3x64xf32>) -> tensor<1x3x64xf32> {
  %e = llmc.constant dense<> : tensor<0xf32>
  %c = llmc.constant dense<2.000000e+00> : tensor<f32>
  %s = llmc.mul %q, %c : (tensor<1x3x64xf32>, tensor<f32>) -> tensor<1x3x64xf32>
  %out = llmc.fused_attention %s, %k, %k, %e, %e, %e {kv_num_heads = 4 : i64, q_num_heads = 4 : i64} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  return %out : tensor<1x3x64xf32>
}

// -----

// The scaled query read elsewhere too, or scaled per feature (not a scalar): left as they are.
// CHECK-LABEL: func.func @scaled_query_kept
// CHECK: llmc.mul
// CHECK: llmc.fused_attention {{.*}} scale = 1.000000e+00 : f32
// CHECK: llmc.mul
// CHECK: llmc.fused_attention {{.*}} scale = 1.000000e+00 : f32
func.func @scaled_query_kept(%q: tensor<1x3x64xf32>, %k: tensor<1x3x64xf32>, %f: tensor<64xf32>)
    -> (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>) {
  %e = llmc.constant dense<> : tensor<0xf32>
  %c = llmc.constant dense<2.500000e-01> : tensor<f32>
  %s = llmc.mul %q, %c : (tensor<1x3x64xf32>, tensor<f32>) -> tensor<1x3x64xf32>
  %out = llmc.fused_attention %s, %k, %k, %e, %e, %e {kv_num_heads = 4 : i64, q_num_heads = 4 : i64, scale = 1.000000e+00 : f32} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  %t = llmc.mul %q, %f : (tensor<1x3x64xf32>, tensor<64xf32>) -> tensor<1x3x64xf32>
  %out2 = llmc.fused_attention %t, %k, %k, %e, %e, %e {kv_num_heads = 4 : i64, q_num_heads = 4 : i64, scale = 1.000000e+00 : f32} : (tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x3x64xf32>
  return %out, %out2, %s : tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>
}
