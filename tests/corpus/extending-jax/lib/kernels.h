// Modelled on dfm/extending-jax lib/kernels.h (MIT); rewritten, not copied: see SOURCE.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace kepler_jax {
struct KeplerDescriptor {
  std::int64_t size;
};

void gpu_kepler_f32(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len);
void gpu_kepler_f64(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len);
}  // namespace kepler_jax
