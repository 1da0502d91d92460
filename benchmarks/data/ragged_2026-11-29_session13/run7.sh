#!/usr/bin/env bash
# run 7: few against zero at the decode points (zero's 64-row kernel lost the prefill_ran branches)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
R=.gpu/runC; mkdir -p $OUT/r; date -u
timeout 250 python3 benchmarks/compare_builds.py --build few=$R/few --build zero=$R/zero --out $OUT/r/cmp --rounds 2 --only "decode" 2>&1 | tail -12
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
