// Modelled on flatironinstitute/jax-finufft lib/jax_finufft_cpu.cc (Apache-2.0); rewritten, not
// copied: see SOURCE.md. XLA_FFI_Handler* lambdas made by the project's own macro; the binding is
// built by a helper. The CPU module wraps handlers of the same names.
#include <nanobind/nanobind.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace nb = nanobind;

namespace {

ffi::Error nufft1d1_impl(double eps, int64_t iflag, ffi::AnyBuffer source,
                         ffi::AnyBuffer points, ffi::Result<ffi::AnyBuffer> output);
ffi::Error nufft1d1f_impl(double eps, int64_t iflag, ffi::AnyBuffer source,
                          ffi::AnyBuffer points, ffi::Result<ffi::AnyBuffer> output);

auto MakeNufft1dBinding() {
  return ffi::Ffi::Bind()
      .Attr<double>("eps")
      .Attr<int64_t>("iflag")
      .Arg<ffi::AnyBuffer>()
      .Arg<ffi::AnyBuffer>()
      .Ret<ffi::AnyBuffer>();
}

#define DEFINE_FFI_HANDLER(name, binding, impl)                                 \
  static constexpr XLA_FFI_Handler* name = +[](XLA_FFI_CallFrame* call_frame) { \
    static auto* handler = binding().To(impl).release();                        \
    return handler->Call(call_frame);                                           \
  }

DEFINE_FFI_HANDLER(nufft1d1f, MakeNufft1dBinding, nufft1d1f_impl);
DEFINE_FFI_HANDLER(nufft1d1, MakeNufft1dBinding, nufft1d1_impl);

#undef DEFINE_FFI_HANDLER

nb::dict Registrations() {
  nb::dict dict;
  dict["nufft1d1f"] = nb::capsule(reinterpret_cast<void*>(nufft1d1f));
  dict["nufft1d1"] = nb::capsule(reinterpret_cast<void*>(nufft1d1));
  return dict;
}

NB_MODULE(jax_finufft_cpu, m) { m.def("registrations", &Registrations); }

}  // namespace
