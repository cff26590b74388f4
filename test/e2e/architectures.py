#!/usr/bin/env python3
"""Tiny random-weight exports of decoder architectures beyond the test models (Qwen2, Qwen3,
Mistral, Phi-3, Gemma, Gemma 2, Gemma 3n, GPT-NeoX, Falcon, OPT, Phi, StableLM, Granite, Llama
3's rope scaling, Gemma 3, OLMo, OLMo 2, Cohere, StarCoder2, GPT-J, CodeGen, GPTBigCode, MPT, Bloom, GLM,
GLM-4, Helium, ERNIE 4.5, SmolLM3, Cohere 2, OLMo 3, EXAONE 4, Hunyuan, Arcee, Nemotron, Persimmon,
Apertus, Ministral, Ministral 3, Seed-OSS, VaultGemma, BitNet, Jais 2, NanoChat, Gemma 4, Llama 4,
GPT-Neo, BioGPT, CWM, HyperCLOVA X, MiniCPM3, XGLM, DiffLlama, Youtu-LLM, and the mixtures of
experts Mixtral, Qwen3-MoE, OLMoE, Qwen2-MoE, DeepSeek-V3, GPT-OSS, GraniteMoE, FlexOlmo,
GLM-4-MoE, dots.llm1, Hunyuan-MoE, ERNIE 4.5 MoE, DeepSeek-V2, PhiMoE, GraniteMoE-shared, EXAONE
MoE, Cohere 2 MoE, MiniMax-M2, Mistral 4, Glm4MoeLite, Solar Open, HY V3, Laguna, Mellum,
MiniCPM 5 MoE and DBRX), each compiled once on a dynamic sequence and run at 19 tokens: the CPU
against ONNX Runtime, and with --cuda the CUDA executor against the CPU, in f32 and bf16 (on the
CPU emulation where LLMC_CUDA_BACKEND names it), and the CUDA executor's bf16 error against
PyTorch's own (against_torch_bf16). Each architecture's raised attentions are counted too, so
that a pattern that stops matching shows.

With --kv the same models are exported with their KV cache (models/export_kv_models.py's form;
DeepSeek-V3's as transformers 5 keeps a latent attention's: export_latent_kv)
and generate greedily: the CPU against ONNX Runtime's decode loop step by step
(generate_vs_ort.py), and with --cuda the CUDA executor against the CPU in f32 and bf16, CUDA
graphs on (one graph replayed by every decode step). The decode plan's raised attentions, causal
masks, sliding windows (Mistral's, Gemma 2's and 3's, of 8 keys: inside the bounds) and
length-major caches are counted.

    architectures.py --llmc BIN --llmc-run BIN [--kv] [--cuda] [--only NAME] [--part K/N]

The rotations that no attention takes (keys on their way into a cache; queries whose rotary is
partial or pairs neighbouring features) are counted too: each becomes one llmc.rotary; so are
the mixtures of experts' projections, each one llmc.expert_linear.

The exports (transformers and torch, about two minutes; two more with --kv) are cached in
~/.cache/llmc/models-arch/, keyed by what makes them (export_key): editing the checks here does
not export again.
"""
import argparse
import contextlib
import hashlib
import inspect
import os
import re
import subprocess
import sys
import tempfile
import unittest.mock

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
sys.path.insert(0, os.path.join(HERE, "..", "cuda"))
SEQ = 19
# Decode plans: 16 new tokens at most per run, 64 cached; 16 steps after a prompt of 6.
KV_SHAPES = ["--input-shape", "batch=1", "--max-shape", "seq=16,past=0..64,total=80"]
GENERATE = ["--prompt-ids", "5,17,42,99,7,3", "--max-tokens", "16", "--ids", "--ignore-eos"]
# Another prompt for the CUDA executor's comparison with the CPU's (bf16 too) where the default
# one lands on a near tie: GPT-OSS's first router, at the default prompt, has two experts so close
# that the bf16 rounding of the RMS norm (the GEMV computes it unrounded, the CPU rounds it to
# bf16) picks the other (logits cosine 0.9959 at the prompt); five other prompts agree to 0.99999.
CUDA_PROMPTS = {"gpt_oss": "1,2,3,4,5,6"}

