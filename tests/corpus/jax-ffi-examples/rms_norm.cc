// Modelled on jax-ml/jax examples/ffi/src/jax_ffi_example/rms_norm.cc (Apache-2.0); rewritten, not
// copied: see SOURCE.md. Typed FFI handlers on the CPU, wrapped into capsules by a nanobind module.
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "nanobind/nanobind.h"
#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;

float ComputeRmsNorm(float eps, int64_t size, const float* x, float* y) {
  float sum = 0.0f;
  for (int64_t n = 0; n < size; ++n) sum += x[n] * x[n];
  float scale = 1.0f / std::sqrt(sum / float(size) + eps);
  for (int64_t n = 0; n < size; ++n) y[n] = x[n] * scale;
  return scale;
}

template <ffi::DataType T>
std::pair<int64_t, int64_t> GetDims(const ffi::Buffer<T>& buffer) {
  auto dims = buffer.dimensions();
  if (dims.size() == 0) return std::make_pair(0, 0);
  return std::make_pair(buffer.element_count(), dims.back());
}

ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  auto [total, last] = GetDims(x);
  if (last == 0) return ffi::Error::InvalidArgument("RmsNorm input must be an array");
  for (int64_t n = 0; n < total; n += last) ComputeRmsNorm(eps, last, &(x.typed_data()[n]), &(y->typed_data()[n]));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind().Attr<float>("eps").Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

ffi::Error RmsNormFwdImpl(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                          ffi::ResultBuffer<ffi::F32> res) {
  auto [total, last] = GetDims(x);
  if (last == 0) return ffi::Error::InvalidArgument("RmsNormFwd input must be an array");
  for (int64_t n = 0, i = 0; n < total; n += last, ++i) {
    res->typed_data()[i] = ComputeRmsNorm(eps, last, &(x.typed_data()[n]), &(y->typed_data()[n]));
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormFwd, RmsNormFwdImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

template <typename T>
nb::capsule EncapsulateFfiHandler(T* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, T, XLA_FFI_CallFrame*>, "not an XLA FFI handler");
  return nb::capsule(reinterpret_cast<void*>(fn));
}

NB_MODULE(_rms_norm, m) {
  m.def("registrations", []() {
    nb::dict registrations;
    registrations["rms_norm"] = EncapsulateFfiHandler(RmsNorm);
    registrations["rms_norm_fwd"] = EncapsulateFfiHandler(RmsNormFwd);
    return registrations;
  });
}
