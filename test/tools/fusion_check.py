#!/usr/bin/env python3
"""Compiles a model twice, with fusion and with --disable-fusion (with --merging: weight merging
and --disable-merging), runs both plans on the same random inputs and compares every output.
Prints one line:

    fusion: K fused kernels vs U unfused, max abs diff D: same|DIFFERENT

    fusion_check.py --llmc BIN --llmc-run BIN MODEL.onnx [--atol 1e-5] [--merging] [--dim SYMBOL=N]...
                    [-- extra llmc options]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--merging", action="store_true", help="compare with --disable-merging instead")
    p.add_argument("--dim", action="append", default=[],
                   help="SYMBOL=N: a dynamic dimension's size for the random inputs (repeatable)")
    p.add_argument("model")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.extra = extra
    with tempfile.TemporaryDirectory() as tmp:
        kernels, outputs = {}, {}
        off = "--disable-merging" if args.merging else "--disable-fusion"
        for name, flags in (("fused", []), ("unfused", [off])):
            plan = os.path.join(tmp, name + ".llmc")
            stats = subprocess.run([args.llmc, args.model, "-o", plan, "--print-stats"] + flags + args.extra,
                                   capture_output=True, text=True)
            if stats.returncode != 0:
                sys.stderr.write(stats.stderr)
                return 1
            kernels[name] = int(re.search(r"plan: (\d+) kernels", stats.stderr).group(1))
            out = os.path.join(tmp, name)
            dims = [a for d in args.dim for a in ("--dim", d)]
            run = subprocess.run([args.llmc_run, plan, "--random", "--seed", "7", "--int-max", "4", "--quiet",
                                  "--output-dir", out] + dims, capture_output=True, text=True)
            if run.returncode != 0:
                sys.stderr.write(run.stderr)
                return 1
            outputs[name] = {f: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}
        diff = 0.0
        for f, ref in outputs["unfused"].items():
            got = outputs["fused"][f]
            if got.shape != ref.shape:
                print(f"output {f}: shape {got.shape} vs {ref.shape}")
                return 1
            if ref.size:
                diff = max(diff, float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))))
        same = diff <= args.atol
        print(f"fusion: {kernels['fused']} fused kernels vs {kernels['unfused']} unfused, "
              f"max abs diff {diff:.3g}: {'same' if same else 'DIFFERENT'}")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