# name: (transformers class, config class, extra config, attention blocks llmc-raise-attention raises)
COMMON = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=128, use_cache=False)
ARCHITECTURES = {
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", dict(num_key_value_heads=2), 2),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", dict(num_key_value_heads=2, head_dim=16), 2),
    "mistral": ("MistralForCausalLM", "MistralConfig", dict(num_key_value_heads=2, sliding_window=8), 2),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(num_key_value_heads=2, pad_token_id=0), 2),
    "gemma": ("GemmaForCausalLM", "GemmaConfig", dict(num_key_value_heads=2, head_dim=16), 2),
    # Softcapped scores (fused_attention's softcap) and a sliding window on every other layer.
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config", dict(num_key_value_heads=2, head_dim=16, sliding_window=8), 2),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(rotary_pct=0.25), 2),
    "falcon": ("FalconForCausalLM", "FalconConfig", dict(new_decoder_architecture=False, multi_query=True), 2),
    "opt": ("OPTForCausalLM", "OPTConfig", dict(ffn_dim=128, word_embed_proj_dim=64), 2),
    "phi": ("PhiForCausalLM", "PhiConfig", dict(partial_rotary_factor=0.5), 2),
    "stablelm": ("StableLmForCausalLM", "StableLmConfig", dict(num_key_value_heads=2), 2),
    "granite": ("GraniteForCausalLM", "GraniteConfig", dict(num_key_value_heads=2), 2),
    "llama3": ("LlamaForCausalLM", "LlamaConfig",
               dict(num_key_value_heads=2, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                         "high_freq_factor": 4.0,
                                                         "original_max_position_embeddings": 64}), 2),
    "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(num_key_value_heads=2, head_dim=16, sliding_window=8), 2),
    "olmo": ("OlmoForCausalLM", "OlmoConfig", dict(num_key_value_heads=2), 2),
    "olmo2": ("Olmo2ForCausalLM", "Olmo2Config", dict(num_key_value_heads=2), 2),
    "cohere": ("CohereForCausalLM", "CohereConfig", dict(num_key_value_heads=2), 2),
    "starcoder2": ("Starcoder2ForCausalLM", "Starcoder2Config", dict(num_key_value_heads=2), 2),
    # Rotary on neighbouring pairs (rotate_every_two), partial, before the heads move: one llmc.rotary.
    "gptj": ("GPTJForCausalLM", "GPTJConfig", dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128), 2),
    "codegen": ("CodeGenForCausalLM", "CodeGenConfig",
                dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128, n_ctx=128), 2),
    "gpt_bigcode": ("GPTBigCodeForCausalLM", "GPTBigCodeConfig", dict(n_embd=64, n_layer=2, n_head=4, n_positions=128), 2),
    # ALiBi's position bias, read by the attention as its mask (a [heads, 1, keys] bias); Bloom's
    # products on merged [batch * heads] operands.
    "mpt": ("MptForCausalLM", "MptConfig", dict(d_model=64, n_layers=2, n_heads=4, max_seq_len=128), 2),
    "bloom": ("BloomForCausalLM", "BloomConfig", dict(n_layer=2, n_head=4), 2),
    # Since session 34. Rotary on neighbouring pairs from Llama's tables of halves,
    # cos[..., :D/2].repeat_interleave(2) (GLM's, partial; GLM-4's with norms after the attention
    # and the MLP; Helium's and ERNIE 4.5's over the whole head), one llmc.rotary each.
    "glm": ("GlmForCausalLM", "GlmConfig", dict(num_key_value_heads=2, head_dim=16, pad_token_id=0), 2),
    "glm4": ("Glm4ForCausalLM", "Glm4Config", dict(num_key_value_heads=2, head_dim=16, pad_token_id=0), 2),
    # (Helium's default rms_norm_eps, 1e-8, leaves the export without its addition: its pad token's
    # embedding, zeros, then normed to NaN in ONNX Runtime too, where torch gives finite logits.)
    "helium": ("HeliumForCausalLM", "HeliumConfig", dict(num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6), 2),
    "ernie4_5": ("Ernie4_5ForCausalLM", "Ernie4_5Config", dict(num_key_value_heads=2, head_dim=16), 2),
    # Layers without rotary (SmolLM3's every second here; Cohere 2's global ones, beside its
    # sliding-window layers), sliding windows with per-head norms of queries and keys (OLMo 3,
    # EXAONE 4), norms of queries and keys after their rotation (Hunyuan), squared ReLU MLPs
    # without a gate (Arcee; Nemotron with its LayerNorm of weight + 1 and partial rotary;
    # Persimmon with per-head norms and interleaved QKV heads), and xIELU (Apertus).
    "smollm3": ("SmolLM3ForCausalLM", "SmolLM3Config", dict(num_key_value_heads=2, no_rope_layer_interval=2,
                                                            pad_token_id=0), 2),
    "cohere2": ("Cohere2ForCausalLM", "Cohere2Config", dict(num_key_value_heads=2, sliding_window=8,
                                                            sliding_window_pattern=2), 2),
    "olmo3": ("Olmo3ForCausalLM", "Olmo3Config", dict(num_key_value_heads=2, sliding_window=8), 2),
    "exaone4": ("Exaone4ForCausalLM", "Exaone4Config", dict(num_key_value_heads=2, sliding_window=8), 2),
    "hunyuan": ("HunYuanDenseV1ForCausalLM", "HunYuanDenseV1Config", dict(num_key_value_heads=2, head_dim=16), 2),
    "arcee": ("ArceeForCausalLM", "ArceeConfig", dict(num_key_value_heads=2), 2),
    "nemotron": ("NemotronForCausalLM", "NemotronConfig", dict(num_key_value_heads=2, head_dim=16), 2),
    "persimmon": ("PersimmonForCausalLM", "PersimmonConfig", dict(), 2),
    "apertus": ("ApertusForCausalLM", "ApertusConfig", dict(num_key_value_heads=2), 2),
    # Since session 35: Ministral (sliding windows of 8 on both layers), Seed-OSS, VaultGemma (Gemma
    # 2's form, a window on its first layer), BitNet, Jais 2, NanoChat (its rotation's partner the
    # negative of rotate_half's, queries and keys then normed: each one llmc.rotary with its sines
    # negated) and Ministral 3 (below).
    "ministral": ("MinistralForCausalLM", "MinistralConfig",
                  dict(num_key_value_heads=2, head_dim=16, sliding_window=8), 2),
    # Ministral 3: YaRN, and the queries scaled per position (Llama 4's attention temperature,
    # 1 + beta * log(1 + floor(pos / original_max))): an original_max of 4 makes the scale vary
    # within the tests' lengths (at its default, 16384, it is 1 there).
    "ministral3": ("Ministral3ForCausalLM", "Ministral3Config",
                   dict(num_key_value_heads=2, head_dim=16,
                        rope_parameters=dict(rope_type="yarn", rope_theta=1e6, factor=32.0,
                                             original_max_position_embeddings=4, beta_fast=32.0, beta_slow=1.0,
                                             mscale_all_dim=1.0, mscale=1.0, llama_4_scaling_beta=0.1)), 2),
    "seed_oss": ("SeedOssForCausalLM", "SeedOssConfig", dict(num_key_value_heads=2, head_dim=16), 2),
    "vaultgemma": ("VaultGemmaForCausalLM", "VaultGemmaConfig",
                   dict(num_key_value_heads=2, head_dim=16, sliding_window=8), 2),
    "bitnet": ("BitNetForCausalLM", "BitNetConfig", dict(num_key_value_heads=2), 2),
    "jais2": ("Jais2ForCausalLM", "Jais2Config", dict(num_key_value_heads=2, head_dim=16), 2),
    "nanochat": ("NanoChatForCausalLM", "NanoChatConfig", dict(num_key_value_heads=2), 2),
    # Since session 36: GPT-Neo (unscaled scores; its causal and local masks constant buffers
    # [1, 1, N, N] sliced to the scores and selected under the causal mask: each raised to is_causal,
    # the local one to a sliding window of 8), BioGPT, CWM (a sliding window on its first layer),
    # HyperCLOVA X, and MiniCPM3 (multi-head latent attention, rotate_half rotary, no experts; its
    # logits divided by hidden / dim_model_base, 10 in MiniCPM3-4B: at the default 256 over this
    # hidden 64 they were multiplied by 4, to 27, beyond the bf16 comparison's absolute tolerance).
    # XGLM (its products on merged [B*H] operands, the masked scores clamped to the lowest float
    # and the softmax taken on [B*H, Sq, Sk]: raised since session 36, llmc-raise-attention's
    # softmaxesOnSplitHeads). DiffLlama's attention is not raised yet (0 below): each head's
    # probabilities multiply two value halves, one head's output subtracted from another's.
    "gpt_neo": ("GPTNeoForCausalLM", "GPTNeoConfig",
                dict(num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]], window_size=8), 2),
    "biogpt": ("BioGptForCausalLM", "BioGptConfig", dict(), 2),
    "cwm": ("CwmForCausalLM", "CwmConfig", dict(num_key_value_heads=2, head_dim=16, sliding_window=8), 2),
    "hyperclovax": ("HyperCLOVAXForCausalLM", "HyperCLOVAXConfig", dict(num_key_value_heads=2), 2),
    "minicpm3": ("MiniCPM3ForCausalLM", "MiniCPM3Config",
                 dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
                      v_head_dim=16, dim_model_base=64, initializer_range=0.02), 2),
    # Gemma 4 (text): per-layer inputs (a second embedding and a projection gated into each layer's
    # output), norms as x * pow(mean(x^2) + eps, -0.5) (RMS norms since session 36), values normed
    # without a weight, a sliding window on its first layer; its second (full attention) layer's
    # heads global_head_dim wide, 32 here, so each layer's cache has its own width.
    "gemma4": ("Gemma4ForCausalLM", "Gemma4TextConfig",
               dict(num_key_value_heads=2, head_dim=16, global_head_dim=32, sliding_window=8,
                    vocab_size_per_layer_input=512, hidden_size_per_layer_input=16,
                    layer_types=["sliding_attention", "full_attention"]), 2),
    # Llama 4 (text): its rotary in complex numbers, exported in real arithmetic
    # (export_kv_models.real_rotary_llama4) and, since session 36, one llmc.rotary each for its
    # rotary layer's query and key (on [B, S, H, D], before the heads move); queries and keys
    # L2-normed after it; that layer's attention in chunks of 8 keys (a block-diagonal mask, not
    # raised: it stays the attention's mask operand); the queries of its layer without rotary
    # scaled per position (floor_scale 4 makes the scale vary within the tests' lengths); a shared
    # expert beside experts that transformers computes for every token, each token's row scaled by
    # the router's score (zero where not chosen): dense products, which since session 37 become
    # expert_linear on each token's chosen experts (DENSE_EXPERTS).
    "llama4": ("Llama4ForCausalLM", "Llama4TextConfig",
               dict(num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=1,
                    intermediate_size_mlp=128, interleave_moe_layer_step=2, no_rope_layers=[1, 0],
                    attention_chunk_size=8, floor_scale=4, attn_scale=0.1), 2),
    "xglm": ("XGLMForCausalLM", "XGLMConfig", dict(d_model=64, num_layers=2, attention_heads=4, ffn_dim=128), 2),
    # Since session 37: Gemma 3n's text model (AltUp's four streams, LAuReL's low-rank residual,
    # per-layer inputs, its first layer's activations sparsified by a Gaussian top-k: exported
    # through gemma3n_constant_sparsity; no layer shares another's cache here).
    "gemma3n": ("Gemma3nForCausalLM", "Gemma3nTextConfig",
                dict(num_key_value_heads=2, head_dim=16, sliding_window=8, num_kv_shared_layers=0,
                     layer_types=["sliding_attention", "full_attention"], activation_sparsity_pattern=[0.95, 0.0],
                     laurel_rank=8, hidden_size_per_layer_input=16, vocab_size_per_layer_input=512), 2),
    # Since session 37: Tencent's Youtu-LLM, multi-head latent attention as DeepSeek-V3's with a
    # dense MLP (the latent cache as DeepSeek-V3's, LATENT_KV). Its default initializer ranges
    # (hidden_size ** -0.5) make the tiny model's logits reach 7, beyond the bf16 comparison's
    # absolute tolerance (0.06 max error, cosine 0.99997); 0.02 as the others'.
    "youtu": ("YoutuForCausalLM", "YoutuConfig",
              dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
                   v_head_dim=16, initializer_range=0.02, embedding_initializer_range=0.02), 2),
    "diffllama": ("DiffLlamaForCausalLM", "DiffLlamaConfig", dict(num_key_value_heads=2), 4),
    # Mixtures of experts (a router's top-2 of 4 experts), exported with transformers'
    # "batched_mm" experts (see MOE).
    "mixtral": ("MixtralForCausalLM", "MixtralConfig", dict(num_key_value_heads=2, num_local_experts=4,
                                                            num_experts_per_tok=2), 2),
    "qwen3_moe": ("Qwen3MoeForCausalLM", "Qwen3MoeConfig", dict(num_key_value_heads=2, head_dim=16, num_experts=4,
                                                                num_experts_per_tok=2, moe_intermediate_size=32), 2),
    "olmoe": ("OlmoeForCausalLM", "OlmoeConfig", dict(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2), 2),
    # A shared expert beside the routed ones, its output gated by a sigmoid.
    "qwen2_moe": ("Qwen2MoeForCausalLM", "Qwen2MoeConfig", dict(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                                                moe_intermediate_size=32,
                                                                shared_expert_intermediate_size=64), 2),
    # DeepSeek-V3: multi-head latent attention (as transformers computes it: keys and values
    # expanded from the latent, no absorption), its first layer dense, then routed experts chosen
    # by groups (sigmoid scores, a correction bias, the best group's top 2) and a shared expert.
    "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepseekV3Config",
                    dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                         n_shared_experts=1, first_k_dense_replace=1, n_group=2, topk_group=1, q_lora_rank=32,
                         kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16), 2),
    # Since session 34: Granite's and FlexOlmo's routers (softmax, top 2), GLM-4-MoE's and
    # dots.llm1's (DeepSeek-V3's by groups, one group here), Hunyuan's (normalized), ERNIE 4.5's
    # (scores plus a correction bias choose, the scores weigh: a grouped_top_k since session 35);
    # the first layer dense in GLM-4-MoE, ERNIE 4.5 and dots.llm1.
    "granitemoe": ("GraniteMoeForCausalLM", "GraniteMoeConfig", dict(num_key_value_heads=2, num_local_experts=4,
                                                                     num_experts_per_tok=2), 2),
    "flex_olmo": ("FlexOlmoForCausalLM", "FlexOlmoConfig", dict(num_key_value_heads=2, num_experts=4,
                                                                num_experts_per_tok=2, pad_token_id=0), 2),
    "glm4_moe": ("Glm4MoeForCausalLM", "Glm4MoeConfig",
                 dict(num_key_value_heads=2, head_dim=16, pad_token_id=0, n_routed_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=1,
                      topk_group=1), 2),
    "dots1": ("Dots1ForCausalLM", "Dots1Config",
              dict(num_key_value_heads=2, head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1), 2),
    "hunyuan_moe": ("HunYuanMoEV1ForCausalLM", "HunYuanMoEV1Config",
                    dict(num_key_value_heads=2, head_dim=16, num_experts=4, moe_topk=2), 2),
    "ernie4_5_moe": ("Ernie4_5_MoeForCausalLM", "Ernie4_5_MoeConfig",
                     dict(num_key_value_heads=2, head_dim=16, moe_num_experts=4, moe_k=2, moe_intermediate_size=32,
                          moe_layer_start_index=1), 2),
    # Since session 35: PhiMoE (its sparsemixer router left elementwise), GraniteMoE with a shared
    # expert, EXAONE MoE (DeepSeek-V3's grouped router, a dense first layer, sliding windows),
    # Cohere 2 MoE (rotary on its sliding-window layers, neighbouring pairs).
    "phimoe": ("PhimoeForCausalLM", "PhimoeConfig",
               dict(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, sliding_window=None), 2),
    "granitemoeshared": ("GraniteMoeSharedForCausalLM", "GraniteMoeSharedConfig",
                         dict(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                              shared_intermediate_size=64), 2),
    "exaone_moe": ("ExaoneMoeForCausalLM", "ExaoneMoeConfig",
                   dict(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                        first_k_dense_replace=1, sliding_window=8), 2),
    "cohere2_moe": ("Cohere2MoeForCausalLM", "Cohere2MoeConfig",
                    dict(num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2, sliding_window=8), 2),
    # DeepSeek-V2: multi-head latent attention as DeepSeek-V3's, a softmax router's unsorted top 2,
    # its rotary in complex numbers, which torch.onnx.export cannot convert: exported with the same
    # rotation in real arithmetic (export_kv_models.exportable; one llmc.rotary each since session 35).
    "deepseek_v2": ("DeepseekV2ForCausalLM", "DeepseekV2Config",
                    dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                         n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=32, kv_lora_rank=16,
                         qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16), 2),
    # GPT-OSS: attention sinks (a learned logit per head in the softmax's denominator, which
    # fused_attention takes since session 30), a sliding window on every other layer, experts
    # whose gate and up columns alternate, a clamped SwiGLU and a router's softmax over its top-k
    # logits. Its experts' products and biases are expert_linear since session 30; their
    # activation stays elementwise.
    "gpt_oss": ("GptOssForCausalLM", "GptOssConfig",
                dict(num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
                     sliding_window=8), 2),
    # Since session 36: MiniMax-M2 (sigmoid scores and a correction bias that chooses: a
    # grouped_top_k of one group), and two with multi-head latent attention, exported with the
    # latent cache as DeepSeek-V3's: Mistral 4 (every layer's experts chosen by DeepSeek-V3's
    # router, YaRN with Llama 4's query scale: an original_max of 4 makes it vary within the
    # tests' lengths) and GLM-4.7-Flash's Glm4MoeLite (its first layer dense).
    "minimax_m2": ("MiniMaxM2ForCausalLM", "MiniMaxM2Config",
                   dict(num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2), 2),
    "mistral4": ("Mistral4ForCausalLM", "Mistral4Config",
                 dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                      n_shared_experts=1, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
                      v_head_dim=16, head_dim=24,
                      rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=32.0,
                                           original_max_position_embeddings=4, beta_fast=32.0, beta_slow=1.0,
                                           mscale_all_dim=1.0, mscale=1.0, llama_4_scaling_beta=0.1)), 2),
    "glm4_moe_lite": ("Glm4MoeLiteForCausalLM", "Glm4MoeLiteConfig",
                      dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                           n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=32, kv_lora_rank=16,
                           qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, n_group=1, topk_group=1), 2),
    # Since session 37: Upstage's Solar Open (DeepSeek-V3's grouped router, one group here),
    # Tencent's HY V3 (its first layer dense, scores plus a correction bias choose) and poolside's
    # Laguna (a softplus gate per head on the attention's output before the heads merge, which
    # the attention's rows viewed as [B, S, H, D] take; a sliding-window layer with full rotary and
    # 8 heads, a full-attention one with half rotary and 4; its first layer dense).
    "solar_open": ("SolarOpenForCausalLM", "SolarOpenConfig",
                   dict(num_key_value_heads=2, head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=32), 2),
    "hy_v3": ("HYV3ForCausalLM", "HYV3Config",
              dict(num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32), 2),
    "laguna": ("LagunaForCausalLM", "LagunaConfig",
               dict(num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                    shared_expert_intermediate_size=64, sliding_window=8,
                    layer_types=["sliding_attention", "full_attention"], num_attention_heads_per_layer=[8, 4]), 2),
    # Databricks' DBRX (its experts exported through dbrx_batched_experts, a clamp on the fused
    # QKV projection, LayerNorms without bias, weights normalized by their L1 norm). d_model too:
    # DbrxConfig copies it to the experts' width before hidden_size reaches it.
    "dbrx": ("DbrxForCausalLM", "DbrxConfig",
             dict(d_model=64, attn_config=dict(kv_n_heads=2, clip_qkv=8.0, rope_theta=10000.0),
                  ffn_config=dict(ffn_hidden_size=32, moe_num_experts=4, moe_top_k=2)), 2),
    # Since session 37 too: JetBrains' Mellum and MiniCPM 5 MoE (DeepSeek-V3's router, one group).
    "mellum": ("MellumForCausalLM", "MellumConfig",
               dict(num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                    sliding_window=8, layer_types=["sliding_attention", "full_attention"]), 2),
    "minicpm5_moe": ("MiniCPM5MoeForCausalLM", "MiniCPM5MoeConfig",
                     dict(num_key_value_heads=2, head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                          moe_intermediate_size=32, pad_token_id=0, bos_token_id=0, eos_token_id=1), 2),
    # Since session 38: DeepSeek-V3.2 and GLM-5 (GlmMoeDsa), DeepSeek-V3 with DeepSeek Sparse
    # Attention: an indexer scores every key per query and only the top index_topk keys are
    # attended (an index mask scattered from its top-k indices). DeepSeek-V3.2's index_topk of 8
    # keeps the sparse path under the test's 19 tokens (the top-k's K, min(8, keys), counted from
    # shapes); GLM-5's default of 2048 exceeds the plans' bound, where llmc-fold-shapes proves that
    # the top-k takes every key and the index mask hides none, and its indexer goes unused.
    "deepseek_v32": ("DeepseekV32ForCausalLM", "DeepseekV32Config",
                     dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                          n_shared_experts=1, first_k_dense_replace=1, n_group=2, topk_group=1, q_lora_rank=32,
                          kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, index_n_heads=4,
                          index_head_dim=16, index_topk=8), 2),
    "glm_moe_dsa": ("GlmMoeDsaForCausalLM", "GlmMoeDsaConfig",
                    dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                         n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=32, kv_lora_rank=16,
                         qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, index_n_heads=4, index_head_dim=16),
                    2),
    # Tencent's HY V4 (since session 38): DeepSeek-V3's latent attention and routers with DeepSeek
    # Sparse Attention (its default top 2048: the indexer unused within the bounds), GPT-OSS's
    # attention sinks, a gate on the attention's output and hyper-connections (4 residual streams
    # mixed by learned weights per layer); its keys written by slice assignments.
    "hy_v4": ("HYV4ForCausalLM", "HYV4Config",
              dict(num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   n_shared_experts=1, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
                   v_head_dim=16, head_dim=24, index_n_heads=4, index_head_dim=16, pad_token_id=0, bos_token_id=0,
                   eos_token_id=1), 2),
    # Since session 38 too, four that needed no compiler change: Emu3's text model (Llama's form),
    # Flint (rotary on its sliding-window layer only, none on its full one), ModernBERT's decoder
    # (its second layer's window of local_attention / 2 = 8 keys) and Apertus 1.5.
    "emu3": ("Emu3ForCausalLM", "Emu3TextConfig", dict(num_key_value_heads=2, pad_token_id=0, bos_token_id=0,
                                                       eos_token_id=1), 2),
    "flint": ("FlintForCausalLM", "FlintConfig", dict(num_key_value_heads=2, sliding_window=8,
                                                      layer_types=["sliding_attention", "full_attention"]), 2),
    "modernbert_decoder": ("ModernBertDecoderForCausalLM", "ModernBertDecoderConfig",
                           dict(pad_token_id=0, bos_token_id=0, eos_token_id=1, sep_token_id=1, cls_token_id=0,
                                local_attention=16), 2),
    "apertus1p5": ("Apertus1p5TextForCausalLM", "Apertus1p5TextConfig", dict(num_key_value_heads=2), 2),
    # Since session 38 too: Granite SWA and Granite MoE SWA, whose attention sinks scale the
    # attention's output by sigmoid(logsumexp(scores) - sink) (llmc-raise-attention rewrites that
    # into GPT-OSS's form, sinksOfScaledOutputs); their first layer full, the second a window of 8.
    "granite_swa": ("GraniteSWAForCausalLM", "GraniteSWAConfig",
                    dict(num_key_value_heads=2, sliding_window=8, bos_token_id=0, eos_token_id=1), 2),
    "granitemoe_swa": ("GraniteMoeSWAForCausalLM", "GraniteMoeSWAConfig",
                       dict(num_key_value_heads=2, sliding_window=8, num_local_experts=4, num_experts_per_tok=2,
                            bos_token_id=0, eos_token_id=1), 2),
}
# Their experts as transformers' "batched_mm" computes them (each token's chosen experts'
# weights gathered, then batched products). The default, "grouped_mm", runs a custom op on the
# CPU (transformers::grouped_mm_fallback) that torch.onnx.export cannot convert ("No ONNX function
# found"; torch 2.15, transformers 5.25).
MOE = {"mixtral", "qwen3_moe", "olmoe", "qwen2_moe", "deepseek_v3", "gpt_oss", "granitemoe", "flex_olmo", "glm4_moe",
       "dots1", "hunyuan_moe", "ernie4_5_moe", "deepseek_v2", "phimoe", "granitemoeshared", "exaone_moe", "cohere2_moe",
       "minimax_m2", "mistral4", "glm4_moe_lite", "solar_open", "hy_v3", "laguna", "mellum", "minicpm5_moe",
       "dbrx", "deepseek_v32", "glm_moe_dsa", "granitemoe_swa", "hy_v4"}
