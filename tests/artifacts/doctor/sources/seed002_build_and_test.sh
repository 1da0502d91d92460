#!/bin/bash
# From the user's note 002 (build_and_test.sh): expects LD_PRELOAD to make the target available.
# 编译
nvcc -O2 -shared -fPIC -o xla_gpu_custom_ops.so minimal_xla_custom_call.cu

# 测试
LD_PRELOAD=./xla_gpu_custom_ops.so python test_script.py
