// Modelled on jax-ml/jax jaxlib/gpu/prng.cc (Apache-2.0); rewritten, not copied: see SOURCE.md.
#include "nanobind/nanobind.h"
#include "jaxlib/gpu/prng_kernels.h"
#include "jaxlib/kernel_nanobind_helpers.h"

namespace jax {
namespace JAX_GPU_NAMESPACE {
namespace {

namespace nb = nanobind;

nb::dict Registrations() {
  nb::dict dict;
  dict[JAX_GPU_PREFIX "_threefry2x32_ffi"] = EncapsulateFfiHandler(ThreeFry2x32Ffi);
  return dict;
}

NB_MODULE(_prng, m) { m.def("registrations", &Registrations); }

}  // namespace
}  // namespace JAX_GPU_NAMESPACE
}  // namespace jax
