// An XLA:CPU launch function for one row width only, done right: the width is compared with the
// tensors' shapes (any other is an error, not a wrong result), the row count read from them.
#include <xlacc/kernel.h>

#include <cmath>

namespace {

template <typename T>
void rms_norm_cpu(T* out, const T* x, const T* weight, float eps, int64_t num_tokens, int hidden_size) {
  for (int64_t row = 0; row < num_tokens; ++row) {
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
  const int hidden_size = 128;  // the width this kernel is written for
  if (input.rank < 1 || input.dim(-1) != hidden_size || weight.numel() != hidden_size) {
    return xlacc::Status::Invalid("rms_norm takes rows of 128 elements: [tokens..., 128]");
  }
  const int64_t num_tokens = input.numel() / hidden_size;
  if (out.numel() != input.numel()) return xlacc::Status::Invalid("out must have as many elements as input");
  rms_norm_cpu<T>(out.data<T>(), input.data<T>(), weight.data<T>(), eps, num_tokens, hidden_size);
  return xlacc::Status::Ok();
}

}  // namespace
