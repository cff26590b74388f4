// RUN: %llmc-opt %s -llmc-fuse-linear -split-input-file | FileCheck %s

// A mixture of experts' projection as transformers' "batched_mm" experts export it: each row's
// expert matrix gathered (a copy per row), times the row as a column, squeezed. One
// llmc.expert_linear reads the matrices where they are.
// CHECK-LABEL: func.func @gathered_experts
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg1, %arg0, %arg2 : (tensor<6x64xf32>, tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32xf32>
// CHECK-NOT: llmc.gather_nd
// CHECK-NOT: llmc.matmul
// CHECK: return %[[Y]]
func.func @gathered_experts(%w: tensor<4x32x64xf32>, %x: tensor<6x64xf32>, %ids: tensor<6x1xi64>) -> tensor<6x32xf32> {
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32x64xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x64xf32>) -> tensor<6x64x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x64xf32>, tensor<6x64x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  return %y : tensor<6x32xf32>
}

// -----

// The gathered matrices read elsewhere too: the copy is needed anyway, left as it is.
// CHECK-LABEL: func.func @gathered_used_twice
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.matmul
func.func @gathered_used_twice(%w: tensor<4x32x64xf32>, %x: tensor<6x64xf32>, %ids: tensor<6x1xi64>) -> (tensor<6x32xf32>, tensor<6x32x64xf32>) {
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32x64xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x64xf32>) -> tensor<6x64x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x64xf32>, tensor<6x64x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  return %y, %g : tensor<6x32xf32>, tensor<6x32x64xf32>
}

// -----

// Batched gather_nd (batch_dims 1: each row's own table): not an expert's matrix, left as it is.
// CHECK-LABEL: func.func @batched_gather
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.matmul
func.func @batched_gather(%w: tensor<6x4x32x64xf32>, %x: tensor<6x64xf32>, %ids: tensor<6x1xi64>) -> tensor<6x32xf32> {
  %g = llmc.gather_nd %w, %ids {batch_dims = 1 : i64} : (tensor<6x4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32x64xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x64xf32>) -> tensor<6x64x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x64xf32>, tensor<6x64x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  return %y : tensor<6x32xf32>
}

// -----

// More than one column per row (a matrix times a matrix): not a row's projection, left as it is.
// CHECK-LABEL: func.func @two_columns
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.matmul
func.func @two_columns(%w: tensor<4x32x64xf32>, %x: tensor<6x64x2xf32>, %ids: tensor<6x1xi64>) -> tensor<6x32x2xf32> {
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32x64xf32>
  %p = llmc.matmul %g, %x : (tensor<6x32x64xf32>, tensor<6x64x2xf32>) -> tensor<6x32x2xf32>
  return %p : tensor<6x32x2xf32>
}

// -----

// A gate/up projection: silu of the first half of the rows times the second half, and the
// tokens' rows repeated once per chosen expert (top 2): one expert_linear with activation
// "swiglu" that reads each token's row for both of its ids (repeat 2).
// CHECK-LABEL: func.func @gate_up_of_top2
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg1, %arg0, %arg2 {activation = "swiglu", repeat = 2 : i64} : (tensor<3x64xf32>, tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x16xf32>
// CHECK-NOT: llmc.split
// CHECK-NOT: llmc.expand
// CHECK: return %[[Y]]
func.func @gate_up_of_top2(%w: tensor<4x32x64xf32>, %h: tensor<3x64xf32>, %ids: tensor<6x1xi64>) -> tensor<6x16xf32> {
  %shape3 = llmc.constant dense<[3, 2, 64]> : tensor<3xi64>
  %shape2 = llmc.constant dense<[6, 64]> : tensor<2xi64>
  %h1 = llmc.unsqueeze %h {axes = array<i64: 1>} : (tensor<3x64xf32>) -> tensor<3x1x64xf32>
  %h2 = llmc.expand %h1, %shape3 : (tensor<3x1x64xf32>, tensor<3xi64>) -> tensor<3x2x64xf32>
  %x = llmc.reshape %h2, %shape2 : (tensor<3x2x64xf32>, tensor<2xi64>) -> tensor<6x64xf32>
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32x64xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x64xf32>) -> tensor<6x64x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x64xf32>, tensor<6x64x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  %parts:2 = llmc.split %y {axis = 1 : i64, split = array<i64: 16, 16>} : (tensor<6x32xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>)
  %gate = llmc.silu %parts#0 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %z = llmc.mul %gate, %parts#1 : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return %z : tensor<6x16xf32>
}