# Layers with routed experts: both but DeepSeek-V3's first, which is dense. Each layer's two expert
# projections (gate/up, down) become llmc.expert_linear, the gate/up one with its swiglu and the
# token's row read by each of its experts' ids, the down one with the weighted sum over the
# token's experts (three fusions per layer).
MOE_LAYERS = dict({name: 2 for name in MOE}, deepseek_v3=1, glm4_moe=1, dots1=1, ernie4_5_moe=1, deepseek_v2=1,
                  exaone_moe=1, glm4_moe_lite=1, hy_v3=1, laguna=1, minicpm5_moe=1, deepseek_v32=1,
                  glm_moe_dsa=1, hy_v4=1)
EXPERT_LINEARS = "products of gathered experts turned into expert_linear"
EXPERT_FUSIONS = "swiglus, repeated rows and weighted sums fused into expert_linear"
EXPERT_BIASES = "experts' biases fused into expert_linear"
CLAMPED_SWIGLUS = "clamped swiglus (GPT-OSS's and HY V4's experts) fused into expert_linear"
EXPERT_COUNTS = {EXPERT_LINEARS: 2, EXPERT_FUSIONS: 3, EXPERT_BIASES: 0, CLAMPED_SWIGLUS: 0}  # per layer with experts
# GPT-OSS's experts (since session 30; each matrix [K, M], on the right of the row) take their
# biases per expert, the repeated rows and the weighted sum; since session 31 their clamped
# SwiGLU over alternating gate and up columns too (the weight's rows reordered to halves).
# HY V4's experts clamp their gate and up halves, silu(min(g, 10)) * clamp(u, -10, 10): since
# session 39 the same activation with alpha 1 and up_offset 0 (no u + 1).
EXPERT_OVERRIDES = {"gpt_oss": {EXPERT_FUSIONS: 2, EXPERT_BIASES: 2, CLAMPED_SWIGLUS: 1},
                    "hy_v4": {EXPERT_FUSIONS: 2, CLAMPED_SWIGLUS: 1}}
