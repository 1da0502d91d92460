// A legacy entry point that waits for the whole device after its launch.
#include <cstdlib>
#include <cuda_runtime.h>

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;

__global__ void negate_kernel(const float* x, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = -x[i];
}

static void launch_negate(cudaStream_t stream, const float* x, float* out, long n) {
  negate_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, out, n);
  cudaGetLastError();
  cudaDeviceSynchronize();
}

extern "C" void negate(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len,
                       XlaCustomCallStatus* status) {
  long n = std::strtol(opaque, nullptr, 10);
  launch_negate(stream, static_cast<const float*>(buffers[0]), static_cast<float*>(buffers[1]), n);
}
