#!/usr/bin/env bash
# run 1: xlacc bench's timing against bench_ragged.py's on the same kernel (sm_90a), with the
# harness's sample and chain lengths patched; SM clocks and power logged throughout
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/r/gpu.txt; date -u
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 200 > $OUT/r/clocks.csv &
SMI=$!
for v in default long longchain; do
  timeout 170 python3 $S/probe_timing.py $v $S/ragged_op $OUT/r/$v.jsonl $([ $v = default ] && echo "--trace $OUT/r/trace") 2>&1 | grep -v "^WARNING\|^I0000\|^E0000" | tail -14
  date -u
done
timeout 150 python3 benchmarks/bench_ragged.py --prebuilt --workdir $S/br --only "decode 64 x 2048,decode 8 x 8192,prefill 1 x 4096" --skip jnp,pallas,cudnn_sdpa,decode --rounds 2 --out $OUT/r/bench_ragged.json 2>&1 | grep -v "^WARNING" | tail -6
kill $SMI
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
