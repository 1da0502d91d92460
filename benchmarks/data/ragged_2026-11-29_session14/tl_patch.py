"""Instrument a rendered ragged kernel.cu: a per-item timeline of the persistent prefill kernel's
product warps (globaltimer), read from the host through xlacc_tl_read / xlacc_tl_reset."""
import sys
from pathlib import Path
p = Path(sys.argv[1]); s = p.read_text()
head = r'''
#define TL_MAX 16384
__device__ unsigned long long g_tl[8 * TL_MAX];
__device__ unsigned int g_tl_count;
__device__ __forceinline__ unsigned long long tl_now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ unsigned tl_smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }
__device__ __forceinline__ void tl_record(unsigned long long a, unsigned long long b, unsigned long long c, unsigned long long d, unsigned long long e, unsigned long long f) {
  const unsigned i = atomicAdd(&g_tl_count, 1u);
  if (i >= TL_MAX) return;
  unsigned long long* r = g_tl + 8ull * i;
  r[0] = tl_smid(); r[1] = blockIdx.x; r[2] = a; r[3] = b; r[4] = c; r[5] = d; r[6] = e; r[7] = f;
}
extern "C" __attribute__((visibility("default"))) int xlacc_tl_read(unsigned long long* host, unsigned* count) {
  cudaDeviceSynchronize();
  if (cudaMemcpyFromSymbol(count, g_tl_count, sizeof(unsigned)) != cudaSuccess) return 1;
  const unsigned n = *count < TL_MAX ? *count : TL_MAX;
  return cudaMemcpyFromSymbol(host, g_tl, n * 8ull * sizeof(unsigned long long)) != cudaSuccess ? 2 : 0;
}
extern "C" __attribute__((visibility("default"))) int xlacc_tl_reset() {
  cudaDeviceSynchronize();
  const unsigned zero = 0;
  return cudaMemcpyToSymbol(g_tl_count, &zero, sizeof(unsigned)) != cudaSuccess ? 1 : 0;
}
'''
def sub(old, new, count=1):
    global s
    assert s.count(old) == count, (old, s.count(old))
    s = s.replace(old, new)
sub("\nnamespace {\n", head + "\nnamespace {\n")
sub('''    const int buffer = item % kQBuffers;
    mbarrier_wait(q_ready + buffer * 8, (item / kQBuffers) & 1);
    const CtaWork& work = sync.work[buffer];
    if (!work.live) return;''', '''    const int buffer = item % kQBuffers;
    const unsigned long long tl_wait = tl_now();
    mbarrier_wait(q_ready + buffer * 8, (item / kQBuffers) & 1);
    const unsigned long long tl_ready = tl_now();
    unsigned long long tl_first = 0;
    const CtaWork& work = sync.work[buffer];
    if (!work.live) {
      if (threadIdx.x == 0) tl_record(0xffff, 0, tl_wait, tl_ready, 0, tl_now());
      return;
    }''')
sub('''        mbarrier_wait(full + stage * 8, (ring / kStages) & 1);
        fence_async_shared();
        attend(stages + stage * 2 * Smem::kTileBytes, span.first_pos + j * Smem::kTile);''', '''        mbarrier_wait(full + stage * 8, (ring / kStages) & 1);
        if (j == 0) tl_first = tl_now();
        fence_async_shared();
        attend(stages + stage * 2 * Smem::kTileBytes, span.first_pos + j * Smem::kTile);''')
sub('''      rows.template store_through<T, kStages>(p, work, q_tile, warp, lane);
    }
    __syncwarp();
    if (lane == 0) mbarrier_arrive(q_free + buffer * 8);''', '''      rows.template store_through<T, kStages>(p, work, q_tile, warp, lane);
    }
    if (threadIdx.x == 0) tl_record(static_cast<unsigned long long>(work.rows) | (static_cast<unsigned long long>(span.tiles) << 16) | (static_cast<unsigned long long>(work.first_head) << 32),
                                    static_cast<unsigned long long>(work.q_start + work.q_first), tl_wait, tl_ready, tl_first, tl_now());
    __syncwarp();
    if (lane == 0) mbarrier_arrive(q_free + buffer * 8);''')
p.write_text(s)
