#!/usr/bin/env bash
# run 5: the zeros build (the prefill kernel writes the padding tokens' zeros; no 64-row kernel
# after it): its GPU tests (sm_90a whole set, sm_90 body quick set), then few against zero at the
# prefill points and the mixed batch
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
R=.gpu/runC; mkdir -p $OUT/r; date -u
md5sum $R/few/ragged/kernel.cu $R/zero/ragged/kernel.cu $R/zero/generic/ragged/kernel.cu | tee $OUT/r/md5.txt
RAGGED_PREBUILT=$R/zero/ragged timeout 230 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k cuda > $OUT/r/test_zero_full.txt 2>&1; echo "full zero: $(tail -1 $OUT/r/test_zero_full.txt)"
grep -E "FAILED|Error" $OUT/r/test_zero_full.txt | head -10
RAGGED_PREBUILT=$R/zero/generic/ragged timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "every and bf16" > $OUT/r/test_zero_generic.txt 2>&1; echo "generic zero: $(tail -1 $OUT/r/test_zero_generic.txt)"; date -u
timeout 330 python3 benchmarks/compare_builds.py --build few=$R/few --build zero=$R/zero --out $OUT/r/cmp --rounds 2 --only "mixed,prefill" 2>&1 | tail -20
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
