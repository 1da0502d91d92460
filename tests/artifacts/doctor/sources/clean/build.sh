#!/bin/bash
# Build, then run the test that loads and registers the library itself.
set -e
nvcc -O2 -shared -Xcompiler -fPIC -gencode arch=compute_90,code=[sm_90,compute_90] -o xla_gpu_custom_ops.so add_status.cu
LD_LIBRARY_PATH=/usr/local/cuda/lib64 python test_script.py
