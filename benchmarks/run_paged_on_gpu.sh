#!/usr/bin/env bash
# The paged-attention and paged-kv-write figures of benchmarks/RESULTS.md, on the GPU machine.
#
#   bash benchmarks/run_paged_on_gpu.sh build PREBUILT      # anywhere nvcc is (no GPU needed): sm_90 libraries
#   bash benchmarks/run_paged_on_gpu.sh final OUT PREBUILT  # on the GPU: numerics, the grid, the decode step
#
# `final` runs, in this order: the numerics check against float64 (every dtype, head size and
# block size, ragged lengths, split and whole) with the 64 x 2048 figures in bf16, f16 and f32;
# the grid against Pallas and jnp in bf16 and f16; the decode step and the write sweep; and the
# small points of the grid again with XLA's command buffers left to fusions (-CUSTOM_CALL).
set -uo pipefail
stage=$1
export PYTHONUNBUFFERED=1
case "$stage" in
  build)
    pre=$2
    python3 benchmarks/bench_paged_attention.py --build-only --arch sm_90 --workdir "$pre/bpa" &
    python3 benchmarks/bench_decode_step.py --build-only --arch sm_90 --workdir "$pre/dsb" &
    wait
    ;;
  final)
    out=$2 pre=$3
    {
      date -u +"%F %T UTC"
      nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
      python3 -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())'
      nvcc --version | tail -1
    } 2>&1 | tee "$out/log"
    timeout 120 python3 benchmarks/bench_paged_attention.py --prebuilt --workdir "$pre/bpa" --check --extra-dtypes f16,f32 --out "$out" 2>&1 \
      | grep -v "^  ok " | tee -a "$out/log"
    timeout 330 python3 benchmarks/bench_paged_grid.py --prebuilt --workdir "$pre/bpa" --dtypes bf16,f16 --budget 300 --out "$out/grid.json" 2>&1 \
      | grep -v -i "warning\|cuda_timer\|bfc_allocator\|from jax.experimental" | tee -a "$out/log"
    timeout 120 python3 benchmarks/bench_decode_step.py --prebuilt --workdir "$pre/dsb" --out "$out/decode_step.json" 2>&1 | tee -a "$out/log"
    XLA_FLAGS=--xla_gpu_enable_command_buffer=-CUSTOM_CALL timeout 90 python3 benchmarks/bench_paged_grid.py --prebuilt --workdir "$pre/bpa" \
      --dtypes bf16 --seqs 1,4,16 --contexts 512,2048,8192 --other-head-sizes "" --out "$out/grid_custom_calls_outside_graphs.json" 2>&1 \
      | grep "MiB\|min_vs\|below" | tee -a "$out/log"
    ;;
esac
