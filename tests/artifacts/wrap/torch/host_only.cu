// A file with nothing xlacc can wrap by itself: a host helper, and kernels in an included header
// (written for xlacc's tests).
#include "kernels/scale_kernels.cuh"

int blocks_for(int n) { return (n + 255) / 256; }
