#!/usr/bin/env bash
# run 3: the persistent prefill kernel's per-item timeline (instrumented build, .gpu/s14/tl)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
timeout 300 python3 $S/tl_run.py $S/tl/ragged_op $OUT/r 2>&1 | grep -v "^W1129" | tail -12
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
