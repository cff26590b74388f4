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

def Llmc_EinsumOp : Llmc_Op<"einsum"> {
  let summary = "Einstein summation";
  let description = [{
    `equation` in ONNX's form ("bij,bjk->bik", an implicit output when there is no "->",
    "..." for broadcast dimensions).
  }];
  let arguments = (ins Variadic<Llmc_Tensor>:$inputs, StrAttr:$equation);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_QuantizeLinearOp : Llmc_Op<"quantize_linear"> {
  let summary = "float to 8-bit integer quantization";
  let description = [{
    `saturate(round_half_even(x / scale) + zero_point)`; the scale (and zero point) are one value,
    one per `axis` index, or one per `block_size` elements along `axis`. The result type is the
    zero point's, or `output_dtype` when there is none.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale, Llmc_OptionalTensor:$zero_point,
                   DefaultValuedAttr<I64Attr, "1">:$axis, DefaultValuedAttr<I64Attr, "0">:$block_size,
                   TypeAttr:$output_type);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_DequantizeLinearOp : Llmc_Op<"dequantize_linear"> {
  let summary = "8-bit integer to float dequantization";
  let description = "`(x - zero_point) * scale`, with scales as in quantize_linear; the result has the scale's type.";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale, Llmc_OptionalTensor:$zero_point,
                   DefaultValuedAttr<I64Attr, "1">:$axis, DefaultValuedAttr<I64Attr, "0">:$block_size);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_LINALG_OPS_TD
