// Modelled on elixir-nx/nx exla/c_src/exla/custom_calls/runtime_callback.cc (Apache-2.0); rewritten, not copied: see SOURCE.md.
// The host callback on XLA:CPU. EXLA links XLA itself into its NIF library, so the handler is put
// into XLA's registry when the library loads, with XLA_FFI_REGISTER_HANDLER, under "Host".
#include <vector>

#include "runtime_callback_bridge.h"
#include "xla/ffi/api/ffi.h"
#include "xla/ffi/ffi_api.h"

namespace ffi = xla::ffi;

namespace exla::callback_bridge {

Arg::Arg(const ffi::AnyBuffer& buffer) : dtype(buffer.element_type()) {
  auto d = buffer.dimensions();
  dims.assign(d.begin(), d.end());
  data = reinterpret_cast<const uint8_t*>(buffer.untyped_data());
  size_bytes = buffer.size_bytes();
}

OutputBuffer::OutputBuffer(const ffi::AnyBuffer& buffer)
    : data(static_cast<uint8_t*>(buffer.untyped_data())),
      size(ffi::ByteWidth(buffer.element_type()) * static_cast<size_t>(buffer.element_count())) {}

}  // namespace exla::callback_bridge

namespace {

// Operand 0 is the callback server's pid; results before num_aliased_outputs alias operands and are
// left alone.
ffi::Error exla_runtime_callback_impl(ffi::RemainingArgs args, ffi::Span<const int64_t> callback_id,
                                      uint64_t callback_id_size, uint64_t num_aliased_outputs,
                                      ffi::RemainingRets rets) {
  if (args.size() < 1) return ffi::Error(ffi::ErrorCode::kInternal, "callback without its server pid operand");
  auto pid = args.get<ffi::AnyBuffer>(0);
  if (!pid) return pid.error();
  std::vector<exla::callback_bridge::Arg> inputs;
  for (size_t i = 1; i < args.size(); ++i) {
    auto buffer = args.get<ffi::AnyBuffer>(i);
    if (!buffer) return buffer.error();
    inputs.emplace_back(*buffer);
  }
  std::vector<exla::callback_bridge::OutputBuffer> outputs;
  for (size_t i = num_aliased_outputs; i < rets.size(); ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (!ret) return ret.error();
    outputs.emplace_back(**ret);
  }
  auto result = exla::callback_bridge::InvokeRuntimeCallback(callback_id, callback_id_size,
                                                             exla::callback_bridge::Arg(*pid), inputs, outputs);
  if (!result.ok) return ffi::Error(ffi::ErrorCode::kInternal, result.error);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(exla_runtime_callback, exla_runtime_callback_impl,
                              ffi::Ffi::Bind()
                                  .RemainingArgs()
                                  .Attr<ffi::Span<const int64_t>>("callback_id")
                                  .Attr<uint64_t>("callback_id_size")
                                  .Attr<uint64_t>("num_aliased_data_outputs")
                                  .RemainingRets());

XLA_FFI_REGISTER_HANDLER(ffi::GetXlaFfiApi(), "exla_runtime_callback", "Host", exla_runtime_callback);
