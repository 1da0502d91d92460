// Modelled on dfm/extending-jax lib/gpu_ops.cc and pybind11_kernel_helpers.h (MIT); rewritten, not
// copied: see SOURCE.md. The capsules XLA registers are made here.
#include <pybind11/pybind11.h>

#include "kernel_helpers.h"
#include "kernels.h"

using namespace kepler_jax;

namespace {

template <typename T>
pybind11::capsule EncapsulateFunction(T* fn) {
  return pybind11::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["gpu_kepler_f32"] = EncapsulateFunction(gpu_kepler_f32);
  dict["gpu_kepler_f64"] = EncapsulateFunction(gpu_kepler_f64);
  return dict;
}

PYBIND11_MODULE(gpu_ops, m) {
  m.def("registrations", &Registrations);
  m.def("build_kepler_descriptor",
        [](std::int64_t size) { return pybind11::bytes(PackDescriptorAsString(KeplerDescriptor{size})); });
}

}  // namespace
