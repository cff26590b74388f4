#!/usr/bin/env python3
"""The GPU benchmark of issue 7: llmc against PyTorch eager and torch.compile on decoders with
random weights, bf16, batch 1. Printed, never asserted.

    gpu_benchmark.py prepare --llmc BIN --out DIR     # build machine: exports, plans (no weights)
    gpu_benchmark.py run --llmc-run BIN --dir DIR     # GPU machine: llmc, then PyTorch; a table
    gpu_benchmark.py torch-smoke [--compiled]         # here: the PyTorch side on a tiny model, CPU

Per model (a SmolLM2-135M-shaped and a Llama-3.2-1B-shaped decoder, models/export_bench_models.py):
time to first token for a 512-token prompt, then time per output token over 128 tokens, for llmc
with and without CUDA graphs (and with its decode linears on cuBLASLt instead of its own GEMV),
PyTorch eager and torch.compile(mode="reduce-overhead") (transformers' compiled generation over a
static cache: the prompt eager, each decode step compiled). The share of the HBM roofline is the
bytes one decode step must read (the bf16 weights of every linear and of the LM head, and the KV
cache at the mean context) over the time per token and the GPU's HBM bandwidth: the H200's 4.8 TB/s,
as issue 7 defines it, or the datasheet figure of the H100 the device tool may lend instead
(hbm_bytes_per_s), which the header names.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))

PROMPT, NEW_TOKENS, HBM_BYTES_PER_S = 512, 128, 4.8e12
# Datasheet HBM bandwidths by the name nvidia-smi gives, most specific first; anything else is
# taken as an H200.
HBM_BY_NAME = [("H200", 4.8e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12)]
# The plan's bounds: the whole prompt in one chunk, the cache up to prompt + new tokens and more.
SHAPES = ["--input-shape", "batch=1", "--max-shape", "seq=512,past=0..1024,total=1536"]


def model_bytes(cfg):
    """Bytes one decode step reads: (weights of the linears + LM head, KV cache per context token), bf16."""
    h, layers, heads, kv = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head = h // heads
    per_layer = h * heads * head + 2 * h * kv * head + heads * head * h + 3 * h * cfg["intermediate_size"]
    weights = 2 * (layers * per_layer + cfg["vocab_size"] * h)
    kv_per_token = 2 * layers * 2 * kv * head
    return weights, kv_per_token


def prepare(args):
    import export_bench_models

    os.makedirs(args.out, exist_ok=True)
    models = {}
    for name, cfg in export_bench_models.CONFIGS.items():
        onnx_path = export_bench_models.export(name, args.cache)
        plan = os.path.join(args.out, f"{name}.llmc")
        # Only the last position's logits, as transformers' generate computes them for a prompt.
        subprocess.run([args.llmc, onnx_path, "-o", plan, "--random-weights", "--precision", "bf16", "--target", "cuda",
                        "--cuda-arch", "sm_90a", "--last-position", "logits"] + SHAPES, check=True)
        models[name] = {"plan": os.path.basename(plan), "config": cfg}
        print(f"{name}: {plan} ({os.path.getsize(plan) // 1024} KB)")
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(models, f, indent=1)
    return 0


TIMING = re.compile(r"prompt: (\d+) tokens in ([\d.]+) ms .*first token after ([\d.]+) ms; (\d+) tokens generated, "
                    r"([\d.]+) ms per output token")


def prompt_ids(vocab, n=PROMPT):
    """The benchmark's prompt: n token ids spread over the vocabulary (llmc, PyTorch and the
    kernel trace of tools/gpu-check.sh profile all use these)."""
    return [(i * 7919 + 13) % vocab for i in range(n)]


# Rows of the executor with graphs and an environment variable set, to compare: the decode
# attention not prefetching the output projection's weight to L2; the GEMV with at most the blocks
# the GPU holds at once; a decode step's consecutive GEMVs chained in one cooperative launch, of
# as many blocks as the GPU holds (4 per multiprocessor) or of one per multiprocessor (an H200's
# 132: fewer blocks to wait for at each grid barrier), or with each layer's attention starting
# its chain (a layer one launch); the prompt's attention with each block of query rows taking all
# of its keys (its time to first token against the default's, where they are split).
ENV_ROWS = [("llmc, graphs, no L2 prefetch", {"LLMC_CUDA_PREFETCH": "0"}),
            ("llmc, graphs, persistent GEMV", {"LLMC_CUDA_GEMV_BLOCKS": "resident"}),
            ("llmc, graphs, chained GEMVs", {"LLMC_CUDA_GEMV_CHAIN": "resident"}),
            ("llmc, graphs, chained, 132 blocks", {"LLMC_CUDA_GEMV_CHAIN": "132"}),
            ("llmc, graphs, chained layers", {"LLMC_CUDA_GEMV_CHAIN": "resident", "LLMC_CUDA_CHAIN_ATTENTION": "1"}),
            ("llmc, graphs, prompt attention unsplit", {"LLMC_CUDA_SPLIT_PROMPT_ATTENTION": "0"})]


# What each ENV_ROWS row decides (docs/cuda.md, "Not done"), printed under the table so that a GPU
# run's few minutes end in decisions rather than in a table to read: (row, column compared with the
# default row's, threshold, what to change where the row is below the threshold for every model,
# where it is not). A switch off by default becomes the default where its row is at least 3%
# faster per token for both models; the L2 prefetch (on) goes off on the same terms; the prompt
# attention's split keys (on) go off where the unsplit row's time to first token is below the
# default's for both. Each is taken only with every cuda_vs_cpu plan passing in the same run.
DECISIONS = [
    ("llmc, graphs, no L2 prefetch", "per token", 0.97,
     "turn the L2 prefetch off: `prefetch = false` in runtime/cuda/CudaExecutor.cpp", "keep the L2 prefetch on"),
    ("llmc, graphs, persistent GEMV", "per token", 0.97,
     "make the persistent GEMV the default: `gemvBlocks = -1` in runtime/cuda/Executor.h", "keep it off"),
    ("llmc, graphs, chained GEMVs", "per token", 0.97,
     "make the chained GEMVs the default: `gemvChain = -1` in runtime/cuda/Executor.h", "keep them off"),
    ("llmc, graphs, chained, 132 blocks", "per token", 0.97,
     "chain with a block per multiprocessor (132 here): `gemvChain` from the device's multiprocessor count",
     "keep them off"),
    ("llmc, graphs, chained layers", "per token", 0.97,
     "chain each layer with its attention: `gemvChain = -1` and `chainAttention = true` in runtime/cuda/Executor.h",
     "keep them off"),
    ("llmc, graphs, prompt attention unsplit", "TTFT", 1.0,
     "stop splitting the prompt attention's keys: `splitPromptAttention = false` in runtime/cuda/Executor.h",
     "keep the split keys on"),
]


def verdicts(rows, names):
    """Lines saying, for each DECISIONS row, its ratios to the default row per model and what they
    decide; rows are run()'s (model, label, TTFT, ms/token, share, MB) or (model, label, error)."""
    measured = {(row[0], row[1]): row for row in rows if len(row) == 6}
    lines = []
    for label, column, threshold, below, otherwise in DECISIONS:
        ratios, missing = [], []
        for name in names:
            row, default = measured.get((name, label)), measured.get((name, "llmc, CUDA graphs"))
            at = 2 if column == "TTFT" else 3
            if not row or not default or default[at] <= 0:
                missing.append(name)
            else:
                ratios.append((name, row[at] / default[at]))
        shown = ", ".join(f"{name} {ratio:.3f}x" for name, ratio in ratios)
        if missing:
            verdict = "no decision: no figures for " + ", ".join(missing)
        elif all(ratio < threshold for _, ratio in ratios):
            verdict = below
        else:
            verdict = otherwise
        lines.append(f"{label} ({column} vs default{': ' + shown if shown else ''}; below {threshold} for every "
                     f"model decides): {verdict}")
    return lines


