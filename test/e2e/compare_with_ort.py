#!/usr/bin/env python3
"""Compiles an ONNX model with llmc, runs it with llmc-run and compares every output with
ONNX Runtime on the same file and inputs.

    compare_with_ort.py --llmc BIN --llmc-run BIN --model M.onnx --shape input_ids=1x16 [--atol 1e-4]
                        [--llmc-arg=--precision=bf16 --min-cosine 0.999] [--as-type bf16|f16]

Integer inputs are drawn from [0, --vocab); an input named *mask* gets ones with the tail of each
row zeroed (padding). Exits non-zero when an output differs by more than the tolerance.

--as-type bf16|f16: llmc compiles the model converted to that type (cuda_vs_cpu.as_float_type:
weights, activations and inputs in 16 bits, as ONNX has them), and ONNX Runtime, whose CPU has
few 16-bit kernels, runs that model's values widened back to f32, on the same (rounded) inputs.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort


def make_inputs(session, shapes, vocab, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in session.get_inputs():
        dims = shapes[inp.name]
        if "int64" in inp.type:
            if "mask" in inp.name:
                value = np.ones(dims, dtype=np.int64)
                if dims[-1] > 2:
                    value[..., -dims[-1] // 4:] = 0
            else:
                value = rng.integers(0, vocab, size=dims, dtype=np.int64)
        else:
            value = rng.standard_normal(dims).astype(np.float64 if "double" in inp.type else np.float32)
        feeds[inp.name] = value
    return feeds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--shape", action="append", required=True, help="NAME=DIMS, e.g. input_ids=1x16")
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-cosine", type=float,
                   help="judge by cosine similarity per output (real weights) instead of --atol; "
                        "the max abs error is printed either way")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--llmc-arg", action="append", default=[],
                   help="an extra llmc option (repeat), e.g. --llmc-arg=--precision=bf16")
    p.add_argument("--as-type", choices=["bf16", "f16"], help="compile the model converted to this type (see above)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.as_type:
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda"))
            from cuda_vs_cpu import FLOAT_TYPES, as_float_type
            args.model = as_float_type(args.model, tmp, args.as_type)
            return compare(args, as_float_type(args.model, tmp, "f32", from_type=FLOAT_TYPES[args.as_type]), tmp)
        return compare(args, args.model, tmp)


def compare(args, ort_model, tmp):
    """llmc on args.model, ONNX Runtime on ort_model (the same model, or its 16-bit values widened)."""
    shapes = {}
    for spec in args.shape:
        name, dims = spec.split("=")
        shapes[name] = [int(d) for d in dims.split("x")]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(ort_model, opts, providers=["CPUExecutionProvider"])
    feeds = make_inputs(session, shapes, args.vocab, args.seed)
    if args.as_type:  # the float inputs as llmc-run rounds them to the model's type
        import ml_dtypes
        narrow = ml_dtypes.bfloat16 if args.as_type == "bf16" else np.float16
        feeds = {k: v.astype(narrow).astype(np.float32) if v.dtype == np.float32 else v for k, v in feeds.items()}
    expected = session.run(None, feeds)

    plan = os.path.join(tmp, "model.llmc")
    shape_arg = ",".join(f"{k}={'x'.join(map(str, v))}" for k, v in shapes.items())
    subprocess.run([args.llmc, args.model, "-o", plan, "--input-shape", shape_arg] + args.llmc_arg, check=True)
    out_dir = os.path.join(tmp, "out")
    cmd = [args.llmc_run, plan, "--quiet", "--atol", str(args.atol), "--rtol", "0", "--output-dir", out_dir,
           "--threads", str(args.threads)]
    for name, value in feeds.items():
        path = os.path.join(tmp, f"in_{name}.npy")
        np.save(path, value)
        cmd += ["--input", f"{name}={path}"]
    if args.min_cosine is None:
        for out, value in zip(session.get_outputs(), expected):
            path = os.path.join(tmp, f"ref_{out.name}.npy")
            np.save(path, value)
            cmd += ["--compare", f"{out.name}={path}"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        print(f"FAIL: {os.path.basename(args.model)} {shape_arg} (llmc-run exit {result.returncode})")
        return 1
    if args.min_cosine is not None:
        ok = True
        for out, ref in zip(session.get_outputs(), expected):
            got = np.load(os.path.join(out_dir, f"{out.name}.npy")).astype(np.float64).ravel()
            ref = ref.astype(np.float64).ravel()
            cosine = float(got @ ref / (np.linalg.norm(got) * np.linalg.norm(ref) + 1e-30))
            err = float(np.max(np.abs(got - ref)))
            good = cosine >= args.min_cosine
            ok = ok and good
            print(f"{out.name}: cosine similarity {cosine:.8f}, max abs error {err:.3g}: {'ok' if good else 'MISMATCH'}")
        if not ok:
            print(f"FAIL: {os.path.basename(args.model)} {shape_arg} (cosine below {args.min_cosine})")
            return 1
        print(f"PASS: {os.path.basename(args.model)} {shape_arg} cosine >= {args.min_cosine}")
        return 0
    print(f"PASS: {os.path.basename(args.model)} {shape_arg} within atol {args.atol}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
