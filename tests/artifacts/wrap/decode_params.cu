// A vLLM-style kernel: its arguments travel in a struct of parameters. One warp per (sequence,
// head) computes the dot product of the query with the sequence's first cached key, scaled.
#include <cuda_fp16.h>

struct DecodeParams {
  const half* query;      // [num_seqs, num_heads, head_size]
  const half* key_cache;  // [num_seqs, num_heads, head_size]
  float* scores;          // [num_seqs, num_heads, head_size]: query * key * scale, per element
  int num_seqs;
  int num_heads;
  int head_size;
  float scale;
};

__global__ void decode_scores(const DecodeParams p) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long total = static_cast<long>(p.num_seqs) * p.num_heads * p.head_size;
  if (i < total) p.scores[i] = __half2float(p.query[i]) * __half2float(p.key_cache[i]) * p.scale;
}
