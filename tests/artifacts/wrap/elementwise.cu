// Several kernels in one file, two of them templates (as a kernel library has them).
#include <cuda_runtime.h>

template <typename T>
__global__ void scale(const T* __restrict__ x, T* __restrict__ y, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<T>(alpha * static_cast<float>(x[i]));
}

template <typename T>
__global__ void axpy(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(alpha * static_cast<float>(x[i]) + static_cast<float>(y[i]));
}

__global__ void relu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
