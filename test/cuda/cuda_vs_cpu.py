#!/usr/bin/env python3
"""Whole plans on the CUDA executor against the CPU executor, on the same seeded random inputs.

    cuda_vs_cpu.py prepare --llmc BIN --llmc-run BIN --out DIR   # plans and CPU outputs (no GPU needed)
    cuda_vs_cpu.py check --llmc-run BIN --dir DIR [--atol 1e-3]  # the same plans on CUDA, compared
    cuda_vs_cpu.py both --llmc BIN --llmc-run BIN                # prepare into a temporary DIR, then check

`check` exits 77 (CTest: skipped) when there is no CUDA device. tools/gpu-check.sh carries a
prepared DIR to the GPU machine. `prepare --real-models` adds the three real models
(models/fetch_real_models.py: ResNet-50, MiniLM, SmolLM2; fetched and exported on first use) with
seeded random weights in place of theirs, so that their plans fit the GPU machine's pack: every
op of their plans runs on the GPU, compared with the CPU by cosine similarity (REAL_CASES).

The plans (CASES): the tiny Llama, GPT-2 and BERT as llmc compiles them by default and without
parallel-linear merging, in f32 and with --precision bf16 or f16, and the KV-cache decoders
generating 16 tokens with the cache kept on the GPU (the tiny DeepSeek-V3-style export too, made
on first use by models/export_deepseek.py: its latent cache and latent attention), a small CNN
made here (convolutions on cuBLASLt and on the direct kernel, batch norm, pooling), the small
models of the ops the test models lack, and some of these models in doubles (as_float_type, within
DOUBLE_ATOL) and as exported in bf16 or f16 (as_float_type; the -bf16-model and -f16-model cases).
`--only NAME` prepares the cases whose names contain NAME.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77
KV_SHAPES = ["--input-shape", "batch=1", "--max-shape", "seq=16,past=0..64,total=80"]
# The tolerance of the plans in doubles: computed in f32 anywhere, they would be off by 1e-7 or more.
DOUBLE_ATOL = 1e-10
# (name, model, llmc flags, kind): "run" compares one run's outputs, "generate" 16 greedy steps
# (the KV cache kept on the device) step by step.
CASES = [
    ("tiny_llama", "tiny_llama", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_llama-unmerged", "tiny_llama", ["--input-shape", "input_ids=1x16", "--skip-pass", "llmc-merge-parallel-linears"], "run"),
    # A dynamic sequence, run at 19 of 32: the rotary tables computed on the device, which the
    # attention reads by half (AttentionArgs::halfTables); until session 24 the arena gave a half's
    # slot away before the attention had read it.
    ("tiny_llama-dynamic", "tiny_llama", ["--max-shape", "seq=32", "--target", "cuda"], "run"),
    # Attention shapes llmc-raise-attention takes since session 24: Qwen3's queries and keys
    # normalized per head (read as views), GPT-NeoX's partial rotary (queries transposed back,
    # keys read as [B, H, S, D]) with its parallel residuals; on a dynamic sequence, and in bf16
    # (the tensor-core prompt attention).
    ("tiny_qwen3-dynamic", "tiny_qwen3", ["--max-shape", "seq=32", "--target", "cuda"], "run"),
    ("tiny_neox-dynamic", "tiny_neox", ["--max-shape", "seq=32", "--target", "cuda"], "run"),
    ("tiny_neox-bf16", "tiny_neox", ["--input-shape", "input_ids=1x16", "--precision", "bf16"], "run"),
    # Gemma 2 (test/e2e/architectures.py's tiny export): softcapped scores, which fused_attention
    # takes since session 25, in the prompt's tensor-core attention and the decode attention;
    # since session 27 its first layer's sliding window of 8 keys is fused_attention's too (a
    # 16-token prompt and a decode past it: the window's keys in both kernels).
    ("gemma2-bf16", "arch_gemma2", ["--input-shape", "input_ids=1x16", "--precision", "bf16"], "run"),
    ("gemma2_kv-bf16-cuda", "arch_gemma2_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    # GPT-J: queries and keys rotated by neighbouring pairs on their first 8 of 16 features, one
    # llmc.rotary each since session 26 (the keys' by the QKV split on the way into the cache).
    ("gptj_kv-bf16-cuda", "arch_gptj_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    # GPT-OSS (session 30): attention sinks in fused_attention (the prompt's tensor-core kernel,
    # a sliding window on its first layer; the decode kernel's splits merged with the sink), its
    # router one normalized softmax_top_k, its experts' products expert_linear (matrices [K, M]
    # turned at compile time), their biases and clamped SwiGLU as ops. The 16-token run's 32 ids
    # take the grouped expert kernel (tensor cores, session 32), the generation's decode steps the
    # warp per output.
    ("gpt_oss-bf16", "arch_gpt_oss", ["--input-shape", "input_ids=1x16", "--precision", "bf16"], "run"),
    ("gpt_oss_kv-bf16-cuda", "arch_gpt_oss_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    # Mixtral's mixture of experts (top-2 of 4 per token: TopK, each token's experts' weights
    # gathered, batched products), as architectures.py exports it (session 26); its router one
    # softmax_top_k since session 27.
    ("mixtral-bf16", "arch_mixtral", ["--input-shape", "input_ids=1x16", "--precision", "bf16"], "run"),
    ("mixtral_kv-bf16-cuda", "arch_mixtral_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    ("tiny_gpt2", "tiny_gpt2", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_gpt2-unmerged", "tiny_gpt2", ["--input-shape", "input_ids=1x16", "--skip-pass", "llmc-merge-parallel-linears"], "run"),
    ("tiny_bert", "tiny_bert", ["--input-shape", "input_ids=2x16,attention_mask=2x16"], "run"),
    ("tiny_llama-bf16", "tiny_llama", ["--input-shape", "input_ids=1x16", "--precision", "bf16"], "run"),
    ("tiny_gpt2-f16", "tiny_gpt2", ["--input-shape", "input_ids=1x16", "--precision", "f16"], "run"),
    ("tiny_llama-tf32", "tiny_llama", ["--input-shape", "input_ids=1x16", "--precision", "tf32"], "run"),
    ("tiny_bert-bf16", "tiny_bert", ["--input-shape", "input_ids=2x16,attention_mask=2x16", "--precision", "bf16"], "run"),
    # Attention left as matmuls, a softmax and the mask's ops (as a model whose attention
    # llmc-raise-attention does not recognize has it): the matmul kernel, and the keys' transpose
    # ([heads, 12, 16] to [heads, 16, 12]: not square, so that rows and columns cannot pass for
    # each other) on the tiled transpose.
    ("tiny_llama-unraised", "tiny_llama", ["--input-shape", "input_ids=1x12", "--skip-pass", "llmc-raise-attention"],
     "run"),
    ("tiny_bert-unraised-bf16", "tiny_bert", ["--input-shape", "input_ids=2x16,attention_mask=2x16", "--precision", "bf16",
                                              "--skip-pass", "llmc-raise-attention"], "run"),
    ("tiny_llama_kv", "tiny_llama_kv", KV_SHAPES, "generate"),
    ("tiny_gpt2_kv", "tiny_gpt2_kv", KV_SHAPES, "generate"),
    ("tiny_llama_kv-bf16", "tiny_llama_kv", KV_SHAPES + ["--precision", "bf16"], "generate"),
    # As the GPU benchmark builds its plans: only the last position's logits.
    ("tiny_llama_kv-bf16-last", "tiny_llama_kv", KV_SHAPES + ["--precision", "bf16", "--last-position", "logits"],
     "generate"),
    # Exactly as the benchmark's: a CUDA plan (its regions' CUBINs inside, the linears' weights
    # laid out for the decode GEMV, the norms fused into it).
    ("tiny_llama_kv-bf16-cuda", "tiny_llama_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    # GPT-2's merged QKV projection (a bias, no rotary) on the GEMV, its split (through a reshape)
    # stored by the GEMV itself.
    ("tiny_gpt2_kv-cuda", "tiny_gpt2_kv", KV_SHAPES + ["--target", "cuda"], "generate"),
    # The same CUDA plan with every GEMV launched as 2 blocks that take its groups of columns in
    # turn (CASE_ENV; a persistent launch has as many blocks as the GPU holds).
    ("tiny_llama_kv-bf16-cuda-gemv-blocks", "tiny_llama_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    # The same CUDA plan with a decode step's consecutive GEMVs chained in one cooperative launch
    # of 2 blocks, a grid barrier between two, and with each layer's attention starting its chain
    # too (CASE_ENV; off by default until measured).
    ("tiny_llama_kv-bf16-cuda-gemv-chain", "tiny_llama_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    ("tiny_llama_kv-bf16-cuda-layer-chain", "tiny_llama_kv",
     KV_SHAPES + ["--precision", "bf16", "--last-position", "logits", "--target", "cuda"], "generate"),
    # Its weights (7.5 MB) would not fit the GPU machine's 64 MiB pack: seeded random ones, the
    # same on both devices (logits within +-2 over 16 steps).
    ("tiny_deepseek_kv", "tiny_deepseek_kv", KV_SHAPES + ["--random-weights"], "generate"),
    # The same model as transformers 5 exports it (its caches the latents and the rotated keys),
    # absorbed into one latent cache per layer since session 32.
    ("tiny_deepseek_latent_kv", "tiny_deepseek_latent_kv", KV_SHAPES + ["--random-weights"], "generate"),
    # A 260-token prompt under a cache of up to 1024 rows (CASE_GENERATE): each decode step's
    # latent attention shares its keys among 4 blocks (latentAttentionSplits; 2 with keys).
    ("tiny_deepseek_latent_kv-long", "tiny_deepseek_latent_kv",
     ["--input-shape", "batch=1", "--max-shape", "seq=512,past=0..512,total=1024", "--random-weights"], "generate"),
    # Its batch of prompts (a dynamic batch since session 34): each sequence's latent rows go
    # into the cache and its attention reads its own.
    ("tiny_deepseek_latent_kv-batch", "tiny_deepseek_latent_kv",
     ["--max-shape", "batch=4,seq=16,past=0..64,total=80", "--random-weights"], "batch"),
    # A 300-token prompt (CASE_GENERATE): the tensor-core attention's blocks of query rows share
    # their keys out among 2 blocks each (flashAttentionSplits), merged by the last to finish.
    ("tiny_llama_kv-bf16-long", "tiny_llama_kv",
     ["--input-shape", "batch=1", "--max-shape", "seq=512,past=0..512,total=1024", "--precision", "bf16",
      "--last-position", "logits", "--target", "cuda"], "generate"),
    ("tiny_llama_kv-batch", "tiny_llama_kv", ["--max-shape", "batch=4,seq=16,past=0..64,total=80"], "batch"),
    # The same as a CUDA plan: the GEMV stores the QKV split's pieces; in a decode step the new
    # rows' transposes move nothing, so the rows go into the caches in place (the keys rotated by
    # the GEMV); over the prompts the split writes them where the transposes would put them.
    ("tiny_llama_kv-batch-cuda", "tiny_llama_kv", ["--max-shape", "batch=4,seq=16,past=0..64,total=80", "--target", "cuda"],
     "batch"),
    # A dynamic sequence (one plan up to 64 tokens, run at 37): the export without attention_mask
    # builds its mask from the position ids at run time (cumsum, dynamic_slice on the device).
    ("tiny_gpt2-dynamic", "tiny_gpt2", ["--max-shape", "seq=64"], "run"),
    # A dynamic batch and sequence of BERT (gather_elements on the device).
    ("tiny_bert-dynamic", "tiny_bert", ["--max-shape", "batch=2,seq=64"], "run"),
    # Last-position slices (slice_views_model) run at one position, where they launch nothing and
    # their readers read their inputs, and at five, where they copy.
    ("slice_views-whole", "slice_views", ["--max-shape", "seq=8", "--disable-fusion"], "run"),
    ("slice_views-part", "slice_views", ["--max-shape", "seq=8", "--disable-fusion"], "run"),
    # Convolutions (small_cnn_model): of one group as im2col and a cuBLASLt GEMM, depthwise on the
    # direct kernel; with a dynamic batch run at 3 whose GEMMs take at most 80 rows a launch
    # (CASE_ENV), so that a batch goes in chunks of images (the last one short) and a layer whose
    # one image has more rows than that takes the direct kernel.
    ("small_cnn", "small_cnn", ["--input-shape", "x=2x3x12x12"], "run"),
    ("small_cnn-bf16", "small_cnn", ["--input-shape", "x=2x3x12x12", "--precision", "bf16"], "run"),
    ("small_cnn-tf32", "small_cnn", ["--input-shape", "x=2x3x12x12", "--precision", "tf32"], "run"),
    ("small_cnn-chunks", "small_cnn", ["--max-shape", "batch=4"], "run"),
    # Tile, Trilu and ArgMax on a dynamic sequence (small_ops_model), run at 7 of 16.
    ("small_ops", "small_ops", ["--max-shape", "seq=16"], "run"),
    # The activations with attributes, Mod, TopK (of floats and of int64), ConstantOfShape,
    # ScatterElements (add), ScatterND, an int64 Einsum and a Slice from a start the device
    # computes (more_ops_model) on a dynamic sequence, fused and each op on its own.
    ("more_ops", "more_ops", ["--max-shape", "seq=16"], "run"),
    ("more_ops-unfused", "more_ops", ["--max-shape", "seq=16", "--disable-fusion"], "run"),
    # InstanceNormalization, GroupNormalization, a BatchNormalization after no convolution, a
    # LayerNormalization with its Mean and InvStdDev outputs and a MaxPool with its Indices
    # (norm_ops_model), batch 3 of 4.
    ("norm_ops", "norm_ops", ["--max-shape", "batch=4"], "run"),
    ("norm_ops-bf16", "norm_ops", ["--max-shape", "batch=4", "--precision", "bf16"], "run"),
    # A QDQ model (qdq_model): activations quantized and dequantized at run time, int8 weights per
    # output channel, on a dynamic sequence.
    ("qdq", "qdq", ["--max-shape", "seq=16"], "run"),
    # Gemms that stay gemms (a product of activations, transposed; alpha and beta not 1) and
    # einsums of them (product_ops_model).
    ("product_ops", "product_ops", ["--max-shape", "seq=16"], "run"),
    ("product_ops-bf16", "product_ops", ["--max-shape", "seq=16", "--precision", "bf16"], "run"),
    # Linears whose residual epilogue reads a value of a dynamic shape (residual_linears_model), run
    # at 19 of 32: until session 24 the CUDA executor dropped such residuals.
    ("residual_linears", "residual_linears", ["--max-shape", "seq=32"], "run"),
    # ONNX Attention (opset 23) in its 4-D form, grouped heads, with a mask, on a dynamic sequence
    # (native_attention_model; llmc-raise-attention makes it a fused_attention).
    ("native_attention", "native_attention", ["--max-shape", "seq=16"], "run"),
    # The same with a KV cache (past and present keys and values), causal, 3 new tokens after 5.
    ("native_attention_cache", "native_attention_cache", ["--max-shape", "seq=16,past=0..32"], "run"),
    # ONNX Attention that stays llmc.attention (a softcap and its probabilities read; nonpad_kv_seqlen
    # and its scores read: onnx_attention_model), on the kernel of its own.
    ("onnx_attention", "onnx_attention", ["--max-shape", "seq=16"], "run"),
    ("onnx_attention-bf16", "onnx_attention", ["--max-shape", "seq=16", "--precision", "bf16"], "run"),
    # Models in doubles (as_float_type): unfused ops computed in f64 on both sides (the fused kernels
    # are for f32, f16 and bf16), compared within DOUBLE_ATOL.
    ("tiny_llama-f64", "tiny_llama_f64", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_gpt2-f64", "tiny_gpt2_f64", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_bert-f64", "tiny_bert_f64", ["--input-shape", "input_ids=2x16,attention_mask=2x16"], "run"),
    ("small_cnn-f64", "small_cnn_f64", ["--input-shape", "x=2x3x12x12"], "run"),
    ("norm_ops-f64", "norm_ops_f64", ["--max-shape", "batch=4"], "run"),
    ("native_attention-f64", "native_attention_f64", ["--max-shape", "seq=16"], "run"),
    ("native_attention_cache-f64", "native_attention_cache_f64", ["--max-shape", "seq=16,past=0..32"], "run"),
    ("onnx_attention-f64", "onnx_attention_f64", ["--max-shape", "seq=16"], "run"),
    # Models in bf16 and f16 (as_float_type): 16-bit values and weights as ONNX has them, not
    # --precision's f32 values stored in 16 bits; compared as the 16-bit plans are.
    ("tiny_llama-bf16-model", "tiny_llama_bf16", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_gpt2-bf16-model", "tiny_gpt2_bf16", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_bert-bf16-model", "tiny_bert_bf16", ["--input-shape", "input_ids=2x16,attention_mask=2x16"], "run"),
    ("small_cnn-bf16-model", "small_cnn_bf16", ["--input-shape", "x=2x3x12x12"], "run"),
    ("tiny_llama-f16-model", "tiny_llama_f16", ["--input-shape", "input_ids=1x16"], "run"),
    ("tiny_gpt2-f16-model", "tiny_gpt2_f16", ["--input-shape", "input_ids=1x16"], "run"),
    # Their KV-cache exports generating as the GPU benchmark's plans do: caches and logits of
    # 16 bits, the decode GEMV on 16-bit weights, the argmax on the device.
    ("tiny_llama_kv-bf16-model-cuda", "tiny_llama_kv_bf16",
     KV_SHAPES + ["--last-position", "logits", "--target", "cuda"], "generate"),
    ("tiny_gpt2_kv-f16-model-cuda", "tiny_gpt2_kv_f16", KV_SHAPES + ["--target", "cuda"], "generate"),
    # The DeepSeek export in bf16: absorbed, its latent cache and latent attention in bf16.
    ("tiny_deepseek_kv-bf16-model", "tiny_deepseek_kv_bf16", KV_SHAPES + ["--random-weights"], "generate"),
]
# The real models (prepare --real-models): (name, model, llmc flags, kind, minimum cosine). Their
# weights are random (the plans' ops are theirs), so that a deep net's outputs may be large or
# small: compared by cosine similarity rather than by an absolute tolerance.
REAL_CASES = [
    ("real-resnet50", "resnet50", ["--input-shape", "input_0=1x224x224x3", "--random-weights"], "run", 0.99999),
    ("real-minilm", "minilm", ["--input-shape", "input_ids=2x24,attention_mask=2x24", "--random-weights"], "run",
     0.99999),
    ("real-smollm2", "smollm2", ["--input-shape", "input_ids=1x32", "--random-weights"], "run", 0.99999),
    ("real-smollm2-bf16", "smollm2", ["--input-shape", "input_ids=1x32", "--random-weights", "--precision", "bf16"],
     "run", 0.999),
    # Exported in bf16 (as_float_type; its random weights filled in bf16 at load).
    ("real-smollm2-bf16-model", "smollm2_bf16", ["--input-shape", "input_ids=1x32", "--random-weights"], "run", 0.999),
]
# Extra llmc-run flags of "run" cases with dynamic inputs.
RUN_DIMS = {"tiny_gpt2-dynamic": ["--dim", "seq=37"], "tiny_llama-dynamic": ["--dim", "seq=19"],
            "tiny_qwen3-dynamic": ["--dim", "seq=19"], "tiny_neox-dynamic": ["--dim", "seq=19"],
            "residual_linears": ["--dim", "seq=19"], "tiny_bert-dynamic": ["--dim", "batch=2", "--dim", "seq=37"],
            "slice_views-whole": ["--dim", "seq=1"], "slice_views-part": ["--dim", "seq=5"],
            "small_cnn-chunks": ["--dim", "batch=3"], "small_ops": ["--dim", "seq=7"], "more_ops": ["--dim", "seq=5"],
            "more_ops-unfused": ["--dim", "seq=5"], "norm_ops": ["--dim", "batch=3"], "norm_ops-bf16": ["--dim", "batch=3"],
            "norm_ops-f64": ["--dim", "batch=3"],
            "qdq": ["--dim", "seq=6"], "product_ops": ["--dim", "seq=5"], "product_ops-bf16": ["--dim", "seq=5"],
            "native_attention": ["--dim", "seq=7"], "native_attention_cache": ["--dim", "seq=3", "--dim", "past=5"],
            "onnx_attention": ["--dim", "seq=6"], "onnx_attention-bf16": ["--dim", "seq=6"],
            "native_attention-f64": ["--dim", "seq=7"], "native_attention_cache-f64": ["--dim", "seq=3", "--dim", "past=5"],
            "onnx_attention-f64": ["--dim", "seq=6"]}
# The executor's environment per case (the rest run with the caller's).
CASE_ENV = {"tiny_llama_kv-bf16-cuda-gemv-blocks": {"LLMC_CUDA_GEMV_BLOCKS": "2"},
            "tiny_llama_kv-bf16-cuda-gemv-chain": {"LLMC_CUDA_GEMV_CHAIN": "2"},
            "tiny_llama_kv-bf16-cuda-layer-chain": {"LLMC_CUDA_GEMV_CHAIN": "3", "LLMC_CUDA_CHAIN_ATTENTION": "1"},
            "small_cnn-chunks": {"LLMC_CUDA_CONV_ROWS": "80"}}
GENERATE = ["--prompt-ids", "5,17,42,99,7,3", "--max-tokens", "16", "--ids", "--ignore-eos"]
# Cases that generate from another prompt.
CASE_GENERATE = {"tiny_llama_kv-bf16-long": ["--prompt-ids", ",".join(str((i * 37 + 11) % 500) for i in range(300)),
                                             "--max-tokens", "4", "--ids", "--ignore-eos"],
                 "tiny_deepseek_latent_kv-long": ["--prompt-ids", ",".join(str((i * 37 + 11) % 500) for i in range(260)),
                                                  "--max-tokens", "4", "--ids", "--ignore-eos"],
                 # (the default prompt lands GPT-OSS's first router on a bf16 near tie:
                 # architectures.py's CUDA_PROMPTS)
                 "gpt_oss_kv-bf16-cuda": ["--prompt-ids", "1,2,3,4,5,6", "--max-tokens", "16", "--ids", "--ignore-eos"]}
# A batch of three prompts of different lengths (left padding, a mask row per sequence): tokens
# only, and with graphs, the prompt's graph and one that every decode step replays.
BATCH = ["--prompt-ids", "5,17,42", "--prompt-ids", "9,8,7,6,5,4,3", "--prompt-ids", "300", "--max-tokens", "16",
         "--ids", "--ignore-eos"]


def slice_views_model(out):
    """y = slice(2x)[last] + slice(x + 1)[last], x: [1, seq, 64]; in this order, x + 1 may take 2x's
    arena bytes after the first slice, unless the arena keeps 2x for the slice's readers (a view
    of it where the slice takes all of it)."""
    import onnx
    from onnx import TensorProto, helper
    path = os.path.join(out, "slice_views.onnx")
    last = [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in
            [("starts", -1), ("ends", 2**63 - 1), ("axes", 1)]]
    consts = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    nodes = [helper.make_node("Mul", ["x", "two"], ["a"]),
             helper.make_node("Slice", ["a", "starts", "ends", "axes"], ["b"]),
             helper.make_node("Add", ["x", "one"], ["c"]),
             helper.make_node("Slice", ["c", "starts", "ends", "axes"], ["d"]),
             helper.make_node("Add", ["b", "d"], ["y"])]
    graph = helper.make_graph(nodes, "slice_views", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 64])], last + consts)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def small_cnn_model(out):
    """x [batch, 3, 12, 12] -> conv 3x3 (bias) -> relu -> conv 3x3 stride 2 (no bias) -> batch norm
    (folded into it by llmc) -> depthwise conv 3x3 (group 16) -> relu -> conv 1x1 (bias) -> max pool
    2x2 -> [batch, 12, 3, 3]; seeded random weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(7)
    weights = {"wa": rng.randn(8, 3, 3, 3) * 0.3, "ba": rng.randn(8) * 0.1, "wb": rng.randn(16, 8, 3, 3) * 0.2,
               "scale": 1 + rng.rand(16) * 0.5, "shift": rng.randn(16) * 0.1, "mean": rng.randn(16) * 0.1,
               "var": 0.5 + rng.rand(16), "wc": rng.randn(16, 1, 3, 3) * 0.3, "wd": rng.randn(12, 16, 1, 1) * 0.3,
               "bd": rng.randn(12) * 0.1}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
    pad1 = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"], **pad1),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "wb"], ["b"], strides=[2, 2], **pad1),
             helper.make_node("BatchNormalization", ["b", "scale", "shift", "mean", "var"], ["bn"]),
             helper.make_node("Conv", ["bn", "wc"], ["c"], group=16, **pad1),
             helper.make_node("Relu", ["c"], ["cr"]),
             helper.make_node("Conv", ["cr", "wd", "bd"], ["d"], kernel_shape=[1, 1]),
             helper.make_node("MaxPool", ["d"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 12, 3, 3])], inits)
    path = os.path.join(out, "small_cnn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def small_ops_model(out):
    """x [1, seq, 8] -> tile by [2, 1, 3] -> [2, seq, 24] -> the lower triangle below the diagonal
    one above the main (trilu, upper=0, k=1) -> times 2 (y), and its arg_max along the last axis,
    ties to the last (idx)."""
    import onnx
    from onnx import TensorProto, helper
    consts = [helper.make_tensor("repeats", TensorProto.INT64, [3], [2, 1, 3]),
              helper.make_tensor("k", TensorProto.INT64, [], [1]),
              helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])]
    nodes = [helper.make_node("Tile", ["x", "repeats"], ["t"]),
             helper.make_node("Trilu", ["t", "k"], ["l"], upper=0),
             helper.make_node("Mul", ["l", "two"], ["y"]),
             helper.make_node("ArgMax", ["y"], ["idx"], axis=-1, keepdims=0, select_last_index=1)]
    graph = helper.make_graph(nodes, "small_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "seq", 24]),
                               helper.make_tensor_value_info("idx", TensorProto.INT64, [2, "seq"])], consts)
    path = os.path.join(out, "small_ops.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def more_ops_model(out):
    """x [1, seq, 8] -> leaky_relu (0.2) -> elu (0.5) -> hard_sigmoid (0.3, 0.4), plus x fmod 0.75
    -> its top 3 along the last axis (values v, indices idx; the hard sigmoid's clamps make ties)
    -> added at idx into ones of x's shape (ConstantOfShape of Shape(x), ScatterElements with
    reduction add) -> row [0, 0] replaced by a constant row (ScatterND) -> y; idx mod 2
    (Python's) -> parity; y's columns 6 and 0 (a Gather along the last axis, int32 indices, one
    negative) -> picked; the 2 smallest of idx (an int64 TopK) -> low, low_at; the sum of idx's
    squares (an int64 Einsum) -> idx_sq; x from row seq / 2 on (a Slice whose start the device
    computes from Shape(x)) -> tail."""
    import onnx
    from onnx import TensorProto, helper
    consts = [helper.make_tensor("step", TensorProto.FLOAT, [], [0.75]),
              helper.make_tensor("k", TensorProto.INT64, [1], [3]),
              helper.make_tensor("two", TensorProto.INT64, [], [2]),
              helper.make_tensor("row_at", TensorProto.INT64, [1, 2], [0, 0]),
              helper.make_tensor("row", TensorProto.FLOAT, [1, 8], [0.5 * i - 2 for i in range(8)]),
              helper.make_tensor("cols", TensorProto.INT32, [2], [6, -8]),
              helper.make_tensor("k2", TensorProto.INT64, [1], [2]),
              helper.make_tensor("two1", TensorProto.INT64, [1], [2]),
              helper.make_tensor("end", TensorProto.INT64, [1], [1 << 40]),
              helper.make_tensor("axis1", TensorProto.INT64, [1], [1])]
    nodes = [helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.2),
             helper.make_node("Elu", ["a"], ["b"], alpha=0.5),
             helper.make_node("HardSigmoid", ["b"], ["c"], alpha=0.3, beta=0.4),
             helper.make_node("Mod", ["x", "step"], ["m"], fmod=1),
             helper.make_node("Add", ["c", "m"], ["score"]),
             helper.make_node("TopK", ["score", "k"], ["v", "idx"], axis=-1),
             helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                              value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("ScatterElements", ["ones", "idx", "v"], ["s"], axis=2, reduction="add"),
             helper.make_node("ScatterND", ["s", "row_at", "row"], ["y"]),
             helper.make_node("Mod", ["idx", "two"], ["parity"]),
             helper.make_node("Gather", ["y", "cols"], ["picked"], axis=2),
             helper.make_node("TopK", ["idx", "k2"], ["low", "low_at"], axis=-1, largest=0),
             helper.make_node("Einsum", ["idx", "idx"], ["idx_sq"], equation="bsk,bsk->bs"),
             helper.make_node("Shape", ["x"], ["seq_len"], start=1, end=2),
             helper.make_node("Div", ["seq_len", "two1"], ["half"]),
             helper.make_node("Slice", ["x", "half", "end", "axis1"], ["tail"])]
    graph = helper.make_graph(nodes, "more_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 8]),
                               helper.make_tensor_value_info("parity", TensorProto.INT64, [1, "seq", 3]),
                               helper.make_tensor_value_info("picked", TensorProto.FLOAT, [1, "seq", 2]),
                               helper.make_tensor_value_info("low", TensorProto.INT64, [1, "seq", 2]),
                               helper.make_tensor_value_info("low_at", TensorProto.INT64, [1, "seq", 2]),
                               helper.make_tensor_value_info("idx_sq", TensorProto.INT64, [1, "seq"]),
                               helper.make_tensor_value_info("tail", TensorProto.FLOAT, [1, "rest", 8])], consts)
    path = os.path.join(out, "more_ops.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def norm_ops_model(out):
    """x [batch, 6, 5, 5] -> instance norm -> relu -> group norm (3 groups) -> batch norm (no
    convolution to fold it into) -> layer norm over the last axis -> y, with its mean and 1/std
    (layer_norm_stats) -> 2x2 max pooling with its indices (pool, where); seeded random parameters."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(11)
    params = {"s1": 1 + 0.3 * rng.randn(6), "b1": 0.2 * rng.randn(6), "s2": 1 + 0.3 * rng.randn(6),
              "b2": 0.2 * rng.randn(6), "s3": 1 + 0.3 * rng.randn(6), "b3": 0.2 * rng.randn(6),
              "mean": 0.3 * rng.randn(6), "var": 0.5 + rng.rand(6), "s4": 1 + 0.3 * rng.randn(5),
              "b4": 0.2 * rng.randn(5)}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in params.items()]
    nodes = [helper.make_node("InstanceNormalization", ["x", "s1", "b1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("GroupNormalization", ["r", "s2", "b2"], ["g"], num_groups=3),
             helper.make_node("BatchNormalization", ["g", "s3", "b3", "mean", "var"], ["n"]),
             helper.make_node("LayerNormalization", ["n", "s4", "b4"], ["y", "mu", "inv"], axis=-1),
             helper.make_node("MaxPool", ["y"], ["pool", "where"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[0, 0, 1, 1])]
    batch = [TensorProto.FLOAT, ["batch", 6, 5, 5]]
    graph = helper.make_graph(nodes, "norm_ops", [helper.make_tensor_value_info("x", *batch)],
                              [helper.make_tensor_value_info("y", *batch),
                               helper.make_tensor_value_info("mu", TensorProto.FLOAT, ["batch", 6, 5, 1]),
                               helper.make_tensor_value_info("inv", TensorProto.FLOAT, ["batch", 6, 5, 1]),
                               helper.make_tensor_value_info("pool", TensorProto.FLOAT, ["batch", 6, 3, 3]),
                               helper.make_tensor_value_info("where", TensorProto.INT64, ["batch", 6, 3, 3])], inits)
    path = os.path.join(out, "norm_ops.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    return path


def qdq_model(out):
    """x [1, seq, 32] -> QuantizeLinear (a scale per tensor, int8 zero point 3) -> DequantizeLinear
    -> MatMul with an int8 weight [32, 16] dequantized per output channel (axis 1) -> y, and the
    quantized activations (xq, int8); seeded random weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(5)
    inits = [numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
             numpy_helper.from_array(np.array(3, np.int8), "xz"),
             numpy_helper.from_array(rng.randint(-127, 128, (32, 16)).astype(np.int8), "wq"),
             numpy_helper.from_array((0.002 + 0.004 * rng.rand(16)).astype(np.float32), "ws"),
             numpy_helper.from_array(np.zeros(16, np.int8), "wz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1),
             helper.make_node("MatMul", ["xd", "w"], ["y"])]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 16]),
                               helper.make_tensor_value_info("xq", TensorProto.INT8, [1, "seq", 32])], inits)
    path = os.path.join(out, "qdq.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def product_ops_model(out):
    """x [seq, 8] -> a = 0.5 x x^T (a Gemm of activations, transB) [seq, seq]; b = 2 x W^T + 0.5 c
    (a Gemm with alpha and beta, W [16, 8], c [16]) [seq, 16] -> y = einsum("ij,jk->ik", a, b)
    [seq, 16] and z = einsum("ik,ik->i", y, b) [seq]; and two einsums of more operands than the CUDA
    kernel's eight, which llmc-split-einsum makes chains of two: chain10 = a chain of eight [8, 8]
    matrices between x and x ("si,ij,...,pq,sq->s", ten operands) [seq], and dots9 = x * x * v ... v
    ("...i,...i,i,i,i,i,i,i,i", nine operands: "..." and an implicit output) [seq]; seeded random
    weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(3)
    inits = [numpy_helper.from_array((0.3 * rng.randn(16, 8)).astype(np.float32), "w"),
             numpy_helper.from_array((0.1 * rng.randn(16)).astype(np.float32), "c")]
    chain = ["m%d" % i for i in range(8)]
    inits += [numpy_helper.from_array((0.4 * rng.randn(8, 8)).astype(np.float32), m) for m in chain]
    inits.append(numpy_helper.from_array((0.5 + rng.rand(8)).astype(np.float32), "v"))
    nodes = [helper.make_node("Gemm", ["x", "x"], ["a"], transB=1, alpha=0.5),
             helper.make_node("Gemm", ["x", "w", "c"], ["b"], transB=1, alpha=2.0, beta=0.5),
             helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik"),
             helper.make_node("Einsum", ["y", "b"], ["z"], equation="ik,ik->i"),
             helper.make_node("Einsum", ["x"] + chain + ["x"], ["chain10"], equation="si,ij,jk,kl,lm,mn,no,op,pq,sq->s"),
             helper.make_node("Einsum", ["x", "x"] + ["v"] * 7, ["dots9"], equation="...i,...i,i,i,i,i,i,i,i")]
    graph = helper.make_graph(nodes, "product_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 16]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, ["seq"]),
                               helper.make_tensor_value_info("chain10", TensorProto.FLOAT, ["seq"]),
                               helper.make_tensor_value_info("dots9", TensorProto.FLOAT, ["seq"])], inits)
    path = os.path.join(out, "product_ops.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def residual_linears_model(out):
    """x [1, seq, 64] -> y = x W1 + b1 and z = gelu(x W2 + b2) W3 + b3 + y (a parallel-residual
    layer's two branches, as GPT-NeoX's: the second linear's residual is the first's output), w = x
    W4 + b4 + x (a residual that is the input); seeded random weights. On a dynamic sequence the
    linears' residuals have dynamic shapes, which the CUDA executor took for absent until session
    24."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(5)
    inits = [numpy_helper.from_array((0.3 * rng.randn(*shape)).astype(np.float32), name)
             for name, shape in (("w1", (64, 64)), ("b1", (64,)), ("w2", (64, 128)), ("b2", (128,)),
                                 ("w3", (128, 64)), ("b3", (64,)), ("w4", (64, 64)), ("b4", (64,)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["y"]),
             helper.make_node("MatMul", ["x", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["h"]),
             helper.make_node("Gelu", ["h"], ["g"]), helper.make_node("MatMul", ["g", "w3"], ["m3"]),
             helper.make_node("Add", ["m3", "b3"], ["z0"]), helper.make_node("Add", ["z0", "y"], ["z"]),
             helper.make_node("MatMul", ["x", "w4"], ["m4"]), helper.make_node("Add", ["m4", "b4"], ["w0"]),
             helper.make_node("Add", ["w0", "x"], ["w"])]
    info = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, "seq", 64])
    graph = helper.make_graph(nodes, "residual_linears", [info("x")], [info("z"), info("w")], inits)
    path = os.path.join(out, "residual_linears.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)
    return path


def native_attention_model(out, cache=False):
    """q [1, 4, seq, 8], k and v [1, 2, seq, 8], an additive mask [1, 1, seq, seq] -> ONNX
    Attention (opset 23, 4-D, 4 query heads over 2 key/value heads, scale 0.3) -> y. With `cache`:
    past keys and values [1, 2, past, 8] too, causal, no mask, and the present ones as outputs."""
    import onnx
    from onnx import TensorProto, helper
    heads = lambda h, s="seq": [1, h, s, 8]
    info = helper.make_tensor_value_info
    inputs = [info("q", TensorProto.FLOAT, heads(4)), info("k", TensorProto.FLOAT, heads(2)),
              info("v", TensorProto.FLOAT, heads(2))]
    outputs = [info("y", TensorProto.FLOAT, heads(4))]
    if cache:
        inputs += [info("pk", TensorProto.FLOAT, heads(2, "past")), info("pv", TensorProto.FLOAT, heads(2, "past"))]
        outputs += [info("ck", TensorProto.FLOAT, heads(2, "total")), info("cv", TensorProto.FLOAT, heads(2, "total"))]
        node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "ck", "cv"], scale=0.3,
                                is_causal=1)
    else:
        inputs.append(info("m", TensorProto.FLOAT, [1, 1, "seq", "seq"]))
        node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y"], scale=0.3)
    name = "native_attention_cache" if cache else "native_attention"
    graph = helper.make_graph([node], name, inputs, outputs)
    path = os.path.join(out, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]), path)
    return path


