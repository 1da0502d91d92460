// A typed FFI handler: XLA's stream, sizes from the buffers, launch checked, no synchronisation.
#include <cuda_runtime.h>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void add_kernel(const float* a, const float* b, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

static ffi::Error AddImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> b,
                          ffi::ResultBuffer<ffi::F32> out) {
  const long n = static_cast<long>(a.element_count());
  if (n == 0) return ffi::Error::Success();
  add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a.typed_data(), b.typed_data(), out->typed_data(), n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    my_add_ffi, AddImpl,
    ffi::Ffi::Bind()
        .Ctx<ffi::PlatformStream<cudaStream_t>>()
        .Arg<ffi::Buffer<ffi::F32>>()
        .Arg<ffi::Buffer<ffi::F32>>()
        .Ret<ffi::Buffer<ffi::F32>>(),
    {ffi::Traits::kCmdBufferCompatible});
