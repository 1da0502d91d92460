// The capsules XLA registers: built here, so the entry points need no exported symbol.
#include <pybind11/pybind11.h>
#include "helpers.h"

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;

namespace softplus {
void gpu_softplus_f32(cudaStream_t, void**, const char*, std::size_t, XlaCustomCallStatus*);
void gpu_softplus_f64(cudaStream_t, void**, const char*, std::size_t, XlaCustomCallStatus*);
struct Descriptor { std::int64_t size; };
}

template <typename T>
pybind11::capsule EncapsulateFunction(T* fn) {
  return pybind11::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["gpu_softplus_f32"] = EncapsulateFunction(softplus::gpu_softplus_f32);
  dict["gpu_softplus_f64"] = EncapsulateFunction(softplus::gpu_softplus_f64);
  return dict;
}

PYBIND11_MODULE(gpu_ops, m) {
  m.def("registrations", &Registrations);
  m.def("build_descriptor", [](std::int64_t size) { return pybind11::bytes(PackDescriptorAsString(softplus::Descriptor{size})); });
}