# Each router's softmax and top-k become llmc.softmax_top_k, and Mixtral's weights divided by
# their sum its `normalize` (the others' configs leave norm_topk_prob off); DeepSeek-V3's sigmoid
# scores chosen within the best groups become llmc.grouped_top_k (since session 29); GPT-OSS's
# softmax of its top-k logits a normalized softmax_top_k (since session 30).
ROUTERS = "softmaxes and their top-k turned into softmax_top_k"
NORMALIZED = "routing weights' normalizations fused into softmax_top_k"
GROUPED = "routers choosing experts by groups turned into grouped_top_k"
# Since session 35 ERNIE 4.5's router (softmax scores, a correction bias that chooses, no groups)
# is a grouped_top_k too, and DeepSeek-V2's unsorted softmax top 2 a softmax_top_k; since session
# 36 MiniMax-M2's (sigmoid scores, a correction bias, no groups) is such a grouped_top_k; since
# session 37 HY V3's and Laguna's too, and Solar Open's DeepSeek-V3 router a grouped one.
CORRECTED = "routers choosing experts by corrected scores turned into grouped_top_k"
ROUTING = {"mixtral": {ROUTERS: 1, NORMALIZED: 1}, "qwen3_moe": {ROUTERS: 1}, "olmoe": {ROUTERS: 1},
           "qwen2_moe": {ROUTERS: 1}, "deepseek_v3": {GROUPED: 1}, "gpt_oss": {ROUTERS: 1}, "granitemoe": {ROUTERS: 1},
           "flex_olmo": {ROUTERS: 1}, "glm4_moe": {GROUPED: 1}, "dots1": {GROUPED: 1},
           "hunyuan_moe": {ROUTERS: 1, NORMALIZED: 1}, "ernie4_5_moe": {CORRECTED: 1}, "deepseek_v2": {ROUTERS: 1},
           "granitemoeshared": {ROUTERS: 1}, "exaone_moe": {GROUPED: 1}, "cohere2_moe": {ROUTERS: 1},
           "minimax_m2": {CORRECTED: 1}, "mistral4": {GROUPED: 1}, "glm4_moe_lite": {GROUPED: 1},
           "solar_open": {GROUPED: 1}, "hy_v3": {CORRECTED: 1}, "laguna": {CORRECTED: 1},
           "mellum": {ROUTERS: 1, NORMALIZED: 1}, "minicpm5_moe": {GROUPED: 1}, "dbrx": {ROUTERS: 1, NORMALIZED: 1},
           "deepseek_v32": {GROUPED: 1}, "glm_moe_dsa": {GROUPED: 1}, "granitemoe_swa": {ROUTERS: 1},
           "hy_v4": {GROUPED: 1}}