// -----

// silu of the second half times the first: not the gate/up order swiglu computes, left as it
// is; the rows repeated along another axis (unsqueeze on axis 0): not a token's copies, left too.
// CHECK-LABEL: func.func @other_orders
// CHECK: %[[Y:.*]] = llmc.expert_linear %{{.*}}, %arg0, %arg2 : (tensor<6x64xf32>, tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32xf32>
// CHECK: llmc.split %[[Y]]
// CHECK: llmc.silu
func.func @other_orders(%w: tensor<4x32x64xf32>, %h: tensor<3x64xf32>, %ids: tensor<6x1xi64>) -> tensor<6x16xf32> {
  %shape3 = llmc.constant dense<[2, 3, 64]> : tensor<3xi64>
  %shape2 = llmc.constant dense<[6, 64]> : tensor<2xi64>
  %h1 = llmc.unsqueeze %h {axes = array<i64: 0>} : (tensor<3x64xf32>) -> tensor<1x3x64xf32>
  %h2 = llmc.expand %h1, %shape3 : (tensor<1x3x64xf32>, tensor<3xi64>) -> tensor<2x3x64xf32>
  %x = llmc.reshape %h2, %shape2 : (tensor<2x3x64xf32>, tensor<2xi64>) -> tensor<6x64xf32>
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x64xf32>, tensor<6x1xi64>) -> tensor<6x32x64xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x64xf32>) -> tensor<6x64x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x64xf32>, tensor<6x64x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  %parts:2 = llmc.split %y {axis = 1 : i64, split = array<i64: 16, 16>} : (tensor<6x32xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>)
  %gate = llmc.silu %parts#1 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %z = llmc.mul %gate, %parts#0 : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return %z : tensor<6x16xf32>
}

// -----

// A down projection's rows weighed by the router's weights [T, k] and summed over each token's
// k experts: the expert_linear takes the weights as its combine, [T, M] out.
// CHECK-LABEL: func.func @weighted_sum_of_top2
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg1, %arg0, %arg2, %arg3 : (tensor<6x16xf32>, tensor<4x32x16xf32>, tensor<6x1xi64>, tensor<3x2xf32>) -> tensor<3x32xf32>
// CHECK-NOT: llmc.reduce_sum
// CHECK: return %[[Y]]
func.func @weighted_sum_of_top2(%w: tensor<4x32x16xf32>, %x: tensor<6x16xf32>, %ids: tensor<6x1xi64>, %weights: tensor<3x2xf32>) -> tensor<3x32xf32> {
  %flat = llmc.constant dense<[6]> : tensor<1xi64>
  %shape3 = llmc.constant dense<[3, 2, 32]> : tensor<3xi64>
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x16xf32>, tensor<6x1xi64>) -> tensor<6x32x16xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x16xf32>) -> tensor<6x16x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x16xf32>, tensor<6x16x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  %wf = llmc.reshape %weights, %flat : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<6xf32>
  %wc = llmc.unsqueeze %wf {axes = array<i64: -1>} : (tensor<6xf32>) -> tensor<6x1xf32>
  %weighed = llmc.mul %y, %wc : (tensor<6x32xf32>, tensor<6x1xf32>) -> tensor<6x32xf32>
  %grouped = llmc.reshape %weighed, %shape3 : (tensor<6x32xf32>, tensor<3xi64>) -> tensor<3x2x32xf32>
  %z = llmc.reduce_sum %grouped {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3x2x32xf32>) -> tensor<3x32xf32>
  return %z : tensor<3x32xf32>
}

// -----

