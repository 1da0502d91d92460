// Modelled on silencelamb/vllm playground/custom_call/naive_ctypes/simple_add/simple_xla_kernel.cu
// (Apache-2.0); rewritten, not copied: see SOURCE.md. The 4-parameter legacy entry point, its size
// read from backend_config.
#include <cuda_runtime.h>
#include <cstddef>

__global__ void SimpleAddKernel(const float* a, const float* b, float* out, int size) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < size) out[idx] = a[idx] + b[idx];
}

extern "C" __attribute__((visibility("default")))
void XlaGpuSimpleAdd(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  const float* a = (const float*)buffers[0];
  const float* b = (const float*)buffers[1];
  float* out = (float*)buffers[2];
  const int size = opaque_len >= sizeof(int) ? *(const int*)opaque : 0;
  if (size == 0) return;
  const int threads = 256;
  const int blocks = (size + threads - 1) / threads;
  SimpleAddKernel<<<blocks, threads, 0, stream>>>(a, b, out, size);
}
