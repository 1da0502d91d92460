// Modelled on silencelamb/vllm playground/custom_call/naive_ctypes/simple_add/inplace_add_kernel.cu
// (Apache-2.0); rewritten, not copied: see SOURCE.md. Meant to add in place: it writes the second
// operand's buffer and never the result (buffers[2]).
#include <cuda_runtime.h>
#include <cstdint>
#include <cstring>

extern "C" {

__global__ void inplace_add_kernel(const float* input, float* output, int size) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < size) output[idx] += input[idx];
}

void XlaGpuInplaceAdd(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  int32_t size;
  std::memcpy(&size, opaque, sizeof(int32_t));
  const float* input = static_cast<const float*>(buffers[0]);
  float* output = static_cast<float*>(buffers[1]);
  int threads = 256;
  int blocks = (size + threads - 1) / threads;
  inplace_add_kernel<<<blocks, threads, 0, stream>>>(input, output, size);
}

}  // extern "C"
