// A small PyTorch-style extension launcher (CPU), written for xlacc's tests.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

template <typename scalar_t>
void scale_rows(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols, float factor) {
  for (int64_t i = 0; i < rows * cols; ++i) out[i] = scalar_t(float(x[i]) * factor);
}

void scale(torch::Tensor& out,      // [num_rows, hidden_size]
           const torch::Tensor& x,  // [num_rows, hidden_size]
           int64_t hidden_size, double factor) {
  TORCH_CHECK(x.dim() == 2, "x must be 2-D, got ", x.dim(), " dims");
  TORCH_CHECK_EQ(x.size(1), hidden_size);
  const at::cuda::OptionalCUDAGuard guard(device_of(x));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  (void)stream;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "scale", [&] {
    scale_rows<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.size(0), hidden_size, static_cast<float>(factor));
  });
}