# Llama 4's layer with experts (the tiny config's second): every expert on every token, as
# transformers computes it, turned into two expert_linear on the chosen ones (since session 37).
DENSE_EXPERTS = "dense mixtures of experts turned into expert_linear on the chosen"
DENSE_EXPERT_LAYERS = {"llama4": 1}


def expert_counts(name):
    """The expert and routing fusions an architecture's plan should count."""
    per_layer = {**EXPERT_COUNTS, **EXPERT_OVERRIDES.get(name, {}), ROUTERS: 0, NORMALIZED: 0, GROUPED: 0,
                 CORRECTED: 0, **ROUTING.get(name, {})}
    counts = {what: per * MOE_LAYERS.get(name, 0) for what, per in per_layer.items()}
    counts[DENSE_EXPERTS] = DENSE_EXPERT_LAYERS.get(name, 0)
    return counts


# Exported with the cache as transformers 5 keeps it for multi-head latent attention (export_latent_kv:
# the normed latents as the keys, the rotated keys as the values, one "head" each), which
# llmc-absorb-mla makes one latent cache; llmc.latent_attention then takes the attention, so none
# is raised (its mask still turns causal).
LATENT_KV = {"deepseek_v3", "deepseek_v2", "minicpm3", "mistral4", "glm4_moe_lite", "youtu", "deepseek_v32",
             "glm_moe_dsa", "hy_v4"}
# Of those, DeepSeek Sparse Attention's with the indexer's keys cached too (export_indexed_kv).
INDEXED_KV = {"deepseek_v32", "glm_moe_dsa", "hy_v4"}
# Attention over the keys an indexer chose (DeepSeek-V3.2's top 8 here; GLM-5's default top 2048
# chooses every key within the plans' bounds, and its indexer goes unused). Its bf16 logits on
# the CUDA path are held to the CPU's by cosine only: its queries and keys are bf16 there (its
# scores f32, as PyTorch's bf16 model computes them), and where two keys nearly tie (1e-5 apart in
# this random model) another key is chosen than on the CPU, which computes a bf16 plan in f32
# (0.036 at most, cosine 0.99985, where atol is 0.033). Its decode steps take a graph per cache
# length: the chosen keys' mask and the indexer's scores have the cache length's shape.
SPARSE_ATTENTION = {"deepseek_v32"}
# DiffLlama's attentions (raised since session 39: two per layer, one per half of the value heads)
# read the value cache's halves, each chunked and repeated at every step, whose shapes hold the
# cache length: its decode steps take a graph per cache length.
VALUE_HALVES = {"diffllama"}
ABSORBED = "MLA attentions absorbed into latent space"
# Sliding windows of 8 keys (Mistral's layers, Gemma 2's first, both of Gemma 3's: its first five
# of every six, GPT-OSS's first, Cohere 2's first, OLMo 3's and EXAONE 4's both; since session 35
# Ministral's both, VaultGemma's first, EXAONE MoE's and Cohere 2 MoE's both; since session 36
# GPT-Neo's local layer, a constant band sliced to the scores, and CWM's first; since session 37
# Laguna's and Mellum's first), inside the plans' bounds: llmc-raise-attention-mask makes each
# the attention's sliding_window.
WINDOWS_RAISED = "masks raised to sliding_window"
# Decode plans' masks left as the attention's operand: Llama 4's chunked attention (keys in the
# query's chunk of 8 only; a block-diagonal mask, which llmc-raise-attention-mask does not prove);
# DeepSeek-V3.2's sparse attention (the keys its indexer chose, scattered from a top-k).
UNRAISED_KV_MASKS = {"llama4": 1, "deepseek_v32": 2}
WINDOWS = dict({name: 0 for name in ARCHITECTURES}, mistral=2, gemma2=1, gemma3=2, gpt_oss=1, cohere2=1, olmo3=2,
               exaone4=2, ministral=2, vaultgemma=1, exaone_moe=2, cohere2_moe=2, gpt_neo=1, cwm=1, gemma4=1, laguna=1,
               mellum=1, gemma3n=1, granite_swa=1, granitemoe_swa=1, modernbert_decoder=1,
               flint=1)
# Rotations that llmc-raise-attention turns into llmc.rotary because no attention takes them:
# (without a cache, with one). A rotate-half rotary over the whole head turns inside the
# attention, keys too where there is no cache (0, 2); a partial one (GPT-NeoX, Phi, StableLM) or
# one pairing neighbouring features (Cohere, GPT-J, CodeGen) turns apart, queries too (4, 4);
# DeepSeek-V3's neighbouring pairs count as de-interleaved rotations instead (0, 0). Since session
# 34: GLM's, Helium's and ERNIE 4.5's neighbouring pairs from tables of halves (4, 4); Hunyuan's,
# Nemotron's and Persimmon's (4, 4), queries too (Hunyuan's then normed, so no attention takes them);
# Cohere 2's only on its sliding-window layer (2, 2), SmolLM3's keys on its one layer with rotary
# (0, 1); since session 35 NanoChat's, whose partner is rotate_half's negative and whose queries
# and keys are normed after (4, 4); since session 36 MiniCPM3's (4, 4: rotary on each head's
# last qk_rope_head_dim features, concatenated after the others, as DeepSeek's), DiffLlama's (4,
# 4: no attention raised), Gemma 4's (4, 4: its queries' then inside the attention); none in
# GPT-Neo, BioGPT, XGLM and Llama 4 (its rotations counted as stacked pairs, below); Mistral 4's
# and Glm4MoeLite's count as de-interleaved rotations, as DeepSeek-V3's (0, 0); since session 37
# Laguna's half rotary on its full-attention layer (2, 3: queries and keys there, with a cache the
# sliding layer's keys too).
ROTARY_OPS = "rotations no attention took turned into llmc.rotary"
ROTATIONS = dict({name: (0, 2) for name in ARCHITECTURES},
                 gpt_neox=(4, 4), phi=(4, 4), stablelm=(4, 4), cohere=(4, 4), gptj=(4, 4), codegen=(4, 4),
                 opt=(0, 0), gpt_bigcode=(0, 0), mpt=(0, 0), bloom=(0, 0), gpt_oss=(0, 0), deepseek_v3=(0, 0),
                 glm=(4, 4), glm4=(4, 4), helium=(4, 4), ernie4_5=(4, 4), hunyuan=(4, 4), nemotron=(4, 4),
                 persimmon=(4, 4), cohere2=(2, 2), smollm3=(0, 1), glm4_moe=(4, 4), ernie4_5_moe=(4, 4),
                 hunyuan_moe=(4, 4), deepseek_v2=(0, 0), nanochat=(4, 4), cohere2_moe=(4, 4), gpt_neo=(0, 0),
                 biogpt=(0, 0), minicpm3=(4, 4), mistral4=(0, 0), glm4_moe_lite=(0, 0), xglm=(0, 0),
                 diffllama=(2, 2), gemma4=(4, 4), llama4=(0, 0), laguna=(2, 3), youtu=(0, 0),
                 gemma3n=(4, 4), deepseek_v32=(4, 4), glm_moe_dsa=(0, 0), hy_v4=(0, 0), flint=(0, 1))
# Of those, the queries' then move into their attention (llmc-fuse-query-rotary, with and without
# a cache); GPT-NeoX's since its per-head QKV projection is reordered (llmc-deinterleave-qkv).
QUERY_ROTARY = "query rotations moved into fused_attention"
QUERY_ROTATIONS = dict({name: 0 for name in ARCHITECTURES}, phi=2, stablelm=2, cohere=2, gptj=2, codegen=2, gpt_neox=2,
                       gpt_oss=2, glm=2, glm4=2, helium=2, ernie4_5=2, nemotron=2, persimmon=2, cohere2=1, glm4_moe=2,
                       ernie4_5_moe=2, cohere2_moe=2, gemma4=2, laguna=1, gemma3n=2)
