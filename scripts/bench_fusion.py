#!/usr/bin/env python3
"""CPU latency with and without fusion, and the plan's kernel count, printed in one table:
MiniLM (1x128), SmolLM2 prefill (1x128) and one decode step, and the Llama-style test model.

    python3 scripts/bench_fusion.py [--build build] [--threads 2] [--runs 20]

A "decode step" is one token through the model. There is no KV cache yet (the generation issue
adds it), so the step attends to that token alone; it measures the per-token weight traffic of
the linears, which is what fusion does not change, and the launch overhead, which it does.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))
from real_models import fetched  # noqa: E402


def fetch(name):
    return fetched([name])[name]


def measure(build, model, feeds, extra, fused, threads, runs, tmp, flags=()):
    plan = os.path.join(tmp, "fused.llmc" if fused else "plain.llmc")
    shapes = ",".join(f"{k}={'x'.join(map(str, v.shape))}" for k, v in feeds.items())
    cmd = [os.path.join(build, "tools/llmc/llmc"), model, "-o", plan, "--input-shape", shapes + extra, "--print-stats"]
    if not fused:
        cmd.append("--disable-fusion")
    cmd += list(flags)
    stats = subprocess.run(cmd, check=True, capture_output=True, text=True).stderr
    kernels = int(re.search(r"plan: (\d+) kernels", stats).group(1))
    run = [os.path.join(build, "tools/llmc-run/llmc-run"), plan, "--quiet", "--threads", str(threads), "--benchmark",
           str(runs), "--warmup", "2"]
    for name, value in feeds.items():
        path = os.path.join(tmp, f"{name}.npy")
        np.save(path, value)
        run += ["--input", f"{name}={path}"]
    out = subprocess.run(run, check=True, capture_output=True, text=True).stdout
    return kernels, float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    ids = lambda n, vocab: rng.integers(0, vocab, size=(1, n), dtype=np.int64)  # noqa: E731
    minilm, smollm2 = fetch("minilm"), fetch("smollm2")
    cases = [
        ("minilm", "1x128", minilm, {"input_ids": ids(128, 30522), "attention_mask": np.ones((1, 128), np.int64)},
         6, ""),
        ("smollm2 prefill", "1x128", smollm2, {"input_ids": ids(128, 49152)}, 30, ""),
        ("smollm2 decode step", "1x1", smollm2, {"input_ids": ids(1, 49152)}, 30, ""),
        ("tiny_llama", "1x64", os.path.join(ROOT, "models", "tiny_llama.onnx"), {"input_ids": ids(64, 512)}, 2, ""),
    ]
    print(f"CPU, batch 1, {args.threads} threads, median of {args.runs} runs")
    print(f"{'model':<20} {'input':<7} {'kernels':>14} {'per layer':>10} {'unfused':>11} {'fused':>11} {'speedup':>8}")
    for name, shape, model, feeds, layers, extra in cases:
        with tempfile.TemporaryDirectory() as tmp:
            k_plain, t_plain = measure(args.build, model, feeds, extra, False, args.threads, args.runs, tmp)
            k_fused, t_fused = measure(args.build, model, feeds, extra, True, args.threads, args.runs, tmp)
        print(f"{name:<20} {shape:<7} {k_plain:>6} -> {k_fused:<5} {k_fused / layers:>10.1f} {t_plain:>8.2f} ms "
              f"{t_fused:>8.2f} ms {t_plain / t_fused:>7.2f}x")
    print("per layer: the fused plan's kernels divided by the layer count (embedding, final norm and head included)")


if __name__ == "__main__":
    sys.exit(main())
