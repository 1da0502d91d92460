// Modelled on rdyro/torch2jax torch2jax/cpp/main.h (MIT); rewritten, not copied: see SOURCE.md.
#ifndef TORCH2JAX_MAIN_H_
#define TORCH2JAX_MAIN_H_

#include <Python.h>
#include <pybind11/pybind11.h>
#include <torch/extension.h>

#include <string>
#include <type_traits>
#include <vector>

#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace py = pybind11;
namespace ffi = xla::ffi;

struct TorchCallDevice {
  torch::DeviceType type;
  int64_t index;
};

// A typed FFI handler wrapped into a capsule for jax.ffi.register_ffi_target.
template <typename T>
py::capsule EncapsulateFfiCall(T* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, T, XLA_FFI_CallFrame*>, "not an XLA FFI handler");
  return py::capsule(reinterpret_cast<void*>(fn));
}

torch::TensorOptions tensor_options(ffi::DataType dtype, TorchCallDevice device);
TorchCallDevice actual_device(torch::DeviceType device_type, void* buffer);
void apply_torch_call(ffi::RemainingArgs args, ffi::RemainingRets rets, const std::string& fn_id,
                      torch::DeviceType device_type);

#endif  // TORCH2JAX_MAIN_H_
