// Modelled on rdyro/torch2jax torch2jax/cpp/cpu_impl.cpp (MIT); rewritten, not copied: see SOURCE.md.
#include "main.h"

ffi::Error cpu_apply_torch_call_impl(ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
  apply_torch_call(args, rets, std::string(attrs.get<std::string_view>("fn_id").value()), torch::kCPU);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(cpu_apply_torch_call, cpu_apply_torch_call_impl,
                              ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs());

py::dict CPURegistrations() {
  py::dict targets;
  targets["torch_call"] = EncapsulateFfiCall(cpu_apply_torch_call);
  return targets;
}