def run_llmc(llmc_run, plan, graphs, vocab, gemv=True, overlap=True, ahead=True, env=None, repeat=3, timeout=240):
    """(TTFT ms, ms per output token, device MB, note) of the last of `repeat` generations, or an error
    string. The note says how many CUDA graphs were captured over all of them (with graphs on: the
    prompt's, then one that every decode step replays). gemv=False runs every linear on cuBLASLt;
    overlap=False launches the decode kernels without programmatic dependent launch; ahead=False waits for
    each token before starting the next decode step (--decode-ahead off); env: the executor's variables to
    compare with (ENV_ROWS)."""
    ids = ",".join(map(str, prompt_ids(vocab)))
    cmd = [llmc_run, "generate", plan, "--device", "cuda", "--prompt-ids", ids, "--max-tokens", str(NEW_TOKENS + 1),
           "--ids", "--ignore-eos", "--repeat", str(repeat)] + ([] if graphs else ["--no-cuda-graphs"]) + \
          ([] if gemv else ["--no-cuda-gemv"]) + ([] if overlap else ["--no-cuda-overlap"]) + \
          ([] if ahead else ["--decode-ahead", "off"])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s"
    found = TIMING.findall(out.stderr)
    if out.returncode != 0 or not found:
        return (out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]
    _, _, first, _, per_token = found[-1]
    memory = re.search(r"device memory: ([\d.]+) MB", out.stderr)
    captured = re.findall(r"CUDA graphs captured: (\d+)", out.stderr)
    nodes = re.findall(r"nodes of the decode steps' graph \(else of the last captured\): (\d+)", out.stderr)
    note = f"{captured[-1]} CUDA graphs captured in {repeat} generations" if graphs and captured else ""
    if graphs and nodes:
        note += f", {nodes[-1]} nodes in the decode step's"
    return float(first), float(per_token), float(memory.group(1)) if memory else 0.0, note


