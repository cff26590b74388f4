#!/bin/sh
# The CUDA executor's switches for comparing variants and for tests (LLMC_CUDA_GEMV_BLOCKS,
# ..._GEMV_CHAIN, ..._CHAIN_ATTENTION, ..._PREFETCH, ..._SPLIT_PROMPT_ATTENTION, ..._CONV_GEMM,
# ..._CONV_ROWS, ..._GROUPED_EXPERTS; docs/cuda.md) refuse a mistyped value, naming it, and run with every value they
# take.
# Usage: env_switches.sh LLMC LLMC_RUN MODEL PLAN (CUDA backend set).
llmc=$1 llmc_run=$2 model=$3 plan=$4
"$llmc" "$model" -o "$plan" --input-shape input_ids=1x16 --target cuda > /dev/null || exit 1
refused() { # EXPECTED VAR=VALUE...
  expected=$1
  shift
  if out=$(env "$@" "$llmc_run" "$plan" --random --int-max 512 --device cuda 2>&1); then
    echo "FAIL: $* ran"
    exit 1
  fi
  case "$out" in
  *"$expected"*) echo "refused: $*" ;;
  *) echo "FAIL: $*: $out"; exit 1 ;;
  esac
}
refused "LLMC_CUDA_GEMV_CHAIN=resdient: must be 'resident' or a number of blocks" LLMC_CUDA_GEMV_CHAIN=resdient
refused "LLMC_CUDA_GEMV_BLOCKS=-3: must be 'resident' or a number of blocks" LLMC_CUDA_GEMV_BLOCKS=-3
refused "LLMC_CUDA_GEMV_BLOCKS=4x: must be 'resident' or a number of blocks" LLMC_CUDA_GEMV_BLOCKS=4x
refused "LLMC_CUDA_CHAIN_ATTENTION=yes: must be 0 or 1" LLMC_CUDA_CHAIN_ATTENTION=yes
refused "LLMC_CUDA_PREFETCH=: must be 0 or 1" LLMC_CUDA_PREFETCH=
refused "LLMC_CUDA_SPLIT_PROMPT_ATTENTION=off: must be 0 or 1" LLMC_CUDA_SPLIT_PROMPT_ATTENTION=off
refused "LLMC_CUDA_CONV_ROWS=-1: must be a number of rows" LLMC_CUDA_CONV_ROWS=-1
refused "LLMC_CUDA_CONV_GEMM=no: must be 0 or 1" LLMC_CUDA_CONV_GEMM=no
refused "LLMC_CUDA_GROUPED_EXPERTS=2: must be 0 or 1" LLMC_CUDA_GROUPED_EXPERTS=2
for switches in "LLMC_CUDA_GEMV_BLOCKS=resident LLMC_CUDA_PREFETCH=0" "LLMC_CUDA_GEMV_BLOCKS=2 LLMC_CUDA_PREFETCH=1" \
  "LLMC_CUDA_GEMV_CHAIN=resident LLMC_CUDA_CHAIN_ATTENTION=1" "LLMC_CUDA_GEMV_CHAIN=0 LLMC_CUDA_CHAIN_ATTENTION=0" \
  "LLMC_CUDA_SPLIT_PROMPT_ATTENTION=0" "LLMC_CUDA_CONV_ROWS=64 LLMC_CUDA_CONV_GEMM=0" \
  "LLMC_CUDA_GROUPED_EXPERTS=0"; do
  # shellcheck disable=SC2086 # one word per switch
  env $switches "$llmc_run" "$plan" --random --int-max 512 --device cuda > /dev/null || { echo "FAIL: $switches"; exit 1; }
  echo "ran: $switches"
done
echo "PASS"
