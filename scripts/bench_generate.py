#!/usr/bin/env python3
"""Generation speed of llmc-run against ONNX Runtime on the same SmolLM2 KV-cache export: batch 1,
a 128-token prompt, 128 new tokens (greedy, no early stop), the same thread count. Prints prompt
tokens/s and time per output token for each.

    python3 scripts/bench_generate.py [--build build] [--threads 2] [--prompt 128] [--new 128]
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


def ort_generate(path, prompt, new, threads):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    past = {n: np.zeros([1, i.shape[1], 0, i.shape[3]], np.float32) for n, i in inputs.items()
            if n.startswith("past_key_values")}

    def step(ids, length):
        feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, length + len(ids)), np.int64),
                 "position_ids": np.arange(length, length + len(ids), dtype=np.int64)[None], **past}
        return dict(zip(outputs, session.run(None, feeds)))

    start = time.perf_counter()
    result = step(prompt, 0)
    prefill = time.perf_counter() - start
    length, token = len(prompt), int(np.argmax(result["logits"][0, -1]))
    start = time.perf_counter()
    for _ in range(new - 1):
        past = {k.replace("present", "past_key_values"): v for k, v in result.items() if k.startswith("present")}
        result = step([token], length)
        length += 1
        token = int(np.argmax(result["logits"][0, -1]))
    decode = time.perf_counter() - start
    return len(prompt) / prefill, 1e3 * decode / (new - 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new", type=int, default=128)
    args = p.parse_args()
    out = subprocess.run([sys.executable, os.path.join(ROOT, "models", "export_kv_models.py"), "--smollm2"],
                         check=True, capture_output=True, text=True).stdout
    # "NAME PATH" lines; a first export also prints the exporter's progress on stdout.
    model = [line.split()[1] for line in out.splitlines() if line.startswith("smollm2_kv ")][-1]
    prompt = np.random.default_rng(0).integers(100, 49000, args.prompt).tolist()
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "smollm2.llmc")
        total = args.prompt + args.new + 16
        subprocess.run([os.path.join(args.build, "tools/llmc/llmc"), model, "-o", plan, "--input-shape", "batch=1",
                        "--max-shape", f"seq={args.prompt},past=0..{total},total={total + args.prompt}"], check=True)
        run = subprocess.run([os.path.join(args.build, "tools/llmc-run/llmc-run"), "generate", plan, "--prompt-ids",
                              ",".join(map(str, prompt)), "--max-tokens", str(args.new), "--ids", "--ignore-eos",
                              "--threads", str(args.threads)], check=True, capture_output=True, text=True)
    m = re.search(r"\(([0-9.]+) tokens/s\).*?([0-9.]+) ms per output token", run.stderr)
    llmc_tps, llmc_tpot = float(m.group(1)), float(m.group(2))
    ort_tps, ort_tpot = ort_generate(model, prompt, args.new, args.threads)
    print(f"SmolLM2-135M-Instruct fp32, batch 1, prompt {args.prompt} tokens, {args.new} new tokens, "
          f"{args.threads} threads; ORT {ort.__version__} running the same export's decode loop")
    print(f"{'':<12} {'prompt tokens/s':>16} {'ms per output token':>20}")
    print(f"{'llmc':<12} {llmc_tps:>16.1f} {llmc_tpot:>20.2f}")
    print(f"{'ONNX Runtime':<12} {ort_tps:>16.1f} {ort_tpot:>20.2f}")


if __name__ == "__main__":
    sys.exit(main())
