// Modelled on jax-ml/jax jaxlib/gpu/prng_kernels.cu.cc (Apache-2.0); rewritten, not copied: see
// SOURCE.md. The kernel and its launcher: the count comes from the handler.
#include "jaxlib/gpu/prng_kernels.h"

namespace jax {
namespace JAX_GPU_NAMESPACE {
namespace {

__global__ void ThreeFry2x32Kernel(const std::uint32_t* key0, const std::uint32_t* key1,
                                   const std::uint32_t* data0, const std::uint32_t* data1,
                                   std::uint32_t* out0, std::uint32_t* out1, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    std::uint32_t x0 = data0[i] + key0[0], x1 = data1[i] + key1[0];
    for (int round = 0; round < 20; ++round) {
      x0 += x1;
      x1 = (x1 << 13) | (x1 >> 19);
      x1 ^= x0;
    }
    out0[i] = x0;
    out1[i] = x1;
  }
}

}  // namespace

void LaunchThreeFry2x32KernelFfi(gpuStream_t stream, std::int64_t n, const std::uint32_t* keys0,
                                 const std::uint32_t* keys1, const std::uint32_t* data0,
                                 const std::uint32_t* data1, std::uint32_t* out0, std::uint32_t* out1) {
  const int block_dim = 128;
  const std::int64_t grid_dim = std::min<std::int64_t>(1024, (n + block_dim - 1) / block_dim);
  ThreeFry2x32Kernel<<<grid_dim, block_dim, 0, stream>>>(keys0, keys1, data0, data1, out0, out1, n);
}

}  // namespace JAX_GPU_NAMESPACE
}  // namespace jax
