// Attention.
#ifndef LLMC_ATTENTION_OPS_TD
#define LLMC_ATTENTION_OPS_TD

include "llmc/Dialect/LlmcBase.td"

def Llmc_AttentionOp : Llmc_Op<"attention"> {
  let summary = "scaled dot-product attention (ONNX Attention, opset 23 and newer)";
  let description = [{
    Operands: q, k, v, mask, past_key, past_value, nonpad_kv_seqlen. The last four are always
    present; an empty tensor (0 elements) stands for an absent one. q/k/v are
    [batch, heads, seq, head_size], or [batch, seq, heads * head_size] with `q_num_heads` and
    `kv_num_heads`. Results: the output, present key and value (past concatenated with k, v),
    and the attention scores at the stage `qk_matmul_output_mode` selects. Grouped-query
    attention repeats key/value heads; `is_causal` aligns the causal frontier bottom-right;
    `softcap` > 0 caps scores with tanh; a sliding window (`left_window_size`,
    `right_window_size`, -1 for unbounded) limits each query to nearby keys; a fully masked row
    yields zeros.
  }];
  let arguments = (ins Llmc_Tensor:$q, Llmc_Tensor:$k, Llmc_Tensor:$v, Llmc_Tensor:$mask,
                   Llmc_Tensor:$past_key, Llmc_Tensor:$past_value, Llmc_Tensor:$nonpad_kv_seqlen,
                   OptionalAttr<F32Attr>:$scale, DefaultValuedAttr<I64Attr, "0">:$is_causal,
                   DefaultValuedAttr<I64Attr, "0">:$q_num_heads, DefaultValuedAttr<I64Attr, "0">:$kv_num_heads,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   DefaultValuedAttr<I64Attr, "0">:$qk_matmul_output_mode,
                   DefaultValuedAttr<I64Attr, "-1">:$left_window_size,
                   DefaultValuedAttr<I64Attr, "-1">:$right_window_size);
  let results = (outs Llmc_Tensor:$output, Llmc_Tensor:$present_key, Llmc_Tensor:$present_value,
                 Llmc_Tensor:$qk_output);
  let extraClassDeclaration = commonDeclarations # [{
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_RotaryOp : Llmc_Op<"rotary"> {
  let summary = "rotary position embedding (ONNX RotaryEmbedding)";
  let description = [{
    Rotates the first `rotary_embedding_dim` (all when 0) features of each head of `input`
    ([batch, heads, seq, head_size], or [batch, seq, heads * head_size] with `num_heads`) by the
    angles whose cosines and sines are given: `cos`/`sin` are [max_position, rotary_dim / 2]
    tables indexed by `position_ids` [batch, seq], or [batch or 1, seq, rotary_dim / 2] when
    `position_ids` is an empty tensor (a table of batch 1 serves every batch; ONNX's
    RotaryEmbedding wants [batch, seq, .]). Pairs are halves, or adjacent features when
    `interleaved`.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$cos, Llmc_Tensor:$sin, Llmc_Tensor:$position_ids,
                   DefaultValuedAttr<I64Attr, "0">:$interleaved, DefaultValuedAttr<I64Attr, "0">:$num_heads,
                   DefaultValuedAttr<I64Attr, "0">:$rotary_embedding_dim);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_ATTENTION_OPS_TD
