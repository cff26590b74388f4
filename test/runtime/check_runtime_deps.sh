#!/bin/sh
# Fails if a runtime binary links MLIR or LLVM (directly or through its dependencies).
status=0
for binary in "$@"; do
  deps=$(ldd "$binary") || { echo "cannot read the dependencies of $binary"; exit 1; }
  echo "$binary:"
  echo "$deps" | sed 's/^/  /'
  if echo "$deps" | grep -Eiq 'libMLIR|libLLVM'; then
    echo "FAIL: $binary depends on MLIR or LLVM"
    status=1
  fi
done
[ $status -eq 0 ] && echo "ok: no MLIR or LLVM dependency"
exit $status