# Rotations written on each head's two halves, concat(x1 * cos - x2 * sin, x2 * cos + x1 * sin)
# after a chunk of [B, H, S, D] (GPT-OSS), turned into llmc.rotary, queries and keys (with and
# without a cache); its queries' then move into their attention (above).
HALVES_ROTARY = "rotations of split halves turned into llmc.rotary"
HALVES_ROTATIONS = dict({name: 0 for name in ARCHITECTURES}, gpt_oss=4)
# Rotations of pairs taken apart and stacked back, e, o = x.reshape(.., D/2, 2)[..., 0 or 1],
# stack([e * cos - o * sin, o * cos + e * sin], -1) (DeepSeek-V2's, export_kv_models.real_rotary_deepseek_v2),
# each turned into an interleaved llmc.rotary (since session 35), queries and keys (with and
# without a cache); since session 36 Llama 4's (x [B, S, H, D], export_kv_models.real_rotary_llama4;
# its one rotary layer's query and key).
STACKED_ROTARY = "rotations of stacked pairs turned into llmc.rotary"
STACKED_ROTATIONS = dict({name: 0 for name in ARCHITECTURES}, deepseek_v2=4, llama4=2)
# Per-head interleaved QKV projections reordered (llmc-deinterleave-qkv), with and without a cache.
# (GPT-OSS's chunk of each head into halves has the form of a split of a projection's parts; it
# is left to the rotation above.)
DEINTERLEAVED = "projections with heads' parts interleaved reordered"
DEINTERLEAVINGS = dict({name: 0 for name in ARCHITECTURES}, gpt_neox=2, bloom=2, codegen=2, persimmon=2,
                       minicpm5_moe=2, deepseek_v32=2)


def build(name, use_cache):
    """The random-weight model (export_test_models' seed) of one architecture."""
    import export_test_models
    import torch
    import transformers

    model_class, config_class, extra, _ = ARCHITECTURES[name]
    settings = dict(COMMON, **extra, use_cache=use_cache)
    if name in ("falcon", "opt", "gptj", "codegen", "gpt_bigcode", "mpt", "bloom"):  # their configs name
        settings.pop("intermediate_size")                                             # the MLP width otherwise
    if name in ("falcon", "gptj", "codegen", "gpt_bigcode", "mpt", "bloom"):          # or not at all
        settings.pop("max_position_embeddings")
    torch.manual_seed(export_test_models.SEED)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**settings))
    if name in MOE:
        model.set_experts_implementation("batched_mm")
    return model


def export(name, path, kv):
    """Through models/export_test_models.py's export (its seed, wrapper and exporter settings;
    export_kv_models.exportable's work-arounds), or with the cache through
    models/export_kv_models.py's."""
    import export_kv_models
    import export_test_models

    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        if kv:
            export_kv_models.export(build(name, True), os.path.join(tmp, name + ".onnx"), COMMON["vocab_size"])
        else:
            model = build(name, False)
            with export_kv_models.exportable(model, with_cache=False):
                export_test_models.export(name, lambda: (model, ["input_ids"], ["logits"]), tmp)
        os.replace(os.path.join(tmp, name + ".onnx"), path)


def export_latent_kv(name, path):
    """`name` with its cache as transformers 5 keeps a latent attention's, through
    export_kv_models.export: past_key_values.N.key [batch, 1, past, kv_lora_rank] and .value
    [batch, 1, past, qk_rope_head_dim]; traced at a batch of 2, since at 1 torch.export holds
    DeepSeek-V3's attention to that batch (models/export_deepseek.py)."""
    import export_kv_models

    model = build(name, True)
    cfg = model.config
    past = ((1, cfg.kv_lora_rank), (1, cfg.qk_rope_head_dim))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        export_kv_models.export(model, os.path.join(tmp, name + ".onnx"), COMMON["vocab_size"],
                                past=[past] * cfg.num_hidden_layers, batch=2)
        os.replace(os.path.join(tmp, name + ".onnx"), path)


def export_indexed_kv(name, path):
    """DeepSeek Sparse Attention's cache (DeepSeek-V3.2, GLM-5, HY V4): per layer export_latent_kv's
    latent pair, and the indexer's keys, which transformers keeps [batch, past, index_head_dim]
    in a DynamicIndexedLayer, given and returned as past_key_values.N.indexer and
    present.N.indexer [batch, 1, past, index_head_dim], so that every cache tensor is [batch,
    heads, past, width] as the generator reads it. export_kv_models.export's inputs, bounds and
    example otherwise (its wrapper takes two tensors per layer)."""
    import export_kv_models
    import export_test_models
    import torch
    import transformers

    model = build(name, True).eval()
    cfg, layers = model.config, model.config.num_hidden_layers
    kinds = ("key", "value", "indexer")
    widths = (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.index_head_dim)

    class IndexedCache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = transformers.DynamicCache(config=cfg)
            for i, layer in enumerate(cache.layers):
                layer.update(past[3 * i], past[3 * i + 1])
                layer.update_indexer(past[3 * i + 2].squeeze(1))
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=cache, use_cache=True, return_dict=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values, layer.indexer_keys.unsqueeze(1)]
            return (out.logits, *present)

    batch, seq, cached = 2, 3, 5
    example = [torch.randint(0, COMMON["vocab_size"], (batch, seq)), torch.ones(batch, cached + seq, dtype=torch.int64),
               torch.arange(cached, cached + seq).repeat(batch, 1)]
    example += [torch.randn(batch, 1, cached, width) for _ in range(layers) for width in widths]
    names = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in kinds]
    outputs = ["logits"] + [f"present.{i}.{kind}" for i in range(layers) for kind in kinds]
    with export_kv_models.exportable(model) as least_seq, tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        b, p, t = (torch.export.Dim(n, max=m) for n, m in (("batch", 8), ("past", 2048), ("total", 4096)))
        s = torch.export.Dim("seq", min=least_seq, max=2048)
        shapes = {"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: t}, "position_ids": {0: b, 1: s},
                  "past": tuple({0: b, 2: p} for _ in names)}
        torch.onnx.export(IndexedCache(), tuple(example), os.path.join(tmp, name + ".onnx"),
                          input_names=["input_ids", "attention_mask", "position_ids"] + names, output_names=outputs,
                          opset_version=export_test_models.OPSET, dynamo=True, dynamic_shapes=shapes,
                          external_data=False)
        os.replace(os.path.join(tmp, name + ".onnx"), path)


@contextlib.contextmanager
def dbrx_batched_experts():
    """DBRX's experts (DbrxExperts) as transformers' batched_mm computes other models' experts:
    its own forward loops over the experts some token chose (data-dependent, which torch.export
    cannot trace). Each token's row repeated for its k experts, the chosen experts' gate and up
    matrices [2F, H] (w1 and v1 of each, concatenated) and down matrices [F, H] gathered, the
    products batched, then weighted by the router and summed per token: the same sums."""
    import torch
    from transformers.models.dbrx import modeling_dbrx

    def forward(self, hidden_states, top_k_index, top_k_weights):
        batch, k = hidden_states.shape[0], top_k_index.shape[-1]
        shape = (self.num_experts, self.ffn_hidden_size, self.hidden_size)
        gate_up = torch.cat([self.mlp.w1.view(shape), self.mlp.v1.view(shape)], dim=1)
        ids = top_k_index.reshape(-1)
        rows = hidden_states.reshape(-1, self.hidden_size).repeat_interleave(k, dim=0)
        gate, up = torch.bmm(gate_up[ids], rows.unsqueeze(-1)).squeeze(-1).chunk(2, dim=-1)
        down = torch.bmm((self.mlp.activation_fn(gate) * up).unsqueeze(1), self.mlp.w2.view(shape)[ids]).squeeze(1)
        out = (down * top_k_weights.reshape(-1).unsqueeze(-1)).view(-1, k, self.hidden_size).sum(dim=1)
        return out.view(batch, -1, self.hidden_size)

    with unittest.mock.patch.object(modeling_dbrx.DbrxExperts, "forward", forward):
        yield


@contextlib.contextmanager
def gemma3n_constant_sparsity():
    """Gemma 3n's Gaussian top-k (Gemma3nTextMLP._gaussian_topk) takes its cutoff's multiplier
    from Normal(0, 1).icdf of the layer's sparsity, an erfinv that torch.onnx.export cannot
    convert (nor trace: the distribution checks its argument). The multipliers of the test
    config's sparsities are computed the same way before the export, and read as constants."""
    import torch
    from transformers.models.gemma3n import modeling_gemma3n

    normal = torch.distributions.normal.Normal(0, 1)
    multipliers = {s: float(normal.icdf(torch.tensor(s, dtype=torch.float32)))
                   for s in ARCHITECTURES["gemma3n"][2]["activation_sparsity_pattern"]}

    def gaussian_topk(self, inputs):
        std_multiplier = torch.tensor(multipliers[self.activation_sparsity], dtype=inputs.dtype)
        inputs_mean = torch.mean(inputs, dim=-1, keepdim=True)
        inputs_std = torch.std(inputs, dim=-1, keepdim=True, unbiased=False)
        return torch.nn.functional.relu(inputs - (inputs_mean + inputs_std * std_multiplier))

    with unittest.mock.patch.object(modeling_gemma3n.Gemma3nTextMLP, "_gaussian_topk", gaussian_topk):
        yield


