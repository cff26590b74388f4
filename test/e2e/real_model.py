#!/usr/bin/env python3
"""Fetches one real model (models/fetch_real_models.py, cached) and compares llmc with ONNX
Runtime on it: cosine similarity >= 0.99999 per output, max abs error printed.

    real_model.py --llmc BIN --llmc-run BIN --name resnet50|minilm|smollm2 [--dynamic | --precision bf16 |
                  --as-type bf16]

With --dynamic (the transformers): one plan compiled with --max-shape runs at several sequence
lengths up to the bound against ONNX Runtime (test/e2e/dynamic_shapes.py). With --precision f16 or
bf16: the reduced-precision plan (its weights rounded to 16 bits, computed in f32 on the CPU)
against ONNX Runtime's f32 run, cosine similarity >= 0.999. With --as-type bf16 or f16: the model
converted to that type, as an export of the model in 16 bits has it (compare_with_ort.py --as-type),
against ONNX Runtime on its values widened to f32, cosine similarity >= 0.999.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
from real_models import fetched  # noqa: E402
CASES = {
    "resnet50": (["--shape", "input_0=1x224x224x3"], []),
    "minilm": (["--shape", "input_ids=2x24", "--shape", "attention_mask=2x24"], ["--vocab", "30522"]),
    "smollm2": (["--shape", "input_ids=1x32"], ["--vocab", "49152"]),
}
# Dynamic runs: bound, compile-time fixes, input shapes (SEQ varies), tolerance on raw outputs.
DYNAMIC = {
    "minilm": (["--max-shape", "seq=128", "--fix", "batch=2", "--shapes", "input_ids=2xSEQ", "--shapes",
                "attention_mask=2xSEQ", "--sizes", "1,7,64,128", "--vocab", "30522", "--atol", "1e-4"]),
    "smollm2": (["--max-shape", "seq=128", "--shapes", "input_ids=1xSEQ", "--sizes", "1,7,64,128", "--vocab",
                 "49152", "--atol", "1e-3"]),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--name", required=True, choices=sorted(CASES))
    p.add_argument("--dynamic", action="store_true")
    p.add_argument("--precision", choices=["f16", "bf16"])
    p.add_argument("--as-type", choices=["f16", "bf16"])
    args = p.parse_args()
    model = fetched([args.name])[args.name]
    if args.dynamic:
        return subprocess.run([sys.executable, os.path.join(HERE, "dynamic_shapes.py"), "--llmc", args.llmc,
                               "--llmc-run", args.llmc_run, "--model", model] + DYNAMIC[args.name]).returncode
    shapes, extra = CASES[args.name]
    if args.precision:
        extra = extra + [f"--llmc-arg=--precision={args.precision}"]
    if args.as_type:
        extra = extra + ["--as-type", args.as_type]
    return subprocess.run([sys.executable, os.path.join(HERE, "compare_with_ort.py"), "--llmc", args.llmc,
                           "--llmc-run", args.llmc_run, "--model", model,
                           "--min-cosine", "0.999" if args.precision or args.as_type else "0.99999"]
                          + shapes + extra).returncode


if __name__ == "__main__":
    sys.exit(main())
