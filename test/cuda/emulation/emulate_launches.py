#!/usr/bin/env python3
"""Turns a CUDA kernel file into C++ for the CPU emulation (CudaEmulation.h):

  kernel<<<grid, block, shared, stream>>>(args)  ->  kernel ^ ::llmc_emu::Launch(grid, block, shared, stream)
                                                       ^ ::llmc_emu::args(args)
  extern __shared__ [__align__(n)] T name[];     ->  T *name = reinterpret_cast<T *>(::llmc_emu::dynamicShared());

Lines stay where they were (a #line names the original file), so that compiler errors and
AddressSanitizer's reports point into the .cu file.

usage: emulate_launches.py IN.cu OUT.cpp
"""
import re
import sys

DYNAMIC_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:\s]*?)\s+(\w+)\s*\[\s*\]\s*;")


def rewrite(text):
    text = DYNAMIC_SHARED.sub(r"\1 *\2 = reinterpret_cast<\1 *>(::llmc_emu::dynamicShared());", text)
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
