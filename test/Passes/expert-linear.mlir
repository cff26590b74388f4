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
