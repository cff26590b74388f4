#!/usr/bin/env bash
# The CUDA checks on the GPU machine (which has CUDA, CMake and ninja but no MLIR, flatc or
# GoogleTest, and no network), from test binaries built on a build machine:
#
#   tools/gpu-check.sh pack [BUILD_DIR]   on the build machine: gpu-pack/ (under 64 MiB) with the
#                                          CUDA test binaries and the shared libraries they need
#                                          that a GPU image may lack (OpenBLAS and its runtime)
#   tools/gpu-check.sh run                on the GPU machine, from the repository root with
#                                          gpu-pack/ carried: every CUDA test, then a summary
#
# What it covers today: the hand-written CUDA kernels and the NVRTC-generated fused elementwise
# kernel against the CPU kernels (llmc-cuda-tests), and NVRTC compiling every op for sm_80 and
# sm_90a (llmc-cuda-codegen-tests). There is no CUDA executor yet, so no model runs and no
# benchmark (issue 7).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PACK=gpu-pack
BINARIES=(llmc-cuda-tests llmc-cuda-codegen-tests)

case "${1:-}" in
pack)
  BUILD="${2:-build}"
  rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib"
  for b in "${BINARIES[@]}"; do
    cp "$BUILD/test/$b" "$PACK/bin/"
  done
  for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
    path=$(ldd "$PACK/bin/llmc-cuda-tests" | awk -v l="$lib" '$1 == l {print $3}')
    [ -n "$path" ] && cp -L "$path" "$PACK/lib/"
  done
  git rev-parse HEAD > "$PACK/COMMIT"
  du -sh "$PACK"
  ;;
run)
  [ -d "$PACK/bin" ] || { echo "no $PACK/: run 'tools/gpu-check.sh pack' on a build machine and carry it" >&2; exit 2; }
  export LD_LIBRARY_PATH="$PWD/$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== llmc GPU check, commit $(cat "$PACK/COMMIT"), $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  summary=()
  failed=0
  for b in "${BINARIES[@]}"; do
    echo "== $b"
    start=$(date +%s)
    set +e
    timeout 300 "$PACK/bin/$b"
    rc=$?
    set -e
    took=$(( $(date +%s) - start ))
    case $rc in
    0) summary+=("PASS    $b (${took} s)") ;;
    77) summary+=("SKIPPED $b: no usable GPU") ; failed=1 ;;
    *) summary+=("FAIL    $b: exit $rc (${took} s)") ; failed=1 ;;
    esac
  done
  echo "== summary"
  printf '%s\n' "${summary[@]}"
  echo "benchmark: none yet (no CUDA executor)"
  exit $failed
  ;;
*)
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
