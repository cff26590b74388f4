// llmc passes. Flags are prefixed `llmc-`; each description shows IR before and after.
#ifndef LLMC_PASSES_TD
#define LLMC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LlmcVerifyStaticShapes : Pass<"llmc-verify-static-shapes", "mlir::func::FuncOp"> {
  let summary = "Checks that every tensor shape is static or follows from bounded input symbols";
  let description = [{
    After folding, every value must have a static shape, unless the function carries
    `llmc.symbol_bounds` (from `llmc --max-shape seq=512`): then every dynamic dimension must be
    an expression in the bounded input symbols (see SymbolicShapes.h), and the pass names the
    first op whose dimension is not (for instance one that depends on tensor data). Without
    bounds it names the first op with a dynamic shape and the inputs whose shape the user should
    fix with `--input-shape`.

    Before (fails):
    ```mlir
    func.func @main(%x: tensor<1x?xi64>) -> tensor<1x?xi64> { ... }
    ```
    error: 'llmc.add' (node "Add_3") has a dynamic result shape tensor<1x?xf32>; set the shape of
    input 'x' with --input-shape x=1x16
  }];
}

def LlmcMarkGraphSegments : Pass<"llmc-mark-graph-segments", "mlir::func::FuncOp"> {
  let summary = "Marks the runs of ops a CUDA graph can capture (llmc.graph_segment)";
  let description = [{
    A CUDA graph replays fixed launches: an op belongs in one when its shapes are fixed once the
    input shapes are (static, or expressions in the bounded input symbols: a shape bucket) and it
    needs no host synchronisation. Every run of such ops gets `llmc.graph_segment = N` (counting
    from 0); an op that cannot be captured gets no mark and ends the run before it. The CUDA
    executor captures each segment once per input-shape bucket and replays it, and launches the
    unmarked ops one by one. No op of the runtime reads device data on the host, so today the
    shapes decide: every plan llmc can write is one segment, and a decode step one graph launch.

    Before:
    ```mlir
    %1 = llmc.add %x, %x : (tensor<1x?xf32>, tensor<1x?xf32>) -> tensor<1x?xf32>
    ```
    After (in a function with `llmc.symbol_bounds`, where `?` follows from `seq`):
    ```mlir
    %1 = llmc.add %x, %x {llmc.graph_segment = 0 : i64} : ...
    ```
  }];
}

def LlmcDropIdentities : Pass<"llmc-drop-identities", "mlir::func::FuncOp"> {
  let summary = "Removes llmc.identity ops, casts to the same type and slices that keep everything";
  let description = [{
    Exporters leave Identity and Dropout nodes (imported as `llmc.identity`) and no-op casts.
    A slice with positive steps whose result has its input's shape for every input size up to
    the plan's bounds (symbolic shapes) goes too: Hugging Face's sliding-window KV caches keep
    the last `window - 1` positions, all of them when the bounds are below the window. So does a
    squeeze of the axes that an unsqueeze just put in (since session 30: GPT-OSS's experts' results
    viewed as [N, 1, M] and back).

    Before:
    ```mlir
    %1 = llmc.identity %0 : (tensor<2xf32>) -> tensor<2xf32>
    %2 = llmc.add %1, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    ```
    After:
    ```mlir
    %2 = llmc.add %0, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    ```
  }];
}

def LlmcSplitEinsum : Pass<"llmc-split-einsum", "mlir::func::FuncOp"> {
  let summary = "Splits an einsum of many operands into a chain of einsums of two";
  let description = [{
    An einsum of more than `max-operands` operands becomes einsums of two, left to right: the
    first two operands, their product and the third, and so on. Each product keeps the labels a
    later operand or the output names (and every "..." dimension), so the others are summed as
    soon as they can be. The CUDA kernel takes any einsum of at most five operands (the
    default: of rank 8 at most, as every value of a plan, they have at most 40 labels, 200
    operand-label pairs of the 256 its arguments hold), and a loop over every summed label's
    values at once costs their product, where the chain sums them pair by pair.

    Before:
    ```mlir
    %y = llmc.einsum %a, %b, %c {equation = "ij,jk,kl->il"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
    ```
    After (`max-operands=2`):
    ```mlir
    %t = llmc.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %y = llmc.einsum %t, %c {equation = "ik,kl->il"} : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
    ```
  }];
  let options = [
    Option<"maxOperands", "max-operands", "unsigned", /*default=*/"5",
           "Einsums of more operands than this are split (at least 2)">
  ];
}

