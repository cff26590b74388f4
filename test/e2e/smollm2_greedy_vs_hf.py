#!/usr/bin/env python3
"""SmolLM2-135M-Instruct (fp32, KV-cache export) generating greedily with llmc against Hugging Face
transformers' greedy generation from the same GGUF weights: 64 tokens on each of 5 prompts must
agree token for token; where they part, it must be at a near-tie (llmc's top two logits closer
than 1e-4), which the test prints. The 5 prompts (of different lengths) also run as one batch,
which must give each prompt's tokens again (or part at a near-tie).

    smollm2_greedy_vs_hf.py --llmc BIN --llmc-run BIN [--tokens 64]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPTS = [
    "The capital of France is",
    "Write a short poem about the sea.",
    "def fibonacci(n):",
    "Explain why the sky is blue in one paragraph.",
    "List three fruits that are red:",
]


def fetched(script, *flags):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "models", script), *flags], check=True,
                         capture_output=True, text=True).stdout
    # "NAME PATH" lines; a first export also prints the exporter's progress on stdout.
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2 and os.path.exists(line.split()[1]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    model = fetched("export_kv_models.py", "--smollm2")["smollm2_kv"]
    tokenizer = fetched("export_tokenizers.py")["smollm2"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from tokenizers import Tokenizer

    gguf = glob.glob(os.path.join(os.path.dirname(model), "src", "**", "*.gguf"), recursive=True)[0]
    hf = transformers.AutoModelForCausalLM.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf),
                                                           dtype=torch.float32).eval()
    tok = Tokenizer.from_file(tokenizer)
    failures = 0
    singles = []
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "smollm2.llmc")
        subprocess.run([args.llmc, model, "-o", plan, "--max-shape", f"batch={len(PROMPTS)},seq=64,past=0..160,total=224",
                        "--tokenizer", tokenizer], check=True)
        for k, prompt in enumerate(PROMPTS):
            ids = tok.encode(prompt, add_special_tokens=False).ids
            logits_dir = os.path.join(tmp, f"logits{k}")
            os.makedirs(logits_dir)
            run = subprocess.run([args.llmc_run, "generate", plan, "--prompt-ids", ",".join(map(str, ids)),
                                  "--max-tokens", str(args.tokens), "--ids", "--ignore-eos", "--threads",
                                  str(args.threads), "--logits-dir", logits_dir], capture_output=True, text=True,
                                 check=True)
            ours = [int(t) for t in run.stdout.split()]
            with torch.no_grad():
                out = hf.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=args.tokens,
                                  min_new_tokens=args.tokens, eos_token_id=None, pad_token_id=0)
            theirs = out[0, len(ids):].tolist()
            singles.append((ids, ours, logits_dir))
            same = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
            if same is None and len(ours) == len(theirs) == args.tokens:
                print(f"prompt {k + 1}: {args.tokens} of {args.tokens} tokens identical")
                continue
            step = same if same is not None else min(len(ours), len(theirs))
            logits = np.load(os.path.join(logits_dir, f"step_{step}.npy"))
            top2 = np.sort(logits)[-2:]
            gap = float(top2[1] - top2[0])
            near_tie = same is not None and gap < 1e-4
            print(f"prompt {k + 1}: identical for {step} tokens, then llmc {ours[step:step + 1]} vs transformers "
                  f"{theirs[step:step + 1]}; llmc's top two logits differ by {gap:.3g}: "
                  f"{'a near-tie' if near_tie else 'NOT a near-tie'}")
            failures += not near_tie
        # The same prompts as one batch (padding in front of the shorter ones, masked).
        cmd = [args.llmc_run, "generate", plan, "--max-tokens", str(args.tokens), "--ids", "--ignore-eos",
               "--threads", str(args.threads)]
        for ids, _, _ in singles:
            cmd += ["--prompt-ids", ",".join(map(str, ids))]
        batch = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
        for k, ((ids, ours, logits_dir), line) in enumerate(zip(singles, batch)):
            got = [int(t) for t in line.split()]
            step = next((i for i, (a, b) in enumerate(zip(got, ours)) if a != b), None)
            if step is None and len(got) == len(ours):
                print(f"batch, prompt {k + 1} ({len(ids)} tokens): the same {len(got)} tokens as alone")
                continue
            top2 = np.sort(np.load(os.path.join(logits_dir, f"step_{step}.npy")))[-2:] if step is not None else None
            tie = top2 is not None and float(top2[1] - top2[0]) < 1e-4
            print(f"batch, prompt {k + 1}: parts from the single run at token {step}: "
                  f"{'a near-tie' if tie else 'NOT a near-tie'}")
            failures += not tie
    print("PASS" if failures == 0 else f"FAIL: {failures} prompts diverge away from a near-tie")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