// Summed over the rows of one expert choice instead (axis 2 of [T, k, M]): not a weighted sum
// over a token's experts, left as it is.
// CHECK-LABEL: func.func @summed_over_features
// CHECK: llmc.expert_linear %arg1, %arg0, %arg2 :
// CHECK: llmc.reduce_sum
func.func @summed_over_features(%w: tensor<4x32x16xf32>, %x: tensor<6x16xf32>, %ids: tensor<6x1xi64>, %weights: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %flat = llmc.constant dense<[6]> : tensor<1xi64>
  %shape3 = llmc.constant dense<[3, 2, 32]> : tensor<3xi64>
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x16xf32>, tensor<6x1xi64>) -> tensor<6x32x16xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x16xf32>) -> tensor<6x16x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x16xf32>, tensor<6x16x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  %wf = llmc.reshape %weights, %flat : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<6xf32>
  %wc = llmc.unsqueeze %wf {axes = array<i64: -1>} : (tensor<6xf32>) -> tensor<6x1xf32>
  %weighed = llmc.mul %y, %wc : (tensor<6x32xf32>, tensor<6x1xf32>) -> tensor<6x32xf32>
  %grouped = llmc.reshape %weighed, %shape3 : (tensor<6x32xf32>, tensor<3xi64>) -> tensor<3x2x32xf32>
  %z = llmc.reduce_sum %grouped {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<3x2x32xf32>) -> tensor<3x2xf32>
  return %z : tensor<3x2xf32>
}

// -----

// The weighted sum first, then the halves' silu * b: the swiglu of a weighted sum is not the
// weighted sum of swiglus, so the combine is taken and the swiglu is not.
// CHECK-LABEL: func.func @swiglu_after_weighted_sum
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg1, %arg0, %arg2, %arg3 : (tensor<6x16xf32>, tensor<4x32x16xf32>, tensor<6x1xi64>, tensor<3x2xf32>) -> tensor<3x32xf32>
// CHECK: llmc.split %[[Y]]
// CHECK: llmc.silu
func.func @swiglu_after_weighted_sum(%w: tensor<4x32x16xf32>, %x: tensor<6x16xf32>, %ids: tensor<6x1xi64>, %weights: tensor<3x2xf32>) -> tensor<3x16xf32> {
  %flat = llmc.constant dense<[6]> : tensor<1xi64>
  %shape3 = llmc.constant dense<[3, 2, 32]> : tensor<3xi64>
  %g = llmc.gather_nd %w, %ids : (tensor<4x32x16xf32>, tensor<6x1xi64>) -> tensor<6x32x16xf32>
  %col = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x16xf32>) -> tensor<6x16x1xf32>
  %p = llmc.matmul %g, %col : (tensor<6x32x16xf32>, tensor<6x16x1xf32>) -> tensor<6x32x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x32x1xf32>) -> tensor<6x32xf32>
  %wf = llmc.reshape %weights, %flat : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<6xf32>
  %wc = llmc.unsqueeze %wf {axes = array<i64: -1>} : (tensor<6xf32>) -> tensor<6x1xf32>
  %weighed = llmc.mul %y, %wc : (tensor<6x32xf32>, tensor<6x1xf32>) -> tensor<6x32xf32>
  %grouped = llmc.reshape %weighed, %shape3 : (tensor<6x32xf32>, tensor<3xi64>) -> tensor<3x2x32xf32>
  %z = llmc.reduce_sum %grouped {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3x2x32xf32>) -> tensor<3x32xf32>
  %parts:2 = llmc.split %z {axis = 1 : i64, split = array<i64: 16, 16>} : (tensor<3x32xf32>) -> (tensor<3x16xf32>, tensor<3x16xf32>)
  %gate = llmc.silu %parts#0 : (tensor<3x16xf32>) -> tensor<3x16xf32>
  %out = llmc.mul %gate, %parts#1 : (tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  return %out : tensor<3x16xf32>
}

// -----

