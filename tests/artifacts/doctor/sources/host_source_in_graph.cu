// A typed handler declared kCmdBufferCompatible that fills its output's first row from a local
// host vector: the captured graph copies from that vector's address at every replay.
#include <cuda_runtime.h>
#include <vector>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void scale_kernel(const float* x, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] *= x[i];
}

static ffi::Error ScaleImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> out) {
  const long n = static_cast<long>(x.element_count());
  if (n == 0) return ffi::Error::Success();
  std::vector<float> ones(n, 1.0f);
  cudaMemcpyAsync(out->typed_data(), ones.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.typed_data(), out->typed_data(), n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    xla_scale, ScaleImpl,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>(),
    {ffi::Traits::kCmdBufferCompatible});
