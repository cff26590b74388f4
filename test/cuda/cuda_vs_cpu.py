#!/usr/bin/env python3
"""Whole plans on the CUDA executor against the CPU executor, on the same seeded random inputs.

    cuda_vs_cpu.py prepare --llmc BIN --llmc-run BIN --out DIR   # plans and CPU outputs (no GPU needed)
    cuda_vs_cpu.py check --llmc-run BIN --dir DIR [--atol 1e-3]  # the same plans on CUDA, compared
    cuda_vs_cpu.py both --llmc BIN --llmc-run BIN                # prepare into a temporary DIR, then check

`check` exits 77 (CTest: skipped) when there is no CUDA device. tools/gpu-check.sh carries a
prepared DIR to the GPU machine. The plans: the tiny Llama and GPT-2 decoders as llmc compiles
them by default (merged QKV with packed attention, SwiGLU linears) and without parallel-linear
merging, sequence 16.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = [(m, flags) for m in ("tiny_llama", "tiny_gpt2") for flags in ([], ["--skip-pass", "llmc-merge-parallel-linears"])]
SKIP = 77


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    cases = []
    for model, flags in CASES:
        name = model + ("" if not flags else "-unmerged")
        plan = os.path.join(args.out, name + ".llmc")
        subprocess.run([args.llmc, os.path.join(ROOT, "models", model + ".onnx"), "-o", plan,
                        "--input-shape", "input_ids=1x16"] + flags, check=True)
        ref = os.path.join(args.out, name + "-cpu")
        subprocess.run([args.llmc_run, plan, "--random", "--seed", "1", "--int-max", "512", "--quiet",
                        "--output-dir", ref], check=True, capture_output=True)
        cases.append({"name": name, "plan": os.path.basename(plan), "ref": os.path.basename(ref)})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(cases, f)
    print(f"prepared {len(cases)} plans with their CPU outputs in {args.out}")
    return 0


def check(args):
    with open(os.path.join(args.dir, "cases.json")) as f:
        cases = json.load(f)
    failed = 0
    for case in cases:
        for graphs in (True, False):
            # Graphs on: the first run captures, the benchmark runs replay; one graph in all.
            flags = ["--benchmark", "3", "--warmup", "1"] if graphs else ["--no-cuda-graphs"]
            run = subprocess.run([args.llmc_run, os.path.join(args.dir, case["plan"]), "--device", "cuda", "--random",
                                  "--seed", "1", "--int-max", "512", "--quiet", "--compare-dir",
                                  os.path.join(args.dir, case["ref"]), "--atol", str(args.atol), "--rtol",
                                  str(args.atol)] + flags, capture_output=True, text=True)
            if "no CUDA device" in run.stderr:
                print(run.stderr.strip())
                print("no CUDA device: skipped, not passed")
                return SKIP
            ok = run.returncode == 0 and (not graphs or "CUDA graphs: 1 captured" in run.stdout)
            print(f"{case['name']} (graphs {'on' if graphs else 'off'}): {'PASS' if ok else 'FAIL'}")
            print("  " + (run.stdout + run.stderr).strip().replace("\n", "\n  "))
            failed += not ok
    print("PASS" if not failed else f"FAIL ({failed} of {2 * len(cases)} runs)")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("--llmc", required=True)
    a.add_argument("--llmc-run", required=True)
    a.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--llmc-run", required=True)
    c.add_argument("--dir", required=True)
    c.add_argument("--atol", type=float, default=1e-3)
    b = sub.add_parser("both")
    b.add_argument("--llmc", required=True)
    b.add_argument("--llmc-run", required=True)
    b.add_argument("--atol", type=float, default=1e-3)
    args = p.parse_args()
    if args.mode == "both":
        with tempfile.TemporaryDirectory() as tmp:
            args.out = args.dir = tmp
            return prepare(args) or check(args)
    return prepare(args) if args.mode == "prepare" else check(args)


if __name__ == "__main__":
    sys.exit(main())
