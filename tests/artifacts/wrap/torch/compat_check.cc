// Exercises xlacc_torch_compat.h on the host (written for xlacc's tests): prints one line a check,
// which the test compares.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdio>

template <typename scalar_t>
const char* type_name() { return sizeof(scalar_t) == 2 ? "16-bit" : sizeof(scalar_t) == 4 ? "32-bit" : "64-bit"; }

const char* dispatch(const torch::Tensor& t) {
  const char* name = nullptr;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "dispatch", [&] { name = type_name<scalar_t>(); });
  return name;
}

xlacc::Tensor buffer(void* data, xlacc::DType dtype, std::initializer_list<int64_t> dims) {
  xlacc::Tensor t;
  t.ptr = data;
  t.dtype = dtype;
  for (int64_t d : dims) t.dims[t.rank++] = d;
  return t;
}

int main() {
  float data[24] = {};
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  const torch::Tensor t = xlacc::torch_compat::view(buffer(data, xlacc::DType::F32, {2, 3, 4}));
  std::printf("dims %ld numel %ld sizes %ld,%ld,%ld strides %ld,%ld,%ld last %ld\n", (long)t.dim(), (long)t.numel(), (long)t.size(0), (long)t.size(1),
              (long)t.size(2), (long)t.stride(0), (long)t.stride(1), (long)t.stride(2), (long)t.size(-1));
  std::printf("dtype %s float %d element %ld contiguous %d cuda %d\n", c10::toString(t.scalar_type()), t.dtype() == at::ScalarType::Float,
              (long)t.element_size(), t.is_contiguous(), t.is_cuda());
  std::printf("select %g flatten %ld view %ld\n", t[1].data_ptr<float>()[0], (long)t.flatten(1, -1).size(1), (long)t.view({-1, 4}).size(0));
  std::printf("dispatch %s %s\n", dispatch(t), dispatch(xlacc::torch_compat::view(buffer(data, xlacc::DType::BF16, {4}))));
  xlacc::Status s = xlacc::torch_compat::call("op", nullptr, [&] { TORCH_CHECK(t.dim() == 3, "never") TORCH_CHECK(t.dim() == 2, "want 2 dims, got ", t.dim()); });
  std::printf("check %d %d %s\n", s.ok(), s.invalid_argument, s.message.c_str());
  s = xlacc::torch_compat::call("op", nullptr, [&] { TORCH_CHECK_EQ(t.size(0), 3); });
  std::printf("check_eq %s\n", s.message.c_str());
  s = xlacc::torch_compat::call("op", nullptr, [&] { dispatch(xlacc::torch_compat::view(buffer(data, xlacc::DType::S32, {4}))); });
  std::printf("unsupported %s\n", s.message.c_str());
  s = xlacc::torch_compat::call("op", nullptr, [&] { t.data_ptr<int32_t>(); });
  std::printf("data_ptr %s\n", s.message.c_str());
  s = xlacc::torch_compat::call("op", nullptr, [&] { (void)t.item<float>(); });
  std::printf("item %d\n", s.message.find(".item() is not available") != std::string::npos);
  void* seen = reinterpret_cast<void*>(1);
  cudaStream_t xla_stream = reinterpret_cast<cudaStream_t>(0x1234);
  xlacc::torch_compat::current_stream() = nullptr;
  // Under nvcc the launch code passes XLA's stream; here (XLA:CPU) it is the stream-typed value it holds.
  s = xlacc::torch_compat::call("op", nullptr, [&] { seen = at::cuda::getCurrentCUDAStream().stream(); });
  std::printf("stream %d after %d\n", seen == nullptr, xlacc::torch_compat::current_stream() == nullptr);
  xlacc::torch_compat::current_stream() = xla_stream;
  const cudaStream_t current = at::cuda::getCurrentCUDAStream();
  std::printf("current %d\n", current == xla_stream);
  const at::cuda::OptionalCUDAGuard guard(device_of(t));
  return 0;
}
