#!/usr/bin/env python3
"""CPU latency and kernel count without and with weight merging (Conv/BatchNorm folding and
parallel-linear merging together; fusion on in both), in one table: ResNet-50 (batch 1) and
SmolLM2 (prefill of 128 tokens, one token).

    python3 scripts/bench_merging.py [--build build] [--threads 2] [--runs 20]

The DeepSeek-style MLA model of the weight-merging issue is not exported yet.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_fusion  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(bench_fusion.ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    resnet, smollm2 = bench_fusion.fetch("resnet50"), bench_fusion.fetch("smollm2")
    cases = [
        ("resnet50", "1x224x224x3", resnet, {"input_0": rng.standard_normal((1, 224, 224, 3)).astype(np.float32)}),
        ("smollm2 prefill", "1x128", smollm2, {"input_ids": rng.integers(0, 49152, (1, 128), dtype=np.int64)}),
        ("smollm2 one token", "1x1", smollm2, {"input_ids": rng.integers(0, 49152, (1, 1), dtype=np.int64)}),
    ]
    print(f"CPU, batch 1, {args.threads} threads, median of {args.runs} runs; fusion on in both columns")
    print(f"{'model':<18} {'input':<12} {'kernels':>14} {'unmerged':>11} {'merged':>11} {'speedup':>8}")
    for name, shape, model, feeds in cases:
        with tempfile.TemporaryDirectory() as tmp:
            k0, t0 = bench_fusion.measure(args.build, model, feeds, "", True, args.threads, args.runs, tmp,
                                          ["--disable-merging"])
            k1, t1 = bench_fusion.measure(args.build, model, feeds, "", True, args.threads, args.runs, tmp)
        print(f"{name:<18} {shape:<12} {k0:>6} -> {k1:<5} {t0:>8.2f} ms {t1:>8.2f} ms {t0 / t1:>7.2f}x")


if __name__ == "__main__":
    sys.exit(main())