def onnx_attention_model(out):
    """Two ONNX Attentions (opset 24) that llmc-raise-attention leaves as they are, on a dynamic
    sequence: 3-D q [1, seq, 4 * 8], k and v [1, seq, 2 * 8], causal, softcap 2, scale 0.3 -> y
    and its probabilities (qk_matmul_output_mode 3) -> p [1, 4, seq, seq]; 4-D q [1, 4, seq, 8]
    over k2 and v2 [1, 2, seq, 8] of which only max(seq - 1, 1) are valid (nonpad_kv_seqlen, from
    Shape) -> y2 and its scaled scores (mode 0) -> s2 [1, 4, seq, seq]. (Modes 1 and 2 are left
    to the kernel test: ONNX Runtime 1.32 takes them as an older text of the spec did, mask before
    softcap, and writes a masked score as the lowest float where the reference has -inf.)"""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    info = helper.make_tensor_value_info
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    nodes = [helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "p"], q_num_heads=4, kv_num_heads=2,
                              is_causal=1, softcap=2.0, scale=0.3, qk_matmul_output_mode=3),
             helper.make_node("Shape", ["k2"], ["k2_shape"], start=2, end=3),
             helper.make_node("Sub", ["k2_shape", "one"], ["short"]),
             helper.make_node("Max", ["short", "one"], ["valid"]),
             helper.make_node("Attention", ["q2", "k2", "v2", "", "", "", "valid"], ["y2", "", "", "s2"],
                              qk_matmul_output_mode=0)]
    inputs = [info("q", TensorProto.FLOAT, [1, "seq", 32]), info("k", TensorProto.FLOAT, [1, "seq", 16]),
              info("v", TensorProto.FLOAT, [1, "seq", 16]), info("q2", TensorProto.FLOAT, [1, 4, "seq", 8]),
              info("k2", TensorProto.FLOAT, [1, 2, "seq", 8]), info("v2", TensorProto.FLOAT, [1, 2, "seq", 8])]
    outputs = [info("y", TensorProto.FLOAT, [1, "seq", 32]), info("p", TensorProto.FLOAT, [1, 4, "seq", "seq"]),
               info("y2", TensorProto.FLOAT, [1, 4, "seq", 8]), info("s2", TensorProto.FLOAT, [1, 4, "seq", "seq"])]
    graph = helper.make_graph(nodes, "onnx_attention", inputs, outputs, [one])
    path = os.path.join(out, "onnx_attention.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)]), path)
    return path


# Model name suffixes (as_float_type) and their ONNX element types.
FLOAT_TYPES = {"f64": "DOUBLE", "bf16": "BFLOAT16", "f16": "FLOAT16", "f32": "FLOAT"}


def as_float_type(src, out, suffix, from_type="FLOAT"):
    """The model at `src` with its `from_type` floats in doubles, bf16 or f16 (OUT/NAME_f64.onnx,
    OUT/NAME_bf16.onnx, OUT/NAME_f16.onnx), or a 16-bit model's widened to f32 (suffix f32,
    from_type BFLOAT16 or FLOAT16: what ONNX Runtime's CPU, which has few 16-bit kernels, can run):
    every initializer, input, output, value_info, Constant and ConstantOfShape value, and Cast of
    that type. In doubles the same model with the same (f32-rounded) constants, computed in
    doubles; in 16 bits its constants rounded to the type, and every op's result too (a bf16 model
    at opset 22 at least, where Cos, Sin, Conv and others first take bf16). A result of more than
    2 GB of weights keeps them in NAME_SUFFIX.onnx.data beside it (a bf16 one from below opset 22
    still passes ONNX's version converter, which takes at most 2 GB)."""
    import ml_dtypes
    import onnx
    import onnx.version_converter
    from onnx import AttributeProto, TensorProto, helper, numpy_helper

    old, elem = getattr(TensorProto, from_type), getattr(TensorProto, FLOAT_TYPES[suffix])
    dtype = {"f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[suffix]

    def convert_tensor(t):
        if t.data_type == old:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(dtype), t.name))

    def convert(graph):
        for t in graph.initializer:
            convert_tensor(t)
        for info in list(graph.input) + list(graph.output) + list(graph.value_info):
            if info.type.tensor_type.elem_type == old:
                info.type.tensor_type.elem_type = elem
        for node in graph.node:
            for a in node.attribute:
                if node.op_type == "Cast" and a.name == "to" and a.i == old:
                    a.i = elem
                elif a.type == AttributeProto.TENSOR:
                    convert_tensor(a.t)
                elif a.type == AttributeProto.GRAPH:
                    convert(a.g)
            if old == TensorProto.FLOAT and node.op_type == "Constant" and \
                    node.attribute[0].name in ("value_float", "value_floats"):
                a = node.attribute[0]
                value = np.array(a.f if a.name == "value_float" else list(a.floats), np.float32).astype(dtype)
                del node.attribute[:]
                node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(value)))

    model = onnx.load(src)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if suffix == "bf16" and opset < 22:
        model = onnx.version_converter.convert_version(model, 22)
    convert(model.graph)
    path = os.path.join(out, os.path.basename(src)[:-len(".onnx")] + "_" + suffix + ".onnx")
    # A protobuf holds at most 2 GB: a larger result keeps its weights beside it (external data).
    weights = sum(numpy_helper.to_array(t).nbytes if not t.raw_data else len(t.raw_data) for t in model.graph.initializer)
    if weights > (1 << 31) - (64 << 20):
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(path) + ".data", size_threshold=1024)
    else:
        onnx.save(model, path)
    return path


