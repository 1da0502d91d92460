// Note 000's kernel, fixed: status-returning (api 2), sizes from backend_config, XLA's stream,
// launch checked, exported under its plain name.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;
extern "C" void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message, size_t message_len) __attribute__((weak));

__global__ void SimpleAddKernel(const float* a, const float* b, float* out, long size) {
  long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (idx < size) out[idx] = a[idx] + b[idx];
}

static void fail(XlaCustomCallStatus* status, const char* message) {
  if (XlaCustomCallStatusSetFailure) XlaCustomCallStatusSetFailure(status, message, std::strlen(message));
  else std::fprintf(stderr, "XlaGpuSimpleAdd: %s\n", message);
}

extern "C" __attribute__((visibility("default")))
void XlaGpuSimpleAdd(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len,
                     XlaCustomCallStatus* status) {
  const long size = opaque_len ? std::strtol(opaque, nullptr, 10) : 0;
  const float* a = static_cast<const float*>(buffers[0]);
  const float* b = static_cast<const float*>(buffers[1]);
  float* out = static_cast<float*>(buffers[2]);
  const int threads = 256;
  const long blocks = (size + threads - 1) / threads;
  if (blocks == 0) return;
  SimpleAddKernel<<<blocks, threads, 0, stream>>>(a, b, out, size);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) fail(status, cudaGetErrorString(err));
}
