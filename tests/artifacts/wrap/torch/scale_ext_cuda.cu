// A small PyTorch-style CUDA extension launcher (written for xlacc's tests): a kernel launched on
// the current stream, over every floating dtype torch dispatches to.
#include <torch/all.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

template <typename scalar_t>
__global__ void scale_rows_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ x, int64_t n, float factor) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * factor);
}

void scale(torch::Tensor& out,      // [num_rows, hidden_size]
           const torch::Tensor& x,  // [num_rows, hidden_size]
           int64_t hidden_size, double factor) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D, got ", x.dim(), " dims");
  TORCH_CHECK_EQ(x.size(1), hidden_size);
  const at::cuda::OptionalCUDAGuard guard(device_of(x));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t n = x.numel();
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "scale", [&] {
    if (n > 0) scale_rows_kernel<scalar_t><<<blocks, 256, 0, stream>>>(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), n, static_cast<float>(factor));
  });
}
