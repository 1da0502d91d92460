#!/usr/bin/env bash
# run 8: xlacc bench of a user's ragged project at the shapes, with the steady-state timing and the queueing share
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
(cd $S && timeout 420 python3 -m xlacc bench ragged_op --shape 64x2048,8x8192,1x4096x4096,8x2048x2048,32x512x512 --rounds 3 --json $OUT/r/xlacc_bench.json 2>&1 | grep -v "^W1129\|^I0000\|^E0000" > $OUT/r/xlacc_bench.txt; tail -8 $OUT/r/xlacc_bench.txt | cut -c1-220)
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
