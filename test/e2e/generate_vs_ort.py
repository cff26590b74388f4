#!/usr/bin/env python3
"""Generation against ONNX Runtime, step by step: llmc-run generate runs a past/present decoder
plan greedily and writes the logits of every step; ONNX Runtime runs the same export's decode
loop (feeding its present tensors back as past) on the same tokens; the logits must agree.

    generate_vs_ort.py --llmc BIN --llmc-run BIN --model M_kv.onnx [--steps 32] [--atol 1e-4]
                       [--llmc-flag=--mla-factors=multiplied ...] [--as-type bf16|f16|f64 --min-cosine C]

--as-type: llmc compiles the export converted to that type (cuda_vs_cpu.as_float_type: its KV
cache and logits too). In bf16 or f16 ONNX Runtime runs that model's values widened back to f32,
and each step's logits are judged by cosine similarity (--min-cosine), the error being printed
either way; in doubles ONNX Runtime runs the converted model itself, within --atol (the logits
reach the sampler, and --logits-dir, as f32: llmc_generator_logits returns floats).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--prompt-length", type=int, default=7)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--llmc-flag", action="append", default=[], help="an extra llmc flag (repeatable)")
    p.add_argument("--as-type", choices=["bf16", "f16", "f64"], help="compile the export converted to this type")
    p.add_argument("--min-cosine", type=float, default=0.9999, help="with --as-type: per step's logits")
    args = p.parse_args()
    by_cosine = args.as_type in ("bf16", "f16")  # (16-bit logits; doubles are held to --atol)
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, args.vocab, args.prompt_length).tolist()
    with tempfile.TemporaryDirectory() as tmp:
        model = ort_model = args.model
        if args.as_type:
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda"))
            from cuda_vs_cpu import FLOAT_TYPES, as_float_type
            model = ort_model = as_float_type(args.model, tmp, args.as_type)
            if args.as_type != "f64":
                ort_model = as_float_type(model, tmp, "f32", from_type=FLOAT_TYPES[args.as_type])
        plan = os.path.join(tmp, "model.llmc")
        bound = args.prompt_length + args.steps + 8
        subprocess.run([args.llmc, model, "-o", plan, "--input-shape", "batch=1", "--max-shape",
                        f"seq=16,past=0..{bound},total={bound + 16}"] + args.llmc_flag, check=True)
        run = subprocess.run([args.llmc_run, "generate", plan, "--prompt-ids", ",".join(map(str, prompt)),
                              "--max-tokens", str(args.steps + 1), "--ids", "--logits-dir", tmp],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stderr)
            return 1
        generated = [int(t) for t in run.stdout.split()]
        session = ort.InferenceSession(ort_model, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        float_type = np.float64 if args.as_type == "f64" else np.float32
        past = {i.name: np.zeros([1, i.shape[1], 0, i.shape[3]], float_type) for i in session.get_inputs()
                if i.name.startswith("past_key_values")}
        outputs = [o.name for o in session.get_outputs()]
        worst, lowest, length, tokens, wrong_tokens, nonfinite = 0.0, 1.0, 0, list(prompt), 0, 0
        for step in range(args.steps + 1):
            feed_ids = tokens if step == 0 else [generated[step - 1]]
            n = len(feed_ids)
            feeds = {"input_ids": np.array([feed_ids], np.int64),
                     "attention_mask": np.ones((1, length + n), np.int64),
                     "position_ids": np.arange(length, length + n, dtype=np.int64)[None]}
            feeds.update(past)
            result = dict(zip(outputs, session.run(None, {k: v for k, v in feeds.items() if k in names})))
            expected = result["logits"][0, -1]
            got = np.load(os.path.join(tmp, f"step_{step}.npy"))
            if np.all(np.isfinite(got)):
                worst = max(worst, float(np.max(np.abs(got - expected))))
                lowest = min(lowest, float(got @ expected / (np.linalg.norm(got) * np.linalg.norm(expected) + 1e-30)))
            else:  # (max() and min() would pass over a NaN)
                print(f"step {step}: {int(np.sum(~np.isfinite(got)))} of llmc's logits are not finite")
                nonfinite += 1
            # Greedy decoding takes the argmax of its own logits (on the device for a CUDA context).
            if step < len(generated) and int(np.argmax(got)) != generated[step]:
                print(f"step {step}: llmc sampled {generated[step]}, its logits' argmax is {int(np.argmax(got))}")
                wrong_tokens += 1
            if int(np.argmax(expected)) != generated[step] and step < len(generated) and not by_cosine:
                top2 = np.sort(expected)[-2:]
                print(f"step {step}: ONNX Runtime's argmax {int(np.argmax(expected))} vs llmc's {generated[step]} "
                      f"(top two logits {top2[1]:.6f}, {top2[0]:.6f})")
            past = {k.replace("present", "past_key_values"): v for k, v in result.items() if k.startswith("present")}
            length += n
    ok = (lowest >= args.min_cosine if by_cosine else worst <= args.atol) and wrong_tokens == 0 and nonfinite == 0
    flags = f" ({' '.join(args.llmc_flag + (['in ' + args.as_type] if args.as_type else []))})" \
        if args.llmc_flag or args.as_type else ""
    print(f"{os.path.basename(args.model)}{flags}: prefill of {args.prompt_length} tokens and {args.steps} decode steps, "
          f"logits max abs error {worst:.3g}, lowest cosine {lowest:.6f}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
