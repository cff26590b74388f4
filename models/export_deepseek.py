#!/usr/bin/env python3
"""Exports a tiny DeepSeek-V3-style decoder (multi-head latent attention) with its KV cache:

    python3 models/export_deepseek.py [--cache DIR]
    # prints "tiny_deepseek_kv PATH" and "tiny_deepseek_latent_kv PATH"

Random weights (seed 0), two layers, both with a dense MLP (no mixture of experts). The attention
dimensions keep the real model's proportions at a quarter of the size: qk_nope_head_dim 32,
qk_rope_head_dim 16, v_head_dim 32, kv_lora_rank 128, q_lora_rank 384 (DeepSeek-V3: 128, 64, 128,
512, 1536), interleaved rotary as in the real model.

The cache is exported the way MLA models are usually deployed without absorption (DeepSeek's own
modeling code, transformers 4.x, the Optimum exports): per-head keys [batch, heads, past,
nope + rope] and values [batch, heads, past, v], expanded from the latent by kv_b_proj.
(transformers 5 caches the latent itself; we patch the attention's forward back to the expanded
form so that the compiler's MLA absorption has a cache to compress.)

The second export is the same model as transformers 5 exports it: the cache holds each token's
normed latent (`past_key_values.N.key`, [batch, 1, past, kv_lora_rank]) and its rotated key
(`.value`, [batch, 1, past, qk_rope_head_dim]), and every step expands the whole cache through
kv_b_proj into per-head keys and values; the compiler's MLA absorption takes that form too.

Inputs and outputs are named as in export_kv_models.py. The files go to DIR/<hash of this
script and of export_kv_models.py>/ (default ~/.cache/llmc/models-kv).
"""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile

import onnx
import torch
import transformers
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as mds

LATENT_CACHE_FORWARD = mds.DeepseekV3Attention.forward  # transformers 5's own

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_kv_models  # noqa: E402
import export_test_models  # noqa: E402


def config():
    return transformers.DeepseekV3Config(
        vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=8, q_lora_rank=384, kv_lora_rank=128, qk_nope_head_dim=32, qk_rope_head_dim=16,
        v_head_dim=32, head_dim=16, first_k_dense_replace=2, n_routed_experts=4, num_experts_per_tok=2,
        n_group=1, topk_group=1, max_position_embeddings=2048, rms_norm_eps=1e-6, rope_interleave=True,
        tie_word_embeddings=False, use_cache=True, attn_implementation="eager")


def expanded_cache_forward(self, hidden_states, position_embeddings, attention_mask, cache=None,
                           past_key_values=None, **kwargs):
    """DeepseekV3Attention.forward with the cache holding the expanded per-head keys and values."""
    cache = cache if cache is not None else past_key_values
    batch, seq = hidden_states.shape[:-1]
    q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q = q.view(batch, seq, -1, self.qk_head_dim).transpose(1, 2)
    q_pass, q_rot = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    compressed = self.kv_a_proj_with_mqa(hidden_states)
    latent, k_rot = torch.split(compressed, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    latent = self.kv_a_layernorm(latent).view(batch, 1, seq, self.kv_lora_rank)
    k_rot = k_rot.view(batch, 1, seq, self.qk_rope_head_dim)
    cos, sin = position_embeddings
    q_rot, k_rot = mds.apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
    kv = self.kv_b_proj(latent).view(batch, seq, -1, self.qk_nope_head_dim + self.v_head_dim).transpose(1, 2)
    k_pass, value = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
    key = torch.cat((k_pass, k_rot.expand(-1, k_pass.shape[1], -1, -1)), dim=-1)
    if cache is not None:
        key, value = cache.update(key, value, self.layer_idx)
    query = torch.cat((q_pass, q_rot), dim=-1)
    out, weights = mds.eager_attention_forward(self, query, key, value, attention_mask, dropout=0.0,
                                               scaling=self.scaling)
    return self.o_proj(out.reshape(batch, seq, -1).contiguous()), weights


def export(path, latent_cache=False):
    torch.manual_seed(export_test_models.SEED)
    cfg = config()
    model = transformers.DeepseekV3ForCausalLM(cfg).eval()
    mds.DeepseekV3Attention.forward = LATENT_CACHE_FORWARD if latent_cache else expanded_cache_forward
    if latent_cache:  # one "head": the latent, and the rotated key
        past = ((1, cfg.kv_lora_rank), (1, cfg.qk_rope_head_dim))
    else:
        past = ((cfg.num_attention_heads, cfg.qk_nope_head_dim + cfg.qk_rope_head_dim),
                (cfg.num_attention_heads, cfg.v_head_dim))
    # An example batch of 2: at 1 torch.export holds transformers 5's latent attention to that batch
    # (a slice assignment's copy guards on it).
    export_kv_models.export(model, path, cfg.vocab_size, past=[past] * cfg.num_hidden_layers,
                            batch=2 if latent_cache else 1)
    onnx.checker.check_model(onnx.load(path))
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/llmc/models-kv"))
    args = p.parse_args()
    key = hashlib.sha256(open(__file__, "rb").read() + open(export_kv_models.__file__, "rb").read()).hexdigest()[:12]
    work = os.path.join(args.cache, key)
    for name, latent_cache in (("tiny_deepseek_kv", False), ("tiny_deepseek_latent_kv", True)):
        path = os.path.join(work, name + ".onnx")
        if not os.path.exists(path):
            # Each process exports into a directory of its own, then moves its file into place at
            # once: tests running side by side (ctest -j) may all find the cache empty.
            os.makedirs(work, exist_ok=True)
            own = tempfile.mkdtemp(prefix="export-", dir=work)
            try:
                os.replace(export(os.path.join(own, name + ".onnx"), latent_cache), path)
            finally:
                shutil.rmtree(own, ignore_errors=True)
        print(name, path)


if __name__ == "__main__":
    sys.exit(main())
