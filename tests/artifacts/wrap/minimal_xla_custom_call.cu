// The kernel of the user's note 000 (shared/seeds/000_*.txt), as written there.
#include <cuda_runtime.h>

__global__ void SimpleAddKernel(const float* a, const float* b, float* out, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        out[idx] = a[idx] + b[idx];
    }
}

extern "C" __attribute__((visibility("default")))
void XlaGpuSimpleAdd(
    cudaStream_t stream,
    void** buffers,
    const char* opaque,
    size_t opaque_len
) {
    const float* a = (const float*)buffers[0];
    const float* b = (const float*)buffers[1];
    float* out = (float*)buffers[2];
    const int size = 3;
    
    const int threads = 256;
    const int blocks = (size + threads - 1) / threads;
    
    SimpleAddKernel<<<blocks, threads, 0, stream>>>(a, b, out, size);
}
