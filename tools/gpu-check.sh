#!/usr/bin/env bash
# The CUDA checks on the GPU machine (which has CUDA, CMake and ninja but no MLIR, flatc or
# GoogleTest, and no network), from test binaries built on a build machine:
#
#   tools/gpu-check.sh pack [BUILD_DIR]   on the build machine: gpu-pack/ (under 64 MiB) with the
#                                          CUDA test binaries and the shared libraries they need
#                                          that a GPU image may lack (OpenBLAS and its runtime)
#   tools/gpu-check.sh run                on the GPU machine, from the repository root with
#                                          gpu-pack/ carried: every CUDA test, the benchmark, a summary
#   tools/gpu-check.sh profile [MODEL]    on the GPU machine: where a decode step of the benchmark's
#                                          MODEL (llama1b) spends its time, kernel by kernel
#                                          (tools/kernel-trace, through CUPTI)
#   tools/gpu-check.sh other-gpu          on the GPU machine (run does it too): a plan built for
#                                          sm_80 alone is refused, with a message that says why
#   tools/gpu-check.sh bench [FLAGS]      on the GPU machine: the benchmark alone (run does it too),
#                                          tools/gpu_benchmark.py run's FLAGS (--no-torch, --models)
#
# What it covers: the hand-written CUDA kernels, cuBLASLt linears and the NVRTC-generated fused
# elementwise kernel against the CPU kernels in f32, f16 and bf16 (llmc-cuda-tests), NVRTC compiling
# every op for sm_80 and sm_90a (llmc-cuda-codegen-tests), the decode linears' GEMV against
# cuBLASLt, the decode attention, a 512-token prompt's kernels and a step between kernels against
# a grid barrier (llmc-cuda-kernel-bench, at Llama-1B and SmolLM2 shapes), whole plans of the tiny
# models (f32, bf16, f16; KV-cache generation with the cache on the GPU) and of the three real
# models (random weights) on the CUDA executor against their CPU outputs (cuda_vs_cpu.py), the
# refusal of a plan built for another GPU (other-gpu), ResNet-50's latency with its convolutions
# on cuBLASLt and on the direct kernel, then tools/gpu_benchmark.py: SmolLM2- and
# Llama-3.2-1B-shaped plans without weights (bf16) against PyTorch eager and torch.compile, then the
# kernel traces of a Llama-1B and a SmolLM2 generation, decode step and prompt (profile).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PACK=gpu-pack
BINARIES=(llmc-cuda-tests llmc-cuda-codegen-tests)
KERNEL_BENCH=llmc-cuda-kernel-bench

case "${1:-}" in
pack)
  BUILD="${2:-build}"
  rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib"
  for b in "${BINARIES[@]}"; do
    cp "$BUILD/test/$b" "$PACK/bin/"
  done
  cp "$BUILD/test/$KERNEL_BENCH" "$BUILD/tools/llmc-run/llmc-run" "$PACK/bin/"
  cp "$BUILD/runtime/libllmc.so" "$BUILD/runtime/libllmc_cuda.so" "$PACK/lib/"
  # The kernel tracer and the CUPTI it was built with (for `profile`).
  if [ -f "$BUILD/tools/kernel-trace/libllmc_kernel_trace.so" ]; then
    cp "$BUILD/tools/kernel-trace/libllmc_kernel_trace.so" "$PACK/lib/"
    cp -L "$(ldd "$BUILD/tools/kernel-trace/libllmc_kernel_trace.so" | awk '$1 ~ /^libcupti/ {print $3}')" "$PACK/lib/"
  fi
  for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
    path=$(ldd "$PACK/bin/llmc-cuda-tests" | awk -v l="$lib" '$1 == l {print $3}')
    [ -n "$path" ] && cp -L "$path" "$PACK/lib/"
  done
  # Compressed with xz (93 MB to 12; gzip made 33: xz's window finds the CUDA kernels that the
  # test binaries and the executor's library each embed): at most 64 MiB can be carried.
  tar -cf - -C "$PACK" bin lib | xz -T0 -9e > "$PACK/binaries.tar.xz" && rm -rf "$PACK/bin" "$PACK/lib"
  # The real models too (random weights: their plans' ops, not their bytes).
  python3 test/cuda/cuda_vs_cpu.py prepare --llmc "$BUILD/tools/llmc/llmc" --llmc-run "$BUILD/tools/llmc-run/llmc-run" \
    --out "$PACK/plans" --real-models
  tar -cf - -C "$PACK" plans | xz -T0 -9 > "$PACK/plans.tar.xz" && rm -rf "$PACK/plans"
  python3 tools/gpu_benchmark.py prepare --llmc "$BUILD/tools/llmc/llmc" --out "$PACK/bench"
  # A plan for another GPU than the H200 (sm_80 only), which `run` expects to be refused.
  "$BUILD/tools/llmc/llmc" models/tiny_llama.onnx -o "$PACK/other-gpu.llmc" --input-shape input_ids=1x16 \
    --target cuda --cuda-arch sm_80 > /dev/null
  git rev-parse HEAD > "$PACK/COMMIT"
  du -sh "$PACK"
  # The device tool carries 64 MiB in all, the working tree (about 6.5 MB) included.
  packed=$(du -sm "$PACK" | cut -f1)
  [ "$packed" -le 57 ] || echo "warning: $PACK is $packed MB; with the working tree it may exceed the 64 MiB the device tool carries" >&2
  ;;
