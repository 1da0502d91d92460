#!/usr/bin/env bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
which ncu nsys; ncu --version | tail -1
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__occupancy_limit_shared_mem,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_sectors_op_read.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max
P=("decode 64 x 2048" "decode 8 x 8192" "decode 4 x 32768")
PRE=.gpu/runB/main timeout 200 ncu --clock-control none --cache-control none --profile-from-start off --metrics $M --csv python3 benchmarks/profile_ragged.py "${P[@]}" > $OUT/op.csv 2> $OUT/op.err; echo "op rc $?"
PRE=.gpu/runB/main timeout 200 ncu --clock-control none --cache-control none --profile-from-start off --metrics $M --csv python3 benchmarks/profile_ragged.py --decode-template "${P[@]}" > $OUT/template.csv 2> $OUT/template.err; echo "template rc $?"
PRE=.gpu/runB/main timeout 150 ncu --clock-control none --cache-control none --profile-from-start off -k regex:"ragged_attention_mma|paged_attention" --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis python3 benchmarks/profile_ragged.py "decode 8 x 8192" > $OUT/op_stats.txt 2>&1; echo "op stats rc $?"
PRE=.gpu/runB/main timeout 150 ncu --clock-control none --cache-control none --profile-from-start off --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis python3 benchmarks/profile_ragged.py --decode-template "decode 8 x 8192" > $OUT/template_stats.txt 2>&1; echo "template stats rc $?"
tail -3 $OUT/*.err
