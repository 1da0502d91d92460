#!/usr/bin/env bash
# The ragged-paged-attention figures of benchmarks/RESULTS.md, on the GPU machine.
#
#   bash benchmarks/run_ragged_on_gpu.sh build PREBUILT      # anywhere nvcc is (no GPU needed): sm_90a libraries,
#                                                            # and PREBUILT/generic for sm_90 (the mma.sync prefill body)
#   bash benchmarks/run_ragged_on_gpu.sh final OUT PREBUILT  # on the GPU: the GPU tests of both builds, then the grid
#   bash benchmarks/run_ragged_on_gpu.sh compare OUT BASE CANDIDATE [POINTS]
#                                                            # on the GPU: two builds (each made by `build`) in turns on one
#                                                            # machine, the op alone, two rounds each (POINTS: --only's texts,
#                                                            # default "decode,prefill,mixed"); the ratio base / candidate per
#                                                            # point (above 1: the candidate is faster); then the candidate's GPU tests
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
    out=$2 base=$3 candidate=$4 points=${5:-decode,prefill,mixed}
    if cmp -s "$base/ragged/kernel.cu" "$candidate/ragged/kernel.cu"; then
      echo "compare: $base and $candidate hold the same kernel.cu (was the candidate rendered from its own checkout?)" >&2
      exit 2
    fi
    for round in 1 2; do
      for side in base candidate; do
        pre=$base; [ "$side" = candidate ] && pre=$candidate
        timeout 150 "$py" benchmarks/bench_ragged.py --prebuilt --workdir "$pre" --skip jnp,pallas,decode,cudnn,cudnn_sdpa --only "$points" \
          --rounds 3 --samples 3 --budget 130 --out "$out/${side}_$round.json" 2>&1 | grep "^\[" | sed "s/^/$side: /" | tee -a "$out/log"
      done
    done
    "$py" - "$out" <<'PY' | tee -a "$out/log"
import json, statistics, sys
from pathlib import Path
def times(side):
    found = {}
    for path in sorted(Path(sys.argv[1]).glob(f"{side}_*.json")):
        for row in json.loads(path.read_text())["rows"]:
            found.setdefault(row["label"], []).append(round(row["us"]["xlacc"], 1))
    return found
base, candidate = times("base"), times("candidate")
for label in base:
    if label in candidate:
        b, c = statistics.median(base[label]), statistics.median(candidate[label])
        print(f"{label}: base {b:.1f} us, candidate {c:.1f} us: {b / c:.3f}x (rounds {base[label]} / {candidate[label]})")
PY
    RAGGED_PREBUILT="$candidate/generic/ragged" timeout 100 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "every and bf16" 2>&1 | tail -1 | tee -a "$out/log"
    RAGGED_PREBUILT="$candidate/ragged" timeout 240 "$py" -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py 2>&1 | tail -1 | tee -a "$out/log"
    ;;
esac
