#!/usr/bin/env bash
# The ragged-paged-attention figures of benchmarks/RESULTS.md, on the GPU machine.
#
#   bash benchmarks/run_ragged_on_gpu.sh build PREBUILT      # anywhere nvcc is (no GPU needed): sm_90a libraries,
#                                                            # and PREBUILT/generic for sm_90 (the mma.sync prefill body)
#   bash benchmarks/run_ragged_on_gpu.sh final OUT PREBUILT  # on the GPU: the GPU tests of both builds, then the grid
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
case "$stage" in
  build)
    "$py" benchmarks/bench_ragged.py --build-only --arch sm_90a --workdir "$2" &&
      "$py" benchmarks/bench_ragged.py --build-only --arch sm_90 --workdir "$2/generic"
    ;;
  final)
    out=$2 pre=$3
    {
      date -u +"%F %T UTC"
      nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
      "$py" -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())'
    } 2>&1 | tee "$out/log"
    RAGGED_PREBUILT="$pre/generic/ragged" timeout 120 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "every and bf16" 2>&1 | tail -2 | tee -a "$out/log"
    RAGGED_PREBUILT="$pre/ragged" timeout 240 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py 2>&1 | tail -5 | tee -a "$out/log"
    # The whole grid against cuDNN (paged and dense) and the decode template; then Pallas and jnp at
    # the decode points they finish in time (a first run with every contender at every point spent
    # its whole 470 s limit by the second point).
    timeout 480 "$py" benchmarks/bench_ragged.py --prebuilt --workdir "$pre" --skip jnp,pallas --budget 400 --out "$out/ragged.json" 2>&1 \
      | grep -v -i "warning\|cuda_timer\|bfc_allocator\|from jax.experimental" | tee -a "$out/log"
    timeout 300 "$py" benchmarks/bench_ragged.py --prebuilt --workdir "$pre" --only "decode 64 x,decode 8 x,decode 4 x" --skip cudnn_sdpa \
      --budget 220 --out "$out/ragged_decode_peers.json" 2>&1 | grep -v -i "warning\|cuda_timer\|bfc_allocator\|from jax.experimental" | tee -a "$out/log"
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
