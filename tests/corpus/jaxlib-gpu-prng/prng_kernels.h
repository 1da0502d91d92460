// Modelled on jax-ml/jax jaxlib/gpu/prng_kernels.h (Apache-2.0); rewritten, not copied: see SOURCE.md.
#pragma once
#include <cstdint>

#include "jaxlib/gpu/vendor.h"
#include "xla/ffi/api/ffi.h"

namespace jax {
namespace JAX_GPU_NAMESPACE {

void LaunchThreeFry2x32KernelFfi(gpuStream_t stream, std::int64_t n, const std::uint32_t* keys0,
                                 const std::uint32_t* keys1, const std::uint32_t* data0,
                                 const std::uint32_t* data1, std::uint32_t* out0, std::uint32_t* out1);

XLA_FFI_DECLARE_HANDLER_SYMBOL(ThreeFry2x32Ffi);

}  // namespace JAX_GPU_NAMESPACE
}  // namespace jax