def model_path(model, out):
    """models/MODEL.onnx, one made here in `out` (slice_views, small_cnn, small_ops, more_ops,
    norm_ops, qdq, product_ops, residual_linears, native_attention, native_attention_cache,
    onnx_attention), the
    DeepSeek export in the cache (exported on first use, ~20 s), arch_NAME or arch_NAME_kv: an
    export of test/e2e/architectures.py (cached there; about 10 s each), a real model (fetched and
    exported on first use: minutes), or any of these in doubles, bf16 or f16 (NAME_f64, NAME_bf16,
    NAME_f16: as_float_type)."""
    base, _, suffix = model.rpartition("_")
    if suffix in ("f64", "bf16", "f16"):
        return as_float_type(model_path(base, out), out, suffix)
    built = {"slice_views": slice_views_model, "small_cnn": small_cnn_model, "small_ops": small_ops_model,
             "more_ops": more_ops_model, "norm_ops": norm_ops_model, "qdq": qdq_model,
             "product_ops": product_ops_model, "residual_linears": residual_linears_model,
             "native_attention": native_attention_model,
             "native_attention_cache": lambda o: native_attention_model(o, cache=True),
             "onnx_attention": onnx_attention_model}
    if model in built:
        return built[model](out)
    if model.startswith("arch_"):
        sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
        from architectures import cached_export
        name = model[len("arch_"):]
        return cached_export(name[:-len("_kv")], kv=True) if name.endswith("_kv") else cached_export(name)
    if model in ("resnet50", "minilm", "smollm2"):
        sys.path.insert(0, os.path.join(ROOT, "models"))
        from real_models import fetched
        return fetched([model])[model]
    if model not in ("tiny_deepseek_kv", "tiny_deepseek_latent_kv"):
        return os.path.join(ROOT, "models", model + ".onnx")
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    from mla_absorption import export  # here, not at the top: `check` runs where onnx may be missing
    return export(model)


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    # The models made here go to a folder of their own: the GPU check's pack carries args.out, in
    # which a real model converted to bf16 (hundreds of MB) would not fit.
    models = tempfile.TemporaryDirectory()
    cases = []
    chosen = [case + (None,) for case in CASES] + (REAL_CASES if args.real_models else [])
    chosen = [case for case in chosen if not args.only or args.only in case[0]]
    for name, model, flags, kind, min_cosine in chosen:
        plan = os.path.join(args.out, name + ".llmc")
        subprocess.run([args.llmc, model_path(model, models.name), "-o", plan] + flags, check=True)
        ref = os.path.join(args.out, name + "-cpu")
        if kind == "run":
            subprocess.run([args.llmc_run, plan, "--device", "cpu", "--random", "--seed", "1", "--int-max", "512",
                            "--quiet", "--output-dir", ref] + RUN_DIMS.get(name, []), check=True, capture_output=True)
        elif kind == "batch":
            os.makedirs(ref, exist_ok=True)
            out = subprocess.run([args.llmc_run, "generate", plan, "--device", "cpu"] + BATCH, check=True,
                                 capture_output=True, text=True)
            with open(os.path.join(ref, "tokens.txt"), "w") as f:
                f.write(out.stdout)
        else:
            os.makedirs(ref, exist_ok=True)
            out = subprocess.run([args.llmc_run, "generate", plan, "--device", "cpu", "--logits-dir", ref]
                                 + CASE_GENERATE.get(name, GENERATE),
                                 check=True, capture_output=True, text=True)
            with open(os.path.join(ref, "tokens.txt"), "w") as f:
                f.write(out.stdout)
        cases.append({"name": name, "plan": os.path.basename(plan), "ref": os.path.basename(ref), "kind": kind,
                      "reduced": "--precision" in flags or model.endswith(("_bf16", "_f16")), "min_cosine": min_cosine,
                      "atol": DOUBLE_ATOL if model.endswith("_f64") else None})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(cases, f)
    print(f"prepared {len(cases)} plans with their CPU outputs in {args.out}")
    return 0


