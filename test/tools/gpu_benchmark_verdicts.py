#!/usr/bin/env python3
"""tools/gpu_benchmark.py's llmc side without a GPU: `run --no-torch` against a stand-in llmc-run
that prints what the real one prints for a generation (its figures chosen by the switch each row
sets), with a stand-in nvidia-smi on PATH (an H100). Checks that every row is parsed, the table
printed, the HBM share taken against the GPU's own bandwidth, and that the decisions under the
table follow docs/cuda.md's rules (DECISIONS): a switch faster by 3% for both models becomes the
default, one faster for one model alone does not, a row that failed decides nothing, the prompt
attention's split goes by the time to first token. Exit 0 on pass.

    gpu_benchmark_verdicts.py
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The stand-in llmc-run: per switch and model, (ms to first token, ms per output token), or an
# error for the chained layers of llama1b (a row that failed).
FAKE_LLMC_RUN = r'''#!/usr/bin/env python3
import os, sys
plan = os.path.basename(sys.argv[2])
env = os.environ
first, per_token = 10.0, 1.0
if "--no-cuda-graphs" in sys.argv:
    per_token = 1.2
elif env.get("LLMC_CUDA_PREFETCH") == "0":
    per_token = 1.01
elif env.get("LLMC_CUDA_GEMV_BLOCKS") == "resident":
    per_token = 0.95
elif env.get("LLMC_CUDA_CHAIN_ATTENTION") == "1":
    if plan.startswith("llama1b"):
        sys.stderr.write("error: decodeChain: too many blocks\n")
        sys.exit(1)
    per_token = 0.5
elif env.get("LLMC_CUDA_GEMV_CHAIN") == "resident":
    per_token = 0.96 if plan.startswith("smollm2") else 1.02
elif env.get("LLMC_CUDA_GEMV_CHAIN") == "132":
    per_token = 0.98
elif env.get("LLMC_CUDA_SPLIT_PROMPT_ATTENTION") == "0":
    first = 9.0
sys.stderr.write(f"prompt: 512 tokens in {first:.1f} ms (51200.0 tokens/s); first token after {first:.1f} ms; "
                 f"129 tokens generated, {per_token:.3f} ms per output token\n"
                 "device memory: 379.9 MB (weights, activations, KV cache, workspaces; allocated once); "
                 "CUDA graphs captured: 2\n"
                 "nodes of the decode steps' graph (else of the last captured): 155\n")
'''

CONFIG = {"vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2}

EXPECTED = [
    ("llmc, graphs, no L2 prefetch", "keep the L2 prefetch on"),
    ("llmc, graphs, persistent GEMV", "make the persistent GEMV the default"),
    ("llmc, graphs, chained GEMVs", "keep them off"),  # faster for smollm2 alone
    ("llmc, graphs, chained, 132 blocks", "keep them off"),  # 0.98: not 3% faster
    ("llmc, graphs, chained layers", "no decision: no figures for llama1b"),
    ("llmc, graphs, prompt attention unsplit", "stop splitting the prompt attention's keys"),
]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir = os.path.join(tmp, "bin")
        os.makedirs(bin_dir)
        # nvidia-smi names an H100: the HBM share is taken against its 3.35 TB/s.
        smi = "#!/bin/sh\ncase \"$*\" in *--query-gpu=name*) echo 'NVIDIA H100 80GB HBM3' ;; esac\nexit 0\n"
        for name, text in {"llmc-run": FAKE_LLMC_RUN, "nvidia-smi": smi}.items():
            path = os.path.join(bin_dir, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        with open(os.path.join(tmp, "bench.json"), "w") as f:
            json.dump({name: {"plan": f"{name}.llmc", "config": CONFIG} for name in ("smollm2", "llama1b")}, f)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_benchmark.py"), "run", "--llmc-run",
                              os.path.join(bin_dir, "llmc-run"), "--dir", tmp, "--no-torch"],
                             capture_output=True, text=True, env=env, timeout=120)
    print(out.stdout + out.stderr)
    failures = []
    # The failed row (chained layers of llama1b) fails the run, as any llmc row that fails does.
    if out.returncode != 1:
        failures.append(f"exit {out.returncode}, expected 1 (an llmc row failed)")
    lines = out.stdout.splitlines()
    if "== HBM share against 3.35 TB/s (NVIDIA H100 80GB HBM3)" not in lines:
        failures.append("the HBM share is not taken against the H100's 3.35 TB/s")
    for model in ("smollm2", "llama1b"):
        default = [line for line in lines if line.startswith(f"{model:<9} llmc, CUDA graphs ")]
        if len(default) != 1 or "1.000" not in default[0]:
            failures.append(f"{model}: the default row is missing from the table or misread: {default}")
    if not any(line.startswith("llama1b   llmc, graphs, persistent GEMV") and "0.950x" in line for line in lines):
        failures.append("the table's 'vs default' column is not 0.950x for llama1b's persistent GEMV")
    decisions = lines[next((i for i, line in enumerate(lines) if line.startswith("== what the rows decide")),
                           len(lines)):]
    for label, verdict in EXPECTED:
        found = [line for line in decisions if line.startswith(label + " (")]
        if len(found) != 1 or verdict not in found[0]:
            failures.append(f"{label}: expected '{verdict}', got {found}")
    for failure in failures:
        print("FAIL:", failure)
    print("gpu_benchmark verdicts:", "FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
