#!/usr/bin/env python3
"""Exports the benchmark decoders with their KV cache (the form of export_kv_models.py) and random
weights: a SmolLM2-135M-shaped and a Llama-3.2-1B-shaped model. Only their shapes matter: llmc
compiles them with --random-weights, so the plans carry no weights and the GPU machine fills them
at load.

    python3 models/export_bench_models.py [--cache DIR] [--only smollm2|llama1b]

The files go to DIR/<hash of this script>/NAME.onnx (+ .onnx.data), default
~/.cache/llmc/models-bench; an export already there is reused. Prints `NAME PATH` per model.
"""
import argparse
import hashlib
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_kv_models  # noqa: E402

# The configurations of SmolLM2-135M and Llama-3.2-1B (without Llama 3's rope scaling, which only
# changes the rotary angles).
CONFIGS = {
    "smollm2": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                    rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
    "llama1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                    num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                    rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
}


def config(name):
    return transformers.LlamaConfig(**CONFIGS[name], use_cache=True)


def export(name, cache):
    key = hashlib.sha256(open(__file__, "rb").read() + open(export_kv_models.__file__, "rb").read()).hexdigest()[:12]
    work = os.path.join(cache, key)
    path = os.path.join(work, f"{name}_bench.onnx")
    if not os.path.exists(path):
        os.makedirs(os.path.join(work, "export"), exist_ok=True)
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(config(name)).to(torch.float32)
        tmp = export_kv_models.export(model, os.path.join(work, "export", f"{name}_bench.onnx"),
                                      CONFIGS[name]["vocab_size"], external_data=True)
        os.replace(tmp + ".data", path + ".data")
        os.replace(tmp, path)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/llmc/models-bench"))
    p.add_argument("--only", choices=sorted(CONFIGS))
    args = p.parse_args()
    for name in [args.only] if args.only else sorted(CONFIGS, reverse=True):
        print(name, export(name, args.cache), flush=True)


if __name__ == "__main__":
    sys.exit(main())
