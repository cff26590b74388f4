// Linear algebra ops.
#ifndef LLMC_LINALG_OPS_TD
#define LLMC_LINALG_OPS_TD

include "llmc/Dialect/LlmcBase.td"

def Llmc_MatMulOp : Llmc_Op<"matmul"> {
  let summary = "matrix product with numpy semantics";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`; batch dimensions broadcast, and a rank-1 operand
    is treated as a row (lhs) or column (rhs) vector whose unit dimension is dropped.
  }];
  let arguments = (ins Llmc_Tensor:$lhs, Llmc_Tensor:$rhs);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_GemmOp : Llmc_Op<"gemm"> {
  let summary = "general matrix multiply";
  let description = "`alpha * op(A) * op(B) + beta * C` for matrices, with C broadcast to `[M, N]`.";
  let arguments = (ins Llmc_Tensor:$a, Llmc_Tensor:$b, Llmc_OptionalTensor:$c,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha, DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<I64Attr, "0">:$transA, DefaultValuedAttr<I64Attr, "0">:$transB);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_LINALG_OPS_TD
