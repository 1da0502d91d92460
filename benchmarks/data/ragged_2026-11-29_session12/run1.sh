#!/usr/bin/env bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
R=.gpu/runB; mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/r/gpu.txt; cat $OUT/r/gpu.txt; date -u
RAGGED_PREBUILT=$R/main/ragged timeout 220 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k cuda > $OUT/r/test_main_full.txt 2>&1; echo "full main: $(tail -1 $OUT/r/test_main_full.txt)"; date -u
timeout 330 python3 benchmarks/compare_builds.py --build main=$R/main --build pf256=$R/pf256 --build pf512=$R/pf512 --out $OUT/r/cmp --rounds 1 --only "decode,mixed,prefill 8 x 2048" --tests "cuda and bf16 and (every and 128 or window_cap)" 2>&1 | tail -40
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
