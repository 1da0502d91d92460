// Modelled on PASSIONLab/OpenEquivariance openequivariance_extjax/src/libjax_tp_jit.cpp (BSD-3-Clause); rewritten, not copied: see SOURCE.md.
// Typed FFI handlers for JIT-compiled tensor products and graph convolutions: each compiles its kernel
// on first use from a JSON attribute (cached by hash), checks its buffers against the kernel's
// properties, and launches on XLA's stream (CUDA or HIP). Parsing and checking report by throwing.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "json11/json11.hpp"
#include "nanobind/nanobind.h"
#include "xla/ffi/api/ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;
using json = json11::Json;

#ifdef CUDA_BACKEND
#include <cuda.h>
#include <cuda_runtime.h>

#include "backend/backend_cuda.hpp"
using JITKernel = CUJITKernel;
using stream_t = cudaStream_t;
#endif

#ifdef HIP_BACKEND
#include "backend/backend_hip.hpp"
using JITKernel = HIPJITKernel;
using stream_t = hipStream_t;
#endif

#include "convolution.hpp"
#include "tensorproducts.hpp"

inline void* data_ptr(const ffi::AnyBuffer& buffer) { return buffer.untyped_data(); }
inline void* data_ptr(ffi::Result<ffi::AnyBuffer>& buffer) { return buffer->untyped_data(); }

#ifdef CUDA_BACKEND
void zero_buffer(ffi::AnyBuffer& buffer, stream_t stream) {
  cudaMemsetAsync(data_ptr(buffer), 0, buffer.size_bytes(), stream);
}
#endif

std::unordered_map<int64_t, std::pair<std::unique_ptr<JITTPImpl<JITKernel>>, KernelProp>> tp_cache;
std::unordered_map<int64_t, std::pair<std::unique_ptr<JITConvImpl<JITKernel>>, KernelProp>> conv_cache;
std::mutex cache_mutex;

std::pair<JITTPImpl<JITKernel>*, KernelProp> compile_tp_with_caching(std::string_view payload, int64_t hash) {
  const std::lock_guard<std::mutex> lock(cache_mutex);
  auto it = tp_cache.find(hash);
  if (it == tp_cache.end()) {
    std::string err;
    json root = json::parse(std::string(payload), err);
    if (!err.empty()) throw std::runtime_error("kernel description is not JSON: " + err);
    auto props = parse_json_config(root["kernel_prop"]);
    auto impl = std::make_unique<JITTPImpl<JITKernel>>(root["kernel"].string_value(), parse_json_config(root["forward_config"]),
                                                       parse_json_config(root["backward_config"]),
                                                       parse_json_config(root["double_backward_config"]), props);
    it = tp_cache.emplace(hash, std::make_pair(std::move(impl), KernelProp(props, false))).first;
  }
  return {it->second.first.get(), it->second.second};
}

std::pair<JITConvImpl<JITKernel>*, KernelProp> compile_conv_with_caching(std::string_view payload, int64_t hash) {
  const std::lock_guard<std::mutex> lock(cache_mutex);
  auto it = conv_cache.find(hash);
  if (it == conv_cache.end()) {
    std::string err;
    json root = json::parse(std::string(payload), err);
    if (!err.empty()) throw std::runtime_error("kernel description is not JSON: " + err);
    auto props = parse_json_config(root["kernel_prop"]);
    auto impl = std::make_unique<JITConvImpl<JITKernel>>(root["kernel"].string_value(), parse_json_config(root["forward_config"]),
                                                         parse_json_config(root["backward_config"]),
                                                         parse_json_config(root["double_backward_config"]), props);
    it = conv_cache.emplace(hash, std::make_pair(std::move(impl), KernelProp(props, true))).first;
  }
  return {it->second.first.get(), it->second.second};
}

inline void check_tensor(const ffi::AnyBuffer& buffer, std::initializer_list<int64_t> shape, ffi::DataType dtype,
                         const std::string& name) {
  auto dims = buffer.dimensions();
  if (dims.size() != shape.size()) throw std::logic_error("tensor '" + name + "' has the wrong rank");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != shape.begin()[i]) throw std::logic_error("tensor '" + name + "' has the wrong shape");
  }
  if (buffer.element_type() != dtype) throw std::logic_error("tensor '" + name + "' has the wrong dtype");
}

ffi::Error tp_forward_impl(ffi::AnyBuffer L1_in, ffi::AnyBuffer L2_in, ffi::AnyBuffer W,
                           ffi::Result<ffi::AnyBuffer> L3_out, stream_t stream, std::string_view kernel_json,
                           int64_t hash) {
  auto [kernel, k] = compile_tp_with_caching(kernel_json, hash);
  const int64_t batch = L1_in.dimensions()[0];
  check_tensor(L1_in, {batch, k.L1_dim}, k.irrep_dtype, "L1_in");
  check_tensor(L2_in, {batch, k.L2_dim}, k.irrep_dtype, "L2_in");
  if (k.shared_weights) {
    check_tensor(W, {k.weight_numel}, k.weight_dtype, "W");
  } else {
    check_tensor(W, {batch, k.weight_numel}, k.weight_dtype, "W");
  }
  kernel->exec_tensor_product(batch, data_ptr(L1_in), data_ptr(L2_in), data_ptr(L3_out), data_ptr(W), stream);
  return ffi::Error::Success();
}

