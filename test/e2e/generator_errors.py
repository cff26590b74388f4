#!/usr/bin/env python3
"""The generation C API after errors (through ctypes on libllmc.so): a token outside the
vocabulary, a prompt longer than the context and a feed into a full context are refused without
touching the context, which then goes on as if they had not happened; reset starts over. And a
sliding-window cache (its present the last 3 positions, as Mistral's export keeps window - 1):
the generator runs while the cache holds every position, and says why it stops where it drops one.

    generator_errors.py --llmc BIN --lib libllmc.so
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sliding_window_model(path):
    """Ids [1, seq] -> embeddings [1, seq, 4] -> logits [1, seq, 16]; the cache [1, 1, past, 4],
    present = the last 3 positions of concat(past, embeddings)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "emb"),
             numpy_helper.from_array(rng.standard_normal((4, 16)).astype(np.float32), "head"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([-3], np.int64), "last3"),
             numpy_helper.from_array(np.array([2 ** 62], np.int64), "end"),
             numpy_helper.from_array(np.array([2], np.int64), "axis2")]
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["x"]),
             helper.make_node("MatMul", ["x", "head"], ["logits"]),
             helper.make_node("Unsqueeze", ["x", "one"], ["new"])]
    for kv in ("key", "value"):
        nodes += [helper.make_node("Concat", [f"past_key_values.0.{kv}", "new"], [f"all_{kv}"], axis=2),
                  helper.make_node("Slice", [f"all_{kv}", "last3", "end", "axis2"], [f"present.0.{kv}"])]
    past = [helper.make_tensor_value_info(f"past_key_values.0.{kv}", TensorProto.FLOAT, [1, 1, "past", 4])
            for kv in ("key", "value")]
    graph = helper.make_graph(
        nodes, "sliding_window",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "total"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "seq"])] + past,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", 16])] +
        [helper.make_tensor_value_info(f"present.0.{kv}", TensorProto.FLOAT, [1, 1, "kept", 4])
         for kv in ("key", "value")], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


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

        # The sliding-window cache: 2 tokens fit its 3 positions; with 2 more the present holds 3
        # of the 4, which the generator refuses with the reason.
        model = os.path.join(tmp, "window.onnx")
        sliding_window_model(model)
        plan_path = os.path.join(tmp, "window.llmc")
        subprocess.run([args.llmc, model, "-o", plan_path, "--input-shape", "batch=1", "--max-shape",
                        "seq=4,past=0..8,total=12"], check=True)
        expect(lib.llmc_plan_load(plan_path.encode(), None, ctypes.byref(plan)), None, "load the windowed plan")
        expect(lib.llmc_generator_create(plan, None, ctypes.byref(gen)), None, "create")
        expect(lib.llmc_generator_feed(gen, ints(1, 2), 2), None, "prompt 1 2 (the cache keeps both)")
        expect(lib.llmc_generator_feed(gen, ints(3, 4), 2), "a sliding-window cache drops the oldest ones",
               "tokens 3 4 (the cache keeps 3 of 4)")
        lib.llmc_generator_release(gen)
        lib.llmc_plan_release(plan)
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
