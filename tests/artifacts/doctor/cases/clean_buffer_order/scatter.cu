// A legacy scatter-add, buffers in XLA's order: the operands (values, index), then the result.
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;

__global__ void scatter_add(float* out, const float* values, const int* index, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&out[index[i]], values[i]);
}

extern "C" __attribute__((visibility("default")))
void scatter_add_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len,
                     XlaCustomCallStatus* status) {
  const long n = opaque_len ? std::strtol(opaque, nullptr, 10) : 0;
  float* out = reinterpret_cast<float*>(buffers[2]);
  const float* values = reinterpret_cast<const float*>(buffers[0]);
  const int* index = reinterpret_cast<const int*>(buffers[1]);
  if (n == 0) return;
  scatter_add<<<(n + 255) / 256, 256, 0, stream>>>(out, values, index, n);
  cudaGetLastError();
}