// GPT-OSS's experts: each row times its expert's matrix [K, M] on the right, W [E, K, M] a
// constant. The expert_linear reads W turned to [E, M, K] (each expert's matrix transposed):
// a constant made once per weight, which both projections of the same weight share.
// CHECK-LABEL: func.func @gathered_experts_on_the_right
// CHECK: %[[W:.*]] = llmc.constant dense<{{\[\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]], {{\[\[}}7.000000e+00, 1.000000e+01], [8.000000e+00, 1.100000e+01], [9.000000e+00, 1.200000e+01]]]> : tensor<2x3x2xf32>
// CHECK-NOT: llmc.constant
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg0, %[[W]], %arg1 : (tensor<5x2xf32>, tensor<2x3x2xf32>, tensor<5x1xi64>) -> tensor<5x3xf32>
// CHECK: %[[Z:.*]] = llmc.expert_linear %arg2, %[[W]], %arg1 : (tensor<5x2xf32>, tensor<2x3x2xf32>, tensor<5x1xi64>) -> tensor<5x3xf32>
// CHECK-NOT: llmc.gather_nd
// CHECK-NOT: llmc.matmul
// CHECK: return %[[Y]], %[[Z]]
func.func @gathered_experts_on_the_right(%x: tensor<5x2xf32>, %ids: tensor<5x1xi64>, %x2: tensor<5x2xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>) {
  %w = llmc.constant dense<[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]]> : tensor<2x2x3xf32>
  %g = llmc.gather_nd %w, %ids : (tensor<2x2x3xf32>, tensor<5x1xi64>) -> tensor<5x2x3xf32>
  %row = llmc.unsqueeze %x {axes = array<i64: 1>} : (tensor<5x2xf32>) -> tensor<5x1x2xf32>
  %p = llmc.matmul %row, %g : (tensor<5x1x2xf32>, tensor<5x2x3xf32>) -> tensor<5x1x3xf32>
  %y = llmc.squeeze %p {axes = array<i64: 1>} : (tensor<5x1x3xf32>) -> tensor<5x3xf32>
  %g2 = llmc.gather_nd %w, %ids : (tensor<2x2x3xf32>, tensor<5x1xi64>) -> tensor<5x2x3xf32>
  %row2 = llmc.unsqueeze %x2 {axes = array<i64: -2>} : (tensor<5x2xf32>) -> tensor<5x1x2xf32>
  %p2 = llmc.matmul %row2, %g2 : (tensor<5x1x2xf32>, tensor<5x2x3xf32>) -> tensor<5x1x3xf32>
  %z = llmc.squeeze %p2 {axes = array<i64: -2>} : (tensor<5x1x3xf32>) -> tensor<5x3xf32>
  return %y, %z : tensor<5x3xf32>, tensor<5x3xf32>
}

// -----

// The experts' matrices a function argument (not a constant to turn): left as it is.
// CHECK-LABEL: func.func @experts_on_the_right_not_constant
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.matmul
func.func @experts_on_the_right_not_constant(%w: tensor<2x2x3xf32>, %x: tensor<5x2xf32>, %ids: tensor<5x1xi64>) -> tensor<5x3xf32> {
  %g = llmc.gather_nd %w, %ids : (tensor<2x2x3xf32>, tensor<5x1xi64>) -> tensor<5x2x3xf32>
  %row = llmc.unsqueeze %x {axes = array<i64: 1>} : (tensor<5x2xf32>) -> tensor<5x1x2xf32>
  %p = llmc.matmul %row, %g : (tensor<5x1x2xf32>, tensor<5x2x3xf32>) -> tensor<5x1x3xf32>
  %y = llmc.squeeze %p {axes = array<i64: 1>} : (tensor<5x1x3xf32>) -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}

// -----

