#!/usr/bin/env bash
# run 3: a ragged project as a user makes it (`xlacc new`, `xlacc build` with auto archs: sm_90a
# through arch_specific), `xlacc bench` at the grid's shapes beside cuDNN; and the same project
# built for sm_90 and sm_90a together, to see which the driver loads (its prefill speed says)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
mkdir -p $OUT/r; date -u
W=$(mktemp -d); cd $W
x() { python3 -m xlacc "$@"; }
x new ragged_op --template ragged-paged-attention --framework jax --dtype bf16 >/dev/null && cp -r ragged_op ragged_two
x build ragged_op > $OUT/r/build_auto.txt 2>&1 & x build ragged_two --arch sm_90,sm_90a > $OUT/r/build_two.txt 2>&1 & wait
grep -E "archs|arch sm|✗" $OUT/r/build_auto.txt $OUT/r/build_two.txt; date -u
timeout 240 python3 -m xlacc bench ragged_op --shape 64x2048,8x8192,1x4096x4096,8x2048x2048,32x512x512 --rounds 3 --json $OUT/r/bench_auto.json > $OUT/r/bench_auto.txt 2>&1; echo "bench auto: $?"; date -u
timeout 100 python3 -m xlacc bench ragged_two --shape 8x2048x2048 --rounds 3 --json $OUT/r/bench_two.json > $OUT/r/bench_two.txt 2>&1; echo "bench two: $?"; date -u
cd $OUT && tar czf r.tgz r && rm -rf r
