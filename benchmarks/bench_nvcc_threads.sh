#!/usr/bin/env bash
# A default CUDA build (sm_80 and sm_90 SASS + compute_90 PTX, as `xlacc build` makes without a
# visible GPU) of three templates, with and without `nvcc --threads 0`, alternately, twice: wall
# and user seconds of each compile. Needs nvcc, jaxlib (XLA's FFI headers), typer and jinja2.
#   bash benchmarks/bench_nvcc_threads.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
ffi_include="$(python3 -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("jaxlib").origin).parent / "include")')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
for template in add rms-norm paged-attention; do
  python3 -m xlacc new "p_${template//-/_}" --template "$template" --platform cuda >/dev/null
done
nproc; nvcc --version | tail -1
gencode=(-gencode arch=compute_80,code=sm_80 -gencode "arch=compute_90,code=[sm_90,compute_90]")
for round in 1 2; do
  for project in p_add p_rms_norm p_paged_attention; do
    for threads in "" "--threads 0"; do
      cd "$work/$project"
      TIMEFORMAT="round $round $project [${threads:-serial}] %R s wall, %U s user"
      # shellcheck disable=SC2086
      time nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -Xcompiler -fvisibility=hidden "${gencode[@]}" $threads \
        -I "$repo/xlacc/include" -I . -isystem "$ffi_include" -lineinfo -o lib.so "$project/_entry_points.cu"
    done
  done
done
