#!/usr/bin/env python3
"""The generation C API after errors (through ctypes on libllmc.so): a token outside the
vocabulary, a prompt longer than the context and a feed into a full context are refused without
touching the context, which then goes on as if they had not happened; reset starts over.

    generator_errors.py --llmc BIN --lib libllmc.so
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--lib", required=True)
    args = p.parse_args()
    lib = ctypes.CDLL(args.lib)
    lib.llmc_status_message.restype = ctypes.c_char_p
    ints = lambda *v: (ctypes.c_int32 * len(v))(*v)  # noqa: E731
    failures = []

    def expect(status, fragment, what):
        message = lib.llmc_status_message(ctypes.c_void_p(status)).decode() if status else "ok"
        good = (fragment in message) if fragment else status in (0, None)
        print(f"{what}: {message}: {'as expected' if good else 'WRONG'}")
        if not good:
            failures.append(what)
        if status:
            lib.llmc_status_free(ctypes.c_void_p(status))

    lib.llmc_plan_load.restype = lib.llmc_generator_create.restype = ctypes.c_void_p
    lib.llmc_generator_feed.restype = lib.llmc_generator_sample.restype = ctypes.c_void_p
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = os.path.join(tmp, "kv.llmc")
        subprocess.run([args.llmc, os.path.join(ROOT, "models", "tiny_llama_kv.onnx"), "-o", plan_path,
                        "--input-shape", "batch=1", "--max-shape", "seq=4,past=0..8,total=12"], check=True)
        plan, gen = ctypes.c_void_p(), ctypes.c_void_p()
        expect(lib.llmc_plan_load(plan_path.encode(), None, ctypes.byref(plan)), None, "load")
        expect(lib.llmc_generator_create(plan, None, ctypes.byref(gen)), None, "create")
        token = ctypes.c_int32()
        expect(lib.llmc_generator_sample(gen, None, ctypes.byref(token)), "no tokens were fed yet", "sample first")
        expect(lib.llmc_generator_feed(gen, ints(1, 900), 2), "outside the vocabulary", "token 900")
        expect(lib.llmc_generator_feed(gen, ints(*range(1, 11)), 10), "more do not fit", "10-token prompt")
        print(f"context after the errors: {lib.llmc_generator_length(gen)} tokens")
        failures += [] if lib.llmc_generator_length(gen) == 0 else ["length after errors"]
        expect(lib.llmc_generator_feed(gen, ints(1, 2, 3), 3), None, "prompt 1 2 3")
        expect(lib.llmc_generator_sample(gen, None, ctypes.byref(token)), None, "sample")
        first = token.value
        for _ in range(6):  # fill the context (capacity 9)
            expect(lib.llmc_generator_feed(gen, ints(token.value), 1), None, "feed")
            expect(lib.llmc_generator_sample(gen, None, ctypes.byref(token)), None, "sample")
        expect(lib.llmc_generator_feed(gen, ints(token.value), 1), "more do not fit", "feed into a full context")
        lib.llmc_generator_reset(gen)
        expect(lib.llmc_generator_feed(gen, ints(1, 2, 3), 3), None, "prompt again after reset")
        expect(lib.llmc_generator_sample(gen, None, ctypes.byref(token)), None, "sample")
        print(f"first token after reset {token.value}, before {first}")
        failures += [] if token.value == first else ["reset"]
        lib.llmc_generator_release(gen)
        lib.llmc_plan_release(plan)
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
