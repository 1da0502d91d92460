#!/usr/bin/env bash
# The paged-attention and paged-kv-write figures of benchmarks/RESULTS.md, on the GPU machine.
#
#   bash benchmarks/run_paged_on_gpu.sh build PREBUILT          # anywhere nvcc is (no GPU needed): sm_90 libraries
#   bash benchmarks/run_paged_on_gpu.sh check OUT PREBUILT      # GPU: numerics, tuning variants, decode step
#   bash benchmarks/run_paged_on_gpu.sh grid OUT PREBUILT DTYPE # GPU: the grid against Pallas and jnp, one dtype
set -uo pipefail
stage=$1
export PYTHONUNBUFFERED=1
VARIANTS="nosplit:XLACC_PA_MAX_SPLITS=1;s4:XLACC_PA_STAGES=4;w4:XLACC_PA_WARPS=4;min8:XLACC_PA_MIN_SPLIT_TILES=8"
case "$stage" in
  build)
    pre=$2
    python3 benchmarks/bench_paged_attention.py --build-only --arch sm_90 --workdir "$pre/bpa" --variants "$VARIANTS" &
    python3 benchmarks/bench_decode_step.py --build-only --arch sm_90 --workdir "$pre/dsb" &
    wait
    ;;
  check)
    out=$2 pre=$3
    {
      date -u +"%F %T UTC"
      nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
      python3 -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())'
    } 2>&1 | tee "$out/environment.txt"
    for project in paged_attend paged_write; do  # the generated tests, on the GPU
      (cd "$pre/dsb/$project" && python3 -m pytest -q -p no:cacheprovider) 2>&1 | tail -3 | tee -a "$out/check.log"
    done
    python3 benchmarks/bench_paged_attention.py --prebuilt --workdir "$pre/bpa" --check --extra-dtypes f16,f32 --batch-sweep 1,4,16 \
      --seq-lens 16384,32768 --out "$out" 2>&1 | tee -a "$out/check.log"
    python3 benchmarks/bench_paged_attention.py --prebuilt --workdir "$pre/bpa" --variants "$VARIANTS" --batch-sweep 1,16 \
      --seq-lens 32768 --samples 10 2>&1 | tail -40 | tee -a "$out/variants.log"
    python3 benchmarks/bench_decode_step.py --prebuilt --workdir "$pre/dsb" --out "$out/decode_step.json" 2>&1 | tee -a "$out/check.log"
    ;;
  grid)
    out=$2 pre=$3 dtype=$4
    python3 benchmarks/bench_paged_grid.py --prebuilt --workdir "$pre/bpa" --dtypes "$dtype" --out "$out/grid_$dtype.json" 2>&1 | tee "$out/grid_$dtype.log"
    ;;
esac
