// Modelled on dfm/extending-jax lib/kernels.cc.cu (MIT); rewritten, not copied: see SOURCE.md.
// The GPU entry points: the 4-parameter legacy signature, in a namespace, wrapped into capsules
// by gpu_ops.cc (so they need no exported symbol).
#include "kernel_helpers.h"
#include "kernels.h"

namespace kepler_jax {

namespace {

template <typename T>
__global__ void kepler_kernel(std::int64_t size, const T* mean_anom, const T* ecc, T* sin_e, T* cos_e) {
  for (std::int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x) {
    T e = mean_anom[i];
    for (int it = 0; it < 20; ++it) e = e - (e - ecc[i] * sin(e) - mean_anom[i]) / (1 - ecc[i] * cos(e));
    sin_e[i] = sin(e);
    cos_e[i] = cos(e);
  }
}

void ThrowIfError(cudaError_t error) {
  if (error != cudaSuccess) {
    throw std::runtime_error(cudaGetErrorString(error));
  }
}

template <typename T>
inline void apply_kepler(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  const KeplerDescriptor& d = *UnpackDescriptor<KeplerDescriptor>(opaque, opaque_len);
  const std::int64_t size = d.size;
  const T* mean_anom = reinterpret_cast<const T*>(buffers[0]);
  const T* ecc = reinterpret_cast<const T*>(buffers[1]);
  T* sin_e = reinterpret_cast<T*>(buffers[2]);
  T* cos_e = reinterpret_cast<T*>(buffers[3]);
  const int block_dim = 128;
  const int grid_dim = std::min<int>(1024, (size + block_dim - 1) / block_dim);
  kepler_kernel<T><<<grid_dim, block_dim, 0, stream>>>(size, mean_anom, ecc, sin_e, cos_e);
  ThrowIfError(cudaGetLastError());
}

}  // namespace

void gpu_kepler_f32(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  apply_kepler<float>(stream, buffers, opaque, opaque_len);
}

void gpu_kepler_f64(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  apply_kepler<double>(stream, buffers, opaque, opaque_len);
}

}  // namespace kepler_jax
