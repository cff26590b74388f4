#!/usr/bin/env bash
# Sets up and builds, then runs the whole test suite (GoogleTest, lit, end-to-end against ONNX
# Runtime) through CTest, which prints the closing summary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

echo
echo "== running the test suite"
cd "$BUILD"
ctest --output-on-failure -j2
