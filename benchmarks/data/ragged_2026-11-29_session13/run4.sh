#!/usr/bin/env bash
# run 4: Nsight Compute's speed-of-light of the mixed batch and its two parts on the few build
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
mkdir -p $OUT/r; ncu --version | tail -1
P=("mixed 60 x 1 + 4 x 512 at 2048" "mixed: prefill part 4 x 512 at 2048" "mixed: decode part 60 x 2048")
PRE=.gpu/runC/few timeout 240 ncu --clock-control none --cache-control none --profile-from-start off --section SpeedOfLight --section LaunchStats --csv python3 benchmarks/profile_ragged.py "${P[@]}" > $OUT/r/sol.csv 2> $OUT/r/sol.err; echo "sol rc $?"
PRE=.gpu/runC/few timeout 200 ncu --clock-control none --cache-control none --profile-from-start off -k regex:ragged_prefill --section WarpStateStats --section MemoryWorkloadAnalysis python3 benchmarks/profile_ragged.py "${P[0]}" > $OUT/r/mixed_stats.txt 2>&1; echo "stats rc $?"
python3 - <<'PY' $OUT/r/sol.csv
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
cols = rows[head]
k, m, v = cols.index("Kernel Name"), cols.index("Metric Name"), cols.index("Metric Value")
for r in rows[head + 1:]:
    if r[m] in ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput", "Grid Size", "Block Size"):
        print(r[0], r[k][:40], r[m], r[v])
PY
cd $OUT && tar czf r.tgz r && rm -rf r
