#!/usr/bin/env python3
"""A batch of prompts of different lengths (padding masked) generates exactly what each prompt
generates alone: llmc-run generate with several --prompt-ids against one run per prompt.

    batch_vs_single.py --llmc BIN --llmc-run BIN --model M_kv.onnx [--tokens 16]
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--tokens", type=int, default=16)
    args = p.parse_args()
    prompts = ["1,2,3", "9,8,7,6,5,4,3,2,1,0,11,12,13", "42,43", "300"]
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "model.llmc")
        subprocess.run([args.llmc, args.model, "-o", plan, "--max-shape", "batch=4,seq=8,past=0..48,total=56"],
                       check=True)
        base = [args.llmc_run, "generate", plan, "--max-tokens", str(args.tokens), "--ids"]
        batch_cmd = list(base)
        for prompt in prompts:
            batch_cmd += ["--prompt-ids", prompt]
        batch = subprocess.run(batch_cmd, check=True, capture_output=True, text=True).stdout.splitlines()
        single = [subprocess.run(base + ["--prompt-ids", prompt], check=True, capture_output=True,
                                 text=True).stdout.strip() for prompt in prompts]
    wrong = 0
    for prompt, b, s in zip(prompts, batch, single):
        same = b.split() == s.split()
        wrong += not same
        print(f"prompt of {len(prompt.split(','))} tokens: {'same' if same else 'DIFFERENT'} "
              f"({len(b.split())} tokens){'' if same else f': batch {b} vs alone {s}'}")
    print(f"{os.path.basename(args.model)}: batch of {len(prompts)} (chunks of 8, so prompts take several runs): "
          f"{'PASS' if wrong == 0 and len(batch) == len(prompts) else 'FAIL'}")
    return 1 if wrong or len(batch) != len(prompts) else 0


if __name__ == "__main__":
    sys.exit(main())
