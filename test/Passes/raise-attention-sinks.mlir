// GPT-OSS's attention sinks (a logit per head in each row's softmax, with no value):
// softmax(concat(scores, sinks) - row max) with the sinks' column sliced off becomes
// fused_attention's seventh operand, sinks [heads]. The RUN line of fusion-passes.mlir's ATT
// prefix, on the forms torch exports and their near misses.
// RUN: %llmc-opt %s -split-input-file -llmc-raise-attention | FileCheck %s

// The sinks parameter reshaped to [1, H, 1, 1] and expanded over the queries (a dynamic export's
// form): the reshape to [H] is the operand (canonicalization folds the two reshapes).
// CHECK-LABEL: func.func @sinks_expanded
// CHECK-NOT: llmc.softmax
// CHECK: %[[SINKS:.*]] = llmc.reshape %{{.*}}, %{{.*}} : (tensor<1x2x1x1xf32>, tensor<1xi64>) -> tensor<2xf32>
// CHECK: llmc.fused_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SINKS]] {{.*}} tensor<2xf32>) -> tensor<1x4x4xf32>
// CHECK-NOT: llmc.softmax
func.func @sinks_expanded(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %sinks: tensor<2xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %shape = llmc.constant dense<[1, 2, 1, 1]> : tensor<4xi64>
  %wide = llmc.constant dense<[1, 2, 4, 1]> : tensor<4xi64>
  %sk4 = llmc.reshape %sinks, %shape : (tensor<2xf32>, tensor<4xi64>) -> tensor<1x2x1x1xf32>
  %col = llmc.expand %sk4, %wide : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// A static export folds the expanded sinks into a constant [1, H, Sq, 1]: one value per head,
// which becomes the constant [H].
// CHECK-LABEL: func.func @sinks_constant
// CHECK: %[[SINKS:.*]] = llmc.constant dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>
// CHECK: llmc.fused_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SINKS]] {
// CHECK-NOT: llmc.softmax
func.func @sinks_constant(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// A constant column whose rows of one head differ is not a logit per head: nothing is raised.
// CHECK-LABEL: func.func @sinks_constant_rows_differ
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @sinks_constant_rows_differ(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.25], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// The slice keeps the last four columns (the first key's probability dropped, the sinks' kept):
// nothing is raised.
// CHECK-LABEL: func.func @sinks_slice_keeps_the_sinks
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @sinks_slice_keeps_the_sinks(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: 5>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// The sinks' column first and the keys' probabilities sliced after it: not the form torch writes,
// nothing is raised.
// CHECK-LABEL: func.func @sinks_column_first
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @sinks_column_first(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %col, %s {axis = -1 : i64} : (tensor<1x2x4x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: 5>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// The row max read elsewhere too (here returned): raised, the max and the concatenation staying
// for that reader.
// CHECK-LABEL: func.func @sinks_row_max_read_elsewhere
// CHECK: llmc.reduce_max
// CHECK: llmc.fused_attention
// CHECK-NOT: llmc.softmax
func.func @sinks_row_max_read_elsewhere(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x2x4x1xf32>) {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y, %m : tensor<1x4x4xf32>, tensor<1x2x4x1xf32>
}

// -----

// The concatenation read elsewhere too (here returned): nothing is raised.
// CHECK-LABEL: func.func @sinks_concat_read_elsewhere
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @sinks_concat_read_elsewhere(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x2x4x5xf32>) {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y, %c : tensor<1x4x4xf32>, tensor<1x2x4x5xf32>
}

// -----

// A dynamic key count: the slice to -1 leaves the sinks' column (raised); one to the end keeps it,
// its type the same (dynamic), and is not the keys' probabilities (nothing is raised).
// CHECK-LABEL: func.func @sinks_dynamic_keys
// CHECK: llmc.fused_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK-LABEL: func.func @sinks_dynamic_keys_slice_to_the_end
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @sinks_dynamic_keys(%q: tensor<1x4x4xf32>, %k: tensor<1x?x4xf32>, %v: tensor<1x?x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %splitk = llmc.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %splitk : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x2xf32>) -> tensor<1x2x?x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x2xf32>) -> tensor<1x2x2x?xf32>
  %v4 = llmc.reshape %v, %splitk : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x2xf32>) -> tensor<1x2x?x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x?xf32>) -> tensor<1x2x4x?xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x?xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x?xf32>
  %all = llmc.softmax %c : (tensor<1x2x4x?xf32>) -> tensor<1x2x4x?xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x?xf32>) -> tensor<1x2x4x?xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x?xf32>, tensor<1x2x?x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

func.func @sinks_dynamic_keys_slice_to_the_end(%q: tensor<1x4x4xf32>, %k: tensor<1x?x4xf32>, %v: tensor<1x?x4xf32>) -> tensor<1x4x4xf32> {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %splitk = llmc.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %splitk : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x2xf32>) -> tensor<1x2x?x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x2xf32>) -> tensor<1x2x2x?xf32>
  %v4 = llmc.reshape %v, %splitk : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x2xf32>) -> tensor<1x2x?x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x?xf32>) -> tensor<1x2x4x?xf32>
  %col = llmc.constant dense<[[[[0.5], [0.5], [0.5], [0.5]], [[-1.0], [-1.0], [-1.0], [-1.0]]]]> : tensor<1x2x4x1xf32>
  %c = llmc.concat %s, %col {axis = -1 : i64} : (tensor<1x2x4x?xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x?xf32>
  %all = llmc.softmax %c : (tensor<1x2x4x?xf32>) -> tensor<1x2x4x?xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x?xf32>) -> tensor<1x2x4x?xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x?xf32>, tensor<1x2x?x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

