// A tutorial-style GPU op: the entry points are plain C++ functions that a pybind11 module wraps
// into capsules (ops.cc), so they need no exported symbol. The problem size travels in
// backend_config as a descriptor struct.
#include <cuda_runtime.h>
#include "helpers.h"

namespace softplus {

struct Descriptor {
  std::int64_t size;
};

template <typename T>
__global__ void softplus_kernel(std::int64_t size, const T* x, T* y) {
  for (std::int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x) {
    y[i] = log1p(exp(x[i]));
  }
}

void ThrowIfError(cudaError_t error) {
  if (error != cudaSuccess) throw std::runtime_error(cudaGetErrorString(error));
}

template <typename T>
void apply(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  const Descriptor& d = *UnpackDescriptor<Descriptor>(opaque, opaque_len);
  const T* x = reinterpret_cast<const T*>(buffers[0]);
  T* y = reinterpret_cast<T*>(buffers[1]);
  const int block = 256;
  const int grid = std::min<std::int64_t>(1024, (d.size + block - 1) / block);
  softplus_kernel<T><<<grid, block, 0, stream>>>(d.size, x, y);
  ThrowIfError(cudaGetLastError());
}

void gpu_softplus_f32(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  apply<float>(stream, buffers, opaque, opaque_len);
}

void gpu_softplus_f64(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  apply<double>(stream, buffers, opaque, opaque_len);
}

}  // namespace softplus
