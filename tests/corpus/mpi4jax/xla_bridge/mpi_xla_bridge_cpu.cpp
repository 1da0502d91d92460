// Modelled on mpi4jax/mpi4jax mpi4jax/_src/xla_bridge/mpi_xla_bridge_cpu.cpp (MIT); rewritten, not
// copied: see SOURCE.md. Typed FFI handlers calling MPI on the
// host. The CPU module defines handlers of the same names.

#include <mpi.h>

#include "nanobind/nanobind.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace nb = nanobind;

namespace mpi4jax {



ffi::Error mpi_barrier_ffi_cpu_impl(ffi::Token token_in, ffi::Result<ffi::Token> token_out,
                                     int64_t comm_handle) {
  MPI_Comm comm = reinterpret_cast<MPI_Comm>(comm_handle);
  MPI_Barrier(comm);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(mpi_barrier_ffi, mpi_barrier_ffi_cpu_impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Token>()
                                  .Ret<ffi::Token>()
                                  .Attr<int64_t>("comm"));

ffi::Error mpi_allreduce_ffi_cpu_impl(ffi::AnyBuffer sendbuf, ffi::Token token_in,
                                       ffi::Result<ffi::AnyBuffer> recvbuf, ffi::Result<ffi::Token> token_out,
                                       int64_t nitems, int64_t op_handle, int64_t comm_handle, int64_t dtype_handle) {
  MPI_Comm comm = reinterpret_cast<MPI_Comm>(comm_handle);
  MPI_Allreduce(sendbuf.untyped_data(), recvbuf->untyped_data(), nitems, reinterpret_cast<MPI_Datatype>(dtype_handle),
                reinterpret_cast<MPI_Op>(op_handle), comm);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(mpi_allreduce_ffi, mpi_allreduce_ffi_cpu_impl,
                              ffi::Ffi::Bind()
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

NB_MODULE(mpi_xla_bridge_cpu, m) {
  nb::dict targets;
  targets["mpi_barrier"] = EncapsulateFfiHandler(mpi_barrier_ffi);
  targets["mpi_allreduce"] = EncapsulateFfiHandler(mpi_allreduce_ffi);
  m.attr("ffi_targets") = targets;
}

}  // namespace mpi4jax
