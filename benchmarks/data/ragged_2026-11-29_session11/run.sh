#!/usr/bin/env bash
# In turns: GPU tests of TESTFULL (whole) and TESTQUICK (bf16 subset), then SIDES' benches, ROUNDS rounds.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
R=.gpu/runA; mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/r/gpu.txt; cat $OUT/r/gpu.txt
date -u
for b in $TESTFULL; do
  RAGGED_PREBUILT=$R/$b/ragged timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "cuda" > $OUT/r/test_$b.txt 2>&1; echo "test $b: $(tail -1 $OUT/r/test_$b.txt)"
done
for b in $TESTQUICK; do
  RAGGED_PREBUILT=$R/$b/ragged timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "${TESTQUICKK:-cuda and bf16 and (every and 128 or window_cap)}" > $OUT/r/test_$b.txt 2>&1; echo "quick $b: $(tail -1 $OUT/r/test_$b.txt)"
done
date -u
for round in $(seq 1 ${ROUNDS:-2}); do for b in $SIDES; do
  echo "== $b round $round"
  timeout 240 python3 benchmarks/bench_ragged.py --prebuilt --workdir $R/$b --only "$ONLY" --skip ${SKIP:-jnp,pallas,cudnn_sdpa} --rounds 3 --samples 3 --budget 200 --out $OUT/r/${b}_$round.json > $OUT/r/${b}_$round.log 2>&1
  grep -E "^\[|copy|rror" $OUT/r/${b}_$round.log | cut -c1-300 || tail -5 $OUT/r/${b}_$round.log
done; done
for round in $(seq 1 ${ROUNDS2:-2}); do for b in $SIDES2; do
  echo "== $b prefill round $round"
  timeout 240 python3 benchmarks/bench_ragged.py --prebuilt --workdir $R/$b --only "$ONLY2" --skip ${SKIP2:-jnp,pallas,cudnn_sdpa,decode} --rounds 3 --samples 3 --budget 200 --out $OUT/r/${b}_p$round.json > $OUT/r/${b}_p$round.log 2>&1
  grep -E "^\[|copy|rror" $OUT/r/${b}_p$round.log | cut -c1-200 || tail -5 $OUT/r/${b}_p$round.log
done; done
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
