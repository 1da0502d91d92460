// Modelled on rdyro/torch2jax torch2jax/cpp/common.cpp (MIT); rewritten, not copied: see SOURCE.md.
// The body both handlers share: JAX's buffers become torch tensors without a copy, a Python function
// registered under an id runs on them, and its results are copied into XLA's result buffers. On the
// GPU torch works on its own streams, so the device is synchronised before torch reads the operands
// and after it writes the results: a deliberate host wait, the price of handing buffers to torch.
#include <set>

#include "main.h"

torch::TensorOptions tensor_options(ffi::DataType dtype, TorchCallDevice device) {
  torch::TensorOptions opts;
  switch (dtype) {
    case ffi::DataType::PRED: opts = opts.dtype(torch::kBool); break;
    case ffi::DataType::S32: opts = opts.dtype(torch::kInt32); break;
    case ffi::DataType::S64: opts = opts.dtype(torch::kInt64); break;
    case ffi::DataType::F16: opts = opts.dtype(torch::kFloat16); break;
    case ffi::DataType::BF16: opts = opts.dtype(torch::kBFloat16); break;
    case ffi::DataType::F32: opts = opts.dtype(torch::kFloat32); break;
    case ffi::DataType::F64: opts = opts.dtype(torch::kFloat64); break;
    default: assert(false);
  }
  return device.type == torch::kCPU ? opts.device(device.type) : opts.device(device.type, device.index);
}

static torch::Tensor wrap_buffer(ffi::AnyBuffer buffer, torch::DeviceType device_type, std::set<int64_t>& devices) {
  auto dims = buffer.dimensions();
  std::vector<int64_t> shape(dims.begin(), dims.end());
  void* data = buffer.untyped_data();
  TorchCallDevice device = actual_device(device_type, data);
  if (device.type == torch::kCUDA) devices.insert(device.index);
  return torch::from_blob(data, torch::IntArrayRef(shape), tensor_options(buffer.element_type(), device));
}

void apply_torch_call(ffi::RemainingArgs args, ffi::RemainingRets rets, const std::string& fn_id,
                      torch::DeviceType device_type) {
  py::gil_scoped_acquire gil;
  py::list inputs;
  std::set<int64_t> devices;
  for (size_t i = 0; i < args.size(); ++i) {
    inputs.append(THPVariable_Wrap(wrap_buffer(args.get<ffi::AnyBuffer>(i).value(), device_type, devices)));
  }
#ifdef TORCH2JAX_WITH_CUDA
  if (device_type == torch::kCUDA) {
    for (auto index : devices) torch::cuda::synchronize(index);
  }
#endif
  py::tuple results = py::module_::import("torch").attr(("_torch2jax_fn_" + fn_id).c_str())(inputs);
  devices.clear();
  for (size_t i = 0; i < rets.size(); ++i) {
    torch::Tensor out = wrap_buffer(*(rets.get<ffi::AnyBuffer>(i).value()), device_type, devices);
    out.copy_(THPVariable_Unpack(results[i].ptr()));
  }
#ifdef TORCH2JAX_WITH_CUDA
  if (device_type == torch::kCUDA) {
    for (auto index : devices) torch::cuda::synchronize(index);
  }
#endif
}

#ifndef TORCH2JAX_WITH_CUDA
TorchCallDevice actual_device(torch::DeviceType, void*) { return {torch::kCPU, 0}; }
#endif