run | profile | other-gpu | bench)
  [ -f "$PACK/binaries.tar.xz" ] && [ -f "$PACK/plans.tar.xz" ] ||
    { echo "no $PACK/ (or one from before its archives were xz): run 'tools/gpu-check.sh pack' on a build machine and carry it" >&2; exit 2; }
  # Unpacked once: `run` hands its folder to the `profile` and `other-gpu` it calls.
  if [ -n "${LLMC_GPU_CHECK_UNPACKED:-}" ] && [ -d "$LLMC_GPU_CHECK_UNPACKED/bin" ]; then
    unpacked=$LLMC_GPU_CHECK_UNPACKED
  else
    unpacked=$(mktemp -d)
    trap 'rm -rf "$unpacked"' EXIT
    for archive in binaries plans; do
      # Python's tarfile where the machine has no xz.
      if command -v xz > /dev/null; then
        tar -xJf "$PACK/$archive.tar.xz" -C "$unpacked"
      else
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$PACK/$archive.tar.xz" "$unpacked"
      fi
    done
    export LLMC_GPU_CHECK_UNPACKED=$unpacked
  fi
  BIN="$unpacked/bin"
  # The pack's libraries first, then CUDA's own (cuBLASLt, NVRTC) from the machine's toolkit.
  export LD_LIBRARY_PATH="$unpacked/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ "$1" = other-gpu ]; then
    # Exit 0 when llmc-run refuses the sm_80 plan with the target check's message (77 without a GPU).
    out=$("$BIN/llmc-run" "$PACK/other-gpu.llmc" --random --int-max 512 --device cuda 2>&1) &&
      { echo "$out"; echo "the sm_80 plan ran: not refused"; exit 1; }
    echo "$out"
    case "$out" in
    *"no CUDA device"*) exit 77 ;;
    *"has compute capability"*"the plan was built for CUDA sm_80"*) exit 0 ;;
    *) exit 1 ;;
    esac
  fi
  if [ "$1" = bench ]; then
    # The benchmark alone (a second run's minutes): gpu_benchmark.py run with the flags given.
    shift
    python3 tools/gpu_benchmark.py run --llmc-run "$BIN/llmc-run" --dir "$PACK/bench" "$@"
    exit 0
  fi
  if [ "$1" = profile ]; then
    # The benchmark's generation (512-token prompt, 128 new tokens, graphs on) with every kernel
    # recorded: the kernels' times by name, and one decode step's replay of its graph.
    model="${2:-llama1b}"
    [ -f "$unpacked/lib/libllmc_kernel_trace.so" ] || { echo "the pack has no kernel tracer" >&2; exit 2; }
    nvidia-smi -L > /dev/null 2>&1 || { echo "no GPU: nothing to trace" >&2; exit 77; }
    ids=$(python3 tools/gpu_benchmark.py prompt-ids --dir "$PACK/bench" --model "$model")
    echo "== $model: kernel trace of the benchmark's generation"
    LD_PRELOAD="$unpacked/lib/libllmc_kernel_trace.so" "$BIN/llmc-run" generate "$PACK/bench/$model.llmc" --device cuda \
      --prompt-ids "$ids" --max-tokens 129 --ids --ignore-eos ${GPU_PROFILE_ARGS:-} 2>&1 | grep -v '^[0-9 ]*$'
    exit 0
  fi
  # The device tool returns only the tail of the output: keep all of it under $OUT, which it returns.
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    exec > >(tee -a "$OUT/gpu-check.log") 2>&1
  fi
  echo "== llmc GPU check, commit $(cat "$PACK/COMMIT"), $(date -u +%Y-%m-%dT%H:%MZ)"
  # Everything within 8 minutes: each step gets at most its own cap and what is left of 470 s
  # (GPU_CHECK_SECONDS: fewer, where the device time left is less).
  deadline=$(( $(date +%s) + ${GPU_CHECK_SECONDS:-470} ))
  limit() { local left=$(( deadline - $(date +%s) )); [ "$left" -lt "$1" ] && echo $(( left > 5 ? left : 5 )) || echo "$1"; }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  summary=()
  failed=0
  # step NAME CAP OK-WORD COMMAND...: runs the command within CAP seconds (or what is left) and
  # records how it ended: OK-WORD on exit 0 (PASS, or DONE for a benchmark: its figures are
  # above), SKIPPED on 77 (no usable GPU), FAIL otherwise; all but exit 0 fail the check.
  step() {
    local name=$1 cap=$2 word=$3 start rc
    shift 3
    start=$(date +%s)
    set +e
    timeout "$(limit "$cap")" "$@"
    rc=$?
    set -e
    local took=$(( $(date +%s) - start ))
    case $rc in
    0) summary+=("$(printf '%-7s' "$word") $name (${took} s)") ;;
    77) summary+=("SKIPPED $name: no usable GPU") ; failed=1 ;;
    *) summary+=("FAIL    $name: exit $rc (${took} s)") ; failed=1 ;;
    esac
  }
  for b in "${BINARIES[@]}"; do
    echo "== $b"
    step "$b" 120 PASS "$BIN/$b" --gtest_brief=1 # failures only; the count at the end
  done
  echo "== $KERNEL_BENCH: the decode step's linears (llmc's GEMV vs cuBLASLt), a prompt's kernels, attention, and steps between kernels"
  step "$KERNEL_BENCH" 60 DONE "$BIN/$KERNEL_BENCH"
  echo "== a plan built for another GPU (sm_80 only) is refused, saying which"
  step "target check (an sm_80 plan on this GPU)" 20 PASS "$0" other-gpu
  echo "== whole plans: CUDA executor vs CPU outputs"
  step "cuda_vs_cpu (tiny and real models' plans)" 150 PASS \
    python3 test/cuda/cuda_vs_cpu.py check --llmc-run "$BIN/llmc-run" --dir "$unpacked/plans"
  # Every convolution of one group runs as im2col and a cuBLASLt GEMM since session 18 (the
  # direct kernel before): ResNet-50's latency both ways.
  echo "== ResNet-50 (random weights, f32, batch 1): convolutions on cuBLASLt, then on the direct kernel"
  step "resnet50 convolutions, GEMM vs direct" 40 DONE sh -c '
    for gemm in 1 0; do
      echo "LLMC_CUDA_CONV_GEMM=$gemm"
      out=$(LLMC_CUDA_CONV_GEMM=$gemm "$1" "$2" --device cuda --random --quiet --benchmark 20 2>&1); rc=$?
      echo "$out"
      case "$out" in *"no CUDA device"*) exit 77 ;; esac
      [ "$rc" = 0 ] || exit 1
    done' sh "$BIN/llmc-run" "$unpacked/plans/real-resnet50.llmc"
  echo "== benchmark"
  # GPU_CHECK_BENCH_ARGS: more gpu_benchmark.py flags (--no-torch for llmc's rows alone).
  step "benchmark" 330 DONE \
    python3 tools/gpu_benchmark.py run --llmc-run "$BIN/llmc-run" --dir "$PACK/bench" ${GPU_CHECK_BENCH_ARGS:-}
  echo "== where a Llama-1B decode step's time goes (kernel trace, overlapping launches off)"
  GPU_PROFILE_ARGS=--no-cuda-overlap step "kernel trace" 60 DONE "$0" profile llama1b
  # SmolLM2's step is latency-bound (154 launches for 269 MB): where its time goes has not been
  # traced yet.
  echo "== where a SmolLM2 decode step's time goes (kernel trace, overlapping launches off)"
  GPU_PROFILE_ARGS=--no-cuda-overlap step "kernel trace smollm2" 45 DONE "$0" profile smollm2
  # The same with each layer in one cooperative launch, its attention and the four GEMVs after it
  # (off by default until measured): what one chain and its grid barriers take.
  echo "== the same with chained layers (LLMC_CUDA_GEMV_CHAIN=resident LLMC_CUDA_CHAIN_ATTENTION=1)"
  LLMC_CUDA_GEMV_CHAIN=resident LLMC_CUDA_CHAIN_ATTENTION=1 GPU_PROFILE_ARGS=--no-cuda-overlap \
    step "kernel trace smollm2, chained layers" 45 DONE "$0" profile smollm2
  echo "== summary"
  printf '%s\n' "${summary[@]}"
  exit $failed
  ;;
*)
  sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
