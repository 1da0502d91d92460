// Modelled on DifferentiableUniverseInitiative/jaxDecomp src/csrc/jaxdecomp.cc (MIT); rewritten, not copied: see SOURCE.md.
// Typed FFI handlers for a distributed 3D FFT, a halo exchange and a transpose on cuDecomp: one
// template per operation, instantiated per dtype by XLA_FFI_DEFINE_HANDLER_SYMBOL, each building a
// cuDecomp configuration from the attributes with the throwing CHECK_CUDECOMP_EXIT.
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>

#include "jaxdecomp.h"
#ifdef JD_CUDECOMP_BACKEND
#include <cudecomp.h>
#include <mpi.h>

#include "checks.h"
#include "fft.h"
#include "grid_descriptor_mgr.h"
#include "halo.h"
#include "transpose.h"
#else
void report_no_cuda() { throw std::runtime_error("jaxdecomp was built without CUDA: cuDecomp is not available"); }
#endif

#include "xla/ffi/api/ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;
namespace jd = jaxdecomp;

template <ffi::DataType T>
constexpr bool is_double_v = (T == ffi::DataType::C128 || T == ffi::DataType::F64);
template <ffi::DataType T>
using real_of_t = std::conditional_t<is_double_v<T>, double, float>;

namespace jaxdecomp {

#ifdef JD_CUDECOMP_BACKEND
template <ffi::DataType T>
ffi::Error pfft3d_ffi(cudaStream_t stream, ffi::Span<const int64_t> gdims, ffi::Span<const int64_t> pdims,
                      int64_t transpose_backend, int64_t halo_backend, bool forward, bool adjoint, bool contiguous,
                      int64_t decomposition, ffi::Buffer<T> input, ffi::Buffer<ffi::DataType::S8> workspace,
                      ffi::Result<ffi::Buffer<T>> output) {
  if (gdims.size() != 3) return ffi::Error::InvalidArgument("gdims needs 3 values");
  if (pdims.size() != 2) return ffi::Error::InvalidArgument("pdims needs 2 values");
  cudecompGridDescConfig_t config;
  CHECK_CUDECOMP_EXIT(cudecompGridDescConfigSetDefaults(&config));
  for (int i = 0; i < 3; ++i) config.gdims[i] = static_cast<int32_t>(gdims[i]);
  for (int i = 0; i < 2; ++i) config.pdims[i] = static_cast<int32_t>(pdims[i]);
  config.transpose_comm_backend = static_cast<cudecompTransposeCommBackend_t>(transpose_backend);
  config.halo_comm_backend = static_cast<cudecompHaloCommBackend_t>(halo_backend);
  for (int i = 0; i < 3; ++i) config.transpose_axis_contiguous[i] = contiguous;
  jd::fftDescriptor descriptor(config, is_double_v<T>, forward, adjoint, contiguous,
                               static_cast<jd::Decomposition>(decomposition));
  void* buffers[3] = {const_cast<void*>(input.untyped_data()), const_cast<void*>(workspace.untyped_data()),
                      output->untyped_data()};
  size_t work_size;
  cudecompHandle_t handle(jd::GridDescriptorManager::getInstance().getHandle());
  auto executor = std::make_shared<jd::FourierExecutor<real_of_t<T>>>();
  jd::GridDescriptorManager::getInstance().createFFTExecutor(descriptor, work_size, executor);
  if (descriptor.forward) {
    executor->forward(handle, descriptor, stream, buffers);
  } else {
    executor->backward(handle, descriptor, stream, buffers);
  }
  return ffi::Error::Success();
}

template <ffi::DataType T>
ffi::Error halo_ffi(cudaStream_t stream, ffi::Span<const int64_t> gdims, ffi::Span<const int64_t> pdims,
                    int64_t transpose_backend, int64_t halo_backend, ffi::Span<const int64_t> halo_extents,
                    ffi::Span<const int64_t> halo_periods, int64_t axis, ffi::Buffer<T> input,
                    ffi::Buffer<ffi::DataType::S8> workspace, ffi::Result<ffi::Buffer<T>> output) {
  if (gdims.size() != 3 || pdims.size() != 2) return ffi::Error::InvalidArgument("bad grid dimensions");
  if (halo_extents.size() != 3 || halo_periods.size() != 3) return ffi::Error::InvalidArgument("bad halo");
  cudecompGridDescConfig_t config;
  CHECK_CUDECOMP_EXIT(cudecompGridDescConfigSetDefaults(&config));
  for (int i = 0; i < 3; ++i) config.gdims[i] = static_cast<int32_t>(gdims[i]);
  for (int i = 0; i < 2; ++i) config.pdims[i] = static_cast<int32_t>(pdims[i]);
  config.transpose_comm_backend = static_cast<cudecompTransposeCommBackend_t>(transpose_backend);
  config.halo_comm_backend = static_cast<cudecompHaloCommBackend_t>(halo_backend);
  jd::haloDescriptor_t descriptor;
  descriptor.double_precision = is_double_v<T>;
  descriptor.halo_extents = {static_cast<int32_t>(halo_extents[0]), static_cast<int32_t>(halo_extents[1]),
                             static_cast<int32_t>(halo_extents[2])};
  descriptor.halo_periods = {halo_periods[0] != 0, halo_periods[1] != 0, halo_periods[2] != 0};
  descriptor.axis = static_cast<int>(axis);
  descriptor.config = config;
  void* buffers[3] = {const_cast<void*>(input.untyped_data()), const_cast<void*>(workspace.untyped_data()),
                      output->untyped_data()};
  size_t work_size;
  cudecompHandle_t handle(jd::GridDescriptorManager::getInstance().getHandle());
  auto executor = std::make_shared<jd::HaloExchange<real_of_t<T>>>();
  jd::GridDescriptorManager::getInstance().createHaloExecutor(descriptor, work_size, executor);
  executor->halo_exchange(handle, descriptor, stream, buffers);
  return ffi::Error::Success();
}

template <ffi::DataType T>
ffi::Error transpose_ffi(cudaStream_t stream, ffi::Span<const int64_t> gdims, ffi::Span<const int64_t> pdims,
                         int64_t transpose_backend, int64_t halo_backend, int64_t transpose_type, bool contiguous,
                         ffi::Buffer<T> input, ffi::Buffer<ffi::DataType::S8> workspace,
                         ffi::Result<ffi::Buffer<T>> output) {
  if (gdims.size() != 3 || pdims.size() != 2) return ffi::Error::InvalidArgument("bad grid dimensions");
  cudecompGridDescConfig_t config;
  CHECK_CUDECOMP_EXIT(cudecompGridDescConfigSetDefaults(&config));
  for (int i = 0; i < 3; ++i) config.gdims[i] = static_cast<int32_t>(gdims[i]);
  for (int i = 0; i < 2; ++i) config.pdims[i] = static_cast<int32_t>(pdims[i]);
  config.transpose_comm_backend = static_cast<cudecompTransposeCommBackend_t>(transpose_backend);
  config.halo_comm_backend = static_cast<cudecompHaloCommBackend_t>(halo_backend);
  for (int i = 0; i < 3; ++i) config.transpose_axis_contiguous[i] = contiguous;
  jd::transposeDescriptor descriptor(config, static_cast<jd::TransposeType>(transpose_type), is_double_v<T>,
                                     contiguous);
  void* buffers[3] = {const_cast<void*>(input.untyped_data()), const_cast<void*>(workspace.untyped_data()),
                      output->untyped_data()};
  size_t work_size;
  cudecompHandle_t handle(jd::GridDescriptorManager::getInstance().getHandle());
  auto executor = std::make_shared<jd::Transpose<real_of_t<T>>>();
  jd::GridDescriptorManager::getInstance().createTransposeExecutor(descriptor, work_size, executor);
  executor->transpose(handle, descriptor, stream, buffers);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(pfft_C64, pfft3d_ffi<ffi::DataType::C64>,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<ffi::Span<const int64_t>>("gdims")
                                  .Attr<ffi::Span<const int64_t>>("pdims")
                                  .Attr<int64_t>("transpose_comm_backend")
                                  .Attr<int64_t>("halo_comm_backend")
                                  .Attr<bool>("forward")
                                  .Attr<bool>("adjoint")
                                  .Attr<bool>("contiguous")
                                  .Attr<int64_t>("decomposition")
                                  .Arg<ffi::Buffer<ffi::DataType::C64>>()
                                  .Arg<ffi::Buffer<ffi::DataType::S8>>()
                                  .Ret<ffi::Buffer<ffi::DataType::C64>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(pfft_C128, pfft3d_ffi<ffi::DataType::C128>,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<ffi::Span<const int64_t>>("gdims")
                                  .Attr<ffi::Span<const int64_t>>("pdims")
                                  .Attr<int64_t>("transpose_comm_backend")
                                  .Attr<int64_t>("halo_comm_backend")
                                  .Attr<bool>("forward")
                                  .Attr<bool>("adjoint")
                                  .Attr<bool>("contiguous")
                                  .Attr<int64_t>("decomposition")
                                  .Arg<ffi::Buffer<ffi::DataType::C128>>()
                                  .Arg<ffi::Buffer<ffi::DataType::S8>>()
                                  .Ret<ffi::Buffer<ffi::DataType::C128>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(halo_F32, halo_ffi<ffi::DataType::F32>,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<ffi::Span<const int64_t>>("gdims")
                                  .Attr<ffi::Span<const int64_t>>("pdims")
                                  .Attr<int64_t>("transpose_comm_backend")
                                  .Attr<int64_t>("halo_comm_backend")
                                  .Attr<ffi::Span<const int64_t>>("halo_extents")
                                  .Attr<ffi::Span<const int64_t>>("halo_periods")
                                  .Attr<int64_t>("axis")
                                  .Arg<ffi::Buffer<ffi::DataType::F32>>()
                                  .Arg<ffi::Buffer<ffi::DataType::S8>>()
                                  .Ret<ffi::Buffer<ffi::DataType::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(halo_F64, halo_ffi<ffi::DataType::F64>,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<ffi::Span<const int64_t>>("gdims")
                                  .Attr<ffi::Span<const int64_t>>("pdims")
                                  .Attr<int64_t>("transpose_comm_backend")
                                  .Attr<int64_t>("halo_comm_backend")
                                  .Attr<ffi::Span<const int64_t>>("halo_extents")
                                  .Attr<ffi::Span<const int64_t>>("halo_periods")
                                  .Attr<int64_t>("axis")
                                  .Arg<ffi::Buffer<ffi::DataType::F64>>()
                                  .Arg<ffi::Buffer<ffi::DataType::S8>>()
                                  .Ret<ffi::Buffer<ffi::DataType::F64>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(transpose_C64, transpose_ffi<ffi::DataType::C64>,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<ffi::Span<const int64_t>>("gdims")
                                  .Attr<ffi::Span<const int64_t>>("pdims")
                                  .Attr<int64_t>("transpose_comm_backend")
                                  .Attr<int64_t>("halo_comm_backend")
                                  .Attr<int64_t>("transpose_type")
                                  .Attr<bool>("contiguous")
                                  .Arg<ffi::Buffer<ffi::DataType::C64>>()
                                  .Arg<ffi::Buffer<ffi::DataType::S8>>()
                                  .Ret<ffi::Buffer<ffi::DataType::C64>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(transpose_F32, transpose_ffi<ffi::DataType::F32>,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<ffi::Span<const int64_t>>("gdims")
                                  .Attr<ffi::Span<const int64_t>>("pdims")
                                  .Attr<int64_t>("transpose_comm_backend")
                                  .Attr<int64_t>("halo_comm_backend")
                                  .Attr<int64_t>("transpose_type")
                                  .Attr<bool>("contiguous")
                                  .Arg<ffi::Buffer<ffi::DataType::F32>>()
                                  .Arg<ffi::Buffer<ffi::DataType::S8>>()
                                  .Ret<ffi::Buffer<ffi::DataType::F32>>());
#endif  // JD_CUDECOMP_BACKEND

template <typename T>
nb::capsule EncapsulateFfiCall(T* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, T, XLA_FFI_CallFrame*>, "not an XLA FFI handler");
  return nb::capsule(reinterpret_cast<void*>(fn));
}

nb::dict Registrations() {
  nb::dict targets;
#ifdef JD_CUDECOMP_BACKEND
  targets["pfft_C64"] = EncapsulateFfiCall(pfft_C64);
  targets["pfft_C128"] = EncapsulateFfiCall(pfft_C128);
  targets["halo_F32"] = EncapsulateFfiCall(halo_F32);
  targets["halo_F64"] = EncapsulateFfiCall(halo_F64);
  targets["transpose_C64"] = EncapsulateFfiCall(transpose_C64);
  targets["transpose_F32"] = EncapsulateFfiCall(transpose_F32);
#endif
  return targets;
}

}  // namespace jaxdecomp

NB_MODULE(_jaxdecomp, m) {
  m.def("registrations", &jd::Registrations);
}