def agree(got, ref, atol, reduced, min_cosine=None):
    """f32 plans: every element within atol (+ atol relative); 16-bit plans (the CPU computes them
    in f32 from the same 16-bit weights): cosine similarity >= 0.999; a case with its own
    min_cosine (the real models): that, and finite values. Infinities (an attention's masked
    scores) must be the same on both sides; the error and cosine are of the rest.
    Returns (ok, description)."""
    got, ref = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    same_infinities = got.shape == ref.shape and bool(np.all(np.isinf(got) == np.isinf(ref))) and \
        bool(np.all(got[np.isinf(ref)] == ref[np.isinf(ref)]))
    if same_infinities and min_cosine is None:
        got, ref = got[~np.isinf(ref)], ref[~np.isinf(ref)]
    err = float(np.max(np.abs(got - ref))) if got.size and got.shape == ref.shape else 0.0
    cosine = float(got @ ref / (np.linalg.norm(got) * np.linalg.norm(ref) + 1e-30)) \
        if got.size and got.shape == ref.shape else 1.0
    if got.shape != ref.shape or not same_infinities:
        ok = False
    elif min_cosine is not None:
        ok = bool(np.all(np.isfinite(got)) and np.all(np.isfinite(ref))) and cosine >= min_cosine
    else:
        ok = cosine >= 0.999 if reduced else bool(np.all(np.abs(got - ref) <= atol + atol * np.abs(ref)))
    return ok, f"max abs error {err:.3g}, cosine {cosine:.6f}"


