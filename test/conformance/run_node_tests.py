#!/usr/bin/env python3
"""Runs ONNX's backend node tests through llmc and llmc-run and compares with the expected outputs.

    run_node_tests.py --llmc BIN --llmc-run BIN [--filter REGEX] [--jobs N] [--device cuda]
                      [--run-env NAME=VALUE ...] [--coverage-doc docs/onnx-coverage.md] [--require-supported]

The node tests come from the `onnx` wheel's own case definitions (`onnx.backend.test.case.node`:
a model plus inputs and expected outputs per test, the source of ONNX's data/node files, which
recent wheels no longer ship). Each test is compiled with the inputs' shapes, run, and compared
at the test's tolerances (rtol 1e-3, atol 1e-7 unless the test says otherwise).

A test is 'unsupported' when llmc refuses it with a reason that names a missing feature (an op it
does not have, an element type, a sequence or optional value, training mode); 'failed' when it
compiles but gives wrong values, or fails in any other way. Prints one summary line
'N passed, N failed, N unsupported'. With --require-supported it exits 1 if any test of an op
that llmc supports failed (or of an expanded function whose every node's op it supports). With
--coverage-doc it rewrites that Markdown table.

With --device cuda the plans run on the CUDA executor (--run-env LLMC_CUDA_BACKEND=... may name
the CPU emulation's plugin, test/cuda/emulation, and LD_PRELOAD its AddressSanitizer runtime: the
variables of --run-env reach llmc-run alone): a plan with an op the executor has no kernel for is
'unsupported' there (the context refuses it, naming the op), anything else is compared as on the
CPU. With --max-kernel-refusals N it also exits 1 where more than N tests are refused for a missing
kernel, so that a kernel that stops taking what it took fails rather than moves to 'unsupported'.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402
from onnx.backend.test.case import node as node_cases  # noqa: E402

# Refusals that name a missing feature, not a bug.
UNSUPPORTED = re.compile(
    r"unsupported op|unsupported element type|not supported yet|is not a tensor|training|"
    r"newer than the newest|older than 13|model-local functions|stores its data in an unsupported form|"
    r"not supported \(inference only\)|data-dependent")


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def op_of(case, op_names):
    """The op a test is about: its node's type, or for multi-node (expanded) tests the ONNX op
    whose snake_case name is the longest prefix of the test name."""
    types = {n.op_type for n in case.model.graph.node}
    if len(case.model.graph.node) == 1:
        return case.model.graph.node[0].op_type
    name = case.name[len("test_"):]
    best = max((o for o in op_names if name.startswith(snake(o))), key=len, default=None)
    return best or "+".join(sorted(types))


def tensor_inputs_only(case):
    return all(i.type.HasField("tensor_type") for i in case.model.graph.input) and all(
        o.type.HasField("tensor_type") for o in case.model.graph.output)


def as_array(value):
    """Test data comes as numpy arrays or, for some element types, as TensorProtos."""
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return np.asarray(value)


SHAPE_DECIDING = re.compile(r"must be a constant|must be constants|is not static|depends on run-time values")


# ONNX element types llmc has: float, uint8, int8, int32, int64, bool, float16, double, bfloat16.
SUPPORTED_TYPES = {1, 2, 3, 6, 7, 9, 10, 11, 16}


# Two units in the last place of a 16-bit float type, relative (at worst, just above a power of
# two): the node tests' references round every intermediate step of an op to the type (llmc
# rounds an op's result once, from f32), and their rtol of 1e-3 is below bf16's resolution.
ULPS_16 = {16: 2.0 ** -6, 10: 2.0 ** -9}  # bf16 (8 significant bits), f16 (11)


def rtol_for(case):
    types = [o.type.tensor_type.elem_type for o in case.model.graph.output]
    return max([case.rtol] + [ULPS_16[t] for t in types if t in ULPS_16])


def run_case(case, args):
    """Returns (status, reason); a passing test's reason notes inputs frozen at compile time."""
    if not tensor_inputs_only(case):
        return "unsupported", "sequence, optional or map values"
    for value in list(case.model.graph.input) + list(case.model.graph.output):
        elem = value.type.tensor_type.elem_type
        if elem not in SUPPORTED_TYPES:
            return "unsupported", f"element type {onnx.TensorProto.DataType.Name(elem)}"
    note = ""
    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, "model.onnx")
        onnx.save(case.model, model_path)
        for ds, (inputs, outputs) in enumerate(case.data_sets):
            shapes, feeds, compares, integer_inputs = [], [], [], []
            for k, (info, value) in enumerate(zip(case.model.graph.input, inputs)):
                value = as_array(value)
                if value.dtype.kind in "OUS":
                    return "unsupported", "string tensors"
                if value.shape:  # rank-0 inputs are static already
                    shapes.append(f"{info.name}={'x'.join(str(d) for d in value.shape)}")
                path = os.path.join(tmp, f"in{ds}_{k}.npy")
                np.save(path, np.array(value, order="C"))
                feeds.append((info.name, path))
                if value.dtype.kind in "iu" or value.ndim == 0:
                    integer_inputs.append(info.name)  # may decide shapes: frozen on a retry
            for info, value in zip(case.model.graph.output, outputs):
                value = as_array(value)
                if value.dtype.kind in "OUS":
                    return "unsupported", "string tensors"
                path = os.path.join(tmp, f"ref{ds}_{info.name}.npy")
                np.save(path, np.array(value, order="C"))
                compares.append((info.name, path))
            plan = os.path.join(tmp, "model.llmc")
            cmd = [args.llmc, model_path, "-o", plan]
            if shapes:
                cmd += ["--input-shape", ",".join(shapes)]
            c = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            frozen = set()
            if c.returncode == 1 and SHAPE_DECIDING.search(c.stderr) and integer_inputs:
                # Integer and scalar inputs that decide shapes (axes, a target shape, split sizes,
                # range bounds) are baked in as constants, as an ahead-of-time compiler with static
                # shapes needs.
                frozen = set(integer_inputs)
                freeze = [a for name, path in feeds if name in frozen for a in ("--freeze-input", f"{name}={path}")]
                c = subprocess.run(cmd + freeze, capture_output=True, text=True, timeout=120)
                note = "frozen: " + ",".join(sorted(frozen))
            if c.returncode != 0:
                message = c.stderr.strip().splitlines()[0] if c.stderr.strip() else f"llmc exit {c.returncode}"
                message = message.replace("llmc: error: ", "")
                if c.returncode < 0:
                    return "failed", f"llmc crashed ({c.returncode})"
                return ("unsupported" if UNSUPPORTED.search(c.stderr) else "failed"), message
            run = [args.llmc_run, plan, "--quiet", "--rtol", str(rtol_for(case)), "--atol", str(case.atol),
                   "--device", args.device]
            run += [a for name, path in feeds if name not in frozen for a in ("--input", f"{name}={path}")]
            run += [a for name, path in compares for a in ("--compare", f"{name}={path}")]
            r = subprocess.run(run, capture_output=True, text=True, timeout=args.timeout, env=args.run_environment)
            if r.returncode != 0 and args.device == "cuda" and "creating a context: CUDA: op" in r.stderr:
                return "unsupported", "no CUDA kernel: " + r.stderr.strip().splitlines()[-1].split("CUDA: ", 1)[1]
            if r.returncode != 0:
                lines = [l for l in (r.stdout + r.stderr).splitlines() if "MISMATCH" in l or "error" in l]
                message = lines[0] if lines else f"llmc-run exit {r.returncode}"
                return "failed", message.replace("llmc-run: error: ", "")
    return "passed", note


