#!/usr/bin/env python3
"""Latency of llmc-run against ONNX Runtime: batch 1, the same inputs, the same thread count.
Prints a table with the median and p90 of each and their ratio.

    python3 scripts/bench_vs_ort.py [--build build] [--threads 2] [--runs 200] [--seq 16]
    python3 scripts/bench_vs_ort.py --real [--runs 20]   # the real models, with compile time and plan size

The default set is the three small test models; --real uses the real-weight models from
models/fetch_real_models.py (fetched and cached on first use).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))
from real_models import fetched  # noqa: E402
MODELS = [("tiny_gpt2", ["input_ids"]), ("tiny_llama", ["input_ids"]), ("tiny_bert", ["input_ids", "attention_mask"])]


def ort_latency(path, feeds, threads, runs, warmup=5):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2], times[int(0.9 * (len(times) - 1) + 0.5)]


def llmc_latency(build, path, feeds, threads, runs, tmp):
    plan = os.path.join(tmp, os.path.basename(path) + ".llmc")
    shapes = ",".join(f"{k}={'x'.join(map(str, v.shape))}" for k, v in feeds.items())
    start = time.perf_counter()
    compiled = subprocess.run([os.path.join(build, "tools/llmc/llmc"), path, "-o", plan, "--input-shape", shapes,
                               "--print-stats"], check=True, capture_output=True, text=True)
    llmc_latency.compile_s = time.perf_counter() - start
    llmc_latency.weights = int(re.search(r"weights \((\d+) bytes\)", compiled.stderr).group(1))
    llmc_latency.plan_bytes = os.path.getsize(plan)
    llmc_latency.peak = re.search(r"peak memory: ([0-9.]+ MB \([0-9.]+x)", compiled.stderr).group(1)
    cmd = [os.path.join(build, "tools/llmc-run/llmc-run"), plan, "--quiet", "--threads", str(threads),
           "--benchmark", str(runs), "--warmup", "5"]
    for name, value in feeds.items():
        npy = os.path.join(tmp, f"{name}.npy")
        np.save(npy, value)
        cmd += ["--input", f"{name}={npy}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"median ([0-9.]+) ms, p90 ([0-9.]+) ms", out)
    kernels = re.search(r"(\d+) kernels", out).group(1)
    return float(m.group(1)), float(m.group(2)), kernels


def real_models(args):
    paths = fetched()
    rng = np.random.default_rng(0)
    feeds = {
        "resnet50": {"input_0": rng.standard_normal((1, 224, 224, 3)).astype(np.float32)},
        "minilm": {"input_ids": rng.integers(0, 30522, size=(1, 128), dtype=np.int64),
                   "attention_mask": np.ones((1, 128), dtype=np.int64)},
        "smollm2": {"input_ids": rng.integers(0, 49152, size=(1, 128), dtype=np.int64)},
    }
    print(f"real models, batch 1, {args.threads} threads, {args.runs} runs each; ORT {ort.__version__}")
    print(f"{'model':<9} {'input':<13} {'compile':>8} {'peak mem':>18} {'weights':>9} {'plan':>9} {'kernels':>7}"
          f" {'llmc median':>12} {'ORT median':>11} {'llmc/ORT':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("resnet50", "minilm", "smollm2"):
            f = feeds[name]
            lm, lp, kernels = llmc_latency(args.build, paths[name], f, args.threads, args.runs, tmp)
            om, op = ort_latency(paths[name], f, args.threads, args.runs)
            shape = "x".join(map(str, next(iter(f.values())).shape))
            print(f"{name:<9} {shape:<13} {llmc_latency.compile_s:>7.1f}s {llmc_latency.peak + ')':>18} "
                  f"{llmc_latency.weights / 1e6:>7.1f}MB {llmc_latency.plan_bytes / 1e6:>7.1f}MB {kernels:>7} "
                  f"{lm:>10.2f}ms {om:>9.2f}ms {lm / om:>9.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--real", action="store_true")
    args = p.parse_args()
    if args.real:
        return real_models(args)
    rng = np.random.default_rng(0)
    print(f"batch 1, sequence {args.seq}, {args.threads} threads, {args.runs} runs each; ORT {ort.__version__}")
    print(f"{'model':<12} {'kernels':>7} {'llmc median':>12} {'llmc p90':>9} {'ORT median':>11} {'ORT p90':>8}"
          f" {'llmc/ORT':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, inputs in MODELS:
            path = os.path.join(ROOT, "models", f"{name}.onnx")
            feeds = {"input_ids": rng.integers(0, 512, size=(1, args.seq), dtype=np.int64)}
            if "attention_mask" in inputs:
                feeds["attention_mask"] = np.ones((1, args.seq), dtype=np.int64)
            lm, lp, kernels = llmc_latency(args.build, path, feeds, args.threads, args.runs, tmp)
            om, op = ort_latency(path, feeds, args.threads, args.runs)
            print(f"{name:<12} {kernels:>7} {lm:>10.3f}ms {lp:>7.3f}ms {om:>9.3f}ms {op:>6.3f}ms {lm / om:>9.2f}")


if __name__ == "__main__":
    main()
