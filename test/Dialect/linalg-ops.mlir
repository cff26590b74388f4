// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the linear algebra family.

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %v: tensor<8xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x1x4xf32>) {
  // CHECK: llmc.matmul {{.*}} -> tensor<2x3x4x5xf32>
  %0 = llmc.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: llmc.matmul {{.*}} -> tensor<2x1x4xf32>
  %1 = llmc.matmul %a, %v : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32>
  return %0, %1 : tensor<2x3x4x5xf32>, tensor<2x1x4xf32>
}

// CHECK-LABEL: func.func @gemm
func.func @gemm(%a: tensor<8x4xf32>, %b: tensor<5x8xf32>, %c: tensor<5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  // CHECK: llmc.gemm {{.*}} {transA = 1 : i64, transB = 1 : i64}
  %0 = llmc.gemm %a, %b, %c {transA = 1 : i64, transB = 1 : i64} : (tensor<8x4xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: llmc.gemm {{.*}} {alpha = 5.000000e-01 : f32, transA = 1 : i64, transB = 1 : i64}
  %1 = llmc.gemm %a, %b {alpha = 0.5 : f32, transA = 1 : i64, transB = 1 : i64} : (tensor<8x4xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
  return %0, %1 : tensor<4x5xf32>, tensor<4x5xf32>
}