def check_run(args, case, graphs, tmp):
    out_dir = os.path.join(tmp, case["name"] + ("-graphs" if graphs else "-eager"))
    # Graphs on: the first run captures, the benchmark runs replay; one graph in all.
    flags = ["--benchmark", "3", "--warmup", "1"] if graphs else ["--no-cuda-graphs"]
    run = subprocess.run([args.llmc_run, os.path.join(args.dir, case["plan"]), "--device", "cuda", "--random",
                          "--seed", "1", "--int-max", "512", "--quiet", "--output-dir", out_dir] + flags
                         + RUN_DIMS.get(case["name"], []),
                         capture_output=True, text=True)
    lines = [(run.stdout + run.stderr).strip()]
    ok = run.returncode == 0 and (not graphs or "CUDA graphs: 1 captured" in run.stdout)
    for ref in sorted(glob.glob(os.path.join(args.dir, case["ref"], "*.npy"))) if run.returncode == 0 else []:
        got = os.path.join(out_dir, os.path.basename(ref))
        good, what = agree(np.load(got), np.load(ref), case.get("atol") or args.atol, case["reduced"],
                           case.get("min_cosine")) if os.path.exists(got) else (False, "missing")
        ok = ok and good
        lines.append(f"{os.path.basename(ref)}: {what}: {'ok' if good else 'MISMATCH'}")
    return ok, run, lines