# Exports that need a module replaced by an equivalent form torch.onnx.export converts, by
# architecture: a context manager around its export (its source part of that architecture's
# export_key only, so that the other exports stay cached).
EXPORT_PATCHES = {"dbrx": dbrx_batched_experts, "gemma3n": gemma3n_constant_sparsity}


def export_key(name):
    """What one architecture's exports depend on: its configuration, build and export here, and
    the exporter modules they call (not the checks, whose expectations change more often, nor the
    other architectures)."""
    models = os.path.join(HERE, "..", "..", "models")
    made_by = [repr(COMMON), repr(ARCHITECTURES[name][:3]), repr(name in MOE), inspect.getsource(build),
               inspect.getsource(export)]
    if name in LATENT_KV:
        made_by.append(inspect.getsource(export_latent_kv))
    if name in INDEXED_KV:
        made_by.append(inspect.getsource(export_indexed_kv))
    if name in EXPORT_PATCHES:
        made_by.append(inspect.getsource(EXPORT_PATCHES[name]))
    made_by += [open(os.path.join(models, f), encoding="utf-8").read()
                for f in ("export_test_models.py", "export_kv_models.py")]
    return hashlib.sha256("\n".join(made_by).encode()).hexdigest()[:12]


def cached_export(name, kv=False):
    cache = os.environ.get("LLMC_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "llmc"))
    key = export_key(name)
    folder = os.path.join(cache, "models-arch", key)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ("_kv" if kv else "") + ".onnx")
    if not os.path.exists(path):
        # In a process of its own without LD_PRELOAD: the emulation's tests preload
        # AddressSanitizer's runtime, under which the exporter's C++ exceptions abort.
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.run([sys.executable, os.path.abspath(__file__), "--export", name, "--to", path]
                       + (["--kv"] if kv else []), env=env, check=True)
    return path


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + out.stdout + out.stderr)
    return out.stdout + out.stderr


def check(args, name, tmp):
    import onnx
    import onnxruntime as ort

    model = cached_export(name)
    batch_dim = onnx.load(model, load_external_data=False).graph.input[0].type.tensor_type.shape.dim[0]
    batch = 2 if batch_dim.dim_param else 1  # torch.export specialised most exports' batch to 1
    bounds = f"seq=32" + (f",{batch_dim.dim_param}=2" if batch_dim.dim_param else "")
    ids = np.random.default_rng(7).integers(0, 512, (batch, SEQ)).astype(np.int64)
    ids_path = os.path.join(tmp, name + "-ids.npy")
    np.save(ids_path, ids)
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input_ids": ids})[0]
    lines, ok = [], True
    f32_logits = None
    for precision in ["f32", "bf16"] if args.cuda else ["f32"]:
        plan = os.path.join(tmp, f"{name}-{precision}.llmc")
        stats = run([args.llmc, model, "-o", plan, "--max-shape", bounds, "--target", "cuda", "--precision", precision,
                     "--print-stats"])
        raised = re.search(r"llmc-raise-attention: (\d+) attention blocks raised", stats)
        kernels = re.search(r"plan: (\d+) kernels", stats).group(1)
        attentions = int(raised.group(1)) if raised else 0
        if attentions != ARCHITECTURES[name][3]:
            ok = False
            lines.append(f"  {precision}: {attentions} attention blocks raised, {ARCHITECTURES[name][3]} expected")
        rotations = counted(stats, ROTARY_OPS)
        if rotations != ROTATIONS[name][0]:
            ok = False
            lines.append(f"  {precision}: {rotations} {ROTARY_OPS}, {ROTATIONS[name][0]} expected")
        for what, want in ((WINDOWS_RAISED, WINDOWS[name]), (QUERY_ROTARY, QUERY_ROTATIONS[name]),
                           (HALVES_ROTARY, HALVES_ROTATIONS[name]), (STACKED_ROTARY, STACKED_ROTATIONS[name]),
                           (DEINTERLEAVED, DEINTERLEAVINGS[name])):
            if counted(stats, what) != want:
                ok = False
                lines.append(f"  {precision}: {counted(stats, what)} {what}, {want} expected")
        want = expert_counts(name)
        experts = {what: counted(stats, what) for what in want}
        for what, count in experts.items():
            if count != want[what]:
                ok = False
                lines.append(f"  {precision}: {count} {what}, {want[what]} expected")
        outputs = {}
        for device in ["cpu", "cuda"] if args.cuda else ["cpu"]:
            out_dir = os.path.join(tmp, f"{name}-{precision}-{device}")
            run([args.llmc_run, plan, "--device", device, "--input", "input_ids=" + ids_path, "--output-dir", out_dir,
                 "--quiet"])
            outputs[device] = np.load(os.path.join(out_dir, "logits.npy"))
        # f32 on the CPU against ONNX Runtime; each device's run against the CPU's of the same plan.
        pairs = [("cpu", "onnx runtime", outputs["cpu"], expected, 1e-4)] if precision == "f32" else []
        if args.cuda:
            pairs.append(("cuda", "cpu", outputs["cuda"], outputs["cpu"], 1e-4 if precision == "f32" else 0.05))
        for got_name, want_name, got, want, atol in pairs:
            got, want = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
            err = float(np.abs(got - want).max())
            cosine = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want) + 1e-30))
            # Relative to the logits where they are small (Cohere's are scaled to 0.08 at most);
            # bf16 against f32 also by direction.
            atol *= min(1.0, float(np.abs(want).max()))
            by_cosine = precision == "bf16" and name in SPARSE_ATTENTION
            good = (err <= atol or by_cosine) and (precision == "f32" or cosine >= 0.999)
            ok = ok and good
            lines.append(f"  {precision} {got_name} vs {want_name}: max abs error {err:.3g}, cosine {cosine:.6f} "
                         f"({'ok' if good else 'MISMATCH'}, " + ("held by cosine: sparse attention" if by_cosine else
                                                                 f"atol {atol:.3g}") + ")")
        if precision == "f32":
            f32_logits = outputs["cpu"]
        elif args.cuda:
            good, line = against_torch_bf16(name, ids_path, outputs["cuda"], f32_logits)
            ok = ok and good
            lines.append(line)
        lines.append(f"  {precision}: {kernels} kernels, {attentions} attention blocks raised, "
                     f"{counted(stats, WINDOWS_RAISED)} {WINDOWS_RAISED}, {rotations} {ROTARY_OPS}, "
                     f"{counted(stats, QUERY_ROTARY)} {QUERY_ROTARY}" +
                     "".join(f", {count} {what}" for what, count in experts.items() if name in MOE or count))
    return ok, lines


# The CUDA executor's bf16 logits err from the f32 plan's about as much as PyTorch's bf16 model
# from its f32 one: both store every activation in bf16 (the CPU executor computes a bf16 plan in
# f32 from the bf16 weights, and errs about half as much). Over the 72 architectures of session
# 36 the ratio was 0.85 to 1.03 (Youtu-LLM's, since, 0.95); a kernel that rounds more than it should shows as a larger one. Mixtures of experts
# are reported, not held to it: where a router's two best experts nearly tie, one path picks
# another expert than the other (MiniMax-M2's first router at the third token, a gap of 0.0003:
# 2.7 times PyTorch's error; ERNIE 4.5 MoE's and Hunyuan-MoE's flip on the CPU too).
BF16_ERROR_RATIO = 1.25


def relative_error(got, want):
    got, want = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    return float(np.linalg.norm(got - want) / (np.linalg.norm(want) + 1e-30))


def torch_bf16_error(name, ids_path):
    """PyTorch's bf16 model's relative error against its f32 one on these ids, cached beside the
    export (by the ids' hash); computed in a process without LD_PRELOAD, as cached_export's."""
    ids_hash = hashlib.sha256(np.load(ids_path).tobytes()).hexdigest()[:12]
    path = os.path.join(os.path.dirname(cached_export(name)), f"{name}-bf16-error-{ids_hash}.txt")
    if not os.path.exists(path):
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.run([sys.executable, os.path.abspath(__file__), "--bf16-error", name, "--ids", ids_path, "--to",
                        path], env=env, check=True)
    with open(path) as f:
        return float(f.read())


