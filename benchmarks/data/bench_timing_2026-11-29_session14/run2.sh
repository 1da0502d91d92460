#!/usr/bin/env bash
# run 2: xlacc bench and bench_ragged.py with the steady-state timing, on the same kernel (sm_90a)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
(cd $S && timeout 240 python3 -m xlacc bench ragged_op --shape 64x2048,8x8192,1x4096x4096 --rounds 3 --json $OUT/r/xlacc_bench.json 2>&1 | grep -v "^W1129\|^I0000\|^E0000" | tee $OUT/r/xlacc_bench.txt | cut -c1-200 | tail -22)
date -u
timeout 200 python3 benchmarks/bench_ragged.py --prebuilt --workdir $S/br --only "decode 64 x 2048,decode 8 x 8192,prefill 1 x 4096" --skip jnp,pallas,cudnn_sdpa --rounds 3 --out $OUT/r/bench_ragged.json 2>&1 | grep -v "^W1129" | tail -8
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
