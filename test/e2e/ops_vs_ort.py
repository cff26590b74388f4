#!/usr/bin/env python3
"""The small models of test/cuda/cuda_vs_cpu.py that gather ops of the CPU executor the test
models lack (activations with attributes, Mod, TopK, the scatters, the normalizations, QDQ, Gemm,
Einsum, native Attention with and without a KV cache, and one that stays unraised), and the tiny
Llama and GPT-2 and the attentions in doubles (ONNX Runtime has no doubles for BERT's Erf, nor for Conv, nor for the
statistics of a LayerNormalization of doubles, which norm_ops reads): each compiled once with a dynamic
dimension and compared with ONNX Runtime at several sizes (dynamic_shapes.py), so that the CPU
executor, the reference the CUDA executor is checked against there, is itself checked.

    ops_vs_ort.py --llmc BIN --llmc-run BIN [--only NAME]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cuda"))
import cuda_vs_cpu  # noqa: E402  (the model builders)

# (model, --max-shape, --fix, --shapes, --sizes, --atol). norm_ops' 1/std output reaches a few
# hundred (a row after a ReLU may vary little): an f32 rounding there is 1e-4.
MODELS = [
    ("more_ops", "seq=16", "", ["x=1xSEQx8"], "1,5,16", 1e-4),
    ("norm_ops", "batch=4", "", ["x=BATCHx6x5x5"], "1,3", 1e-3),
    ("qdq", "seq=16", "", ["x=1xSEQx32"], "1,6", 1e-4),
    ("product_ops", "seq=16", "", ["x=SEQx8"], "1,5,16", 1e-4),
    ("residual_linears", "seq=32", "", ["x=1xSEQx64"], "1,19,32", 1e-4),
    ("native_attention", "seq=16", "", ["q=1x4xSEQx8", "k=1x2xSEQx8", "v=1x2xSEQx8", "m=1x1xSEQxSEQ"], "1,7", 1e-4),
    ("native_attention_cache", "seq=16", "past=5",
     ["q=1x4xSEQx8", "k=1x2xSEQx8", "v=1x2xSEQx8", "pk=1x2x5x8", "pv=1x2x5x8"], "1,3", 1e-4),
    ("onnx_attention", "seq=16", "", ["q=1xSEQx32", "k=1xSEQx16", "v=1xSEQx16", "q2=1x4xSEQx8", "k2=1x2xSEQx8",
                                      "v2=1x2xSEQx8"], "1,6,16", 1e-4),
    # Models in doubles (cuda_vs_cpu.as_float_type): unfused, every op in f64 as ONNX Runtime's. The
    # attentions' scale, an f32 attribute (0.3) or 1 / sqrt(8), is where llmc and ONNX Runtime
    # part, by a part in 1e8 of the scores (llmc takes the attribute's f32 value, and the default
    # in f64); that they compute in doubles is checked within 1e-10 by cuda_vs_cpu.py and the
    # kernel tests.
    ("tiny_llama_f64", "seq=16", "", ["input_ids=1xSEQ"], "1,7,16", 1e-10),
    ("tiny_gpt2_f64", "seq=16", "", ["input_ids=1xSEQ"], "1,7,16", 1e-10),
    ("native_attention_f64", "seq=16", "", ["q=1x4xSEQx8", "k=1x2xSEQx8", "v=1x2xSEQx8", "m=1x1xSEQxSEQ"], "1,7",
     1e-6),
    ("native_attention_cache_f64", "seq=16", "past=5",
     ["q=1x4xSEQx8", "k=1x2xSEQx8", "v=1x2xSEQx8", "pk=1x2x5x8", "pv=1x2x5x8"], "1,3", 1e-6),
    ("onnx_attention_f64", "seq=16", "", ["q=1xSEQx32", "k=1xSEQx16", "v=1xSEQx16", "q2=1x4xSEQx8", "k2=1x2xSEQx8",
                                          "v2=1x2xSEQx8"], "1,6,16", 1e-6),
]


# And f32 rounding relative to the values: product_ops' z reaches about 1100, where one f32 step
# is 1.2e-4, so that a sum taken in another order (ONNX Runtime's against llmc's) may differ by
# more than any absolute bound above.
RTOL = 1e-6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--only", help="run the models whose name contains this")
    args = p.parse_args()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, bound, fix, shapes, sizes, atol in MODELS:
            if args.only and args.only not in name:
                continue
            cmd = [sys.executable, os.path.join(HERE, "dynamic_shapes.py"), "--llmc", args.llmc, "--llmc-run",
                   args.llmc_run, "--model", cuda_vs_cpu.model_path(name, tmp), "--max-shape", bound, "--sizes", sizes,
                   "--atol", str(atol), "--rtol", str(RTOL)]
            cmd += ["--fix", fix] if fix else []
            for s in shapes:
                cmd += ["--shapes", s]
            print(f"== {name}", flush=True)
            if subprocess.run(cmd).returncode != 0:
                failed.append(name)
    print("PASS" if not failed else "FAIL: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