// The gathered matrices read elsewhere too: left as it is.
// CHECK-LABEL: func.func @experts_on_the_right_gathered_twice
// CHECK-NOT: llmc.expert_linear
// CHECK: llmc.matmul
func.func @experts_on_the_right_gathered_twice(%x: tensor<5x2xf32>, %ids: tensor<5x1xi64>) -> (tensor<5x3xf32>, tensor<5x2x3xf32>) {
  %w = llmc.constant dense<[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]]> : tensor<2x2x3xf32>
  %g = llmc.gather_nd %w, %ids : (tensor<2x2x3xf32>, tensor<5x1xi64>) -> tensor<5x2x3xf32>
  %row = llmc.unsqueeze %x {axes = array<i64: 1>} : (tensor<5x2xf32>) -> tensor<5x1x2xf32>
  %p = llmc.matmul %row, %g : (tensor<5x1x2xf32>, tensor<5x2x3xf32>) -> tensor<5x1x3xf32>
  %y = llmc.squeeze %p {axes = array<i64: 1>} : (tensor<5x1x3xf32>) -> tensor<5x3xf32>
  return %y, %g : tensor<5x3xf32>, tensor<5x2x3xf32>
}

// -----

// GPT-OSS's experts' biases: each projection's rows plus its expert's bias row, gathered by the
// same ids, become the expert_linear's bias (a fifth operand; an empty combine before it). The
// down projection's weighted sum then folds in as its combine, in the empty one's place.
// CHECK-LABEL: func.func @expert_biases
// CHECK-DAG: %[[BU:.*]] = llmc.constant dense<5.000000e-01> : tensor<4x16xf32>
// CHECK-DAG: %[[BD:.*]] = llmc.constant dense<2.500000e-01> : tensor<4x8xf32>
// CHECK: %[[UP:.*]] = llmc.expert_linear %arg0, %arg1, %arg3, %{{.*}}, %[[BU]] : (tensor<6x8xf32>, tensor<4x16x8xf32>, tensor<6x1xi64>, tensor<0xf32>, tensor<4x16xf32>) -> tensor<6x16xf32>
// CHECK: %[[DOWN:.*]] = llmc.expert_linear %[[UP]], %arg2, %arg3, %arg4, %[[BD]] : (tensor<6x16xf32>, tensor<4x8x16xf32>, tensor<6x1xi64>, tensor<3x2xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
// CHECK-NOT: llmc.gather_nd
// CHECK: return %[[DOWN]]
func.func @expert_biases(%x: tensor<6x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>, %ids: tensor<6x1xi64>,
                         %weights: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %bu = llmc.constant dense<0.5> : tensor<4x16xf32>
  %bd = llmc.constant dense<0.25> : tensor<4x8xf32>
  %flat = llmc.constant dense<6> : tensor<1xi64>
  %groups = llmc.constant dense<[3, 2, 8]> : tensor<3xi64>
  %gu = llmc.gather_nd %wu, %ids : (tensor<4x16x8xf32>, tensor<6x1xi64>) -> tensor<6x16x8xf32>
  %cu = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x8xf32>) -> tensor<6x8x1xf32>
  %pu = llmc.matmul %gu, %cu : (tensor<6x16x8xf32>, tensor<6x8x1xf32>) -> tensor<6x16x1xf32>
  %yu = llmc.squeeze %pu {axes = array<i64: -1>} : (tensor<6x16x1xf32>) -> tensor<6x16xf32>
  %bru = llmc.gather_nd %bu, %ids : (tensor<4x16xf32>, tensor<6x1xi64>) -> tensor<6x16xf32>
  %up = llmc.add %yu, %bru : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %gd = llmc.gather_nd %wd, %ids : (tensor<4x8x16xf32>, tensor<6x1xi64>) -> tensor<6x8x16xf32>
  %cd = llmc.unsqueeze %up {axes = array<i64: -1>} : (tensor<6x16xf32>) -> tensor<6x16x1xf32>
  %pd = llmc.matmul %gd, %cd : (tensor<6x8x16xf32>, tensor<6x16x1xf32>) -> tensor<6x8x1xf32>
  %yd = llmc.squeeze %pd {axes = array<i64: -1>} : (tensor<6x8x1xf32>) -> tensor<6x8xf32>
  %brd = llmc.gather_nd %bd, %ids : (tensor<4x8xf32>, tensor<6x1xi64>) -> tensor<6x8xf32>
  %down = llmc.add %brd, %yd : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %w1 = llmc.reshape %weights, %flat : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<6xf32>
  %w2 = llmc.unsqueeze %w1 {axes = array<i64: -1>} : (tensor<6xf32>) -> tensor<6x1xf32>
  %weighed = llmc.mul %down, %w2 : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32>
  %g = llmc.reshape %weighed, %groups : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<3x2x8xf32>
  %sum = llmc.reduce_sum %g {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3x2x8xf32>) -> tensor<3x8xf32>
  return %sum : tensor<3x8xf32>
}