// The masked scores read by something else than the concatenation (here returned; their shape
// alone may be read, as llmc-raise-attention's own rewrite of Granite SWA's sinks reads it):
// nothing is raised.
// CHECK-LABEL: func.func @sinks_scores_read_elsewhere
// CHECK-NOT: llmc.fused_attention
// CHECK: llmc.softmax
func.func @sinks_scores_read_elsewhere(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %sinks: tensor<2xf32>, %mask: tensor<1x1x4x4xf32>)
    -> (tensor<1x4x4xf32>, tensor<1x2x4x4xf32>) {
  %split = llmc.constant dense<[1, 4, 2, 2]> : tensor<4xi64>
  %merge = llmc.constant dense<[1, 4, 4]> : tensor<3xi64>
  %q4 = llmc.reshape %q, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %qt = llmc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k4 = llmc.reshape %k, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %kh = llmc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %kt = llmc.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x2xf32>) -> tensor<1x2x2x4xf32>
  %v4 = llmc.reshape %v, %split : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x2x2xf32>
  %vt = llmc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %s = llmc.matmul %qt, %kt : (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %shape = llmc.constant dense<[1, 2, 1, 1]> : tensor<4xi64>
  %wide = llmc.constant dense<[1, 2, 4, 1]> : tensor<4xi64>
  %sk4 = llmc.reshape %sinks, %shape : (tensor<2xf32>, tensor<4xi64>) -> tensor<1x2x1x1xf32>
  %col = llmc.expand %sk4, %wide : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x4x1xf32>
  %sm = llmc.add %s, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = llmc.concat %sm, %col {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %m = llmc.reduce_max %c {axes = array<i64: -1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x1xf32>
  %d = llmc.sub %c, %m : (tensor<1x2x4x5xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %all = llmc.softmax %d : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %p = llmc.slice %all {axes = array<i64: 3>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %ot = llmc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x2xf32>) -> tensor<1x4x2x2xf32>
  %y = llmc.reshape %ot, %merge : (tensor<1x4x2x2xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  return %y, %sm : tensor<1x4x4xf32>, tensor<1x2x4x4xf32>
}
