#!/usr/bin/env bash
# run 1: GPU tests of the few-rows prefill build, then main against it at the mixed and prefill points
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
R=.gpu/runC; mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/r/gpu.txt; cat $OUT/r/gpu.txt; date -u
md5sum $R/*/ragged/kernel.cu | tee $OUT/r/md5.txt
RAGGED_PREBUILT=$R/few/ragged timeout 230 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k cuda > $OUT/r/test_few_full.txt 2>&1; echo "full few: $(tail -1 $OUT/r/test_few_full.txt)"; date -u
grep -E "FAILED|Error" $OUT/r/test_few_full.txt | head -20
timeout 300 python3 benchmarks/compare_builds.py --build main=$R/main --build few=$R/few --out $OUT/r/cmp --rounds 2 --only "mixed,prefill 32 x 512,prefill 8 x 2048" 2>&1 | tail -30
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
