// Modelled on astro-informatics/s2fft lib/include/kernel_nanobind_helpers.h (MIT); rewritten, not copied: see SOURCE.md.
// A function pointer wrapped into the capsule jax.lib.xla_client expects.
#ifndef S2FFT_KERNEL_NANOBIND_HELPERS_H_
#define S2FFT_KERNEL_NANOBIND_HELPERS_H_

#include <nanobind/nanobind.h>

#include "kernel_helpers.h"

namespace s2fft {

template <typename T>
nanobind::bytes PackDescriptor(const T& descriptor) {
  std::string bytes = BytesOf(descriptor);
  return nanobind::bytes(bytes.data(), bytes.size());
}

template <typename T>
nanobind::capsule EncapsulateFunction(T* fn) {
  return nanobind::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

}  // namespace s2fft

#endif  // S2FFT_KERNEL_NANOBIND_HELPERS_H_
