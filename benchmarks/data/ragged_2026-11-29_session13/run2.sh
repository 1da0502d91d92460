#!/usr/bin/env bash
# run 2: the few-rows build's sm_90 (generic) body tests, main against it at the decode points, and
# `xlacc bench` of a ragged project beside cuDNN (tests/commands/bench/test_gpu_bench.py)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
R=.gpu/runC; mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/r/gpu.txt; date -u
md5sum $R/*/ragged/kernel.cu $R/few/generic/ragged/kernel.cu | tee $OUT/r/md5.txt
RAGGED_PREBUILT=$R/few/generic/ragged timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/templates/test_ragged_paged_attention.py -k "every and bf16" > $OUT/r/test_few_generic.txt 2>&1; echo "generic few: $(tail -1 $OUT/r/test_few_generic.txt)"; date -u
timeout 260 python3 benchmarks/compare_builds.py --build main=$R/main --build few=$R/few --out $OUT/r/cmp --rounds 2 --only "decode" 2>&1 | tail -14
date -u
which nvcc; nvcc --version | tail -1
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/commands/bench/test_gpu_bench.py -k ragged > $OUT/r/test_gpu_bench.txt 2>&1; echo "gpu bench: $(tail -1 $OUT/r/test_gpu_bench.txt)"; tail -30 $OUT/r/test_gpu_bench.txt
date -u
W=$(mktemp -d); (cd $W && python3 -m xlacc new ragged_op --template ragged-paged-attention --framework jax --dtype bf16 >/dev/null && timeout 150 python3 -m xlacc build ragged_op > $OUT/r/xlacc_build.txt 2>&1 && timeout 120 python3 -m xlacc bench ragged_op --shape 64x2048,8x8192,2x2048x2048 --rounds 3 --json $OUT/r/xlacc_bench.json 2>&1 | tee $OUT/r/xlacc_bench.txt | tail -25)
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