def write_coverage(path, results, by_op, supported):
    ops = sorted(by_op)
    lines = ["# ONNX node-test coverage", "",
             "Generated by `test/conformance/run_node_tests.py --coverage-doc` from the node tests of the",
             f"`onnx` {onnx.__version__} wheel. Unsupported means llmc refuses the test with a named missing",
             "feature; failed means it ran and gave wrong values or an unexpected error.", "",
             "| op | passed | failed | unsupported | llmc has the op | failures and reasons |",
             "| --- | --- | --- | --- | --- | --- |"]
    for op in ops:
        counts = collections.Counter(results[t][0] for t in by_op[op])
        reasons = sorted({f"{t}: {results[t][1]}" for t in by_op[op] if results[t][0] == "failed"})
        unsup = sorted({results[t][1] for t in by_op[op] if results[t][0] == "unsupported"})
        note = "; ".join(reasons[:4]) + (f" (+{len(reasons) - 4} more)" if len(reasons) > 4 else "")
        if not note and unsup:
            note = "unsupported: " + "; ".join(unsup[:2])
        note = note.replace("|", "\\|")
        lines.append(f"| {op} | {counts['passed']} | {counts['failed']} | {counts['unsupported']} | "
                     f"{'yes' if op in supported else 'no'} | {note} |")
    frozen = sorted(f"{t} ({r[1][len('frozen: '):]})" for t, r in results.items()
                    if r[0] == "passed" and r[1].startswith("frozen"))
    if frozen:
        lines += ["", "Passed with shape-deciding integer inputs frozen into the plan at compile time "
                  "(`llmc --freeze-input`): " + ", ".join(frozen) + "."]
    total = collections.Counter(s for s, _ in results.values())
    lines += ["", f"Total: {total['passed']} passed, {total['failed']} failed, {total['unsupported']} unsupported.", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llmc", required=True)
    p.add_argument("--llmc-run", required=True)
    p.add_argument("--filter", default="", help="regular expression on test names")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--coverage-doc")
    p.add_argument("--require-supported", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where llmc-run runs the plans")
    p.add_argument("--timeout", type=int, default=120, help="seconds per llmc-run")
    p.add_argument("--run-env", action="append", default=[], help="NAME=VALUE for llmc-run's environment only")
    p.add_argument("--max-kernel-refusals", type=int, help="with --device cuda: at most this many tests refused "
                   "for a kernel the executor lacks")
    args = p.parse_args()
    args.run_environment = dict(os.environ, **dict(v.split("=", 1) for v in args.run_env))

    cases = [c for c in node_cases.collect_testcases(None) if re.search(args.filter, c.name)]
    op_names = {s.name for s in onnx.defs.get_all_schemas()}
    supported = set(subprocess.run([args.llmc, "--list-onnx-ops"], capture_output=True, text=True,
                                   check=True).stdout.split())
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_case, c, args): c for c in cases}
        results = {}
        for future in concurrent.futures.as_completed(futures):
            case = futures[future]
            try:
                results[case.name] = future.result()
            except Exception as e:  # a timeout or an I/O problem is a failure, never a silent pass
                results[case.name] = ("failed", f"{type(e).__name__}: {e}")
    by_op = collections.defaultdict(list)
    # A test of ops llmc supports: its op's, or (an expanded function) every node's.
    of_supported = {c.name for c in cases if op_of(c, op_names) in supported or
                    all(n.op_type in supported for n in c.model.graph.node)}
    for c in cases:
        by_op[op_of(c, op_names)].append(c.name)
    failed_supported = []
    for op, names in sorted(by_op.items()):
        for name in sorted(names):
            status, reason = results[name]
            if args.verbose or (status == "failed" and name in of_supported):
                print(f"{status:<11} {name} ({op}) {reason}")
            if status == "failed" and name in of_supported:
                failed_supported.append(name)
    if args.coverage_doc:
        write_coverage(args.coverage_doc, results, by_op, supported)
    total = collections.Counter(s for s, _ in results.values())
    refusals = sum(1 for _, reason in results.values() if reason.startswith("no CUDA kernel:"))
    too_many = args.max_kernel_refusals is not None and refusals > args.max_kernel_refusals
    print(f"{len(failed_supported)} tests of supported ops failed")
    if args.device == "cuda":
        print(f"{refusals} refused for a kernel the CUDA executor lacks" +
              (f": more than the {args.max_kernel_refusals} allowed" if too_many else ""))
    print(f"{total['passed']} passed, {total['failed']} failed, {total['unsupported']} unsupported")
    return 1 if (args.require_supported and failed_supported) or too_many else 0


if __name__ == "__main__":
    sys.exit(main())
