// Modelled on elixir-nx/nx exla/c_src/exla/custom_calls/runtime_callback_cuda.cc (Apache-2.0); rewritten, not copied: see SOURCE.md.
// The same host callback on XLA:GPU: every operand is copied to host memory and the stream waited for
// (the Erlang side reads host bytes), the callback runs, and its results are copied back up on the
// stream. Waiting is what a host callback is; a build without CUDA registers a stub that says so.
#include <cuda.h>
#include <cuda_runtime.h>

#include <vector>

#include "runtime_callback_bridge.h"
#include "xla/ffi/api/ffi.h"
#include "xla/ffi/ffi_api.h"

namespace ffi = xla::ffi;

#ifdef CUDA_ENABLED

namespace {

ffi::Error CudaFailure(const char* what, cudaError_t status) {
  return ffi::Error(ffi::ErrorCode::kInternal, std::string(what) + ": " + cudaGetErrorString(status));
}

ffi::Error exla_runtime_callback_cuda_impl(CUstream stream, ffi::RemainingArgs args,
                                           ffi::Span<const int64_t> callback_id, uint64_t callback_id_size,
                                           uint64_t num_aliased_outputs, ffi::RemainingRets rets) {
  if (args.size() < 1) return ffi::Error(ffi::ErrorCode::kInternal, "callback without its server pid operand");
  std::vector<std::vector<uint8_t>> host_inputs;
  host_inputs.reserve(args.size());
  std::vector<exla::callback_bridge::Arg> inputs;
  exla::callback_bridge::Arg pid;
  for (size_t i = 0; i < args.size(); ++i) {
    auto buffer = args.get<ffi::AnyBuffer>(i);
    if (!buffer) return buffer.error();
    std::vector<uint8_t>& host = host_inputs.emplace_back(buffer->size_bytes());
    cudaError_t status = cudaMemcpyAsync(host.data(), buffer->untyped_data(), host.size(), cudaMemcpyDeviceToHost, stream);
    if (status != cudaSuccess) return CudaFailure("device-to-host copy", status);
    status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess) return CudaFailure("stream wait", status);
    exla::callback_bridge::Arg arg;
    arg.dtype = buffer->element_type();
    auto dims = buffer->dimensions();
    arg.dims.assign(dims.begin(), dims.end());
    arg.data = host.data();
    arg.size_bytes = host.size();
    if (i == 0) {
      pid = arg;
    } else {
      inputs.push_back(arg);
    }
  }
  std::vector<std::vector<uint8_t>> host_outputs;
  std::vector<exla::callback_bridge::OutputBuffer> outputs;
  std::vector<void*> device_outputs;
  for (size_t i = num_aliased_outputs; i < rets.size(); ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (!ret) return ret.error();
    exla::callback_bridge::OutputBuffer out(**ret);
    out.data = host_outputs.emplace_back(out.size).data();
    outputs.push_back(out);
    device_outputs.push_back((*ret)->untyped_data());
  }
  auto result = exla::callback_bridge::InvokeRuntimeCallback(callback_id, callback_id_size, pid, inputs, outputs);
  if (!result.ok) return ffi::Error(ffi::ErrorCode::kInternal, result.error);
  for (size_t i = 0; i < device_outputs.size(); ++i) {
    cudaError_t status =
        cudaMemcpyAsync(device_outputs[i], host_outputs[i].data(), outputs[i].size, cudaMemcpyHostToDevice, stream);
    if (status != cudaSuccess) return CudaFailure("host-to-device copy", status);
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(exla_runtime_callback_cuda, exla_runtime_callback_cuda_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .RemainingArgs()
                                  .Attr<ffi::Span<const int64_t>>("callback_id")
                                  .Attr<uint64_t>("callback_id_size")
                                  .Attr<uint64_t>("num_aliased_data_outputs")
                                  .RemainingRets());

XLA_FFI_REGISTER_HANDLER(ffi::GetXlaFfiApi(), "exla_runtime_callback", "CUDA", exla_runtime_callback_cuda);

#else  // CUDA_ENABLED

namespace {

ffi::Error exla_runtime_callback_cuda_stub(ffi::RemainingArgs, ffi::Span<const int64_t>, uint64_t, uint64_t,
                                           ffi::RemainingRets) {
  return ffi::Error(ffi::ErrorCode::kUnimplemented, "EXLA was built without CUDA; rebuild it with CUDA");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(exla_runtime_callback_cuda, exla_runtime_callback_cuda_stub,
                              ffi::Ffi::Bind()
                                  .RemainingArgs()
                                  .Attr<ffi::Span<const int64_t>>("callback_id")
                                  .Attr<uint64_t>("callback_id_size")
                                  .Attr<uint64_t>("num_aliased_data_outputs")
                                  .RemainingRets());

XLA_FFI_REGISTER_HANDLER(ffi::GetXlaFfiApi(), "exla_runtime_callback", "CUDA", exla_runtime_callback_cuda);

#endif  // CUDA_ENABLED
