// RUN: %llmc-opt %s -split-input-file -llmc-fold-conv-affine | FileCheck %s

// BatchNormalization with constant statistics folds into the convolution before it.
// CHECK-LABEL: func.func @batch_norm
// CHECK: %[[CONV:.*]] = llmc.conv %arg0, %{{.*}}, %{{.*}} {{.*}} -> tensor<1x2x3x3xf32>
// CHECK-NOT: llmc.batch_norm
// CHECK: return %[[CONV]]
func.func @batch_norm(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = llmc.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %g = llmc.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = llmc.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %m = llmc.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %v = llmc.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %c = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = llmc.batch_norm %c, %g, %b, %m, %v : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// A decomposed BatchNorm behind a transpose to channels-last: (x + b - mean) * s + beta.
// CHECK-LABEL: func.func @channels_last
// CHECK: %[[CONV:.*]] = llmc.conv
// CHECK-NEXT: %[[T:.*]] = llmc.transpose %[[CONV]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: return %[[T]]
func.func @channels_last(%x: tensor<1x1x3x3xf32>) -> tensor<1x3x3x2xf32> {
  %w = llmc.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = llmc.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %m = llmc.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %s = llmc.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %c = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %t = llmc.transpose %c {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %a = llmc.add %t, %b : (tensor<1x3x3x2xf32>, tensor<2xf32>) -> tensor<1x3x3x2xf32>
  %d = llmc.sub %a, %m : (tensor<1x3x3x2xf32>, tensor<2xf32>) -> tensor<1x3x3x2xf32>
  %y = llmc.mul %d, %s : (tensor<1x3x3x2xf32>, tensor<2xf32>) -> tensor<1x3x3x2xf32>
  return %y : tensor<1x3x3x2xf32>
}

// -----

// Not folded: statistics that are not constant; a conv result with another use; a constant
// that varies along a spatial axis.
// CHECK-LABEL: func.func @not_folded
// CHECK: llmc.batch_norm
// CHECK: llmc.mul
// CHECK: llmc.add
func.func @not_folded(%x: tensor<1x1x2x2xf32>, %mean: tensor<2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = llmc.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %g = llmc.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %spatial = llmc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c1 = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y1 = llmc.batch_norm %c1, %g, %g, %mean, %g : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %c2 = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y2 = llmc.mul %c2, %spatial : (tensor<1x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %c3 = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y3 = llmc.add %c3, %c3 : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y1, %y2, %y3 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_scale
// CHECK: %[[W:.*]] = llmc.constant dense<{{\[\[}}2.000000e+00, 6.000000e+00], [4.000000e+00, 1.200000e+01]]>
// CHECK: llmc.matmul %arg0, %[[W]]
// CHECK-NOT: llmc.mul
func.func @matmul_scale(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = llmc.constant dense<[[1.0, 2.0], [2.0, 4.0]]> : tensor<2x2xf32>
  %s = llmc.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %m = llmc.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %y = llmc.mul %m, %s : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// bf16 (a model exported in bf16): the folded weights and bias are computed in f32 and rounded
// once to bf16 (w * g / sqrt(v + eps) = [1, 6], b - m * g / sqrt(v + eps) = [-0.5, -1]).
// CHECK-LABEL: func.func @batch_norm_bf16
// CHECK-DAG: llmc.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xbf16>
// CHECK-DAG: llmc.constant dense<[-5.000000e-01, -1.000000e+00]> : tensor<2xbf16>
// CHECK: %[[CONV:.*]] = llmc.conv %arg0, %{{.*}}, %{{.*}} {{.*}} -> tensor<1x2x3x3xbf16>
// CHECK-NOT: llmc.batch_norm
// CHECK: return %[[CONV]]
func.func @batch_norm_bf16(%x: tensor<1x1x3x3xbf16>) -> tensor<1x2x3x3xbf16> {
  %w = llmc.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xbf16>
  %g = llmc.constant dense<[2.0, 3.0]> : tensor<2xbf16>
  %b = llmc.constant dense<[0.5, -1.0]> : tensor<2xbf16>
  %m = llmc.constant dense<[1.0, 0.0]> : tensor<2xbf16>
  %v = llmc.constant dense<[4.0, 1.0]> : tensor<2xbf16>
  %c = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xbf16>, tensor<2x1x1x1xbf16>) -> tensor<1x2x3x3xbf16>
  %y = llmc.batch_norm %c, %g, %b, %m, %v : (tensor<1x2x3x3xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>) -> tensor<1x2x3x3xbf16>
  return %y : tensor<1x2x3x3xbf16>
}

// -----

// Doubles are not folded (the pass folds f32, f16 and bf16).
// CHECK-LABEL: func.func @batch_norm_f64
// CHECK: llmc.batch_norm
func.func @batch_norm_f64(%x: tensor<1x1x3x3xf64>) -> tensor<1x2x3x3xf64> {
  %w = llmc.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf64>
  %g = llmc.constant dense<[2.0, 3.0]> : tensor<2xf64>
  %b = llmc.constant dense<[0.5, -1.0]> : tensor<2xf64>
  %m = llmc.constant dense<[1.0, 0.0]> : tensor<2xf64>
  %v = llmc.constant dense<[4.0, 1.0]> : tensor<2xf64>
  %c = llmc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf64>, tensor<2x1x1x1xf64>) -> tensor<1x2x3x3xf64>
  %y = llmc.batch_norm %c, %g, %b, %m, %v : (tensor<1x2x3x3xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> tensor<1x2x3x3xf64>
  return %y : tensor<1x2x3x3xf64>
}
