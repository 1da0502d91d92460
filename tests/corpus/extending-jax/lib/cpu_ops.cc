// Modelled on dfm/extending-jax lib/cpu_ops.cc (MIT); rewritten, not copied: see SOURCE.md.
// The XLA:CPU entry point: the 2-parameter legacy signature, the size as the first operand.
#include <cmath>
#include <pybind11/pybind11.h>

namespace {

template <typename T>
void cpu_kepler(void* out_tuple, const void** in) {
  const std::int64_t size = *reinterpret_cast<const std::int64_t*>(in[0]);
  const T* mean_anom = reinterpret_cast<const T*>(in[1]);
  const T* ecc = reinterpret_cast<const T*>(in[2]);
  void** out = reinterpret_cast<void**>(out_tuple);
  T* sin_e = reinterpret_cast<T*>(out[0]);
  T* cos_e = reinterpret_cast<T*>(out[1]);
  for (std::int64_t n = 0; n < size; ++n) {
    T e = mean_anom[n];
    for (int it = 0; it < 20; ++it) e = e - (e - ecc[n] * std::sin(e) - mean_anom[n]) / (1 - ecc[n] * std::cos(e));
    sin_e[n] = std::sin(e);
    cos_e[n] = std::cos(e);
  }
}

template <typename T>
pybind11::capsule EncapsulateFunction(T* fn) {
  return pybind11::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["cpu_kepler_f32"] = EncapsulateFunction(cpu_kepler<float>);
  dict["cpu_kepler_f64"] = EncapsulateFunction(cpu_kepler<double>);
  return dict;
}

PYBIND11_MODULE(cpu_ops, m) { m.def("registrations", &Registrations); }

}  // namespace
