// RUN: %llmc-opt %s -llmc-split-einsum | FileCheck %s
// RUN: %llmc-opt %s -llmc-split-einsum=max-operands=2 | FileCheck %s --check-prefix=TWO
// RUN: not %llmc-opt %s -llmc-split-einsum=max-operands=1 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: llmc-split-einsum: max-operands must be at least 2

// A chain of matrices between two vectors (seven operands): each product keeps the label the
// next matrix sums over, and the batch label s the output names.
// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]] = llmc.einsum %arg0, %arg1 {equation = "si,ij->sj"} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: %[[B:.*]] = llmc.einsum %[[A]], %arg2 {equation = "sj,jk->sk"} : (tensor<3x5xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
// CHECK: %[[C:.*]] = llmc.einsum %[[B]], %arg3 {equation = "sk,kl->sl"}
// CHECK: %[[D:.*]] = llmc.einsum %[[C]], %arg4 {equation = "sl,lm->sm"}
// CHECK: %[[E:.*]] = llmc.einsum %[[D]], %arg5 {equation = "sm,mn->sn"}
// CHECK: %[[F:.*]] = llmc.einsum %[[E]], %arg6 {equation = "sn,sn->s"} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3xf32>
// CHECK-NOT: llmc.einsum
// CHECK: return %[[F]]
func.func @chain(%x: tensor<3x4xf32>, %a: tensor<4x5xf32>, %b: tensor<5x6xf32>, %c: tensor<6x7xf32>,
                 %d: tensor<7x8xf32>, %e: tensor<8x4xf32>, %y: tensor<3x4xf32>) -> tensor<3xf32> {
  %r = llmc.einsum %x, %a, %b, %c, %d, %e, %y {equation = "si,ij,jk,kl,lm,mn,sn->s"}
      : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5x6xf32>, tensor<6x7xf32>, tensor<7x8xf32>, tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// "..." of two ranks (2 and 1, aligned from the right) and an implicit output (the "..."
// dimensions; i is named more than once, so summed): every product keeps the whole "...", the
// largest of its operands', and i until the last.
// CHECK-LABEL: func.func @ellipsis
// CHECK: llmc.einsum %arg0, %arg1 {equation = "...i,i->...i"} : (tensor<5x2x8xf32>, tensor<8xf32>) -> tensor<5x2x8xf32>
// CHECK: llmc.einsum %{{.*}}, %arg2 {equation = "...i,...i->...i"} : (tensor<5x2x8xf32>, tensor<2x8xf32>) -> tensor<5x2x8xf32>
// CHECK: llmc.einsum %{{.*}}, %arg1 {equation = "...i,i->...i"}
// CHECK: llmc.einsum %{{.*}}, %arg1 {equation = "...i,i->...i"}
// CHECK: llmc.einsum %{{.*}}, %arg0 {equation = "...i,...i->..."} : (tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<5x2xf32>
// CHECK-NOT: llmc.einsum
func.func @ellipsis(%x: tensor<5x2x8xf32>, %v: tensor<8xf32>, %w: tensor<2x8xf32>) -> tensor<5x2xf32> {
  %r = llmc.einsum %x, %v, %w, %v, %v, %x {equation = "...i,i,...i,i,i,...i"}
      : (tensor<5x2x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<5x2x8xf32>) -> tensor<5x2xf32>
  return %r : tensor<5x2xf32>
}

// A diagonal (ii) and a dynamic dimension: the diagonal is taken in the first product.
// CHECK-LABEL: func.func @diagonal
// CHECK: llmc.einsum %arg0, %arg1 {equation = "ii,ij->ij"} : (tensor<4x4xf32>, tensor<4x?xf32>) -> tensor<4x?xf32>
// CHECK: {equation = "ij,j->ij"}
// CHECK: {equation = "ij,j->ij"}
// CHECK: {equation = "ij,j->ij"}
// CHECK: {equation = "ij,j->i"} : (tensor<4x?xf32>, tensor<?xf32>) -> tensor<4xf32>
func.func @diagonal(%m: tensor<4x4xf32>, %a: tensor<4x?xf32>, %v: tensor<?xf32>) -> tensor<4xf32> {
  %r = llmc.einsum %m, %a, %v, %v, %v, %v {equation = "ii,ij,j,j,j,j->i"}
      : (tensor<4x4xf32>, tensor<4x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Negative: five operands stay one einsum by default; with max-operands=2 they are split.
// CHECK-LABEL: func.func @five
// CHECK: llmc.einsum %arg0, %arg1, %arg1, %arg1, %arg1 {equation = "ij,j,j,j,j->i"}
// TWO-LABEL: func.func @five
// TWO: {equation = "ij,j->ij"}
// TWO: {equation = "ij,j->ij"}
// TWO: {equation = "ij,j->ij"}
// TWO: {equation = "ij,j->i"}
// TWO-NOT: llmc.einsum
// TWO-LABEL: func.func @wide
func.func @five(%a: tensor<3x4xf32>, %v: tensor<4xf32>) -> tensor<3xf32> {
  %r = llmc.einsum %a, %v, %v, %v, %v {equation = "ij,j,j,j,j->i"} : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// Negative: a product would need 16 dimensions (every label of the first two operands is named
// later), more than a plan's values have (8): the einsum stays whole.
// CHECK-LABEL: func.func @wide
// CHECK: llmc.einsum %arg0, %arg0, %arg1, %arg1, %arg1, %arg1, %arg1, %arg1, %arg1, %arg1 {equation = "abcdefgh,ijklmnop,ai,bj,ck,dl,em,fn,go,hp->"}
// CHECK-NOT: llmc.einsum
func.func @wide(%x: tensor<1x1x1x1x1x1x1x2xf32>, %p: tensor<1x1xf32>) -> tensor<f32> {
  %r = llmc.einsum %x, %x, %p, %p, %p, %p, %p, %p, %p, %p {equation = "abcdefgh,ijklmnop,ai,bj,ck,dl,em,fn,go,hp->"}
      : (tensor<1x1x1x1x1x1x1x2xf32>, tensor<1x1x1x1x1x1x1x2xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<f32>
  return %r : tensor<f32>
}
