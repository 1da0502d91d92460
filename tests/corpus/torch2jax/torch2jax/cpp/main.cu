// Modelled on rdyro/torch2jax torch2jax/cpp/main.cu and main.cpp (MIT); rewritten, not copied: see SOURCE.md.
#include "main.h"

py::dict CPURegistrations();
#ifdef TORCH2JAX_WITH_CUDA
py::dict GPURegistrations();
#endif

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("cpu_registrations", &CPURegistrations);
#ifdef TORCH2JAX_WITH_CUDA
  m.def("gpu_registrations", &GPURegistrations);
#endif
}
