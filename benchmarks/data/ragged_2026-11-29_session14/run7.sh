#!/usr/bin/env bash
# run 7: benchmarks/ragged_timeline.py run on an instrumented build of main
export PYTHONPATH=$PWD:$PYTHONPATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=.gpu/s14; mkdir -p $OUT/r; date -u
timeout 100 python3 benchmarks/ragged_timeline.py run $S/brx $OUT/r/timeline 2>&1 | grep -v "^W1129" | tail -5
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
