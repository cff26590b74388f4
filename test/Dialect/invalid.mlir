// RUN: %llmc-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{operand shapes [2x3] and [4] are not broadcast compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @element_types_differ(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{operands have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.mul %a, %b : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @wrong_declared_result(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.neg %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @matmul_contracting(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{matmul contracting dimensions differ: [2x3] x [4x5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %s = llmc.constant dense<[4, 2]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape [2x3] (6 elements) to [4x2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{transpose perm is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.softmax %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @split_sizes(%a: tensor<6xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error @+2 {{split sizes add up to 4, not 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.split %a {axis = 0 : i64, split = array<i64: 2, 2>} : (tensor<6xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @gather_indices(%a: tensor<4x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{indices must be i32 or i64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.gather %a, %i : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @squeeze_non_unit(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{squeeze axis 0 has size 2, not 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.squeeze %a {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @unranked(%a: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of any type values}}
  %0 = llmc.neg %a : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{conv input has 3 channels, the weight expects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.conv %x, %w {pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @pool_attrs(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{window attributes do not match 2 spatial dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.max_pool %x {kernel_shape = array<i64: 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @einsum_labels(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{einsum: operand 0 has rank 2, the equation gives 3 labels}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.einsum %x {equation = "ijk->i"} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// The fused kernels take f32, f16 and bf16: a model in doubles keeps its unfused ops.
func.func @linear_f64(%x: tensor<3x2xf64>, %w: tensor<2x2xf64>, %none: tensor<0xf64>) -> tensor<3x2xf64> {
  // expected-error @+2 {{linear takes f32, f16 or bf16 operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.linear %x, %w, %none, %none, %none : (tensor<3x2xf64>, tensor<2x2xf64>, tensor<0xf64>, tensor<0xf64>, tensor<0xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}

// -----

// latent_attention's sinks: a logit per head.
func.func @latent_attention_sinks_per_head(%q: tensor<1x2x1x6xf32>, %cache: tensor<5x1x6xf32>, %uk: tensor<2x4x4xf32>,
                                           %uv: tensor<2x4x3xf32>, %none: tensor<0xf32>, %sinks: tensor<3xf32>) -> tensor<1x2x1x3xf32> {
  // expected-error @+2 {{latent_attention's sinks must be [heads] of q's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.latent_attention %q, %cache, %uk, %uv, %none, %sinks {rope_dim = 2 : i64, scale = 0.5 : f32} : (tensor<1x2x1x6xf32>, tensor<5x1x6xf32>, tensor<2x4x4xf32>, tensor<2x4x3xf32>, tensor<0xf32>, tensor<3xf32>) -> tensor<1x2x1x3xf32>
  return %0 : tensor<1x2x1x3xf32>
}
