#!/bin/bash
# The model path's GPU measurements (benchmarks/bench_model.py) on the device machine, from the
# repository root, with this tree's xlacc and the projects copied to .gpu/model beforehand:
#   bash .gpu/model/benchmarks/run_model_on_gpu.sh                      # one GPU, the issue's shape
#   bash .gpu/model/benchmarks/run_model_on_gpu.sh --tp 4 --batch 256   # four GPUs against one
# Results: $OUT/model.jsonl (one JSON line per record).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$HERE:/tmp/site:${PYTHONPATH:-}
export XLA_PYTHON_CLIENT_PREALLOCATE=false NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 "$HERE/benchmarks/bench_model.py" --workdir "$HERE/projects" --out "${OUT:-/tmp}/model.jsonl" "$@"
