#!/bin/bash
set -e
nvcc -O2 -shared -Xcompiler -fPIC,-fvisibility=hidden -o libop.so kernel.cu
