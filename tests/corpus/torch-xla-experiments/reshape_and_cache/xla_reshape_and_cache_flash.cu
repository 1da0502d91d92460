// Modelled on silencelamb/vllm playground/custom_call/naive_ctypes/reshape_and_cache_flash/
// xla_reshape_and_cache_flash.cu (Apache-2.0); rewritten, not copied: see SOURCE.md. vLLM's cache
// write behind a legacy entry point; the sizes in a descriptor copied from backend_config. It
// reads key and value as operands 0 and 1 and writes the caches as the two results (5 and 6).
#include <cuda_runtime.h>
#include <cstdint>
#include <cstring>

struct ReshapeAndCacheDescriptor {
  int64_t num_tokens;
  int64_t num_kv_heads;
  int64_t head_size;
  int64_t num_blocks;
  int64_t block_size;
  int32_t kv_cache_dtype;
  uint8_t has_k_scale;
  uint8_t has_v_scale;
};

__global__ void reshape_and_cache_flash_kernel(const float* key, const float* value, float* key_cache,
                                               float* value_cache, const int64_t* slot_mapping,
                                               int64_t block_size, int64_t row) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    key_cache[slot * row + i] = key[token * row + i];
    value_cache[slot * row + i] = value[token * row + i];
  }
}

extern "C" {

void reshape_and_cache_flash_xla_custom_call(cudaStream_t stream, void** buffers, const char* opaque,
                                             size_t opaque_len) {
  ReshapeAndCacheDescriptor descriptor;
  std::memcpy(&descriptor, opaque, sizeof(ReshapeAndCacheDescriptor));
  const float* key = static_cast<const float*>(buffers[0]);
  const float* value = static_cast<const float*>(buffers[1]);
  const int64_t* slot_mapping = static_cast<const int64_t*>(buffers[4]);
  float* key_cache = static_cast<float*>(buffers[5]);
  float* value_cache = static_cast<float*>(buffers[6]);
  const int64_t row = descriptor.num_kv_heads * descriptor.head_size;
  reshape_and_cache_flash_kernel<<<descriptor.num_tokens, 256, 0, stream>>>(
      key, value, key_cache, value_cache, slot_mapping, descriptor.block_size, row);
  cudaStreamSynchronize(stream);
}

}  // extern "C"