def check_generate(args, case, graphs, tmp):
    out_dir = os.path.join(tmp, case["name"] + ("-graphs" if graphs else "-eager"))
    os.makedirs(out_dir, exist_ok=True)
    run = subprocess.run([args.llmc_run, "generate", os.path.join(args.dir, case["plan"]), "--device", "cuda",
                          "--logits-dir", out_dir] + CASE_GENERATE.get(case["name"], GENERATE)
                         + ([] if graphs else ["--no-cuda-graphs"]),
                         capture_output=True, text=True)
    lines = [(run.stdout + run.stderr).strip()]
    if run.returncode != 0:
        return False, run, lines
    ref_dir = os.path.join(args.dir, case["ref"])
    with open(os.path.join(ref_dir, "tokens.txt")) as f:
        same_tokens = f.read().split() == run.stdout.split()
    ok = same_tokens or case["reduced"]  # a 16-bit plan may pick another token where two are close
    lines.append(f"tokens {'the same as' if same_tokens else 'differ from'} the CPU's")
    if graphs:
        # The prompt's graph, then one graph that every decode step replays whatever the cache
        # length (llmc-run --check-cuda says these plans allow it: LengthFreeGraph.h).
        replayed = "CUDA graphs captured: 2\n" in run.stderr
        ok = ok and replayed
        lines.append("decode steps " + ("replay one graph" if replayed else "did not replay one graph (captures above)"))
        nodes = re.search(r"nodes of the decode steps' graph \(else of the last captured\): (\d+)", run.stderr)
        lines.append(f"the decode graph has {nodes.group(1) if nodes else '?'} nodes")
        ok = appends_in_place(args, case, lines) and ok
        # Without --logits-dir the logits stay on the device and only their argmax comes back
        # (GreedyOutput.h): the same tokens as the run that copied them.
        greedy = subprocess.run([args.llmc_run, "generate", os.path.join(args.dir, case["plan"]), "--device", "cuda"]
                                + CASE_GENERATE.get(case["name"], GENERATE), capture_output=True, text=True)
        same_greedy = greedy.returncode == 0 and greedy.stdout.split() == run.stdout.split()
        ok = ok and same_greedy
        lines.append("tokens with the argmax on the device: " +
                     ("the same" if same_greedy else "DIFFERENT: " + (greedy.stdout + greedy.stderr).strip()))
    for step in range(16):
        ref, got = os.path.join(ref_dir, f"step_{step}.npy"), os.path.join(out_dir, f"step_{step}.npy")
        if not os.path.exists(ref):
            break
        good, what = agree(np.load(got), np.load(ref), args.atol, case["reduced"], case.get("min_cosine")) \
            if os.path.exists(got) else (False, "missing")
        ok = ok and good
        lines.append(f"step {step}: {what}: {'ok' if good else 'MISMATCH'}")
        if not same_tokens:
            break  # after the first different token the contexts differ
    return ok, run, lines


