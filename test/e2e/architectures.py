#!/usr/bin/env python3
"""Tiny random-weight exports of decoder architectures beyond the test models (Qwen2, Qwen3,
Mistral, Phi-3, Gemma, Gemma 2, GPT-NeoX, Falcon, OPT, Phi, StableLM, Granite), each compiled once
on a dynamic sequence and run at 19 tokens: the CPU against ONNX Runtime, and with --cuda the
CUDA executor against the CPU, in f32 and bf16 (on the CPU emulation where LLMC_CUDA_BACKEND
names it). Each architecture's raised attentions are counted too, so that a pattern that stops
matching shows.

    architectures.py --llmc BIN --llmc-run BIN [--cuda] [--only NAME]

The exports (transformers and torch, about a minute) are cached in ~/.cache/llmc/models-arch/,
keyed by this file.
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

SEQ = 19

# name: (transformers class, config class, extra config, attention blocks llmc-raise-attention raises)
COMMON = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=128, use_cache=False)
ARCHITECTURES = {
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", dict(num_key_value_heads=2), 2),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", dict(num_key_value_heads=2, head_dim=16), 2),
    "mistral": ("MistralForCausalLM", "MistralConfig", dict(num_key_value_heads=2), 2),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(num_key_value_heads=2, pad_token_id=0), 2),
    "gemma": ("GemmaForCausalLM", "GemmaConfig", dict(num_key_value_heads=2, head_dim=16), 2),
    # Softcapped scores: fused_attention has no softcap, so its attention stays unraised.
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config", dict(num_key_value_heads=2, head_dim=16), 0),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(rotary_pct=0.25), 2),
    "falcon": ("FalconForCausalLM", "FalconConfig", dict(new_decoder_architecture=False, multi_query=True), 2),
    "opt": ("OPTForCausalLM", "OPTConfig", dict(ffn_dim=128, word_embed_proj_dim=64), 2),
    "phi": ("PhiForCausalLM", "PhiConfig", dict(partial_rotary_factor=0.5), 2),
    "stablelm": ("StableLmForCausalLM", "StableLmConfig", dict(num_key_value_heads=2), 2),
    "granite": ("GraniteForCausalLM", "GraniteConfig", dict(num_key_value_heads=2), 2),
}


def export(name, path):
    """Through models/export_test_models.py's export (its seed, wrapper and exporter settings)."""
    import transformers

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
    import export_test_models

    model_class, config_class, extra, _ = ARCHITECTURES[name]
    settings = dict(COMMON, **extra)
    if name in ("falcon", "opt"):  # their configs name the MLP width otherwise or not at all
        settings.pop("intermediate_size")
    if name == "falcon":
        settings.pop("max_position_embeddings")

    def factory():
        config = getattr(transformers, config_class)(**settings)
        return getattr(transformers, model_class)(config), ["input_ids"], ["logits"]

    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        export_test_models.export(name, factory, tmp)
        os.replace(os.path.join(tmp, name + ".onnx"), path)


def cached_export(name):
    cache = os.environ.get("LLMC_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "llmc"))
    key = hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:12]
    folder = os.path.join(cache, "models-arch", key)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".onnx")
    if not os.path.exists(path):
        export(name, path)
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
            err = float(np.abs(got.astype(np.float64) - want).max())
            good = err <= atol
            ok = ok and good
            lines.append(f"  {precision} {got_name} vs {want_name}: max abs error {err:.3g} "
                         f"({'ok' if good else 'MISMATCH'}, atol {atol})")
        lines.append(f"  {precision}: {kernels} kernels, {attentions} attention blocks raised")
    return ok, lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--cuda", action="store_true", help="run the CUDA executor too (f32 and bf16 plans)")
    p.add_argument("--only", help="the architectures whose name contains this")
    args = p.parse_args()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ARCHITECTURES:
            if args.only and args.only not in name:
                continue
            try:
                ok, lines = check(args, name, tmp)
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
