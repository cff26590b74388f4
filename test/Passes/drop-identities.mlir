// RUN: %llmc-opt %s -llmc-drop-identities | FileCheck %s

// CHECK-LABEL: func.func @drop
// CHECK-NOT: llmc.identity
// CHECK-NOT: llmc.cast
// CHECK: %[[A:.*]] = llmc.add %arg0, %arg0
// CHECK: %[[C:.*]] = llmc.cast %[[A]] {to = i64}
// CHECK: return %[[A]], %[[C]]
func.func @drop(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xi64>) {
  %i = llmc.identity %x : (tensor<2xf32>) -> tensor<2xf32>
  %c = llmc.cast %i {to = f32} : (tensor<2xf32>) -> tensor<2xf32>
  %a = llmc.add %c, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // Negative: a cast to another type stays.
  %k = llmc.cast %a {to = i64} : (tensor<2xf32>) -> tensor<2xi64>
  return %a, %k : tensor<2xf32>, tensor<2xi64>
}

// A sliding-window cache's slice of its last 4095 positions keeps all of them while the plan's
// bounds hold fewer (total <= 80): dropped. Negative: the same slice where total may reach
// 5000 stays, and so do a static slice that drops an element and a reversal.
// CHECK-LABEL: func.func @slices
// CHECK-NOT: llmc.slice %arg0
// CHECK: %[[KEPT:.*]] = llmc.slice %arg1 {axes = array<i64: 0>, ends = array<i64: 9223372036854775807>, starts = array<i64: -4095>
// CHECK: %[[PART:.*]] = llmc.slice %arg2 {axes = array<i64: 0>, ends = array<i64: 4>, starts = array<i64: 1>
// CHECK: %[[REV:.*]] = llmc.slice %arg2 {axes = array<i64: 0>, ends = array<i64: -5>, starts = array<i64: 3>, steps = array<i64: -1>}
// CHECK: return %arg0, %[[KEPT]], %arg2, %[[PART]], %[[REV]]
func.func @slices(%short: tensor<?x8xf32> {llmc.name = "short", llmc.dim_symbols = ["total", ""]},
                  %long: tensor<?x8xf32> {llmc.name = "long", llmc.dim_symbols = ["long", ""]},
                  %s: tensor<4xf32> {llmc.name = "s"})
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>)
    attributes {llmc.symbol_bounds = {total = 80 : i64, long = 5000 : i64}} {
  %a = llmc.slice %short {axes = array<i64: 0>, ends = array<i64: 9223372036854775807>, starts = array<i64: -4095>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %b = llmc.slice %long {axes = array<i64: 0>, ends = array<i64: 9223372036854775807>, starts = array<i64: -4095>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %c = llmc.slice %s {axes = array<i64: 0>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  %d = llmc.slice %s {axes = array<i64: 0>, ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<3xf32>
  %r = llmc.slice %s {axes = array<i64: 0>, ends = array<i64: -5>, starts = array<i64: 3>, steps = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c, %d, %r : tensor<?x8xf32>, tensor<?x8xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>
}

// A squeeze of the axis an unsqueeze just put in hands its input on (GPT-OSS's experts' results
// viewed as [N, 1, M] and back), with the axis written either way, on a dynamic row count too;
// so does a squeeze of another size-1 axis where the static shape comes back. Negative: a
// squeeze of every size-1 axis (no axes given), which changes the shape, stays.
// CHECK-LABEL: func.func @squeeze_unsqueeze
// CHECK-NOT: llmc.squeeze %{{.*}} {axes
// CHECK: %[[V:.*]] = llmc.unsqueeze %arg1 {axes = array<i64: 0>}
// CHECK: %[[ALL:.*]] = llmc.squeeze %[[V]] :
// CHECK: return %arg0, %arg0, %arg1, %[[ALL]]
func.func @squeeze_unsqueeze(%x: tensor<?x8xf32> {llmc.name = "x", llmc.dim_symbols = ["n", ""]}, %one: tensor<1x8xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<1x8xf32>, tensor<8xf32>) {
  %u = llmc.unsqueeze %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1x8xf32>
  %a = llmc.squeeze %u {axes = array<i64: 1>} : (tensor<?x1x8xf32>) -> tensor<?x8xf32>
  %u2 = llmc.unsqueeze %x {axes = array<i64: -2>} : (tensor<?x8xf32>) -> tensor<?x1x8xf32>
  %b = llmc.squeeze %u2 {axes = array<i64: 1>} : (tensor<?x1x8xf32>) -> tensor<?x8xf32>
  %u3 = llmc.unsqueeze %one {axes = array<i64: 1>} : (tensor<1x8xf32>) -> tensor<1x1x8xf32>
  %c = llmc.squeeze %u3 {axes = array<i64: 0>} : (tensor<1x1x8xf32>) -> tensor<1x8xf32>
  %u4 = llmc.unsqueeze %one {axes = array<i64: 0>} : (tensor<1x8xf32>) -> tensor<1x1x8xf32>
  %d = llmc.squeeze %u4 : (tensor<1x1x8xf32>) -> tensor<8xf32>
  return %a, %b, %c, %d : tensor<?x8xf32>, tensor<?x8xf32>, tensor<1x8xf32>, tensor<8xf32>
}
