// Modelled on rdyro/torch2jax torch2jax/cpp/gpu_impl.cu (MIT); rewritten, not copied: see SOURCE.md.
#include <cuda.h>
#include <cuda_runtime.h>

#include "main.h"

ffi::Error gpu_apply_torch_call_impl(cudaStream_t stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                                     ffi::Dictionary attrs) {
  apply_torch_call(args, rets, std::string(attrs.get<std::string_view>("fn_id").value()), torch::kCUDA);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(gpu_apply_torch_call, gpu_apply_torch_call_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attrs());

py::dict GPURegistrations() {
  py::dict targets;
  targets["torch_call"] = EncapsulateFfiCall(gpu_apply_torch_call);
  return targets;
}

// The device a buffer lives on, read from the pointer (JAX may hand any of its GPUs).
TorchCallDevice actual_device(torch::DeviceType device_type, void* buffer) {
  if (device_type == torch::kCPU) return {torch::kCPU, 0};
  CUdevice ordinal;
  CUresult status = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)buffer);
  assert(status == CUDA_SUCCESS);
  return {torch::kCUDA, ordinal};
}
