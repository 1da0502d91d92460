// Modelled on jax-ml/jax examples/ffi/src/jax_ffi_example/cuda_examples.cu (Apache-2.0); rewritten,
// not copied: see SOURCE.md. A typed GPU handler: XLA's stream, one block of threads looping over
// n, the launch checked, graph-capturable.
#include <string>

#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void FooFwdKernel(const float* a, const float* b, float* c, float* b_plus_1, size_t n) {
  size_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t stride = blockDim.x * gridDim.x;
  for (size_t i = tid; i < n; i += stride) {
    b_plus_1[i] = b[i] + 1.0f;
    c[i] = a[i] * b_plus_1[i];
  }
}

ffi::Error FooFwdHost(cudaStream_t stream, ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> b,
                      ffi::ResultBuffer<ffi::F32> c, ffi::ResultBuffer<ffi::F32> b_plus_1, size_t n) {
  const int block_dim = 128;
  const int grid_dim = 1;
  FooFwdKernel<<<grid_dim, block_dim, 0, stream>>>(a.typed_data(), b.typed_data(), c->typed_data(),
                                                   b_plus_1->typed_data(), n);
  cudaError_t last_error = cudaGetLastError();
  if (last_error != cudaSuccess) {
    return ffi::Error(XLA_FFI_Error_Code_INTERNAL, std::string("CUDA error: ") + cudaGetErrorString(last_error));
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(FooFwd, FooFwdHost,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<size_t>("n"),
                              {xla::ffi::Traits::kCmdBufferCompatible});
