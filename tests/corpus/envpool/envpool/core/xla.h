// Modelled on sail-sg/envpool envpool/core/xla.h (Apache-2.0); rewritten, not copied: see SOURCE.md.
// The two operations: send hands actions to environments that step on host threads, recv hands back
// their states. On the GPU the actions are copied to host memory and the stream is waited for before
// the environments read them, and the states are copied up and waited for before the call returns:
// the environments live on the host, so the wait is the operation's point, not an oversight.
#ifndef ENVPOOL_CORE_XLA_H_
#define ENVPOOL_CORE_XLA_H_

#include <cstring>
#include <vector>

#include "envpool/core/array.h"
#include "envpool/core/cuda_driver.h"
#include "envpool/core/xla_template.h"

template <typename Dtype>
Array HostCopyOf(EnvPoolGpuStream stream, const void* device, ::Spec<Dtype> spec, int batch) {
  Array host(spec.Batch(batch));
  envpool::cuda_driver::Api().CopyDeviceToHostAsync(host.Data(), device, host.size * host.element_size, stream);
  return host;
}

template <typename EnvPool>
struct XlaSend {
  using In = std::array<void*, std::tuple_size_v<typename EnvPool::Action::Keys>>;
  using Out = std::array<void*, 0>;

  static void Cpu(EnvPool* pool, const In& in, const Out& out) {
    std::vector<Array> action;
    std::size_t i = 0;
    std::apply([&](auto&&... spec) { (action.emplace_back(HostViewOf(in[i++], spec, pool->BatchSize())), ...); },
               pool->spec.action_spec.AllValues());
    pool->Send(action);
  }

  static void Gpu(EnvPool* pool, EnvPoolGpuStream stream, const In& in, const Out& out) {
    std::vector<Array> action;
    std::size_t i = 0;
    std::apply([&](auto&&... spec) { (action.emplace_back(HostCopyOf(stream, in[i++], spec, pool->BatchSize())), ...); },
               pool->spec.action_spec.AllValues());
    envpool::cuda_driver::Api().SynchronizeStream(stream);
    pool->Send(action);
  }
};

template <typename EnvPool>
struct XlaRecv {
  using In = std::array<void*, 0>;
  using Out = std::array<void*, std::tuple_size_v<typename EnvPool::State::Keys>>;

  static void Cpu(EnvPool* pool, const In& in, const Out& out) {
    std::vector<Array> states = pool->Recv();
    for (std::size_t i = 0; i < states.size(); ++i) {
      std::memcpy(out[i], states[i].Data(), states[i].size * states[i].element_size);
    }
  }

  static void Gpu(EnvPool* pool, EnvPoolGpuStream stream, const In& in, const Out& out) {
    std::vector<Array> states = pool->Recv();
    for (std::size_t i = 0; i < states.size(); ++i) {
      envpool::cuda_driver::Api().CopyHostToDeviceAsync(out[i], states[i].Data(),
                                                        states[i].size * states[i].element_size, stream);
    }
    envpool::cuda_driver::Api().SynchronizeStream(stream);  // states is freed on return
  }
};

#endif  // ENVPOOL_CORE_XLA_H_
