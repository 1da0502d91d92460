// Modelled on mpi4jax/mpi4jax mpi4jax/_src/xla_bridge/mpi_xla_bridge_cuda.cpp (MIT); rewritten, not
// copied: see SOURCE.md. Typed FFI handlers that wait for the stream before calling MPI on the
// host: a synchronisation in a handler on purpose, and none of them declares kCmdBufferCompatible.
#include <cuda_runtime.h>
#include <mpi.h>

#include "nanobind/nanobind.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace nb = nanobind;

namespace mpi4jax {

static void abort_on_cuda_error(cudaError_t error, MPI_Comm comm, const char* what) {
  if (error == cudaSuccess) return;
  MPI_Abort(comm, static_cast<int>(error));
}

static void synchronize(cudaStream_t stream, MPI_Comm comm) {
  abort_on_cuda_error(cudaStreamSynchronize(stream), comm, "cudaStreamSynchronize");
}

ffi::Error mpi_barrier_ffi_cuda_impl(cudaStream_t stream, ffi::Token token_in, ffi::Result<ffi::Token> token_out,
                                     int64_t comm_handle) {
  MPI_Comm comm = reinterpret_cast<MPI_Comm>(comm_handle);
  synchronize(stream, comm);
  MPI_Barrier(comm);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(mpi_barrier_ffi, mpi_barrier_ffi_cuda_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Token>()
                                  .Ret<ffi::Token>()
                                  .Attr<int64_t>("comm"));

ffi::Error mpi_allreduce_ffi_cuda_impl(cudaStream_t stream, ffi::AnyBuffer sendbuf, ffi::Token token_in,
                                       ffi::Result<ffi::AnyBuffer> recvbuf, ffi::Result<ffi::Token> token_out,
                                       int64_t nitems, int64_t op_handle, int64_t comm_handle, int64_t dtype_handle) {
  MPI_Comm comm = reinterpret_cast<MPI_Comm>(comm_handle);
  synchronize(stream, comm);
  MPI_Allreduce(sendbuf.untyped_data(), recvbuf->untyped_data(), nitems, reinterpret_cast<MPI_Datatype>(dtype_handle),
                reinterpret_cast<MPI_Op>(op_handle), comm);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(mpi_allreduce_ffi, mpi_allreduce_ffi_cuda_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Token>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::Token>()
                                  .Attr<int64_t>("nitems")
                                  .Attr<int64_t>("op")
                                  .Attr<int64_t>("comm")
                                  .Attr<int64_t>("dtype"));

template <typename T>
nb::capsule EncapsulateFfiHandler(T* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn));
}

NB_MODULE(mpi_xla_bridge_cuda, m) {
  nb::dict targets;
  targets["mpi_barrier"] = EncapsulateFfiHandler(mpi_barrier_ffi);
  targets["mpi_allreduce"] = EncapsulateFfiHandler(mpi_allreduce_ffi);
  m.attr("ffi_targets") = targets;
}

}  // namespace mpi4jax
