#!/usr/bin/env bash
# The ragged-paged-attention figures of benchmarks/RESULTS.md, on the GPU machine.
#
#   bash benchmarks/run_ragged_on_gpu.sh build PREBUILT      # anywhere nvcc is (no GPU needed): sm_90a libraries,
#                                                            # and PREBUILT/generic for sm_90 (the mma.sync prefill body)
#   bash benchmarks/run_ragged_on_gpu.sh final OUT PREBUILT  # on the GPU: tests, grid and peers below, one after another
#   bash benchmarks/run_ragged_on_gpu.sh tests OUT PREBUILT  #   the GPU tests of both builds (about 5 minutes)
#   bash benchmarks/run_ragged_on_gpu.sh grid OUT PREBUILT   #   the whole grid against cuDNN and the decode template (8)
#   bash benchmarks/run_ragged_on_gpu.sh peers OUT PREBUILT  #   Pallas and jnp at the decode points (5): each stage fits
#                                                            #   one call of a machine that stops a command at 10 minutes
#   bash benchmarks/run_ragged_on_gpu.sh compare OUT BASE CANDIDATE [POINTS]
#                                                            # on the GPU: two builds (each made by `build` from its own tree)
#                                                            # in turns, two rounds (POINTS: --only's texts, default
#                                                            # "decode,prefill,mixed"): each build's time, its ratio to the
#                                                            # base's and to the peers in the same processes
#
# PYTHON: the interpreter (default python3); `build` needs one with jax (for its FFI headers).
set -uo pipefail
stage=$1
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
quiet() { grep -v -i "warning\|cuda_timer\|bfc_allocator\|from jax.experimental"; }

environment() {
  {
    date -u +"%F %T UTC"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
    "$py" -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())'
  } 2>&1 | tee -a "$1/log"
}

gpu_tests() {
  RAGGED_PREBUILT="$2/generic/ragged" timeout 120 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "every and bf16" 2>&1 | tail -2 | tee -a "$1/log"
  RAGGED_PREBUILT="$2/ragged" timeout 240 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py 2>&1 | tail -5 | tee -a "$1/log"
}

# The whole grid against cuDNN (paged and dense) and the decode template.
grid() {
  timeout 480 "$py" benchmarks/bench_ragged.py --prebuilt --workdir "$2" --skip jnp,pallas --budget 400 --out "$1/ragged.json" 2>&1 | quiet | tee -a "$1/log"
}

# Pallas and jnp at the decode points they finish in time (a first run with every contender at
# every point spent its whole 470 s limit by the second point).
peers() {
  timeout 300 "$py" benchmarks/bench_ragged.py --prebuilt --workdir "$2" --only "decode 64 x,decode 8 x,decode 4 x" --skip cudnn_sdpa \
    --budget 220 --out "$1/ragged_decode_peers.json" 2>&1 | quiet | tee -a "$1/log"
}

case "$stage" in
  build)
    "$py" benchmarks/bench_ragged.py --build-only --arch sm_90a --workdir "$2" &&
      "$py" benchmarks/bench_ragged.py --build-only --arch sm_90 --workdir "$2/generic"
    ;;
  final)
    mkdir -p "$2"; environment "$2"; gpu_tests "$2" "$3"; grid "$2" "$3"; peers "$2" "$3"
    ;;
  tests)
    mkdir -p "$2"; environment "$2"; gpu_tests "$2" "$3"
    ;;
  grid | peers)
    mkdir -p "$2"; environment "$2"; "$stage" "$2" "$3"
    ;;
  compare)
    # Each build's quick GPU tests, then both in turns (A B B A, two rounds), the op and its peers in
    # every process: benchmarks/compare_builds.py (TESTS: its -k expression; SKIP: the contenders
    # left out). Then the candidate's generic (sm_90) build's tests.
    out=$2 base=$3 candidate=$4 points=${5:-decode,prefill,mixed}
    mkdir -p "$out"
    "$py" benchmarks/compare_builds.py --build base="$base" --build candidate="$candidate" --out "$out" --rounds 2 --only "$points" \
      --skip "${SKIP:-jnp,pallas,cudnn_sdpa}" --tests "${TESTS:-cuda and bf16 and every and 128}" 2>&1 | tee -a "$out/log"
    RAGGED_PREBUILT="$candidate/generic/ragged" timeout 100 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "every and bf16" 2>&1 | tail -1 | tee -a "$out/log"
    ;;
esac
