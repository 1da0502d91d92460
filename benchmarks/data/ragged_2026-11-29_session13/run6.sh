#!/usr/bin/env bash
# run 6: the whole prefill grid of the landed kernel (zero's SASS is HEAD's) against cuDNN's paged
# prefill and cuDNN's dense SDPA (TFLOP/s), two processes
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
mkdir -p $OUT/r; date -u
for i in 1 2; do
  timeout 170 python3 benchmarks/bench_ragged.py --prebuilt --workdir .gpu/runC/zero --skip jnp,pallas,decode --only "prefill" --rounds 3 --budget 140 --out $OUT/r/prefill_$i.json > $OUT/r/prefill_$i.txt 2>&1
  echo "process $i: $?"; grep -E "^\| prefill|peak" $OUT/r/prefill_$i.txt | head -8
done
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
