// A typed FFI handler whose implementation throws when the launch fails: the exception leaves
// the handler into XLA, which was built without exception handling, and the process aborts.
#include <stdexcept>
#include <cuda_runtime.h>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void scale_kernel(const float* x, float* y, float s, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i];
}

static void throw_if_error(cudaError_t error) {
  if (error != cudaSuccess) throw std::runtime_error(cudaGetErrorString(error));
}

static ffi::Error ScaleImpl(cudaStream_t stream, float s, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  const int64_t n = x.element_count();
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.typed_data(), y->typed_data(), s, n);
  throw_if_error(cudaGetLastError());
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(scale, ScaleImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<float>("s")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>(),
                              {ffi::Traits::kCmdBufferCompatible});
