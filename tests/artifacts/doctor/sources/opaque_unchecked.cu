// A legacy layer norm that copies its backend_config into a struct without checking its length.
#include <cstring>
#include <cuda_runtime.h>

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;
extern "C" void XlaCustomCallStatusSetFailure(XlaCustomCallStatus*, const char*, size_t) __attribute__((weak));

struct NormDescriptor {
  int64_t rows;
  int64_t cols;
  float eps;
};

__global__ void layer_norm(const float* x, float* y, int64_t rows, int64_t cols, float eps) {
  int64_t row = blockIdx.x;
  if (row >= rows) return;
  float mean = 0.f, var = 0.f;
  for (int64_t c = 0; c < cols; ++c) mean += x[row * cols + c];
  mean /= cols;
  for (int64_t c = 0; c < cols; ++c) var += (x[row * cols + c] - mean) * (x[row * cols + c] - mean);
  var /= cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[row * cols + c] = (x[row * cols + c] - mean) * rsqrtf(var + eps);
}

extern "C" __attribute__((visibility("default")))
void layer_norm_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len,
                    XlaCustomCallStatus* status) {
  NormDescriptor d;
  std::memcpy(&d, opaque, sizeof(d));
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  layer_norm<<<d.rows, 128, 0, stream>>>(x, y, d.rows, d.cols, d.eps);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess && XlaCustomCallStatusSetFailure) XlaCustomCallStatusSetFailure(status, cudaGetErrorString(err), 0);
}
