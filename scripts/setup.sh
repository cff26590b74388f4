#!/usr/bin/env bash
# Installs what llmc needs (Debian packages, Python packages) and builds it into build/.
# Idempotent: installs only what is missing, and the build is incremental (ccache is kept in
# ~/.cache/llmc/ccache, outside the clone). Sourced by demo.sh and test.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${LLMC_BUILD_DIR:-$ROOT/build}"
CACHE="${LLMC_CACHE_DIR:-$HOME/.cache/llmc}"
mkdir -p "$CACHE"

APT_PACKAGES=(cmake ninja-build ccache g++ llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libprotobuf-dev protobuf-compiler libonnx-dev libgtest-dev libflatbuffers-dev flatbuffers-compiler
  libopenblas-dev)
PIP_PACKAGES=(numpy onnx onnxruntime onnxscript torch transformers gguf accelerate)

log() { echo "[llmc setup] $*"; }

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages: all present"
    return
  fi
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

install_pip() {
  PYTHON="${PYTHON:-$(command -v python3)}"
  # torch, transformers, onnxscript, gguf and accelerate export the real models (models/fetch_real_models.py).
  if "$PYTHON" -c "import numpy, onnx, onnxruntime, onnxscript, torch, transformers, gguf, accelerate" 2>/dev/null; then
    log "Python packages: all present ($PYTHON)"
  else
    log "installing Python packages into $PYTHON: ${PIP_PACKAGES[*]}"
    "$PYTHON" -m pip install -q "${PIP_PACKAGES[@]}"
  fi
  export PYTHON
}

build() {
  if [ ! -d /usr/local/cuda ]; then
    log "note: no CUDA toolkit in /usr/local/cuda (not needed yet: this version builds the CPU runtime)"
  fi
  export CCACHE_DIR="$CACHE/ccache"
  # Paths relative to the clone, so that a fresh clone elsewhere (as CI makes) hits the cache.
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
  log "configuring and building in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PYTHON" >/dev/null
  cmake --build "$BUILD"
}

install_apt
install_pip
build