def appends_in_place(args, case, lines):
    """Each cache's new rows written where the cache keeps them by the op that makes them (the
    latent row's concatenation for the DeepSeek plans: since session 31, a batch's since session
    34): nothing copied. Required of the DeepSeek plans; printed for the others."""
    report = subprocess.run([args.llmc_run, os.path.join(args.dir, case["plan"]), "--check-cuda"],
                            capture_output=True, text=True)
    appends = re.search(r"cache appends written in place by the op that makes the rows: (\d+) of (\d+)", report.stdout)
    lines.append("cache appends in place: " + (f"{appends.group(1)} of {appends.group(2)}" if appends else "?"))
    return (not case["name"].startswith("tiny_deepseek") or
            (appends is not None and appends.group(1) == appends.group(2)))


def check_batch(args, case, graphs, tmp):
    run = subprocess.run([args.llmc_run, "generate", os.path.join(args.dir, case["plan"]), "--device", "cuda"] + BATCH
                         + ([] if graphs else ["--no-cuda-graphs"]), capture_output=True, text=True)
    lines = [(run.stdout + run.stderr).strip()]
    if run.returncode != 0:
        return False, run, lines
    with open(os.path.join(args.dir, case["ref"], "tokens.txt")) as f:
        ok = f.read().split("\n") == run.stdout.split("\n")
    lines.append(f"every sequence's tokens {'the same as' if ok else 'differ from'} the CPU's")
    if graphs:  # the mask row of each sequence is read with the key count on the device too
        replayed = "CUDA graphs captured: 2\n" in run.stderr
        ok = ok and replayed
        lines.append("decode steps " + ("replay one graph" if replayed else "did not replay one graph"))
        ok = appends_in_place(args, case, lines) and ok
    return ok, run, lines