ffi::Error tp_backward_impl(ffi::AnyBuffer L1_in, ffi::AnyBuffer L2_in, ffi::AnyBuffer W, ffi::AnyBuffer L3_grad,
                            ffi::Result<ffi::AnyBuffer> L1_grad, ffi::Result<ffi::AnyBuffer> L2_grad,
                            ffi::Result<ffi::AnyBuffer> W_grad, stream_t stream, std::string_view kernel_json,
                            int64_t hash) {
  auto [kernel, k] = compile_tp_with_caching(kernel_json, hash);
  const int64_t batch = L1_in.dimensions()[0];
  check_tensor(L3_grad, {batch, k.L3_dim}, k.irrep_dtype, "L3_grad");
  if (k.shared_weights) zero_buffer(*W_grad, stream);
  kernel->backward(batch, data_ptr(L1_in), data_ptr(L1_grad), data_ptr(L2_in), data_ptr(L2_grad), data_ptr(W),
                   data_ptr(W_grad), data_ptr(L3_grad), stream);
  return ffi::Error::Success();
}

ffi::Error conv_forward_impl(ffi::AnyBuffer L1_in, ffi::AnyBuffer L2_in, ffi::AnyBuffer W, ffi::AnyBuffer rows,
                             ffi::AnyBuffer cols, ffi::AnyBuffer workspace, ffi::AnyBuffer transpose_perm,
                             ffi::Result<ffi::AnyBuffer> L3_out, stream_t stream, std::string_view kernel_json,
                             int64_t hash) {
  auto [kernel, k] = compile_conv_with_caching(kernel_json, hash);
  const int64_t nnz = rows.dimensions()[0];
  const int64_t nodes = L1_in.dimensions()[0];
  check_tensor(rows, {nnz}, k.idx_dtype, "rows");
  check_tensor(cols, {nnz}, k.idx_dtype, "cols");
  void* workspace_ptr = k.deterministic ? data_ptr(workspace) : nullptr;
  zero_buffer(*L3_out, stream);
  kernel->exec_conv(data_ptr(L1_in), data_ptr(L2_in), data_ptr(W), data_ptr(L3_out), data_ptr(rows), data_ptr(cols),
                    nnz, nodes, workspace_ptr, stream);
  return ffi::Error::Success();
}

// The results sit between the operands in this handler's parameters, and its binding follows them.
ffi::Error conv_backward_impl(ffi::AnyBuffer L1_in, ffi::AnyBuffer L2_in, ffi::AnyBuffer W, ffi::AnyBuffer L3_grad,
                              ffi::Result<ffi::AnyBuffer> L1_grad, ffi::Result<ffi::AnyBuffer> L2_grad,
                              ffi::Result<ffi::AnyBuffer> W_grad, ffi::AnyBuffer rows, ffi::AnyBuffer cols,
                              ffi::AnyBuffer workspace, ffi::AnyBuffer transpose_perm, stream_t stream,
                              std::string_view kernel_json, int64_t hash) {
  auto [kernel, k] = compile_conv_with_caching(kernel_json, hash);
  const int64_t nnz = rows.dimensions()[0];
  const int64_t nodes = L1_in.dimensions()[0];
  check_tensor(L3_grad, {nodes, k.L3_dim}, k.irrep_dtype, "L3_grad");
  zero_buffer(*L1_grad, stream);
  if (k.shared_weights) zero_buffer(*W_grad, stream);
  kernel->backward(data_ptr(L1_in), data_ptr(L1_grad), data_ptr(L2_in), data_ptr(L2_grad), data_ptr(W),
                   data_ptr(W_grad), data_ptr(L3_grad), data_ptr(rows), data_ptr(cols), nnz, nodes,
                   data_ptr(workspace), data_ptr(transpose_perm), stream);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(tp_forward, tp_forward_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ctx<ffi::PlatformStream<stream_t>>()
                                  .Attr<std::string_view>("kernel")
                                  .Attr<int64_t>("hash"),
                              {xla::ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(tp_backward, tp_backward_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ctx<ffi::PlatformStream<stream_t>>()
                                  .Attr<std::string_view>("kernel")
                                  .Attr<int64_t>("hash"),
                              {xla::ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(conv_forward, conv_forward_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ctx<ffi::PlatformStream<stream_t>>()
                                  .Attr<std::string_view>("kernel")
                                  .Attr<int64_t>("hash"),
                              {xla::ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(conv_backward, conv_backward_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ctx<ffi::PlatformStream<stream_t>>()
                                  .Attr<std::string_view>("kernel")
                                  .Attr<int64_t>("hash"),
                              {xla::ffi::Traits::kCmdBufferCompatible});

NB_MODULE(openequivariance_extjax, m) {
  m.def("registrations", []() {
    nb::dict targets;
    targets["tp_forward"] = nb::capsule(reinterpret_cast<void*>(tp_forward));
    targets["tp_backward"] = nb::capsule(reinterpret_cast<void*>(tp_backward));
    targets["conv_forward"] = nb::capsule(reinterpret_cast<void*>(conv_forward));
    targets["conv_backward"] = nb::capsule(reinterpret_cast<void*>(conv_backward));
    return targets;
  });
  m.def("is_hip", []() {
#ifdef HIP_BACKEND
    return true;
#else
    return false;
#endif
  });
}
