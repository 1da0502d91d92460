#!/usr/bin/env bash
# What the torchax figures in benchmarks/RESULTS.md come from, in one run on the GPU machine:
#   bash benchmarks/run_torchax_on_gpu.sh OUTDIR
# Needs python3 with jax (CUDA), torch (CUDA), torchax, typer, rich, jinja2, pytest, pyelftools,
# cuda-pathfinder, and nvcc. torch_xla is not needed: its programs were lowered on a CPU machine
# (benchmarks/data/torch_xla_programs.json, `python benchmarks/torch_xla_programs.py emit`).
set -uo pipefail
out="${1:-.}"
mkdir -p "$out"
work="$(mktemp -d)"
export PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
  date -u +%F
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
  python3 -c 'import jax, jaxlib, torch, torchax; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "torch", torch.__version__, "cuda", torch.version.cuda, "torchax", torchax.__version__, jax.devices())'
  nvcc --version | tail -1
} 2>&1 | tee "$out/environment_torchax.txt"
# The benchmark's projects build while the tests run (nvcc uses the CPUs, the tests the GPU).
python3 benchmarks/bench_torchax.py --out "$out" --workdir "$work/bench" --build-only > "$work/bench_build.log" 2>&1 &
builder=$!
XLACC_TORCH_XLA_GPU_REPORT="$out/torch_xla_programs_gpu.json" timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_torchax.py 2>&1 | tee "$out/gpu_torchax_tests.log"
wait "$builder" || cat "$work/bench_build.log"
timeout 200 python3 benchmarks/bench_torchax.py --out "$out" --workdir "$work/bench" > "$out/bench_torchax.log" 2>&1
tail -5 "$out/bench_torchax.log"