def write_torch_bf16_error(name, ids_path, path):
    import torch

    ids = torch.from_numpy(np.load(ids_path))
    model = build(name, False).eval()
    with torch.no_grad():
        want = model(input_ids=ids, use_cache=False).logits.float().numpy()
        got = model.to(torch.bfloat16)(input_ids=ids, use_cache=False).logits.float().numpy()
    with open(path + ".tmp", "w") as f:
        f.write(repr(relative_error(got, want)))
    os.replace(path + ".tmp", path)


def against_torch_bf16(name, ids_path, cuda_bf16, f32_logits):
    """(ok, line): the CUDA path's bf16 error against PyTorch's bf16 error on the same model."""
    ours, theirs = relative_error(cuda_bf16, f32_logits), torch_bf16_error(name, ids_path)
    held = name not in MOE
    good = not held or ours <= BF16_ERROR_RATIO * theirs
    return good, (f"  bf16 relative error against f32: cuda {ours:.5f}, pytorch {theirs:.5f}, ratio "
                  f"{ours / theirs:.2f} ({'ok' if good else 'MISMATCH'}" +
                  (f", at most {BF16_ERROR_RATIO})" if held else ", a mixture of experts: not held to it)"))


def counted(stats, what):
    """The count a --print-stats line gives ("llmc-pass: N what"), 0 where the pass printed none."""
    found = re.search(r": (\d+) " + re.escape(what), stats)
    return int(found.group(1)) if found else 0


def check_kv(args, name, tmp):
    """Greedy generation from the KV-cache export: the CPU against ONNX Runtime; the CUDA executor
    against the CPU, in f32 and bf16."""
    from cuda_vs_cpu import agree

    model = cached_export(name, kv=True)
    lines, ok = [], True
    vs_ort = subprocess.run([sys.executable, os.path.join(HERE, "generate_vs_ort.py"), "--llmc", args.llmc,
                             "--llmc-run", args.llmc_run, "--model", model, "--steps", "16"],
                            capture_output=True, text=True)
    ok = vs_ort.returncode == 0
    lines.append("  cpu vs onnx runtime: " + (vs_ort.stdout + vs_ort.stderr).strip().replace("\n", "\n  "))
    expected = ARCHITECTURES[name][3]
    for precision in ["f32", "bf16"] if args.cuda else ["bf16"]:
        plan = os.path.join(tmp, f"{name}-kv-{precision}.llmc")
        stats = run([args.llmc, model, "-o", plan, "--target", "cuda", "--precision", precision, "--last-position",
                     "logits", "--print-stats"] + KV_SHAPES)
        found = {what: counted(stats, what) for what in
                 ("attention blocks raised", "masks raised to is_causal", ABSORBED, "past/present pairs turned length-major",
                  WINDOWS_RAISED, ROTARY_OPS, QUERY_ROTARY, HALVES_ROTARY, STACKED_ROTARY, DEINTERLEAVED,
                  *expert_counts(name))}
        # Every raised attention causal, reading the attention_mask input; each layer's key and
        # value caches length-major (what the decode attention reads).
        absorbed = name in LATENT_KV
        want = {"attention blocks raised": 0 if absorbed else expected,
                "masks raised to is_causal": expected - UNRAISED_KV_MASKS.get(name, 0),
                ABSORBED: expected if absorbed else 0,
                "past/present pairs turned length-major": 6 if name in INDEXED_KV else 4,
                WINDOWS_RAISED: WINDOWS[name], ROTARY_OPS: ROTATIONS[name][1],
                QUERY_ROTARY: QUERY_ROTATIONS[name], HALVES_ROTARY: HALVES_ROTATIONS[name],
                STACKED_ROTARY: STACKED_ROTATIONS[name], DEINTERLEAVED: DEINTERLEAVINGS[name],
                **expert_counts(name)}
        for what, count in found.items():
            if count != want[what]:
                ok = False
                lines.append(f"  {precision}: {count} {what}, {want[what]} expected")
        kernels = re.search(r"plan: (\d+) kernels", stats).group(1)
        lines.append(f"  {precision}: {kernels} kernels, " + ", ".join(f"{c} {w}" for w, c in found.items()))
        if not args.cuda:
            continue
        logits = {}
        for device in ["cpu", "cuda"]:
            logits[device] = os.path.join(tmp, f"{name}-kv-{precision}-{device}")
            os.makedirs(logits[device], exist_ok=True)
            prompt = GENERATE[:1] + [CUDA_PROMPTS.get(name, GENERATE[1])] + GENERATE[2:]
            out = run([args.llmc_run, "generate", plan, "--device", device, "--logits-dir", logits[device]] + prompt)
            tokens = out.split("\n")[0].split() if device == "cpu" else tokens
            if device == "cuda":
                same = out.split("\n")[0].split() == tokens
                # One graph for every decode step needs the attention raised (an unraised one's
                # shapes hold the cache length), and is required there. In 16 bits another token
                # whose logit is close may win.
                replayed = "CUDA graphs captured: 2\n" in out
                per_length = name in SPARSE_ATTENTION or name in VALUE_HALVES  # (see there)
                ok = ok and (replayed or expected == 0 or per_length) and (same or precision == "bf16")
                lines.append(f"  {precision} cuda: tokens {'the same as' if same else 'differ from'} the cpu's; "
                             f"decode steps {'replay one graph' if replayed else 'did NOT replay one graph'}")
        worst, compared, all_good = (-1.0, ""), 0, True
        for step in range(16):
            got, ref = (os.path.join(logits[d], f"step_{step}.npy") for d in ("cuda", "cpu"))
            if not os.path.exists(ref) or not os.path.exists(got):
                all_good = False
                break
            got, ref = np.load(got), np.load(ref)
            good, what = agree(got, ref, 1e-4, precision == "bf16")
            err = float(np.abs(got.astype(np.float64) - ref).max()) if got.shape == ref.shape else np.inf
            worst = max(worst, (err, f"step {step}: {what}"))
            all_good, compared = all_good and good, step + 1
            if not same:
                break  # after the first different token the contexts differ
        ok = ok and all_good and compared > 0
        lines.append(f"  {precision} cuda vs cpu logits over {compared} steps, the worst {worst[1]} "
                     f"({'ok' if all_good else 'MISMATCH'})")
    return ok, lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc")
    p.add_argument("--llmc-run")
    p.add_argument("--cuda", action="store_true", help="run the CUDA executor too (f32 and bf16 plans)")
    p.add_argument("--kv", action="store_true", help="generate from the exports with a KV cache")
    p.add_argument("--only", help="the architectures whose name contains this")
    p.add_argument("--part", help="K/N: every Nth architecture from the Kth (1-based), so that ctest runs the "
                                  "list in N tests side by side")
    p.add_argument("--export", help=argparse.SUPPRESS)  # export one architecture --to a path, and stop
    p.add_argument("--to", help=argparse.SUPPRESS)
    p.add_argument("--bf16-error", help=argparse.SUPPRESS)  # write PyTorch's bf16 error on --ids --to a path
    p.add_argument("--ids", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.bf16_error:
        write_torch_bf16_error(args.bf16_error, args.ids, args.to)
        return 0
    if args.export:
        with EXPORT_PATCHES.get(args.export, contextlib.nullcontext)():
            if args.kv and args.export in INDEXED_KV:
                export_indexed_kv(args.export, args.to)
            elif args.kv and args.export in LATENT_KV:
                export_latent_kv(args.export, args.to)
            else:
                export(args.export, args.to, args.kv)
        return 0
    if not args.llmc or not args.llmc_run:
        p.error("--llmc and --llmc-run are required")
    part, parts = (int(n) for n in args.part.split("/")) if args.part else (1, 1)
    if not 1 <= part <= parts:
        p.error("--part K/N needs 1 <= K <= N")
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, name in enumerate(ARCHITECTURES):
            if (args.only and args.only not in name) or index % parts != part - 1:
                continue
            try:
                ok, lines = (check_kv if args.kv else check)(args, name, tmp)
            except RuntimeError as e:
                ok, lines = False, ["  " + str(e).strip().replace("\n", "\n  ")]
            print(f"{name}: {'PASS' if ok else 'FAIL'}")
            print("\n".join(lines), flush=True)
            if not ok:
                failed.append(name)
    print("FAIL: " + ", ".join(failed) if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