def check(args):
    with open(os.path.join(args.dir, "cases.json")) as f:
        cases = json.load(f)
    failed = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for graphs in (True, False):
                checker = {"run": check_run, "generate": check_generate, "batch": check_batch}[case["kind"]]
                saved = dict(os.environ)
                os.environ.update(CASE_ENV.get(case["name"], {}))
                try:
                    ok, run, lines = checker(args, case, graphs, tmp)
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
                if "no CUDA device" in run.stderr:
                    print(run.stderr.strip())
                    print("no CUDA device: skipped, not passed")
                    return SKIP
                runs += 1
                print(f"{case['name']} (graphs {'on' if graphs else 'off'}): {'PASS' if ok else 'FAIL'}")
                print("  " + "\n".join(lines).replace("\n", "\n  "))
                failed += not ok
    print("PASS" if not failed else f"FAIL ({failed} of {runs} runs)")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("--llmc", required=True)
    a.add_argument("--llmc-run", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--real-models", action="store_true", help="also ResNet-50, MiniLM and SmolLM2 (random weights)")
    a.add_argument("--only", help="the cases whose names contain this")
    c = sub.add_parser("check")
    c.add_argument("--llmc-run", required=True)
    c.add_argument("--dir", required=True)
    c.add_argument("--atol", type=float, default=1e-3)
    b = sub.add_parser("both")
    b.add_argument("--llmc", required=True)
    b.add_argument("--llmc-run", required=True)
    b.add_argument("--atol", type=float, default=1e-3)
    b.add_argument("--real-models", action="store_true", help="also ResNet-50, MiniLM and SmolLM2 (random weights)")
    b.add_argument("--only", help="the cases whose names contain this")
    args = p.parse_args()
    if args.mode == "both":
        with tempfile.TemporaryDirectory() as tmp:
            args.out = args.dir = tmp
            return prepare(args) or check(args)
    return prepare(args) if args.mode == "prepare" else check(args)


if __name__ == "__main__":
    sys.exit(main())
