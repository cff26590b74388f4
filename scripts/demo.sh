#!/usr/bin/env bash
# The main job: set up and build, compile the bundled model with llmc, run it with llmc-run and
# print its outputs and latency.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

MODEL="$ROOT/models/tiny_llama.onnx"
PLAN="$BUILD/tiny_llama.llmc"
echo
echo "== compiling $(basename "$MODEL") (Llama-style decoder, random weights) for input_ids 1x16"
"$BUILD/tools/llmc/llmc" "$MODEL" -o "$PLAN" --input-shape input_ids=1x16 --print-stats 2>&1 | grep -v '^  '
echo
echo "== running $(basename "$PLAN") on random token ids"
"$BUILD/tools/llmc-run/llmc-run" "$PLAN" --random --seed 0 --int-max 512 --benchmark 50
