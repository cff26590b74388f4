#!/usr/bin/env python3
"""Compiles an ONNX model once with symbolic dimensions kept dynamic (llmc --max-shape), runs the
one plan at several sizes and compares every output with ONNX Runtime at each; then checks that a
size beyond the bound is refused with a clear error.

    dynamic_shapes.py --llmc BIN --llmc-run BIN --model M.onnx --max-shape seq=64 \\
        --fix batch=1 --shapes input_ids=1xSEQ --sizes 1,7,64 [--atol 1e-4]

In --shapes, SEQ (any symbol in upper case) stands for the size under test.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_with_ort import make_inputs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--max-shape", required=True, help="SYMBOL=N, the bound (one symbol)")
    p.add_argument("--fix", default="", help="symbols fixed at compile time, e.g. batch=1")
    p.add_argument("--shapes", action="append", required=True, help="NAME=DIMS with the symbol in upper case")
    p.add_argument("--sizes", required=True, help="comma-separated sizes to run, e.g. 1,7,64")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--rtol", type=float, default=0.0, help="and this much relative to the reference")
    p.add_argument("--vocab", type=int, default=512)
    args = p.parse_args()

    symbol, bound = args.max_shape.split("=")
    bound = int(bound)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "model.llmc")
        cmd = [args.llmc, args.model, "-o", plan, "--max-shape", args.max_shape]
        if args.fix:
            cmd += ["--input-shape", args.fix]
        subprocess.run(cmd, check=True)

        def run(size):
            shapes = {}
            for spec in args.shapes:
                name, dims = spec.split("=")
                shapes[name] = [size if d == symbol.upper() else int(d) for d in dims.split("x")]
            feeds = make_inputs(session, shapes, args.vocab, seed=size)
            cmd = [args.llmc_run, plan, "--quiet", "--atol", str(args.atol), "--rtol", str(args.rtol)]
            for name, value in feeds.items():
                path = os.path.join(tmp, f"in_{name}.npy")
                np.save(path, value)
                cmd += ["--input", f"{name}={path}"]
            return feeds, cmd

        for size in [int(s) for s in args.sizes.split(",")]:
            feeds, cmd = run(size)
            expected = session.run(None, feeds)
            for out, value in zip(session.get_outputs(), expected):
                path = os.path.join(tmp, f"ref_{out.name}.npy")
                np.save(path, value)
                cmd += ["--compare", f"{out.name}={path}"]
            result = subprocess.run(cmd, capture_output=True, text=True)
            errors = re.findall(r"max abs error ([0-9.e+-]+)", result.stdout)
            worst = max((float(e) for e in errors), default=float("nan"))
            status = "ok" if result.returncode == 0 else "FAIL"
            failures += result.returncode != 0
            print(f"{os.path.basename(args.model)} {symbol}={size}: max abs error {worst:.3g} {status}")
            if result.returncode != 0:
                sys.stdout.write(result.stdout + result.stderr)

        # Beyond the bound: a clear error that names the symbol and the bound, no crash.
        _, cmd = run(bound + 1)
        result = subprocess.run(cmd, capture_output=True, text=True)
        clear = result.returncode == 1 and f"'{symbol}'" in result.stderr and f"1..{bound}" in result.stderr
        print(f"{os.path.basename(args.model)} {symbol}={bound + 1} (beyond the bound): "
              f"{'refused: ' + result.stderr.strip() if clear else 'NOT REFUSED CLEARLY'}")
        failures += not clear
    print("PASS" if failures == 0 else f"FAIL: {failures} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
