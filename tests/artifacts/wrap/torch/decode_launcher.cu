// A pointer launcher whose sizes are read from shape comments (written for xlacc's tests).
#include <cuda_runtime.h>

__global__ void decode_kernel(float* out, const float* query, const float* key_cache, int num_seqs, int head_size) {}

void decode(float* out,                // [num_seqs, num_heads, head_size]
            const float* query,        // [num_seqs, num_heads, head_size]
            const float* key_cache,    // [num_blocks, block_size, num_kv_heads,
                                       //  head_size]
            int num_seqs, int num_heads, int head_size, int block_size, int window, cudaStream_t stream) {
  decode_kernel<<<num_seqs * num_heads, 128, 0, stream>>>(out, query, key_cache, num_seqs, head_size);
}
