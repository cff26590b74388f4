#!/usr/bin/env python3
"""Exports the small test models (random weights, fixed seed) to ONNX.

    python3 models/export_test_models.py [--out models/] [--only tiny_qwen3 tiny_neox]

Writes tiny_gpt2.onnx, tiny_llama.onnx and tiny_bert.onnx, and tiny_qwen3.onnx and tiny_neox.onnx
(session 24: attention shapes the first three lack), each well under 2 MB, with dynamic batch
and sequence axes, and versions.txt naming the package versions used (not rewritten by --only).
Needs torch, transformers, onnx and onnxscript; the committed files mean tests need none of them.
"""
import argparse
import os

import onnx
import torch
import transformers

OPSET = 18
SEED = 0


def gpt2():
    cfg = transformers.GPT2Config(vocab_size=512, n_positions=128, n_embd=64, n_layer=2, n_head=4,
                                  use_cache=False)
    return transformers.GPT2LMHeadModel(cfg), ["input_ids"], ["logits"]


def llama():
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=128, rms_norm_eps=1e-5, use_cache=False,
                                   tie_word_embeddings=False)
    return transformers.LlamaForCausalLM(cfg), ["input_ids"], ["logits"]


def qwen3():
    """Queries and keys normalized per head (q_norm, k_norm) before the rotary embedding."""
    cfg = transformers.Qwen3Config(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                   max_position_embeddings=128, use_cache=False, tie_word_embeddings=False)
    return transformers.Qwen3ForCausalLM(cfg), ["input_ids"], ["logits"]


def neox():
    """GPT-NeoX: a rotary embedding on a quarter of each head, attention and MLP in parallel."""
    cfg = transformers.GPTNeoXConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, max_position_embeddings=128, use_cache=False,
                                     rotary_pct=0.25)
    return transformers.GPTNeoXForCausalLM(cfg), ["input_ids"], ["logits"]


def bert():
    cfg = transformers.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=128, max_position_embeddings=128)
    return transformers.BertModel(cfg, add_pooling_layer=False), ["input_ids", "attention_mask"], [
        "last_hidden_state"]


class Decoder(torch.nn.Module):
    """Returns only the logits, so the export has one output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False, return_dict=True).logits


class Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).last_hidden_state


def export(name, factory, out_dir):
    torch.manual_seed(SEED)
    model, inputs, outputs = factory()
    model.eval()
    batch, seq = 1, 16
    example = [torch.randint(0, 512, (batch, seq))]
    if "attention_mask" in inputs:
        example.append(torch.ones(batch, seq, dtype=torch.int64))
    dims = {0: torch.export.Dim("batch", max=8), 1: torch.export.Dim("seq", max=128)}
    path = os.path.join(out_dir, f"{name}.onnx")
    # eval() on the wrapper too: torch.export warns of a module in training mode otherwise (the
    # wrapped model is in eval mode, so the exported graph is the same).
    wrapper = (Encoder(model) if "attention_mask" in inputs else Decoder(model)).eval()
    torch.onnx.export(wrapper, tuple(example), path, input_names=inputs, output_names=outputs,
                      opset_version=OPSET, dynamo=True, dynamic_shapes={n: dims for n in inputs},
                      external_data=False)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    print(f"{path}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--only", nargs="*", help="export these models alone (tiny_qwen3 ...)")
    args = parser.parse_args()
    for name, factory in (("tiny_gpt2", gpt2), ("tiny_llama", llama), ("tiny_bert", bert), ("tiny_qwen3", qwen3),
                          ("tiny_neox", neox)):
        if not args.only or name in args.only:
            export(name, factory, args.out)
    if args.only:
        return
    with open(os.path.join(args.out, "versions.txt"), "w") as f:
        f.write(f"torch {torch.__version__}\ntransformers {transformers.__version__}\nonnx {onnx.__version__}\n"
                f"opset {OPSET}, exporter torch.onnx dynamo=True, seed {SEED}\n")


if __name__ == "__main__":
    main()
