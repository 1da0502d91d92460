// An xlacc launch function done right: XLA's stream on every launch, each launch's error read
// (xlacc::launch_status after it, or the error xlacc::launch returns), the sizes from the tensors.
#include <xlacc/kernel.h>

namespace {

constexpr int kThreads = 256;

template <typename T, int kVec>
__global__ void scale_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n) {
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  for (int64_t i = first; i < first + kVec && i < n; ++i) out[i] = xlacc::from_acc<T>(xlacc::to_acc(x[i]) * 2);
}

// The widest vector that divides n, found one halving at a time; the caller reads the launch's error.
template <typename T, int kVec>
void launch_vectors(xlacc::Stream stream, const T* x, T* out, int64_t n) {
  if constexpr (kVec > 1) {
    if (n % kVec != 0) return launch_vectors<T, kVec / 2>(stream, x, out, n);
  }
  const unsigned blocks = static_cast<unsigned>((n / kVec + kThreads - 1) / kThreads);
  scale_kernel<T, kVec><<<blocks, kThreads, 0, stream>>>(x, out, n);
}

template <typename T>
xlacc::Status scale_launch(const xlacc::Stream& stream, const xlacc::Tensor& x, const xlacc::Tensor& out) {
  const int64_t n = x.numel();
  if (out.numel() != n) return xlacc::Status::Invalid("out must have as many elements as x");
  if (n == 0) return xlacc::Status::Ok();
  launch_vectors<T, 4>(stream, x.data<T>(), out.data<T>(), n);
  xlacc::Status status = xlacc::launch_status("scale_kernel");
  if (!status.ok()) return status;
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  cudaError_t err = xlacc::launch(scale_kernel<T, 1>, blocks, kThreads, 0, stream, x.data<T>(), out.data<T>(), n);
  return xlacc::launch_status("scale_kernel", err);
}

}  // namespace
