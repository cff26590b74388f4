// Ops that the fusion passes create (passes/Raise*.cpp, passes/Fuse*.cpp); the importer never
// does. An operand given as an empty tensor (0 elements) is absent.
#ifndef LLMC_FUSED_OPS_TD
#define LLMC_FUSED_OPS_TD

include "llmc/Dialect/LlmcBase.td"

def Llmc_LinearOp : Llmc_Op<"linear"> {
  let summary = "linear layer with a fused epilogue";
  let description = [{
    `result = activation(input · weight + bias) * gate + residual`. `input` is [..., K]; `weight`
    is [K, N] ([N, K] with `transB`); `bias` is [N]; `gate` and `residual` are shaped like the
    result [..., N]. `activation`: "none", "relu", "silu", "gelu" (erf) or "gelu_tanh". `gate`
    carries SwiGLU's other branch: `silu(x · Wg) * (x · Wu)` is a linear with activation silu
    feeding the `gate` of the other; with the weights side by side it is one linear with
    activation "swiglu": `silu(y[..., :N/2]) * y[..., N/2:]` of `y = x · W + bias`, result [..., N/2].
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$weight, Llmc_Tensor:$bias, Llmc_Tensor:$gate,
                   Llmc_Tensor:$residual, DefaultValuedStrAttr<StrAttr, "none">:$activation,
                   DefaultValuedAttr<I64Attr, "0">:$transB);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ExpertLinearOp : Llmc_Op<"expert_linear"> {
  let summary = "each row times the matrix its id picks (a mixture of experts' projections)";
  let description = [{
    `input` [T, K], `weight` [E, M, K], `ids` [N] or [N, 1] with N = T * `repeat` (int64; a
    negative id counts from the end, as GatherND's): row n of the result [N, M] is
    `weight[ids[n]] · input[n / repeat]` (each input row serves `repeat` consecutive ids: a token's
    top-k experts). With `activation` "swiglu" the result is [N, M / 2], `silu(y[:, :M/2]) *
    y[:, M/2:]` of those rows (a gate/up projection); with "clamped_swiglu" (GPT-OSS's experts)
    `(u + up_offset) * g * sigmoid(alpha * g)` of g = min(y[:, :M/2], limit) and u = y[:, M/2:]
    clamped to [-limit, limit] (HY V4's experts: alpha 1 and up_offset 0, silu(g) * u). With
    `combine` [R, g] (R * g = N: a token's
    routing weights) the result is [R, M or M / 2], row r the sum over j < g of `combine[r, j]`
    times row r * g + j (a down projection's weighted sum over the token's experts). With `bias`
    [E, M] (a fifth operand; `combine` an empty tensor where there is none), row n of the product
    is `weight[ids[n]] · input[n / repeat] + bias[ids[n]]` before the activation and the sum
    (GPT-OSS's experts). Raised from `gather_nd(weight, ids)` multiplied by the rows
    (llmc-fuse-linear), so that the chosen matrices are read where they are instead of copied
    once per row.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$weight, Llmc_Tensor:$ids, Variadic<Llmc_Tensor>:$extras,
                   DefaultValuedStrAttr<StrAttr, "none">:$activation, DefaultValuedAttr<I64Attr, "1">:$repeat,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha, DefaultValuedAttr<F32Attr, "0.0">:$limit,
                   DefaultValuedAttr<F32Attr, "1.0">:$up_offset);
  let results = (outs Llmc_Tensor:$result);
  let extraClassDeclaration = commonDeclarations # [{
    // The combine weights and the bias, null where absent (`extras`: none, [combine], or
    // [combine or an empty tensor, bias]).
    ::mlir::Value getCombine() { return extra(0); }
    ::mlir::Value getBias() { return extra(1); }
    ::mlir::Value extra(unsigned i) {
      if (getExtras().size() <= i)
        return {};
      auto type = ::mlir::cast<::mlir::RankedTensorType>(getExtras()[i].getType());
      return type.hasStaticShape() && type.getNumElements() == 0 ? ::mlir::Value() : getExtras()[i];
    }
  }];
}

def Llmc_AddLayerNormOp : Llmc_Op<"add_layer_norm"> {
  let summary = "residual add followed by layer normalization";
  let description = [{
    `sum = input + residual` (same shapes), `result = layer_norm(sum) * scale + bias` over
    dimensions `[axis, rank)`. Yields the sum too, for the next residual connection.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$residual, Llmc_Tensor:$scale, Llmc_Tensor:$bias,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result, Llmc_Tensor:$sum);
  let extraClassDeclaration = commonDeclarations # [{
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_AddRmsNormOp : Llmc_Op<"add_rms_norm"> {
  let summary = "residual add followed by RMS normalization";
  let description = "`sum = input + residual`, `result = rms_norm(sum) * scale`; yields the sum too.";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$residual, Llmc_Tensor:$scale,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result, Llmc_Tensor:$sum);
  let extraClassDeclaration = commonDeclarations # [{
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_FusedAttentionOp : Llmc_Op<"fused_attention"> {
  let summary = "scaled dot-product attention with rotary embedding, raised from its parts";
  let description = [{
    `q` [batch, seq_q, q_num_heads * head], `k`/`v` [batch, seq_k, kv_num_heads * head], or
    [batch, kv_num_heads, seq_k, head] as a KV cache holds them (grouped-query attention when
    q_num_heads > kv_num_heads). When `cos`/`sin` are given ([batch or 1, seq_q, head]), q and
    (in the first layout) k are first rotated in the rotate-half form `x * cos + rotate_half(x) * sin`;
    keys in the cache layout, or with `rotate_keys = 0`, were rotated before they were cached.
    With `kv_time_major`, k and v are [seq_k, batch, kv_num_heads * head] (a KV cache that grows
    at its end, see llmc-kv-cache-layout). With `packed_qkv`, `q` holds Q, K and V side by side,
    [batch, seq, (q_num_heads + 2 * kv_num_heads) * head] (a merged QKV projection), and k and v
    are empty. `mask` broadcasts to [batch, q_num_heads, seq_q, seq_k]:
    added when float, keeps where non-zero when bool or integer (an attention_mask input, see
    llmc-raise-attention-mask). `is_causal` hides keys after each query
    (bottom-right aligned); `scale` 0 means 1/sqrt(head). `softcap` > 0 caps each scaled score s
    to `softcap * tanh(s / softcap)` before the mask (Gemma 2). `sliding_window` > 0 hides the
    keys that many positions or more before each query (query i at position i + seq_k - seq_q,
    as `is_causal` aligns it): with `is_causal` each query sees at most `sliding_window` keys, up
    to itself (Mistral, Gemma 2 and 3). With `rotary_dim` R > 0, q turns as llmc.rotary turns it
    instead: its first R features, in pairs (i, i + R/2), or (2i, 2i + 1) with `rotary_interleaved`,
    by tables `cos`/`sin` of llmc.rotary's form [batch or 1, seq_q, R / 2], and the keys are not
    rotated (`rotate_keys` 0; llmc-fuse-query-rotary makes it from a query's own llmc.rotary).
    The optional seventh operand `sinks` [q_num_heads] is a logit per head that joins each row's
    softmax with no value behind it (GPT-OSS's attention sinks): the weights become
    exp(s_j) / (exp(sink) + sum_j exp(s_j)), so a row may give less than all of its weight to keys.
    (Optional rather than an empty tensor, so that the attentions without sinks keep their form.)
    Result [batch, seq_q, q_num_heads * head]; a fully masked row yields zeros.
  }];
  let arguments = (ins Llmc_Tensor:$q, Llmc_Tensor:$k, Llmc_Tensor:$v, Llmc_Tensor:$mask, Llmc_Tensor:$cos,
                   Llmc_Tensor:$sin, Llmc_OptionalTensor:$sinks, I64Attr:$q_num_heads, I64Attr:$kv_num_heads,
                   DefaultValuedAttr<F32Attr, "0.0">:$scale, DefaultValuedAttr<I64Attr, "0">:$is_causal,
                   DefaultValuedAttr<I64Attr, "1">:$rotate_keys, DefaultValuedAttr<I64Attr, "0">:$kv_time_major,
                   DefaultValuedAttr<I64Attr, "0">:$packed_qkv, DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   DefaultValuedAttr<I64Attr, "0">:$sliding_window, DefaultValuedAttr<I64Attr, "0">:$rotary_dim,
                   DefaultValuedAttr<I64Attr, "0">:$rotary_interleaved);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_LatentAttentionOp : Llmc_Op<"latent_attention"> {
  let summary = "multi-head latent attention (DeepSeek MLA) over a cache of latents";
  let description = [{
    `q` [batch, heads, seq_q, nope + rope]: per head the query's non-rotary part, then its rotated
    part. `cache` [seq_k, batch, latent + rope]: per token the compressed KV latent, then the
    rotated key shared by all heads (the KV cache, length-major, see llmc-absorb-mla). `w_uk`
    [heads, nope, latent] and `w_uv` [heads, latent, v] are the per-head slices of the latent's
    up-projection to keys and values. Per head h the result equals ordinary attention with keys
    `[latent · w_uk[h]ᵀ, rope key]` and values `latent · w_uv[h]`: `softmax(scale · q · kᵀ + mask) · v`.
    The kernel runs it absorbed (the query moved into the latent space, `q_nope · w_uk[h]`, and
    `w_uv` applied after the weighted sum) or expanded (keys and values built from the cache),
    whichever costs fewer FLOPs for the call's lengths. `mask` broadcasts to [batch, heads, seq_q,
    seq_k], added when float, keeping where non-zero when bool or integer (an attention_mask
    input, see llmc-raise-attention-mask); `is_causal` hides keys after each query (bottom-right
    aligned). Result [batch, heads, seq_q, v].
    A factor multiplied into a projection is absent (empty): without `w_uk`, `q` is already in
    the latent space, [batch, heads, seq_q, latent + rope]; without `w_uv` the result is the
    latent-space output [batch, heads, seq_q, latent]. `rope_dim` is the rotary key's width.
    The optional sixth operand `sinks` [heads] is a logit per head that joins each row's softmax
    with no value behind it, as fused_attention's (HY V4's attention sinks).
  }];
  let arguments = (ins Llmc_Tensor:$q, Llmc_Tensor:$cache, Llmc_Tensor:$w_uk, Llmc_Tensor:$w_uv,
                   Llmc_Tensor:$mask, Llmc_OptionalTensor:$sinks, F32Attr:$scale, I64Attr:$rope_dim,
                   DefaultValuedAttr<I64Attr, "0">:$is_causal);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_SoftmaxTopKOp : Llmc_Op<"softmax_top_k"> {
  let summary = "the k largest probabilities of a softmax over the last axis, and their indices";
  let description = [{
    A mixture of experts' router, raised from top_k(softmax(logits)) by llmc-fuse-routing:
    per row of `logits` [..., n] the softmax's probabilities, of which the k largest (the largest
    first, equal ones by index) as `values` [..., k] of the logits' type and their indices as
    `indices` [..., k] i64; with `normalize`, the k values are divided by their sum (Mixtral's
    routing weights, `w / w.sum(-1, keepdim=True)`).
  }];
  let arguments = (ins Llmc_Tensor:$logits, I64Attr:$k, DefaultValuedAttr<I64Attr, "0">:$normalize);
  let results = (outs Llmc_Tensor:$values, Llmc_Tensor:$indices);
}

def Llmc_GroupedTopKOp : Llmc_Op<"grouped_top_k"> {
  let summary = "a router's scores, corrected, its experts chosen within the best groups, and their top k";
  let description = [{
    DeepSeek-V3's router (transformers' DeepseekV3TopkRouter, also Kimi K2's and GLM-4.5's), and
    with softmax scores and one group ERNIE 4.5's (Ernie4_5_MoeTopKRouter), raised by
    llmc-fuse-routing. Per row of `logits` [rows, n]: the scores s = sigmoid(logits), or the
    row's softmax with `scores` = "softmax", and c = s + `bias` [n] (the score correction); the n
    experts form `groups` groups of n / groups in order, each scored by the sum of its
    `group_top` largest c (largest first, summed in doubles); the `kept_groups` best groups are
    kept (largest first, equal ones by index) and the c of every other group becomes `fill`; of
    those, the k largest (equal ones by index, the largest first) give `indices` [rows, k] i64
    and their s the `weights` [rows, k] (logits' type), with their sum in doubles: divided by
    (sum + `epsilon`) with `normalize` 1, by max(sum, `epsilon`) with `normalize` 2 (ERNIE's
    clamp); then times `scale`.
  }];
  let arguments = (ins Llmc_Tensor:$logits, Llmc_Tensor:$bias, I64Attr:$k, I64Attr:$groups, I64Attr:$kept_groups,
                   DefaultValuedAttr<I64Attr, "2">:$group_top, F32Attr:$fill,
                   DefaultValuedAttr<I64Attr, "0">:$normalize, DefaultValuedAttr<F32Attr, "0.0f">:$epsilon,
                   DefaultValuedAttr<F32Attr, "1.0f">:$scale, DefaultValuedStrAttr<StrAttr, "sigmoid">:$scores);
  let results = (outs Llmc_Tensor:$weights, Llmc_Tensor:$indices);
}

def Llmc_FusedElementwiseOp : Op<Llmc_Dialect, "fused_elementwise",
                                 [Pure, IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a chain or tree of elementwise ops run in one pass";
  let description = [{
    The region computes one element: its block arguments are 0-d tensors holding one element of
    each input (numpy broadcasting to the common result shape), its body is llmc elementwise ops
    on 0-d tensors, and `llmc.yield` gives one value per result. The CPU executor runs it as a
    small instruction list over cache-sized chunks; the CUDA backend generates a kernel from the
    same region.
  }];
  let arguments = (ins Variadic<Llmc_Tensor>:$inputs);
  let results = (outs Variadic<Llmc_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results) $body";
  let hasVerifier = 1;
}

def Llmc_YieldOp : Op<Llmc_Dialect, "yield", [Pure, Terminator, HasParent<"FusedElementwiseOp">]> {
  let summary = "the values a fused_elementwise region gives for one element";
  let arguments = (ins Variadic<Llmc_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

#endif // LLMC_FUSED_OPS_TD
