#!/usr/bin/env bash
# run 5: the TMA producer (brt, tma_tl): GPU tests, per-item timeline against tl, then main (br) against it in turns
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
md5sum $S/br/ragged/kernel.cu $S/brt/ragged/kernel.cu | tee $OUT/r/md5.txt
RAGGED_PREBUILT=$S/brt/ragged timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k cuda > $OUT/r/test_tma_full.txt 2>&1; echo "tests: $(tail -1 $OUT/r/test_tma_full.txt)"; grep -E "^FAILED|Error" $OUT/r/test_tma_full.txt | head -8
date -u
for b in tma_tl tl; do echo "== $b"; timeout 100 python3 $S/tl_run.py $S/$b/ragged_op $OUT/r/$b 2>&1 | grep -v "^W1129" | tail -4; done
date -u
timeout 250 python3 benchmarks/compare_builds.py --build main=$S/br --build tma=$S/brt --out $OUT/r/cmp --rounds 2 --only "mixed,prefill" --skip jnp,pallas,cudnn_sdpa 2>&1 | tail -12
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
