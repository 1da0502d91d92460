// Modelled on sail-sg/envpool envpool/core/cuda_driver.h (Apache-2.0); rewritten, not copied: see SOURCE.md.
// The few CUDA driver calls the GPU path needs, looked up in libcuda at run time so that a CPU wheel
// links no CUDA library. A failing call aborts through absl's CHECK (no exception).
#ifndef ENVPOOL_CORE_CUDA_DRIVER_H_
#define ENVPOOL_CORE_CUDA_DRIVER_H_

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

#include "absl/log/check.h"

using EnvPoolGpuStream = void*;  // XLA's platform stream, kept opaque (a CUstream on CUDA)

namespace envpool::cuda_driver {

class DriverApi {
 public:
  DriverApi() {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK_NE(lib_, nullptr) << "the XLA GPU path needs libcuda.so.1";
    dtoh_ = Lookup<CopyFn>("cuMemcpyDtoHAsync_v2");
    htod_ = Lookup<CopyFn>("cuMemcpyHtoDAsync_v2");
    sync_ = Lookup<SyncFn>("cuStreamSynchronize");
  }

  void CopyDeviceToHostAsync(void* host, const void* device, std::size_t bytes, EnvPoolGpuStream stream) const {
    CHECK_EQ(dtoh_(host, const_cast<void*>(device), bytes, stream), 0) << "cuMemcpyDtoHAsync failed";
  }
  void CopyHostToDeviceAsync(void* device, const void* host, std::size_t bytes, EnvPoolGpuStream stream) const {
    CHECK_EQ(htod_(device, const_cast<void*>(host), bytes, stream), 0) << "cuMemcpyHtoDAsync failed";
  }
  void SynchronizeStream(EnvPoolGpuStream stream) const { CHECK_EQ(sync_(stream), 0) << "cuStreamSynchronize failed"; }

 private:
  using CopyFn = int (*)(void*, void*, std::size_t, EnvPoolGpuStream);
  using SyncFn = int (*)(EnvPoolGpuStream);

  template <typename Fn>
  Fn Lookup(const char* symbol) {
    void* fn = dlsym(lib_, symbol);
    CHECK_NE(fn, nullptr) << "missing CUDA driver symbol " << symbol;
    return reinterpret_cast<Fn>(fn);
  }

  void* lib_ = nullptr;
  CopyFn dtoh_ = nullptr;
  CopyFn htod_ = nullptr;
  SyncFn sync_ = nullptr;
};

inline const DriverApi& Api() {
  static const DriverApi api;
  return api;
}

}  // namespace envpool::cuda_driver

#endif  // ENVPOOL_CORE_CUDA_DRIVER_H_
