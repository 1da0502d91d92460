#!/usr/bin/env bash
# run 9: xlacc bench with cuDNN's pool in the cache's block order: the ragged project at the shapes, the decode template's project
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
(cd $S && timeout 250 python3 -m xlacc bench ragged_op --shape 64x2048,8x8192,1x4096x4096,8x2048x2048,32x512x512 --rounds 3 --json $OUT/r/ragged.json 2>&1 | grep -v "^W1129\|^I0000\|^E0000" > $OUT/r/ragged.txt; tail -3 $OUT/r/ragged.txt | cut -c1-200)
date -u
(cd $S && timeout 150 python3 -m xlacc bench paged_op --shape 64x2048,8x8192 --rounds 3 --json $OUT/r/paged.json 2>&1 | grep -v "^W1129\|^I0000\|^E0000" > $OUT/r/paged.txt; tail -3 $OUT/r/paged.txt | cut -c1-200)
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