def run_torch(cfg, compiled, device="cuda", prompt=PROMPT, new_tokens=NEW_TOKENS, repeat=2):
    """(TTFT ms, ms per output token, peak MB allocated, note "") of transformers' LlamaForCausalLM with
    random weights, greedy."""
    import torch
    import transformers

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):  # initialized where it runs: seconds, not a minute on the host
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)).to(dtype=dtype).eval()
    kwargs = dict(do_sample=False, pad_token_id=0)
    if compiled:
        # transformers' own compiled generation: the prompt runs eager, every decode step through
        # torch.compile(mode="reduce-overhead") (CUDA graphs) over a static cache. Compiling
        # model.forward ourselves does not work with transformers 5's static cache: its length
        # counter is an input that the graphs mutate, and a replay overwrites the outputs that
        # generate still reads (seen on the H200 on 2026-12-04).
        config = transformers.CompileConfig(fullgraph=True, mode="reduce-overhead")
        config._compile_all_devices = device != "cuda"  # torch-smoke --compiled: the same path on the CPU
        kwargs.update(cache_implementation="static", compile_config=config)
    ids = torch.tensor([prompt_ids(cfg["vocab_size"], prompt)], device=device)
    mask = torch.ones_like(ids)

    def timed(n):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, **kwargs)
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1000.0

    for _ in range(repeat):  # warm up: compilation, CUDA graph recording, allocator
        timed(new_tokens + 1)
    first = min(timed(1) for _ in range(3))
    total = timed(new_tokens + 1)
    peak = torch.cuda.max_memory_allocated() / 1e6 if device == "cuda" else 0.0
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return first, (total - first) / new_tokens, peak, ""


def gpu_present():
    """Whether nvidia-smi finds a GPU (without one, every row would fail the same way)."""
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def hbm_bytes_per_s():
    """(bytes per second, the GPU's name) for the HBM share: by nvidia-smi's name of GPU 0."""
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        name = ""
    for part, rate in HBM_BY_NAME:
        if part in name:
            return rate, name
    return HBM_BYTES_PER_S, (name or "an unknown GPU") + ", taken as an H200"


