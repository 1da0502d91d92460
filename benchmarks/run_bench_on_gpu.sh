#!/usr/bin/env bash
# `xlacc bench` on the add, rms-norm and paged-attention templates, as benchmarks/RESULTS.md quotes
# it, on a machine with an NVIDIA GPU, jax with CUDA and nvcc. Run from a checkout of xlacc:
#
#     bash benchmarks/run_bench_on_gpu.sh OUTDIR
#
# Each project is generated (`xlacc new`, jax only) and built (`xlacc build`, for the visible GPU)
# in a temporary folder; OUTDIR gets each bench's terminal output, JSON, CSV and HTML chart, the
# paged-attention trace, and `run-smoke --bench` on add at 1M elements (the issue's two numbers).
set -uo pipefail
out="$(realpath -m "${1:?usage: run_bench_on_gpu.sh OUTDIR}")"
mkdir -p "$out"
export PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work="$(mktemp -d)"
cd "$work" || exit 1
x() { python3 -m xlacc "$@"; }

x new add_ffi --template add --framework jax >/dev/null &&
  x new rms_norm_ffi --template rms-norm --framework jax >/dev/null &&
  x new paged_attention_ffi --template paged-attention --framework jax --dtype bf16 >/dev/null || exit 1
for project in add_ffi rms_norm_ffi paged_attention_ffi; do
  x build "$project" >"$out/build_$project.txt" 2>&1 &
done
wait

status=0
bench() {  # NAME PROJECT FLAGS...: the table on stdout and OUTDIR/NAME.txt, files beside it
  local name="$1" project="$2"
  shift 2
  x bench "$project" "$@" --json "$out/$name.json" --csv "$out/$name.csv" --chart "$out/$name.html" 2>&1 | tee "$out/$name.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
bench add add_ffi
bench rms_norm rms_norm_ffi --dtype f32,bf16
bench paged_attention paged_attention_ffi --dtype bf16 --trace "$out/trace"
x run-smoke add_ffi --framework jax --sizes 1,1048576 --bench 2>&1 | tee "$out/run_smoke_add.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit "$status"