def LlmcFoldShapes : Pass<"llmc-fold-shapes", "mlir::func::FuncOp"> {
  let summary = "Folds shape subgraphs to constants and refines result types to a fixed point";
  let description = [{
    Exported transformers compute shapes at run time (Shape, Gather, Concat, Range, Expand,
    Where, ... chains). With static input shapes those chains are constant: this pass folds
    every op whose operands are constants (through the ops' kernel-backed folders) and
    re-infers result types, so a reshape whose target shape just became a constant gets a
    static result type, which lets the next op fold, until nothing changes. The function's
    signature is updated to the refined result types.

    Before:
    ```mlir
    %s = llmc.shape %x : (tensor<1x16xi64>) -> tensor<2xi64>
    %r = llmc.reshape %y, %s : (tensor<16xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    ```
    After:
    ```mlir
    %c = llmc.constant dense<[1, 16]> : tensor<2xi64>
    %r = llmc.reshape %y, %c : (tensor<16xf32>, tensor<2xi64>) -> tensor<1x16xf32>
    ```
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", /*default=*/"16",
           "Upper bound on fold/refine rounds">
  ];
}

// ---------------------------------------------------------------------------------------------
// Fusion (docs/passes.md has a before/after example of each).

def LlmcKvCacheLayout : Pass<"llmc-kv-cache-layout", "mlir::func::FuncOp"> {
  let summary = "Turns past/present KV-cache pairs from [B, H, T, D] to [T, B, H*D]";
  let description = [{
    A past input `past_key_values.N.key` whose only uses are `concat(past, new, axis 2)`, returned
    as `present.N.key`, and Shape, becomes `[past, batch, heads * head]` with the present
    `concat(past, new', axis 0)`: a longer cache then extends a shorter one at its end for any
    batch, so the runtime appends a step's keys and values in place. Readers of the old present
    get a reshape/transpose view, which attention raising folds away.
  }];
}

def LlmcFoldTransposes : Pass<"llmc-fold-transposes", "mlir::func::FuncOp"> {
  let summary = "Composes transposes of transposes; transposes that move only unit dimensions become squeeze/unsqueeze";
  let description = [{
    A rotary embedding of heads split from the sequence (`transpose (0, 2, 1, 3)` of [B, S, H, D])
    rotates the rows [B, S, H * D] instead (`num_heads = H`), and the transpose moves below it, where
    it may meet the next one. A transpose of a transpose becomes one transpose (dropped when the
    permutations cancel). A
    transpose that keeps the order of the dimensions that are not 1 moves no data: it becomes a
    squeeze and an unsqueeze, copies that the CUDA executor does not even launch. The values of a
    KV-cache export meet both: heads split `(0, 2, 1, 3)` then cache layout `(2, 0, 1, 3)` is
    `(1, 0, 2, 3)`, which on a batch of 1 only moves the unit batch dimension. Its keys meet all
    three: split, rotated, laid out for the cache, they move no data either (two launches fewer
    per layer). A fused_attention whose keys and values are both read as [B, H, S, D] transposes
    (0, 2, 1, 3) of [B, S, H, D] values reads those values' rows [B, S, H * D] instead (keys read
    so are not rotated by its tables: `rotate_keys = 0`).

    Before:
    ```mlir
    %1 = llmc.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x3x64xf32>) -> tensor<1x3x?x64xf32>
    %2 = llmc.transpose %1 {perm = array<i64: 2, 0, 1, 3>} : (tensor<1x3x?x64xf32>) -> tensor<?x1x3x64xf32>
    ```
    After:
    ```mlir
    %1 = llmc.squeeze %0 {axes = array<i64: 0>} : (tensor<1x?x3x64xf32>) -> tensor<?x3x64xf32>
    %2 = llmc.unsqueeze %1 {axes = array<i64: 1>} : (tensor<?x3x64xf32>) -> tensor<?x1x3x64xf32>
    ```
  }];
}

def LlmcFoldConvAffine : Pass<"llmc-fold-conv-affine", "mlir::func::FuncOp"> {
  let summary = "Folds BatchNormalization and per-channel constant scales/shifts into convolutions and matmuls";
  let description = [{
    A convolution with constant weights whose result feeds only an inference BatchNormalization
    with constant statistics, or only a multiplication, division, addition or subtraction by a
    constant that varies along the output channels alone (also behind a transpose to
    channels-last, as exporters leave decomposed BatchNorms), becomes one convolution with folded
    weights and bias. A matmul by a constant matrix whose result is only scaled per column by a
    constant becomes one matmul. Not folded: statistics or scales that are not constant, a
    convolution result with another use, a constant that varies along another axis.
  }];
}

def LlmcAbsorbMla : Pass<"llmc-absorb-mla", "mlir::func::FuncOp"> {
  let summary = "Runs DeepSeek multi-head latent attention in the latent space, caching only the latent";
  let description = [{
    Recognises multi-head latent attention in an export that caches expanded keys and values
    (after llmc-kv-cache-layout): kv_b_proj's per-head split into [k_nope | v] of a latent
    [B, 1, S, L], keys `concat(k_nope, expand(rope key))`, the past/present pairs
    `past_key_values.N.key/.value`, and `softmax(q · kᵀ · scale + mask) · v`. The pair becomes one
    latent cache `past_key_values.N.latent` / `present.N.latent` [T, B, L + R] (latent and rotary
    key per token), and the attention `llmc.latent_attention` with W_UK [H, n, L] and W_UV [H, L, v]
    as separate per-head factors. With `factors=auto` a factor is multiplied into q_b_proj
    (W_UK) or o_proj (W_UV) when that costs fewer multiply-adds per token; the estimate, and the
    KV-cache bytes per token before and after, are reported (`llmc --print-stats`).

    Before (per layer):
    ```mlir
    %kv = llmc.matmul %latent, %w_kv_b : (tensor<1x1x?x128xf32>, tensor<128x512xf32>) -> ...
    ... split [k_nope | v], keys = concat(k_nope, expand(rope_key)), caches [T, B, H * D] ...
    %s = llmc.matmul %q, %kT ; %p = llmc.softmax(%s * scale + %mask) ; %o = llmc.matmul %p, %v
    ```
    After:
    ```mlir
    %new = ... concat(%latent, %rope_key) to [S, B, 144]
    %cache = llmc.concat %past_latent, %new {axis = 0} : ... -> tensor<?x1x144xf32>
    %o = llmc.latent_attention %q, %cache, %w_uk, %w_uv, %mask {scale = 0.144}
        : (tensor<1x8x?x48xf32>, tensor<?x1x144xf32>, tensor<8x32x128xf32>, tensor<8x128x32xf32>, ...)
        -> tensor<1x8x?x32xf32>
    ```
  }];
  let options = [
    Option<"factors", "factors", "std::string", /*default=*/"\"auto\"",
           "W_UK and W_UV: auto (by the cost estimate), separate, or multiplied (into q_b_proj and o_proj)">
  ];
}

def LlmcLastPosition : Pass<"llmc-last-position", "mlir::func::FuncOp"> {
  let summary = "Keeps only the last sequence position of named outputs, and computes no more of them";
  let description = [{
    A decoder's generation reads only the logits of the last position, yet the exported graph
    computes (and a run copies out) [batch, seq, vocab] of them: for a 512-token prompt 512 rows
    of the vocabulary projection and 100 MB of f32 through the host. The outputs named in
    `outputs` ([batch, seq, ...]) become `slice [-1:]` on axis 1, and the slice moves above the
    ops that compute each row from the same row alone, as far as a value has no other reader:
    linear (without gate or residual), rms_norm/layer_norm over the last axis, and their add_
    forms whose sum is not read or is cut too (both cuts then move together). The output is [batch, 1, ...] (static when the sequence is at
    least 1). Opt-in (`llmc --last-position=logits`): it changes what the plan returns.

    Before:
    ```mlir
    %r, %sum = llmc.add_rms_norm %h, %x, %w : ... -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
    %logits = llmc.linear %r, %emb, ... {transB = 1 : i64} : (tensor<1x?x64xf32>, ...) -> tensor<1x?x500xf32>
    return %logits
    ```
    After:
    ```mlir
    %h1 = llmc.slice %h {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>, steps = array<i64: 1>}
    %x1 = llmc.slice %x {...}
    %r, %sum = llmc.add_rms_norm %h1, %x1, %w : ... -> (tensor<1x1x64xf32>, tensor<1x1x64xf32>)
    %logits = llmc.linear %r, %emb, ... -> tensor<1x1x500xf32>
    ```
  }];
  let options = [
    ListOption<"outputs", "outputs", "std::string", "The names of the function results to cut to the last position">
  ];
}

def LlmcDeinterleaveQkv : Pass<"llmc-deinterleave-qkv", "mlir::func::FuncOp"> {
  let summary = "Reorders a QKV projection whose output keeps each head's query, key and value together";
  let description = [{
    A projection `x · W (+ b)` (W [K, H * G * D] and b constants read once) whose output is
    reshaped to [..., H, G, D] and read as G gathers on the G axis (Bloom's query_key_value), or
    reshaped to [B, S, H, G * D], transposed to [B, H, S, G * D] and split into its G parts of D
    (GPT-NeoX's), or so split without the transpose (CodeGen's groups of heads), gets W's columns
    and b reordered from (head, part, d) to (part, head, d) (H > 1): each part is then a split of
    the projection reshaped to [..., H, D] (transposed back in the second form), the form of a
    merged QKV projection, which the attention, KV cache and QKV-split passes and kernels know.
    Runs before llmc-kv-cache-layout.
  }];
}

def LlmcFoldSliceAssignments : Pass<"llmc-fold-slice-assignments", "mlir::func::FuncOp"> {
  let summary = "Turns slice assignments (scatters of contiguous rows) into concatenations";
  let description = [{
    torch exports `x[..., a:b] = y` by moving the assigned axis to the front, scattering rows
    a..b-1 with `scatter_nd` (constant indices [b - a, 1]) and moving the axis back (DeepSeek-V3's
    keys: a new tensor filled with the keys' shared part, then their rotated part). Three rewrites
    take it apart: such a scatter is the concatenation of the data's rows before a, the updates and
    the data's rows from b; a slice that takes whole pieces of a concatenation on its axis is
    those pieces; a transpose that undoes the transposes of every piece of a concatenation is the
    concatenation of the pieces on the corresponding axis. A tensor filled and then written whole
    leaves nothing of its filling.

    Before:
    ```mlir
    %t = llmc.transpose %empty {perm = array<i64: 3, 1, 2, 0>} : ... -> tensor<24x4x16x1xf32>
    %a = llmc.scatter_nd %t, %rows0to15, %nopeT : ... -> tensor<24x4x16x1xf32>
    %b = llmc.scatter_nd %a, %rows16to23, %ropeT : ... -> tensor<24x4x16x1xf32>
    %k = llmc.transpose %b {perm = array<i64: 3, 1, 2, 0>} : ... -> tensor<1x4x16x24xf32>
    ```
    After:
    ```mlir
    %k = llmc.concat %nope, %rope {axis = 3 : i64} : ... -> tensor<1x4x16x24xf32>
    ```
  }];
}

def LlmcMergeParallelLinears : Pass<"llmc-merge-parallel-linears", "mlir::func::FuncOp"> {
  let summary = "Merges linears with constant weights that read the same input";
  let description = [{
    SwiGLU's `linear(x, Wu, gate = linear(x, Wg, silu))` becomes one `linear(x, [Wg | Wu])` with the
    "swiglu" epilogue (silu of the first half times the second). Other linears (no activation,
    gate or residual) reading the same input become one linear over the concatenated weights and
    biases, whose result an `llmc.split` cuts back into the parts: Q, K and V of any widths (as in
    grouped-query attention). A lone linear (GPT-2's c_attn) stays. Not merged: weights that are
    not constant, different inputs, linears with an activation or residual.
  }];
}

def LlmcTransposeLinearWeights : Pass<"llmc-transpose-linear-weights", "mlir::func::FuncOp"> {
  let summary = "Stores the constant weights of linears as [N, K] (transB), one row per output";
  let description = [{
    A decode step multiplies one row per sequence by every weight: its linears read the whole
    weight for a few outputs each, and the CUDA executor's kernel for them (SmallLinear.cu) gives
    each output one warp that streams that output's weights, which must then lie in one row. llmc
    runs this pass for `--target cuda`; cuBLASLt takes either layout for the larger products, and
    the CPU executor too. A weight that another op reads as well (a tied embedding table read by
    a gather) keeps its layout; so does one that is not f32 data.

    Before:
    ```mlir
    %w = llmc.constant dense<...> : tensor<2x3xf32>
    %y = llmc.linear %x, %w, %none, %none, %none : (tensor<4x2xf32>, tensor<2x3xf32>, ...) -> tensor<4x3xf32>
    ```
    After:
    ```mlir
    %w = llmc.constant dense<...> : tensor<3x2xf32>
    %y = llmc.linear %x, %w, %none, %none, %none {transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, ...) -> tensor<4x3xf32>
    ```
  }];
}

def LlmcRaiseNorms : Pass<"llmc-raise-norms", "mlir::func::FuncOp"> {
  let summary = "Raises decomposed RMSNorm and LayerNorm to llmc.rms_norm / llmc.layer_norm";
  let description = [{
    `x / sqrt(mean(x^2) + eps) [* w]` (pow or x*x; division or a reciprocal) becomes
    `llmc.rms_norm`; `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* g] [+ b]` becomes
    `llmc.layer_norm`, both over the last axis. Intermediates with other uses, a mean over
    another axis or a non-constant scale leave the ops as they are. A norm over the last axis of a
    transpose that keeps that axis last moves in front of it (per-head norms after the heads move).
  }];
}

def LlmcRaiseActivations : Pass<"llmc-raise-activations", "mlir::func::FuncOp"> {
  let summary = "Raises written-out GELU (erf and tanh forms) and SiLU";
  let description = [{
    `0.5 * x * (1 + erf(x / sqrt(2)))` becomes `llmc.gelu`, the tanh approximation
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` becomes `llmc.gelu` with
    `approximate = "tanh"` (also with its argument factored, `sqrt(2/pi) * x * (1 + 0.044715 *
    x * x)`, Bloom's), and `x * sigmoid(x)` becomes `llmc.silu`.
  }];
}

def LlmcRaiseAttention : Pass<"llmc-raise-attention", "mlir::func::FuncOp"> {
  let summary = "Raises scaled dot-product attention, with rotary embedding and GQA, to llmc.fused_attention";
  let description = [{
    Recognises softmax(Q·Kᵀ · scale [+ mask]) · V with the head split/merge reshapes and
    transposes around it, scales on Q, K or the scores, a NaN guard after the softmax, grouped
    key/value heads repeated with unsqueeze/expand/reshape, and the rotate-half rotary embedding
    on Q and K (`x * cos + concat(-x2, x1) * sin`). A constant causal mask becomes `is_causal`.
    A float bias added to the scaled scores (ALiBi's: MPT's, and Bloom's on merged [B*H, S, D]
    operands) becomes the mask, beside the one the scores had.
    Native ONNX Attention (3-D and 4-D forms, with or without a KV cache) becomes the same op;
    a causal or windowed one only where its queries and new keys are provably as many.
    Rotations no attention took (keys into a cache; partial rotaries; neighbouring pairs,
    GPT-J's rotate_every_two) then become llmc.rotary where the tables are provably each angle twice.
  }];
}

def LlmcRaiseAttentionMask : Pass<"llmc-raise-attention-mask", "mlir::func::FuncOp"> {
  let summary = "Replaces an attention mask built from the attention_mask input by is_causal and that input";
  let description = [{
    Exporters build a decoder's mask from ranges, comparisons, broadcasts and a gather of the
    `attention_mask` input (Hugging Face's causal and padding mask: some 20 ops, each a kernel
    launch that depends on the cache length). This pass works out, element by element, what the
    mask of each `llmc.fused_attention` and `llmc.latent_attention` computes
    (passes/MaskElements.h); when it is "key j at or
    before query i's bottom-right causal frontier, and attention_mask[b, j] != 0" (either part
    alone too), the attention gets `is_causal` and reads the input itself as its mask
    ([batch, 1, 1, keys], i1 or i64, non-zero keeps). An additive mask `where(m, 0, v)` with
    v <= -1e30 counts as its boolean `m`. A comparison that holds for every score up to the
    plan's bounds is dropped (a sliding window wider than the longest key sequence the plan
    takes); one that hides the keys W or more positions before the query, by the causal
    frontier's alignment (Hugging Face's `kv_idx > q_idx - W`), becomes the fused attention's
    `sliding_window = W` (the smaller where the attention has one already; a latent attention,
    which has none, keeps its mask). Masks it cannot prove stay as they are. At run time
    the input's length must then equal the key count (the mask's broadcast check), where the
    gather would have read its first keys; a row whose every key is hidden (a left-padded
    query) yields zeros instead of the additive mask's average over all keys.
  }];
}

def LlmcFuseResidualNorm : Pass<"llmc-fuse-residual-norm", "mlir::func::FuncOp"> {
  let summary = "Fuses a residual add into the LayerNorm/RMSNorm that follows it";
  let description = [{
    `norm(a + b)` over the last axis becomes `llmc.add_layer_norm` / `llmc.add_rms_norm`, which
    also yields `a + b` for the other users of the sum (the next residual connection).
  }];
}

def LlmcFuseLinear : Pass<"llmc-fuse-linear", "mlir::func::FuncOp"> {
  let summary = "Turns matmuls with constant weights into llmc.linear and fuses their epilogues";
  let description = [{
    A matmul (or gemm, with the reshapes exporters put around it) by a constant matrix becomes
    `llmc.linear`; then a constant bias add, an activation (ReLU, GELU, SiLU), a multiplication
    by another tensor of the result's shape (SwiGLU's gate) and a residual add fold into it, in
    that order, each when the intermediate has no other use. A product of gathered experts'
    matrices by the rows that chose them (squeeze(matmul(gather_nd(W, ids), unsqueeze(x, -1))))
    becomes llmc.expert_linear, which then takes the swiglu of a gate/up projection, rows
    repeated once per chosen expert and a down projection's weighted sum over a token's experts.
  }];
}

def LlmcFuseRouting : Pass<"llmc-fuse-routing", "mlir::func::FuncOp"> {
  let summary = "Fuses a mixture of experts' router into llmc.softmax_top_k or llmc.grouped_top_k";
  let description = [{
    `top_k(softmax(logits))` over the last axis, the largest first and sorted, with the softmax
    read by nothing else, becomes `llmc.softmax_top_k(logits)`; then the chosen weights divided by
    their sum (`reduce_sum` over the last axis, kept), where nothing else reads them, become its
    `normalize`. Three to four kernels of a router become one. DeepSeek-V3's router (sigmoid
    scores and a correction bias, experts chosen within the best groups, the chosen scores
    gathered, normalized and scaled) becomes `llmc.grouped_top_k(logits, bias)`.
  }];
}

def LlmcFuseQueryRotary : Pass<"llmc-fuse-query-rotary", "mlir::func::FuncOp"> {
  let summary = "Moves a query's own llmc.rotary into the fused_attention that reads it";
  let description = [{
    A fused_attention without rotary tables whose query is an llmc.rotary (no position ids, on
    [batch, seq, heads * head] rows of the query's type), through reshapes that give it back its
    shape, each value on the way read once, takes the rotary's input and tables instead, with
    `rotary_dim` (the rotary's, or the head) and `rotary_interleaved`, and `rotate_keys = 0`: the
    partial or neighbour-paired rotations that llmc-raise-attention leaves to an llmc.rotary
    (GPT-J, CodeGen, Cohere, Phi, StableLM). It runs after llmc-fold-transposes, which brings such
    a rotary to the query's rows.
  }];
}

def LlmcFuseElementwise : Pass<"llmc-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuses chains and trees of elementwise ops into llmc.fused_elementwise";
  let description = [{
    Float and boolean elementwise ops (broadcasting binary ops, unary ops, comparisons, where,
    casts between f32/f16/bool) whose intermediates are used only inside the group become one
    `llmc.fused_elementwise` whose region computes one element. Scalar constants move into the
    region; other constants become inputs.
  }];
}

#endif // LLMC_PASSES_TD
