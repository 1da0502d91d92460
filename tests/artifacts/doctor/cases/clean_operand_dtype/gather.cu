// A legacy row gather: rows of a table picked by an index vector read as 64-bit integers.
#include <cstdlib>
#include <cuda_runtime.h>

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;

__global__ void gather_rows(const float* table, const int64_t* index, float* out, long rows, long cols) {
  long r = blockIdx.x, c = threadIdx.x;
  if (r < rows && c < cols) out[r * cols + c] = table[index[r] * cols + c];
}

extern "C" __attribute__((visibility("default")))
void gather_rows_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len,
                     XlaCustomCallStatus* status) {
  char* end = nullptr;
  const long rows = opaque_len ? std::strtol(opaque, &end, 10) : 0;
  const long cols = end && *end == ',' ? std::strtol(end + 1, nullptr, 10) : 0;
  const float* table = static_cast<const float*>(buffers[0]);
  const int64_t* index = static_cast<const int64_t*>(buffers[1]);
  float* out = static_cast<float*>(buffers[2]);
  if (rows == 0) return;
  gather_rows<<<rows, cols, 0, stream>>>(table, index, out, rows, cols);
  cudaGetLastError();
}