// -----

// Biases gathered by other ids than the projection's, read elsewhere too, or not a constant: the
// three stay adds.
// CHECK-LABEL: func.func @expert_biases_not
// CHECK-COUNT-3: llmc.add
func.func @expert_biases_not(%x: tensor<6x8xf32>, %w: tensor<4x16x8xf32>, %ids: tensor<6x1xi64>, %other: tensor<6x1xi64>,
                             %arg: tensor<4x16xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>) {
  %b = llmc.constant dense<0.5> : tensor<4x16xf32>
  %g = llmc.gather_nd %w, %ids : (tensor<4x16x8xf32>, tensor<6x1xi64>) -> tensor<6x16x8xf32>
  %c = llmc.unsqueeze %x {axes = array<i64: -1>} : (tensor<6x8xf32>) -> tensor<6x8x1xf32>
  %p = llmc.matmul %g, %c : (tensor<6x16x8xf32>, tensor<6x8x1xf32>) -> tensor<6x16x1xf32>
  %y = llmc.squeeze %p {axes = array<i64: -1>} : (tensor<6x16x1xf32>) -> tensor<6x16xf32>
  %br = llmc.gather_nd %b, %other : (tensor<4x16xf32>, tensor<6x1xi64>) -> tensor<6x16xf32>
  %a = llmc.add %y, %br : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %g2 = llmc.gather_nd %w, %ids : (tensor<4x16x8xf32>, tensor<6x1xi64>) -> tensor<6x16x8xf32>
  %p2 = llmc.matmul %g2, %c : (tensor<6x16x8xf32>, tensor<6x8x1xf32>) -> tensor<6x16x1xf32>
  %y2 = llmc.squeeze %p2 {axes = array<i64: -1>} : (tensor<6x16x1xf32>) -> tensor<6x16xf32>
  %br2 = llmc.gather_nd %b, %ids : (tensor<4x16xf32>, tensor<6x1xi64>) -> tensor<6x16xf32>
  %a2 = llmc.add %y2, %br2 : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %g3 = llmc.gather_nd %w, %ids : (tensor<4x16x8xf32>, tensor<6x1xi64>) -> tensor<6x16x8xf32>
  %p3 = llmc.matmul %g3, %c : (tensor<6x16x8xf32>, tensor<6x8x1xf32>) -> tensor<6x16x1xf32>
  %y3 = llmc.squeeze %p3 {axes = array<i64: -1>} : (tensor<6x16x1xf32>) -> tensor<6x16xf32>
  %br3 = llmc.gather_nd %arg, %ids : (tensor<4x16xf32>, tensor<6x1xi64>) -> tensor<6x16xf32>
  %a3 = llmc.add %y3, %br3 : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return %a, %a2, %br2, %a3 : tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>
}

// -----

