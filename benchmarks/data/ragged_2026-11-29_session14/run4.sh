#!/usr/bin/env bash
# run 4: per-tile timeline (tl2), and three stages with one query buffer at head 128 (tl_s3) against tl, in turns
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
for b in tl tl_s3 tl2 tl_s3 tl; do
  echo "== $b"; timeout 120 python3 $S/tl_run.py $S/$b/ragged_op $OUT/r/$b.$RANDOM 2>&1 | grep -v "^W1129" | tail -5
done
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
