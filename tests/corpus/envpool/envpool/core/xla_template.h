// Modelled on sail-sg/envpool envpool/core/xla_template.h (Apache-2.0); rewritten, not copied: see SOURCE.md.
// One template turns an operation class (send or recv) into a pair of typed FFI handlers, CPU and GPU,
// defined with XLA_FFI_DEFINE_HANDLER inside a static function and handed to Python as capsules. The
// first operand and the first result are the pool's handle; the pool object itself travels as an
// integer attribute.
#ifndef ENVPOOL_CORE_XLA_TEMPLATE_H_
#define ENVPOOL_CORE_XLA_TEMPLATE_H_

#include <pybind11/pybind11.h>
#include <xla/ffi/api/ffi.h>

#include <array>
#include <cstdint>
#include <string>
#include <tuple>

#include "envpool/core/cuda_driver.h"

namespace py = pybind11;
namespace xla_ffi = xla::ffi;

template <typename Class, typename CC>
struct CustomCall {
  using In = std::array<void*, std::tuple_size_v<decltype(CC::InSpecs(std::declval<Class*>()))>>;
  using Out = std::array<void*, std::tuple_size_v<decltype(CC::OutSpecs(std::declval<Class*>()))>>;

  static xla_ffi::ErrorOr<Class*> PoolOf(xla_ffi::Dictionary attrs) {
    auto handle = attrs.get<std::int64_t>("handle");
    if (!handle) return xla_ffi::Unexpected(handle.error());
    return reinterpret_cast<Class*>(static_cast<std::uintptr_t>(*handle));
  }

  // Operand 0 and result 0 are the handle; the rest are the operation's own buffers.
  static xla_ffi::Error Gather(xla_ffi::RemainingArgs args, xla_ffi::RemainingRets rets, In* in, Out* out) {
    if (args.size() != in->size() + 1 || rets.size() != out->size() + 1) {
      return xla_ffi::Error::InvalidArgument("wrong number of buffers for this pool");
    }
    for (std::size_t i = 0; i < in->size(); ++i) {
      auto buffer = args.get<xla_ffi::AnyBuffer>(i + 1);
      if (!buffer) return buffer.error();
      (*in)[i] = buffer->untyped_data();
    }
    for (std::size_t i = 0; i < out->size(); ++i) {
      auto buffer = rets.get<xla_ffi::AnyBuffer>(i + 1);
      if (!buffer) return buffer.error();
      (*out)[i] = (*buffer)->untyped_data();
    }
    return {};
  }

  static xla_ffi::Error CpuExecute(xla_ffi::RemainingArgs args, xla_ffi::RemainingRets rets,
                                   xla_ffi::Dictionary attrs) {
    auto pool = PoolOf(attrs);
    if (!pool) return pool.error();
    In in{};
    Out out{};
    if (auto err = Gather(args, rets, &in, &out); err.failure()) return err;
    CC::Cpu(*pool, in, out);
    return {};
  }

  static xla_ffi::Error GpuExecute(EnvPoolGpuStream stream, xla_ffi::RemainingArgs args, xla_ffi::RemainingRets rets,
                                   xla_ffi::Dictionary attrs) {
    auto pool = PoolOf(attrs);
    if (!pool) return pool.error();
    In in{};
    Out out{};
    if (auto err = Gather(args, rets, &in, &out); err.failure()) return err;
    CC::Gpu(*pool, stream, in, out);
    return {};
  }

  static auto Capsules() {
    XLA_FFI_DEFINE_HANDLER(cpu_handler, CpuExecute,
                           xla_ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs<xla_ffi::Dictionary>());
    XLA_FFI_DEFINE_HANDLER(gpu_handler, GpuExecute,
                           xla_ffi::Ffi::Bind()
                               .Ctx<xla_ffi::PlatformStream<EnvPoolGpuStream>>()
                               .RemainingArgs()
                               .RemainingRets()
                               .Attrs<xla_ffi::Dictionary>());
    return std::make_tuple(py::capsule(reinterpret_cast<void*>(cpu_handler)),
                           py::capsule(reinterpret_cast<void*>(gpu_handler)));
  }

  static auto Xla(Class* pool) {
    return std::make_tuple(py::bytes(std::string(reinterpret_cast<const char*>(&pool), sizeof(Class*))),
                           CC::Specs(pool), Capsules());
  }
};

#endif  // ENVPOOL_CORE_XLA_TEMPLATE_H_
