#!/usr/bin/env bash
# run 6: xlacc bench's GPU tests and run-smoke's with the steady-state timing; benchmarks/ragged_timeline.py on an instrumented build
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
timeout 100 python3 benchmarks/ragged_timeline.py run $S/brx $OUT/r/timeline 2>&1 | grep -v "^W1129" | tail -5
date -u
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/commands/bench/test_gpu_bench.py > $OUT/r/test_gpu_bench.txt 2>&1; echo "gpu bench: $(tail -1 $OUT/r/test_gpu_bench.txt)"; grep -E "^FAILED|^E " $OUT/r/test_gpu_bench.txt | head -8
date -u
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/commands/smoke/test_gpu.py > $OUT/r/test_smoke_gpu.txt 2>&1; echo "smoke gpu: $(tail -1 $OUT/r/test_smoke_gpu.txt)"; grep -E "^FAILED|^E " $OUT/r/test_smoke_gpu.txt | head -8
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