// GPT-OSS's experts' gating: gate and up alternate in the gate/up projection's rows (gate =
// y[:, 0::2], up = y[:, 1::2]); (clamp(up, -7, 7) + 1) * g * sigmoid(1.702 * g), g = min(gate, 7),
// becomes the expert_linear's "clamped_swiglu", its weight's rows and its bias reordered to
// halves (even rows first: expert 0's rows 0 2 1 3).
// CHECK-LABEL: func.func @clamped_swiglu_alternating
// CHECK-DAG: %[[W:.*]] = llmc.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00], [2.000000e+00, 3.000000e+00], [6.000000e+00, 7.000000e+00]], {{\[\[}}8.000000e+00, 9.000000e+00], [1.200000e+01, 1.300000e+01], [1.000000e+01, 1.100000e+01], [1.400000e+01, 1.500000e+01]]]> : tensor<2x4x2xf32>
// CHECK-DAG: %[[B:.*]] = llmc.constant dense<{{\[\[}}0.000000e+00, 2.000000e+00, 1.000000e+00, 3.000000e+00], [4.000000e+00, 6.000000e+00, 5.000000e+00, 7.000000e+00]]> : tensor<2x4xf32>
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg0, %[[W]], %arg1, %{{.*}}, %[[B]] {activation = "clamped_swiglu", alpha = 1.702000e+00 : f32, limit = 7.000000e+00 : f32, repeat = 2 : i64} : (tensor<3x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>, tensor<0xf32>, tensor<2x4xf32>) -> tensor<6x2xf32>
// CHECK-NEXT: return %[[Y]]
func.func @clamped_swiglu_alternating(%x: tensor<3x2xf32>, %ids: tensor<6x1xi64>) -> tensor<6x2xf32> {
  %w = llmc.constant dense<[[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]], [[8.0, 9.0], [10.0, 11.0], [12.0, 13.0], [14.0, 15.0]]]> : tensor<2x4x2xf32>
  %b = llmc.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %none = llmc.constant dense<> : tensor<0xf32>
  %limit = llmc.constant dense<7.0> : tensor<f32>
  %low = llmc.constant dense<-7.0> : tensor<f32>
  %alpha = llmc.constant dense<1.702> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %y = llmc.expert_linear %x, %w, %ids, %none, %b {repeat = 2 : i64} : (tensor<3x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>, tensor<0xf32>, tensor<2x4xf32>) -> tensor<6x4xf32>
  %gate = llmc.slice %y {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
  %up = llmc.slice %y {axes = array<i64: -1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
  %g = llmc.min %gate, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u1 = llmc.max %up, %low : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u = llmc.min %u1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %ga = llmc.mul %g, %alpha : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %s = llmc.sigmoid %ga : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %glu = llmc.mul %g, %s : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %u2 = llmc.add %u, %one : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %out = llmc.mul %u2, %glu : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  return %out : tensor<6x2xf32>
}

// -----

// The same gating of the two halves (a split; the operands in other orders, up clamped below
// first): no reordering, so the weight may be anything.
// CHECK-LABEL: func.func @clamped_swiglu_halves
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg0, %arg2, %arg1 {activation = "clamped_swiglu", alpha = 2.000000e+00 : f32, limit = 5.000000e+00 : f32} : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x2xf32>
// CHECK-NEXT: return %[[Y]]
func.func @clamped_swiglu_halves(%x: tensor<6x2xf32>, %ids: tensor<6x1xi64>, %w: tensor<2x4x2xf32>) -> tensor<6x2xf32> {
  %limit = llmc.constant dense<5.0> : tensor<f32>
  %low = llmc.constant dense<-5.0> : tensor<f32>
  %alpha = llmc.constant dense<2.0> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %y = llmc.expert_linear %x, %w, %ids : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x4xf32>
  %h:2 = llmc.split %y {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>)
  %g = llmc.min %limit, %h#0 : (tensor<f32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %u1 = llmc.min %h#1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u = llmc.max %low, %u1 : (tensor<f32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %ga = llmc.mul %alpha, %g : (tensor<f32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %s = llmc.sigmoid %ga : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %glu = llmc.mul %s, %g : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %u2 = llmc.add %one, %u : (tensor<f32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %out = llmc.mul %glu, %u2 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  return %out : tensor<6x2xf32>
}

// -----

// Left as they are: alternating columns of a weight that is not a constant (it cannot be
// reordered), up clamped to other bounds than the gate, and up + 2.
// CHECK-LABEL: func.func @clamped_swiglu_not
// CHECK-NOT: clamped_swiglu
// CHECK-COUNT-3: llmc.sigmoid
func.func @clamped_swiglu_not(%x: tensor<6x2xf32>, %ids: tensor<6x1xi64>, %w: tensor<2x4x2xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>, tensor<6x2xf32>) {
  %wc = llmc.constant dense<1.5> : tensor<2x4x2xf32>
  %wc2 = llmc.constant dense<2.5> : tensor<2x4x2xf32>
  %limit = llmc.constant dense<7.0> : tensor<f32>
  %low = llmc.constant dense<-7.0> : tensor<f32>
  %low6 = llmc.constant dense<-6.0> : tensor<f32>
  %alpha = llmc.constant dense<1.702> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %two = llmc.constant dense<2.0> : tensor<f32>
  %y = llmc.expert_linear %x, %w, %ids : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x4xf32>
  %gate = llmc.slice %y {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
  %up = llmc.slice %y {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
  %g = llmc.min %gate, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u1 = llmc.max %up, %low : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u = llmc.min %u1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %ga = llmc.mul %g, %alpha : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %s = llmc.sigmoid %ga : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %glu = llmc.mul %g, %s : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %u2 = llmc.add %u, %one : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %out = llmc.mul %u2, %glu : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %y2 = llmc.expert_linear %x, %wc, %ids : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x4xf32>
  %h:2 = llmc.split %y2 {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>)
  %g2 = llmc.min %h#0, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %v1 = llmc.max %h#1, %low6 : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %v = llmc.min %v1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %ga2 = llmc.mul %g2, %alpha : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %s2 = llmc.sigmoid %ga2 : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %glu2 = llmc.mul %g2, %s2 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %v2 = llmc.add %v, %one : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %out2 = llmc.mul %v2, %glu2 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %y3 = llmc.expert_linear %x, %wc2, %ids : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x4xf32>
  %k:2 = llmc.split %y3 {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>)
  %g3 = llmc.min %k#0, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %w1 = llmc.max %k#1, %low : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %w3 = llmc.min %w1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %ga3 = llmc.mul %g3, %alpha : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %s3 = llmc.sigmoid %ga3 : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %glu3 = llmc.mul %g3, %s3 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %w4 = llmc.add %w3, %two : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %out3 = llmc.mul %w4, %glu3 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  return %out, %out2, %out3 : tensor<6x2xf32>, tensor<6x2xf32>, tensor<6x2xf32>
}

// -----

// HY V4's experts' gating of the two halves: silu(min(gate, 10)) * clamp(up, -10, 10), no alpha
// and no + 1, becomes "clamped_swiglu" with alpha 1 (the default) and up_offset 0. Left as it
// is: up clamped to other bounds than the gate.
// CHECK-LABEL: func.func @clamped_silu_halves
// CHECK: %[[Y:.*]] = llmc.expert_linear %arg0, %arg2, %arg1 {activation = "clamped_swiglu", limit = 1.000000e+01 : f32, up_offset = 0.000000e+00 : f32} : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x2xf32>
// CHECK: llmc.silu
// CHECK-NOT: clamped_swiglu
// CHECK: return %[[Y]], %{{.*}}
func.func @clamped_silu_halves(%x: tensor<6x2xf32>, %ids: tensor<6x1xi64>, %w: tensor<2x4x2xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>) {
  %limit = llmc.constant dense<10.0> : tensor<f32>
  %low = llmc.constant dense<-10.0> : tensor<f32>
  %low9 = llmc.constant dense<-9.0> : tensor<f32>
  %y = llmc.expert_linear %x, %w, %ids : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x4xf32>
  %h:2 = llmc.split %y {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>)
  %g = llmc.min %h#0, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u1 = llmc.max %h#1, %low : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %u = llmc.min %u1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %sg = llmc.silu %g : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %out = llmc.mul %sg, %u : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  %y2 = llmc.expert_linear %x, %w, %ids : (tensor<6x2xf32>, tensor<2x4x2xf32>, tensor<6x1xi64>) -> tensor<6x4xf32>
  %k:2 = llmc.split %y2 {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xf32>)
  %g2 = llmc.min %k#0, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %v1 = llmc.max %k#1, %low9 : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %v = llmc.min %v1, %limit : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
  %sg2 = llmc.silu %g2 : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %out2 = llmc.mul %v, %sg2 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
  return %out, %out2 : tensor<6x2xf32>, tensor<6x2xf32>
}
