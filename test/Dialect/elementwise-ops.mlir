// RUN: %llmc-opt %s | %llmc-opt | FileCheck %s
// Round trip of the elementwise family.

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  // CHECK: llmc.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = llmc.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.sub
  %1 = llmc.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.mul
  %2 = llmc.mul %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.div
  %3 = llmc.div %2, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.pow
  %4 = llmc.pow %3, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.max
  %5 = llmc.max %4, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.min
  %6 = llmc.min %5, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.less_equal {{.*}} -> tensor<2x3xi1>
  %7 = llmc.less_equal %6, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: llmc.equal
  %8 = llmc.equal %6, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: llmc.and
  %9 = llmc.and %7, %8 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  return %6, %9 : tensor<2x3xf32>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: llmc.neg
  %0 = llmc.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: llmc.sqrt
  %1 = llmc.sqrt %0 : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: llmc.erf
  %2 = llmc.erf %1 : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: llmc.gelu %{{.*}} {approximate = "tanh"}
  %3 = llmc.gelu %2 {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// CHECK-LABEL: func.func @select_cast
func.func @select_cast(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %y: tensor<f32>) -> tensor<2x3xi64> {
  // CHECK: llmc.where {{.*}} -> tensor<2x3xf32>
  %0 = llmc.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: llmc.cast %{{.*}} {to = i64}
  %1 = llmc.cast %0 {to = i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>
  return %1 : tensor<2x3xi64>
}

// A dynamic dimension stays dynamic; a declared static one refines it.
// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%a: tensor<?x3xf32>, %b: tensor<1x3xf32>) -> tensor<5x3xf32> {
  // CHECK: llmc.add {{.*}} -> tensor<5x3xf32>
  %0 = llmc.add %a, %b : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}
