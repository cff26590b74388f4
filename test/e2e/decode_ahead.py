#!/usr/bin/env python3
"""Decoding ahead (llmc_context_options.decode_ahead) against waiting for each token, through the
C API (ctypes on libllmc.so): the same tokens, counts, context lengths and logits in every way a
generation ends (the token budget, a stop token, a callback that stops, a full context), with a
callback that reads the logits of every token or of one, and for what comes after (the logits of the last
feed, a sample, a feed and more generation). On the CPU both are forced; with --device cuda (the
tests' CPU emulation of the CUDA executor: LLMC_CUDA_BACKEND) decoding ahead is the default and
is compared with a CPU context that waits.

    decode_ahead.py --llmc BIN --lib libllmc.so [--device cpu|cuda]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPT = [5, 17, 42, 99, 7, 3]
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_void_p)


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("num_threads", ctypes.c_int32), ("collect_times", ctypes.c_int32),
                ("device", ctypes.c_int32), ("cuda_graphs", ctypes.c_int32), ("cuda_gemv", ctypes.c_int32),
                ("cuda_overlap", ctypes.c_int32), ("decode_ahead", ctypes.c_int32)]


class Sampling(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("repetition_penalty", ctypes.c_float), ("seed", ctypes.c_uint64)]


class Api:
    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        lib.llmc_status_message.restype = ctypes.c_char_p
        for name in ["llmc_plan_load", "llmc_generator_create", "llmc_generator_feed", "llmc_generator_sample",
                     "llmc_generator_generate", "llmc_generator_logits"]:
            getattr(lib, name).restype = ctypes.c_void_p

    def check(self, status, what):
        if status:
            message = self.lib.llmc_status_message(ctypes.c_void_p(status)).decode()
            raise RuntimeError(f"{what}: {message}")


def scenario(api, plan, device, ahead, name):
    """What one way of generating gives: a list of (label, value) to compare."""
    lib = api.lib
    options = Options()
    lib.llmc_context_options_init(ctypes.byref(options))
    options.device, options.decode_ahead = device, ahead
    gen = ctypes.c_void_p()
    api.check(lib.llmc_generator_create(plan, ctypes.byref(options), ctypes.byref(gen)), "create")
    seen = []
    greedy = Sampling()
    lib.llmc_sampling_init(ctypes.byref(greedy))

    def logits():
        data, vocab = ctypes.POINTER(ctypes.c_float)(), ctypes.c_int32()
        api.check(lib.llmc_generator_logits(gen, ctypes.byref(data), ctypes.byref(vocab)), "logits")
        return np.ctypeslib.as_array(data, shape=(vocab.value,)).copy()

    def generate(max_tokens, stops=(), callback=None):
        out, count = (ctypes.c_int32 * max(max_tokens, 1))(), ctypes.c_int32()
        stop_ids = (ctypes.c_int32 * max(len(stops), 1))(*stops)
        api.check(lib.llmc_generator_generate(gen, ctypes.byref(greedy), max_tokens, stop_ids, len(stops),
                                              callback, None, out, ctypes.byref(count)), "generate")
        seen.append(("tokens", list(out[:count.value])))
        seen.append(("length", lib.llmc_generator_length(gen)))
        return list(out[:count.value])

    def feed(tokens):
        api.check(lib.llmc_generator_feed(gen, (ctypes.c_int32 * len(tokens))(*tokens), len(tokens)), "feed")

    def sample():
        token = ctypes.c_int32()
        api.check(lib.llmc_generator_sample(gen, ctypes.byref(greedy), ctypes.byref(token)), "sample")
        seen.append(("sample", token.value))
        return token.value

    feed(PROMPT)
    if name == "budget":  # 10 tokens, then the logits of the last feed, a sample, more
        generate(10)
        seen.append(("logits after", logits()))
        feed([sample()])
        generate(5)
    elif name == "stop":  # stops before the 6th token of the budget run
        reference = generate(10)
        lib.llmc_generator_reset(gen)
        feed(PROMPT)
        generate(10, stops=[reference[5]])
        seen.append(("logits after", logits()))
        generate(3)
    elif name == "callback-stops":  # the callback ends it after 4 tokens
        state = {"n": 0}

        def stop_after_four(token, _):
            state["n"] += 1
            return 1 if state["n"] == 4 else 0
        generate(10, callback=CALLBACK(stop_after_four))
        seen.append(("logits after", logits()))
        seen.append(("sample", sample()))
    elif name == "callback-reads-logits":  # every token's logits, in the callback
        rows = []

        def read(token, _):
            rows.append(logits())
            return 0
        generate(8, callback=CALLBACK(read))
        seen += [("callback logits", r) for r in rows]
        generate(4)
    elif name == "callback-reads-once":  # the logits of the 3rd token only, then stops at the 6th
        state = {"n": 0, "rows": []}

        def read_once(token, _):
            state["n"] += 1
            if state["n"] == 3:
                state["rows"].append(logits())
            return 1 if state["n"] == 6 else 0
        generate(10, callback=CALLBACK(read_once))
        seen += [("callback logits", r) for r in state["rows"]]
        seen.append(("logits after", logits()))
        generate(4)
    elif name == "full-context":  # up to the capacity: the context fills before the budget ends
        capacity = lib.llmc_generator_capacity(gen)
        generate(capacity + 5)
        seen.append(("logits after", logits()))
    lib.llmc_generator_release(gen)
    return seen


def same(a, b):
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and np.allclose(a, b, atol=5e-2 if DEVICE_CUDA else 0, rtol=0)
    return a == b


DEVICE_CUDA = False


def main():
    global DEVICE_CUDA
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    DEVICE_CUDA = args.device == "cuda"
    api = Api(args.lib)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kv.llmc")
        flags = ["--target", "cuda", "--precision", "bf16", "--last-position", "logits"] if DEVICE_CUDA else []
        subprocess.run([args.llmc, os.path.join(ROOT, "models", "tiny_llama_kv.onnx"), "-o", path, "--input-shape",
                        "batch=1", "--max-shape", "seq=8,past=0..24,total=32"] + flags, check=True)
        plan = ctypes.c_void_p()
        api.check(api.lib.llmc_plan_load(path.encode(), None, ctypes.byref(plan)), "load")
        for name in ["budget", "stop", "callback-stops", "callback-reads-logits", "callback-reads-once",
                     "full-context"]:
            # CPU: waiting (0) against ahead (1); CUDA: a CPU context waiting against the default.
            want = scenario(api, plan, 0, 0, name)
            got = scenario(api, plan, 1 if DEVICE_CUDA else 0, -1 if DEVICE_CUDA else 1, name)
            good = len(want) == len(got) and all(wl == gl and same(w, g) for (wl, w), (gl, g) in zip(want, got))
            tokens = [v for label, v in got if label == "tokens"]
            print(f"{name}: {'PASS' if good else 'FAIL'} (tokens {tokens}, {len(got)} things compared)")
            if not good:
                failures.append(name)
                for (wl, w), (gl, g) in zip(want, got):
                    if wl != gl or not same(w, g):
                        print(f"  first difference: {wl} {w if not isinstance(w, np.ndarray) else w[:4]} against "
                              f"{gl} {g if not isinstance(g, np.ndarray) else g[:4]}")
                        break
        api.lib.llmc_plan_release(plan)
    print(f"decode ahead ({args.device}): {'FAIL: ' + ', '.join(failures) if failures else 'PASS'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
