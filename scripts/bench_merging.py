#!/usr/bin/env python3
"""CPU latency before and after each weight-merging pass (fusion on throughout), in one run:
Conv/BatchNorm folding on ResNet-50, parallel-linear merging on SmolLM2 (prefill of 128 tokens,
one token), and MLA absorption on the tiny DeepSeek-V3-style model (one decode step at a context
of 1, 256 and 1024 tokens, its KV cache given at that length).

    python3 scripts/bench_merging.py [--build build] [--threads 2] [--runs 20]

"before" is the plan compiled with that pass left out (llmc --skip-pass), "after" the default.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_fusion  # noqa: E402


def deepseek_decode(build, model, context, skip, threads, runs, tmp):
    """One decode step with `context - 1` cached tokens: kernels and median latency."""
    plan = os.path.join(tmp, "deepseek.llmc")
    cmd = [os.path.join(build, "tools/llmc/llmc"), model, "-o", plan, "--input-shape", "batch=1,seq=1",
           "--max-shape", "past=0..1024,total=1025", "--print-stats"] + (["--skip-pass", skip] if skip else [])
    stats = subprocess.run(cmd, check=True, capture_output=True, text=True).stderr
    kernels = int(re.search(r"plan: (\d+) kernels", stats).group(1))
    run = [os.path.join(build, "tools/llmc-run/llmc-run"), plan, "--quiet", "--threads", str(threads), "--benchmark",
           str(runs), "--warmup", "2", "--random", "--int-max", "2", "--dim", f"past={context - 1}",
           "--dim", f"total={context}"]
    out = subprocess.run(run, check=True, capture_output=True, text=True).stdout
    return kernels, float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(bench_fusion.ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    resnet, smollm2 = bench_fusion.fetch("resnet50"), bench_fusion.fetch("smollm2")
    deepseek = subprocess.run([sys.executable, os.path.join(bench_fusion.ROOT, "models", "export_deepseek.py")],
                              check=True, capture_output=True, text=True).stdout.split()[-1]
    cases = [
        ("llmc-fold-conv-affine", "resnet50", "1x224x224x3", resnet,
         {"input_0": rng.standard_normal((1, 224, 224, 3)).astype(np.float32)}),
        ("llmc-merge-parallel-linears", "smollm2 prefill", "1x128", smollm2,
         {"input_ids": rng.integers(0, 49152, (1, 128), dtype=np.int64)}),
        ("llmc-merge-parallel-linears", "smollm2 one token", "1x1", smollm2,
         {"input_ids": rng.integers(0, 49152, (1, 1), dtype=np.int64)}),
    ]
    print(f"CPU, batch 1, {args.threads} threads, median of {args.runs} runs; fusion on in both columns")
    print(f"{'pass':<28} {'model':<20} {'input':<12} {'kernels':>14} {'before':>11} {'after':>11} {'speedup':>8}")
    for skip, name, shape, model, feeds in cases:
        with tempfile.TemporaryDirectory() as tmp:
            k0, t0 = bench_fusion.measure(args.build, model, feeds, "", True, args.threads, args.runs, tmp,
                                          ["--skip-pass", skip])
            k1, t1 = bench_fusion.measure(args.build, model, feeds, "", True, args.threads, args.runs, tmp)
        print(f"{skip:<28} {name:<20} {shape:<12} {k0:>6} -> {k1:<5} {t0:>8.2f} ms {t1:>8.2f} ms {t0 / t1:>7.2f}x")
    for context in (1, 256, 1024):
        with tempfile.TemporaryDirectory() as tmp:
            k0, t0 = deepseek_decode(args.build, deepseek, context, "llmc-absorb-mla", args.threads, args.runs, tmp)
            k1, t1 = deepseek_decode(args.build, deepseek, context, None, args.threads, args.runs, tmp)
        print(f"{'llmc-absorb-mla':<28} {'deepseek decode':<20} {f'context {context}':<12} {k0:>6} -> {k1:<5} "
              f"{t0:>8.3f} ms {t1:>8.3f} ms {t0 / t1:>7.2f}x")


if __name__ == "__main__":
    sys.exit(main())
