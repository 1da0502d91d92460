// An XLA:CPU launch function of an xlacc project that keeps the shape it was first written for:
// its tensors carry each call's shapes, and a call with any other reads and writes out of bounds.
#include <xlacc/kernel.h>

#include <cmath>

namespace {

template <typename T>
void rms_norm_cpu(T* out, const T* x, const T* weight, float eps, int num_tokens, int hidden_size) {
  for (int row = 0; row < num_tokens; ++row) {
    const T* xr = x + row * hidden_size;
    double sum_squares = 0;
    for (int c = 0; c < hidden_size; ++c) sum_squares += double(xlacc::to_acc(xr[c])) * double(xlacc::to_acc(xr[c]));
    const double r = 1.0 / std::sqrt(sum_squares / hidden_size + eps);
    for (int c = 0; c < hidden_size; ++c) {
      out[row * hidden_size + c] = xlacc::from_acc<T>(static_cast<xlacc::acc_t<T>>(xlacc::to_acc(xr[c]) * r * xlacc::to_acc(weight[c])));
    }
  }
}

template <typename T>
xlacc::Status rms_norm_launch(xlacc::Stream stream, const xlacc::Tensor& input, const xlacc::Tensor& weight,
                              const xlacc::Tensor& out, float eps) {
  const int num_tokens = 7;
  const int hidden_size = 128;
  rms_norm_cpu<T>(out.data<T>(), input.data<T>(), weight.data<T>(), eps, num_tokens, hidden_size);
  return xlacc::Status::Ok();
}

}  // namespace