def run(args):
    if not gpu_present():
        print("no GPU: the benchmark is skipped", flush=True)
        return 77
    hbm, gpu = hbm_bytes_per_s()
    print(f"== HBM share against {hbm / 1e12:.2f} TB/s ({gpu})", flush=True)
    with open(os.path.join(args.dir, "bench.json")) as f:
        models = json.load(f)
    names = args.models.split(",")
    step_bytes = {}
    for name in names:
        weights, kv_per_token = model_bytes(models[name]["config"])
        step_bytes[name] = weights + kv_per_token * (PROMPT + NEW_TOKENS // 2)
        print(f"== {name}: {weights / 1e9:.2f} GB of bf16 weights read per token, "
              f"{kv_per_token * (PROMPT + NEW_TOKENS // 2) / 1e6:.1f} MB of KV cache at the mean context", flush=True)
    # torch.compile takes minutes: its rows come last, so that a time limit cuts only them.
    tasks = []
    for name in names:
        plan, vocab = os.path.join(args.dir, models[name]["plan"]), models[name]["config"]["vocab_size"]
        tasks.append((name, "llmc, CUDA graphs", lambda plan=plan, vocab=vocab: run_llmc(args.llmc_run, plan, True, vocab)))
        tasks.append((name, "llmc, no graphs", lambda plan=plan, vocab=vocab: run_llmc(args.llmc_run, plan, False, vocab)))
        tasks.append((name, "llmc, graphs, no overlap",
                      lambda plan=plan, vocab=vocab: run_llmc(args.llmc_run, plan, True, vocab, overlap=False)))
        tasks.append((name, "llmc, graphs, no decode ahead",
                      lambda plan=plan, vocab=vocab: run_llmc(args.llmc_run, plan, True, vocab, ahead=False)))
        for label, env in ENV_ROWS:
            tasks.append((name, label, lambda plan=plan, vocab=vocab, env=env: run_llmc(args.llmc_run, plan, True, vocab,
                                                                                      env=env)))
        tasks.append((name, "llmc, graphs, cuBLASLt only",
                      lambda plan=plan, vocab=vocab: run_llmc(args.llmc_run, plan, True, vocab, gemv=False)))
        if not args.no_torch:
            tasks.append((name, "PyTorch eager", lambda cfg=models[name]["config"]: run_torch(cfg, False)))
    if not args.no_torch and not args.no_compile:
        for name in names:
            tasks.append((name, "torch.compile reduce-overhead", lambda cfg=models[name]["config"]: run_torch(cfg, True)))
    rows = []
    for name, label, fn in tasks:
        started = time.perf_counter()
        try:
            result = fn()
        except Exception as e:  # a benchmark row that failed is reported, not fatal
            result = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if isinstance(result, str):
            rows.append((name, label, result))
            print(f"{name}, {label}: FAILED: {result}", flush=True)
            continue
        first, per_token, memory, note = result
        share = step_bytes[name] / (per_token / 1000.0) / hbm if per_token > 0 else 0.0
        rows.append((name, label, first, per_token, share, memory))
        print(f"{name}, {label}: TTFT {first:.1f} ms, {per_token:.3f} ms/token, {share:.0%} of HBM bandwidth"
              + (f" ({note})" if note else "") + f" [{time.perf_counter() - started:.0f} s]", flush=True)
    rows.sort(key=lambda row: names.index(row[0]))  # stable: each model's rows together
    print("\n== benchmark (bf16, batch 1, random weights; prompt %d tokens, %d new tokens)" % (PROMPT, NEW_TOKENS))
    print(f"{'model':<9} {'implementation':<40} {'TTFT ms':>9} {'ms/token':>9} {'tokens/s':>9} {'HBM share':>9} "
          f"{'GPU MB':>8} {'vs default':>10} {'TTFT vs':>8}")
    default = {row[0]: row[3] for row in rows if len(row) == 6 and row[1] == "llmc, CUDA graphs"}
    default_first = {row[0]: row[2] for row in rows if len(row) == 6 and row[1] == "llmc, CUDA graphs"}
    for row in rows:
        if len(row) == 3:
            print(f"{row[0]:<9} {row[1]:<40} FAILED: {row[2]}")
        else:
            name, label, first, per_token, share, memory = row
            compared = name in default and label != "llmc, CUDA graphs"
            versus = f"{per_token / default[name]:.3f}x" if compared else ""
            first_versus = f"{first / default_first[name]:.3f}x" if compared and default_first[name] > 0 else ""
            print(f"{name:<9} {label:<40} {first:>9.1f} {per_token:>9.3f} {1000.0 / per_token:>9.1f} {share:>9.0%} "
                  f"{memory:>8.0f} {versus:>10} {first_versus:>8}")
    print(f"HBM share: the bytes a decode step reads over the time per token, against {hbm / 1e12:.2f} TB/s ({gpu}).")
    print("GPU MB: llmc's device memory (all of it, allocated at load); PyTorch's peak allocation.\n"
          "vs default: the time per token over that of the row 'llmc, CUDA graphs' of the same model (below 1: faster);\n"
          "TTFT vs: the same for the time to first token.")
    print("\n== what the rows decide (docs/cuda.md, 'Not done'; only with every cuda_vs_cpu plan passing)")
    for line in verdicts(rows, names):
        print(line)
    # A failed llmc row fails the run (gpu-check.sh's summary says so); PyTorch's rows are references.
    return 1 if any(len(row) == 3 and row[1].startswith("llmc") for row in rows) else 0


def torch_smoke(args):
    """The PyTorch side of `run` on a tiny Llama on the CPU (eager, or compiled): the code path works."""
    cfg = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=256)
    first, per_token, _, _ = run_torch(cfg, args.compiled, device="cpu", prompt=16, new_tokens=4, repeat=1)
    weights, kv = model_bytes(cfg)
    print(f"torch {'compiled' if args.compiled else 'eager'} (tiny, CPU): TTFT {first:.1f} ms, {per_token:.2f} ms/token; {weights} weight bytes, "
          f"{kv} KV bytes per token")
    return 0 if first > 0 and per_token > 0 else 1


def print_prompt_ids(args):
    with open(os.path.join(args.dir, "bench.json")) as f:
        vocab = json.load(f)[args.model]["config"]["vocab_size"]
    print(",".join(map(str, prompt_ids(vocab))))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("--llmc", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--cache", default=os.path.expanduser("~/.cache/llmc/models-bench"))
    r = sub.add_parser("run")
    r.add_argument("--llmc-run", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--models", default="smollm2,llama1b")
    r.add_argument("--no-torch", action="store_true")
    r.add_argument("--no-compile", action="store_true", help="skip torch.compile (it compiles for minutes)")
    t = sub.add_parser("torch-smoke")
    t.add_argument("--compiled", action="store_true", help="transformers' compiled generation (minutes on the CPU)")
    i = sub.add_parser("prompt-ids", help="print the prompt's ids for a model of a prepared --dir")
    i.add_argument("--dir", required=True)
    i.add_argument("--model", required=True)
    args = p.parse_args()
    return {"prepare": prepare, "run": run, "torch-smoke": torch_smoke, "prompt-ids": print_prompt_ids}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
