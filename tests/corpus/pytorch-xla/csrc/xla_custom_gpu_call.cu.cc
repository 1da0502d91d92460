// Modelled on pytorch/xla torch_xla/csrc/xla_custom_gpu_call.cu.cc (BSD-3-Clause); rewritten, not
// copied: see SOURCE.md. A legacy GPU entry point taking a CUstream, launched on a grid sized for
// exactly 2048 elements, whatever the operands hold.
#include "torch_xla/csrc/xla_custom_call.h"

__global__ void custom_gpu_kernel(const float* in0, const float* in1, float* out) {
  size_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  out[idx] = in0[idx % 128] + in1[idx];
}

void do_custom_gpu_call(CUstream stream, void** buffers, const char* opaque, size_t opaque_len) {
  const float* in0 = reinterpret_cast<const float*>(buffers[0]);
  const float* in1 = reinterpret_cast<const float*>(buffers[1]);
  float* out = reinterpret_cast<float*>(buffers[2]);
  const int64_t block_dim = 64;
  const int64_t grid_dim = 2048 / block_dim;
  custom_gpu_kernel<<<grid_dim, block_dim, /*dynamic_shared_mem_bytes=*/0, stream>>>(in0, in1, out);
}
