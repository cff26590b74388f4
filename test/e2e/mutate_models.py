#!/usr/bin/env python3
"""Robustness: compiles and runs randomly damaged copies of the test models (a dropped or extra
input, a dropped or out-of-range attribute, a truncated initializer). llmc and llmc-run must
succeed or fail with exit code 1 (2 for llmc-run's comparison), never crash.

    mutate_models.py --llmc BIN --llmc-run BIN --models DIR [--rounds N] [--seed S]
"""
import argparse
import copy
import os
import random
import subprocess
import sys
import tempfile

import onnx

SHAPES = {"tiny_gpt2": "input_ids=1x8", "tiny_llama": "input_ids=1x8",
          "tiny_bert": "input_ids=1x8,attention_mask=1x8", "tiny_qwen3": "input_ids=1x8",
          "tiny_neox": "input_ids=1x8"}


def mutate(model, rng):
    node = rng.choice(model.graph.node)
    r = rng.random()
    if r < 0.3 and node.input:
        del node.input[rng.randrange(len(node.input))]
        return f"dropped an input of {node.op_type}"
    if r < 0.5 and node.attribute:
        del node.attribute[rng.randrange(len(node.attribute))]
        return f"dropped an attribute of {node.op_type}"
    if r < 0.7 and node.attribute:
        a = rng.choice(node.attribute)
        if a.type == onnx.AttributeProto.INT:
            a.i = rng.choice([-100, -3, 0, 5, 100])
        elif a.type == onnx.AttributeProto.INTS and a.ints:
            a.ints[0] = rng.choice([-100, 7, 100])
        return f"changed attribute {a.name} of {node.op_type}"
    if r < 0.85:
        node.input.append(node.input[0] if node.input else "x")
        return f"added an input to {node.op_type}"
    init = rng.choice(model.graph.initializer)
    init.raw_data = init.raw_data[: len(init.raw_data) // 2]
    return f"truncated initializer {init.name}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    base = {n: onnx.load(os.path.join(args.models, f"{n}.onnx")) for n in SHAPES}
    crashes = compiled = 0
    with tempfile.TemporaryDirectory() as tmp:
        path, plan = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.llmc")
        for _ in range(args.rounds):
            name = rng.choice(sorted(base))
            model = copy.deepcopy(base[name])
            what = mutate(model, rng)
            onnx.save(model, path)
            c = subprocess.run([args.llmc, path, "-o", plan, "--input-shape", SHAPES[name]], capture_output=True,
                               text=True)
            if c.returncode not in (0, 1):
                crashes += 1
                print(f"CRASH llmc (exit {c.returncode}) on {name}: {what}\n{c.stderr[-500:]}")
                continue
            if c.returncode == 1 and not c.stderr.startswith("llmc: error:"):
                crashes += 1
                print(f"NO ERROR LINE from llmc on {name}: {what}\n{c.stderr[-500:]}")
            if c.returncode == 0:
                compiled += 1
                r = subprocess.run([args.llmc_run, plan, "--random", "--quiet", "--int-max", "512"],
                                   capture_output=True, text=True)
                if r.returncode not in (0, 1):
                    crashes += 1
                    print(f"CRASH llmc-run (exit {r.returncode}) on {name}: {what}\n{r.stderr[-500:]}")
    print(f"{args.rounds} damaged models: {compiled} compiled, {args.rounds - compiled} refused, {crashes} crashes")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
