// Modelled on jax-ml/jax jaxlib/gpu/prng_kernels.cc (Apache-2.0); rewritten, not copied: see
// SOURCE.md. The typed handler: the count from the result's dimensions, the launch checked.
#include "jaxlib/gpu/prng_kernels.h"

#include <functional>

#include "absl/algorithm/container.h"
#include "jaxlib/ffi_helpers.h"
#include "jaxlib/gpu/gpu_kernel_helpers.h"
#include "xla/ffi/api/ffi.h"

namespace jax {
namespace JAX_GPU_NAMESPACE {

namespace ffi = xla::ffi;

namespace {
ffi::Error ThreeFry2x32Impl(gpuStream_t stream, ffi::Buffer<ffi::U32> keys0, ffi::Buffer<ffi::U32> keys1,
                            ffi::Buffer<ffi::U32> data0, ffi::Buffer<ffi::U32> data1,
                            ffi::Result<ffi::Buffer<ffi::U32>> out0, ffi::Result<ffi::Buffer<ffi::U32>> out1) {
  std::int64_t n = absl::c_accumulate(out0->dimensions(), 1, std::multiplies<int64_t>());
  LaunchThreeFry2x32KernelFfi(stream, n, keys0.typed_data(), keys1.typed_data(), data0.typed_data(),
                              data1.typed_data(), out0->typed_data(), out1->typed_data());
  FFI_RETURN_IF_ERROR_STATUS(JAX_AS_STATUS(gpuGetLastError()));
  return ffi::Error::Success();
}
}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(ThreeFry2x32Ffi, ThreeFry2x32Impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<gpuStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>());

}  // namespace JAX_GPU_NAMESPACE
}  // namespace jax
