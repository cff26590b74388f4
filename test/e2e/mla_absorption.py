#!/usr/bin/env python3
"""DeepSeek MLA absorption (llmc-absorb-mla) on the tiny DeepSeek-V3-style export
(models/export_deepseek.py, exported into the cache on first use):

1. the report: both layers absorbed, KV-cache bytes per token before and after equal to what the
   export's cache inputs and the plan's latent cache inputs hold;
2. numerics: a prefill and 32 greedy decode steps against ONNX Runtime on the original export
   (logits max abs error <= 1e-4; the 7-token prompt runs latent_attention expanded, the decode
   steps absorbed, by the kernel's cost count) for the absorbed plan with W_UK/W_UV chosen by the cost
   estimate, kept separate, and multiplied out, and for the plan without the pass;
3. the generator on the latent cache: a batch of prompts of different lengths gives each prompt's
   tokens alone;
4. the export converted to bf16 (cuda_vs_cpu.as_float_type): absorbed too, its latent cache in
   bf16, and its generation against ONNX Runtime on the same values widened to f32 (cosine of
   every step's logits >= 0.9999, generate_vs_ort.py --as-type), absorbed and not;
5. the same model as transformers 5 exports it (tiny_deepseek_latent_kv: the caches hold the
   latents and the rotated keys, kv_b_proj expands the whole cache every step): absorbed into
   one latent cache per layer, and its generation against ONNX Runtime, absorbed and not; since
   session 34 its batch too (a dynamic batch: a batch of prompts gives each prompt's tokens).

    mla_absorption.py --llmc BIN --llmc-run BIN
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def export(name="tiny_deepseek_kv"):
    """The path of export `name` (tiny_deepseek_kv, tiny_deepseek_latent_kv)."""
    # Without the AddressSanitizer runtime that the CUDA emulation's tests preload (cuda_vs_cpu.py
    # exports through here): torch does not load under it, and a fresh cache needs the export.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    out = subprocess.run([sys.executable, os.path.join(ROOT, "models", "export_deepseek.py")], check=True,
                         capture_output=True, text=True, env=env).stdout
    return re.search(rf"^{name} (.*)$", out, re.M).group(1)


def generates_as_ort(args, model, flags, check):
    """generate_vs_ort.py on `model` with llmc flags `flags` and its own options `check`; prints
    its verdict and returns whether it passed."""
    run = subprocess.run([sys.executable, os.path.join(HERE, "generate_vs_ort.py"), "--llmc", args.llmc,
                          "--llmc-run", args.llmc_run, "--model", model, "--steps", "32"] + check +
                         [f"--llmc-flag={f}" for f in flags], capture_output=True, text=True)
    print(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr)
    return run.returncode == 0


def batch_as_single(args, model):
    """batch_vs_single.py on `model`: a batch of prompts of different lengths generates what each
    prompt generates alone."""
    run = subprocess.run([sys.executable, os.path.join(HERE, "batch_vs_single.py"), "--llmc", args.llmc,
                          "--llmc-run", args.llmc_run, "--model", model], capture_output=True, text=True)
    print(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr)
    return run.returncode == 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    args = p.parse_args()
    model = export()
    failures = []

    # 1. What the export caches per token and layer, from its past inputs [batch, heads, past, width].
    graph = onnx.load(model, load_external_data=False).graph
    dims = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in graph.input}
    layers = sorted({int(n.split(".")[1]) for n in dims if n.startswith("past_key_values.")})
    before = {i: 4 * sum(dims[f"past_key_values.{i}.{kv}"][1] * dims[f"past_key_values.{i}.{kv}"][3]
                         for kv in ("key", "value")) for i in layers}
    stats = subprocess.run([args.llmc, model, "--emit=mlir", "-o", "-", "--print-stats", "--input-shape", "batch=1",
                            "--max-shape", "seq=16,past=0..64,total=80"], check=True, capture_output=True, text=True)
    # What the plan caches: its latent inputs [past, batch, width].
    after = {int(m.group(2)): 4 * int(m.group(1)) for m in re.finditer(
        r'tensor<\?x1x(\d+)xf32> \{[^}]*llmc.name = "past_key_values\.(\d+)\.latent"', stats.stdout)}
    print(stats.stderr[stats.stderr.index("llmc-absorb-mla: layer"):stats.stderr.index("after the pipeline")].strip())
    if f"llmc-absorb-mla: {len(layers)} MLA attentions absorbed" not in stats.stderr:
        failures.append("not every layer was absorbed")
    if sorted(after) != layers or "past_key_values.0.value" in stats.stdout:
        failures.append(f"the plan's caches are not one latent per layer: {after}")
    reported = re.search(r"KV cache per token, \d+ MLA layers: (\d+) B -> (\d+) B", stats.stderr)
    want = (sum(before.values()), sum(after.values()))
    if not reported or (int(reported.group(1)), int(reported.group(2))) != want:
        failures.append(f"reported KV bytes {reported and reported.groups()} differ from the shapes' {want}")
    else:
        print(f"KV cache per token: export {want[0]} B, plan {want[1]} B ({want[0] / want[1]:.2f}x), as reported")

    # 2. Against ONNX Runtime.
    for flags in ([], ["--mla-factors=separate"], ["--mla-factors=multiplied"], ["--skip-pass=llmc-absorb-mla"]):
        if not generates_as_ort(args, model, flags, ["--atol", "1e-4"]):
            failures.append(f"generation with {flags or 'defaults'} differs from ONNX Runtime")
    # 3. A batch of prompts of different lengths generates what each prompt generates alone.
    if not batch_as_single(args, model):
        failures.append("a batch generates other tokens than its prompts alone")
    # 4. In bf16: absorbed, computed in f32 and rounded once to bf16 (W_UK, W_UV and the projections
    # they merge into), the latent cache in bf16.
    sys.path.insert(0, os.path.join(ROOT, "test", "cuda"))
    from cuda_vs_cpu import as_float_type
    with tempfile.TemporaryDirectory() as tmp:
        bf16 = as_float_type(model, tmp, "bf16")
        stats = subprocess.run([args.llmc, bf16, "--emit=mlir", "-o", "-", "--print-stats", "--input-shape", "batch=1",
                                "--max-shape", "seq=16,past=0..64,total=80"], check=True, capture_output=True,
                               text=True)
        latent = re.findall(r'tensor<\?x1x\d+xbf16> \{[^}]*llmc.name = "past_key_values\.\d+\.latent"', stats.stdout)
        if f"llmc-absorb-mla: {len(layers)} MLA attentions absorbed" not in stats.stderr or len(latent) != len(layers):
            failures.append("the bf16 export's layers were not all absorbed into bf16 latent caches")
    for flags in ([], ["--skip-pass=llmc-absorb-mla"]):
        if not generates_as_ort(args, model, flags, ["--as-type", "bf16"]):
            failures.append(f"generation in bf16 with {flags or 'defaults'} differs from ONNX Runtime")
    # 5. The same model as transformers 5 exports it (its caches the latents and the rotated keys,
    # expanded through kv_b_proj every step): absorbed into one latent cache per layer, of the
    # two caches' bytes, and generating as ONNX Runtime does, absorbed (W_UK/W_UV by the cost
    # estimate and multiplied out) and not.
    latent_model = export("tiny_deepseek_latent_kv")
    stats = subprocess.run([args.llmc, latent_model, "--emit=mlir", "-o", "-", "--print-stats", "--input-shape",
                            "batch=1", "--max-shape", "seq=16,past=0..64,total=80"], check=True, capture_output=True,
                           text=True)
    latent = re.findall(r'tensor<\?x1x(\d+)xf32> \{[^}]*llmc.name = "past_key_values\.\d+\.latent"', stats.stdout)
    print(stats.stderr[stats.stderr.index("llmc-absorb-mla: layer"):stats.stderr.index("after the pipeline")].strip())
    if (f"llmc-absorb-mla: {len(layers)} MLA attentions absorbed" not in stats.stderr or latent != ["144"] * len(layers)
            or "past_key_values.0.value" in stats.stdout):
        failures.append(f"the transformers 5 export's caches are not one latent of 128 + 16 per layer: {latent}")
    for flags in ([], ["--mla-factors=multiplied"], ["--skip-pass=llmc-absorb-mla"]):
        if not generates_as_ort(args, latent_model, flags, ["--atol", "1e-4"]):
            failures.append(f"the transformers 5 export's generation with {flags or 'defaults'} differs from ONNX "
                            "Runtime")
    if not batch_as_single(args, latent_model):
        failures.append("the transformers 5 export's batch generates other tokens than its prompts alone")
    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else "FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
