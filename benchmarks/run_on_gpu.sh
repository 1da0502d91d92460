#!/usr/bin/env bash
# What the GPU figures in benchmarks/RESULTS.md come from, in one run on the GPU machine:
#   bash benchmarks/run_on_gpu.sh OUTDIR
# Needs python3 with jax (CUDA), torch, typer, rich, jinja2, pytest, pyelftools, cuda-pathfinder, and nvcc.
set -uo pipefail
out="${1:-.}"
mkdir -p "$out"
export PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
  date -u +%F
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
  python3 -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())'
  nvcc --version | tail -1
} 2>&1 | tee "$out/environment.txt"
python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py tests/test_template_paged_attention.py 2>&1 | tee "$out/gpu_tests.log"
python3 benchmarks/bench_gpu.py --sweep-xla-flags --workdir /tmp/xlacc-bench --out "$out/bench_gpu.json" 2>&1 | tee "$out/bench_gpu.log"
