#!/usr/bin/env python3
"""Turns a CUDA kernel file into C++ for the CPU emulation (CudaEmulation.h):

  kernel<<<grid, block, shared, stream>>>(args)  ->  kernel ^ ::llmc_emu::Launch(grid, block, shared, stream)
                                                       ^ ::llmc_emu::args(args)
  extern __shared__ [__align__(n)] T name[];     ->  T *name = reinterpret_cast<T *>(::llmc_emu::dynamicShared());
  __shared__ T name[A][B];                       ->  auto &name = ::llmc_emu::blockShared<T[(A)][(B)]>([] {});

(T may be a template's instance, Pick<K>.)

(the second: the running block's own copy, CudaEmulation.h; the lambda makes each declaration,
in each instantiation of a template, a storage of its own). A `__shared__` left that neither
turns is an error.

Lines stay where they were (a #line names the original file), so that compiler errors and
AddressSanitizer's reports point into the .cu file.

usage: emulate_launches.py IN.cu OUT.cpp
"""
import re
import sys

DYNAMIC_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:\s]*?)\s+(\w+)\s*\[\s*\]\s*;")
STATIC_SHARED = re.compile(r"__shared__\s+([A-Za-z_][\w:\s<>,]*?)\s+(\w+)\s*((?:\[[^\]\[]+\]\s*)*);")


def per_block(match):
    dims = "".join(f"[({d})]" for d in re.findall(r"\[([^\]\[]+)\]", match.group(3)))
    return f"auto &{match.group(2)} = ::llmc_emu::blockShared<{match.group(1)}{dims}>([] {{}});"


def rewrite(text):
    text = DYNAMIC_SHARED.sub(r"\1 *\2 = reinterpret_cast<\1 *>(::llmc_emu::dynamicShared());", text)
    text = STATIC_SHARED.sub(per_block, text)
    left = re.search(r"\b__shared__\b", text)
    if left:
        line = text.count("\n", 0, left.start()) + 1
        raise SystemExit(f"line {line}: a __shared__ declaration this script cannot turn")
    out, at = [], 0
    while True:
        start = text.find("<<<", at)
        if start < 0:
            break
        end = text.find(">>>", start)
        if end < 0 or not text[end + 3:].lstrip().startswith("("):
            raise SystemExit(f"a launch without its arguments at offset {start}")
        out.append(text[at:start])
        out.append(" ^ ::llmc_emu::Launch(" + text[start + 3:end] + ") ^ ::llmc_emu::args")
        at = end + 3
    out.append(text[at:])
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as f:
        text = f.read()
    with open(target, "w") as f:
        f.write(f'#line 1 "{source}"\n' + rewrite(text))


if __name__ == "__main__":
    main()
