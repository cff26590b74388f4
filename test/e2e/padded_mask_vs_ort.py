#!/usr/bin/env python3
"""A left-padded batch against ONNX Runtime: the attention mask that llmc-raise-attention-mask
turns into is_causal and the attention_mask input itself must hide the same keys as the
export's own mask construction. A prompt step (two sequences, the second left-padded) and then
a decode step that reads the cache the prompt step wrote, each on llmc's CPU executor and on
ONNX Runtime; the logits and the cache rows of every position that is not padding must agree.
Padded query positions are left out: every key of theirs is hidden, where llmc's attention gives
zeros and the export's additive mask an average of all keys; nothing reads them.

    padded_mask_vs_ort.py --llmc BIN --llmc-run BIN (--model M_kv.onnx | --deepseek) [--atol 1e-4] [--llmc-flag=...]

--deepseek: the tiny DeepSeek-V3-style export (models/export_deepseek.py, made on first use),
whose plan keeps a latent cache (llmc-absorb-mla): its caches are compared through the logits.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

PROMPT, PAD, VOCAB = 6, 2, 512
MAX_SHAPE = "batch=2,seq=8,past=0..16,total=24"


def run_llmc(llmc_run, plan, feeds, tmp, tag):
    """Runs the plan on the CPU with `feeds`; returns its outputs by name."""
    out_dir = os.path.join(tmp, tag)
    os.makedirs(out_dir)
    cmd = [llmc_run, plan, "--device", "cpu", "--quiet", "--output-dir", out_dir]
    for name, value in feeds.items():
        path = os.path.join(tmp, f"{tag}-{name}.npy")
        np.save(path, value)
        cmd += ["--input", f"{name}={path}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir)}


def plan_caches(llmc, model, flags, tmp):
    """The plan's past inputs, name -> dims with 'past' and 'batch' symbolic: llmc's own cache
    layout ([length, batch, width], or DeepSeek's latent cache after llmc-absorb-mla)."""
    path = os.path.join(tmp, "signature.mlir")
    subprocess.run([llmc, model, "-o", path, "--emit=mlir", "--max-shape", MAX_SHAPE] + flags, check=True,
                   capture_output=True)
    with open(path) as f:
        signature = next(line for line in f if "func.func @main" in line)
    caches = {}
    for dims, symbols, name in re.findall(r'tensor<([^>]*)x\w+> \{llmc.dim_symbols = \[([^\]]*)\], llmc.name = "'
                                          r'(past_key_values[^"]*)"', signature):
        symbols = [x.strip().strip('"') for x in symbols.split(",")]
        caches[name] = [symbols[i] if d == "?" else int(d) for i, d in enumerate(dims.split("x"))]
    return caches


def heads_major(cache, heads):
    """llmc's cache layout [length, batch, heads * head] (llmc-kv-cache-layout) as the export's
    [batch, heads, length, head]."""
    length, batch, width = cache.shape
    return cache.reshape(length, batch, heads, width // heads).transpose(1, 2, 0, 3)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model")
    which.add_argument("--deepseek", action="store_true", help="the tiny DeepSeek export")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--llmc-flag", action="append", default=[], help="an extra llmc flag (repeatable)")
    args = p.parse_args()
    if args.deepseek:
        from mla_absorption import export  # the same export, cached
        args.model = export()
    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_key_values")]
    rng = np.random.default_rng(0)

    # The prompt step: sequence 1 has PAD padding tokens before its PROMPT - PAD real ones.
    mask = np.ones((2, PROMPT), np.int64)
    mask[1, :PAD] = 0
    ids = rng.integers(0, VOCAB, (2, PROMPT)).astype(np.int64)
    positions = np.where(mask == 1, np.cumsum(mask, -1) - 1, 1).astype(np.int64)  # as transformers does
    ort_feeds = {"input_ids": ids, "attention_mask": mask, "position_ids": positions}
    ort_feeds.update({i.name: np.zeros([2, i.shape[1], 0, i.shape[3]], np.float32) for i in pasts})

    worst, checked = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        caches = plan_caches(args.llmc, args.model, args.llmc_flag, tmp)
        llmc_feeds = {k: v for k, v in ort_feeds.items() if not k.startswith("past_key_values")}
        llmc_feeds.update({name: np.zeros([{"past": 0, "batch": 2}.get(d, d) for d in dims], np.float32)
                           for name, dims in caches.items()})
        plan = os.path.join(tmp, "model.llmc")
        stats = subprocess.run([args.llmc, args.model, "-o", plan, "--max-shape", MAX_SHAPE,
                                "--print-stats"] + args.llmc_flag, check=True, capture_output=True, text=True)
        raised = re.search(r"llmc-raise-attention-mask: (\d+) masks read from an input", stats.stdout + stats.stderr)
        skipped = any("llmc-raise-attention-mask" in flag for flag in args.llmc_flag)
        print(f"attentions reading attention_mask as their mask: {raised.group(1) if raised else 0}")
        if not raised and not skipped:
            print("FAIL: llmc-raise-attention-mask did not replace the mask")
            return 1
        real = mask.astype(bool)  # [batch, position]: the positions compared
        for step in range(2):
            expected = dict(zip(outputs, session.run(None, {k: v for k, v in ort_feeds.items() if k in names})))
            got = run_llmc(args.llmc_run, plan, llmc_feeds, tmp, f"step{step}")
            logits_rows = real[:, -ids.shape[1]:]
            error = float(np.max(np.abs(got["logits"] - expected["logits"])[logits_rows]))
            print(f"step {step}: logits of {int(logits_rows.sum())} positions, max abs error {error:.3g}")
            worst = max(worst, error)
            checked += 1
            for name in outputs:  # the caches the plan keeps in the export's form (not latent ones)
                if not name.startswith("present") or name not in got:
                    continue
                cache = heads_major(got[name], expected[name].shape[1])
                rows = np.broadcast_to(real[:, None, :, None], cache.shape)
                worst = max(worst, float(np.max(np.abs(cache - expected[name])[rows])))
            # The decode step: one new token per sequence; each side reads back its own cache.
            token = np.argmax(expected["logits"][:, -1], -1).astype(np.int64)[:, None]
            mask = np.concatenate([mask, np.ones((2, 1), np.int64)], 1)
            real = mask.astype(bool)
            ids = token
            positions = (np.cumsum(mask, -1) - 1)[:, -1:].astype(np.int64)
            ort_feeds = {"input_ids": ids, "attention_mask": mask, "position_ids": positions}
            llmc_feeds = dict(ort_feeds)
            for i in pasts:
                ort_feeds[i.name] = expected["present" + i.name[len("past_key_values"):]]
            for name in caches:
                llmc_feeds[name] = got["present" + name[len("past_key_values"):]]
    ok = worst <= args.atol and checked == 2
    print(f"{os.path.basename(args.model)}: left-padded batch, prompt and decode step, max abs error {worst:.3g} "
          f"(atol {args.atol}): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
