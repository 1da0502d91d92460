import sys
from pathlib import Path
p = Path(sys.argv[1]); s = p.read_text()
def sub(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)
sub('''        if (ring >= kStages) mbarrier_wait(empty + stage * 8, (ring / kStages - 1) & 1);
        load_kv_tile<T, kHeadSize, kStages>(copier, span, j, stages + stage * 2 * Smem::kTileBytes);
        cp_async_arrive(full + stage * 8);''', '''        const unsigned long long tl_a = tl_now();
        if (ring >= kStages) mbarrier_wait(empty + stage * 8, (ring / kStages - 1) & 1);
        const unsigned long long tl_b = tl_now();
        load_kv_tile<T, kHeadSize, kStages>(copier, span, j, stages + stage * 2 * Smem::kTileBytes);
        cp_async_arrive(full + stage * 8);
        if (blockIdx.x < 8 && thread == 0) tl_record(0xfffe, static_cast<unsigned long long>(ring) | (static_cast<unsigned long long>(work.rows) << 32), tl_a, tl_b, tl_now(), 0);''')
sub('''        mbarrier_wait(full + stage * 8, (ring / kStages) & 1);
        if (j == 0) tl_first = tl_now();
        fence_async_shared();
        attend(stages + stage * 2 * Smem::kTileBytes, span.first_pos + j * Smem::kTile);
        __syncwarp();''', '''        const unsigned long long tl_a = tl_now();
        mbarrier_wait(full + stage * 8, (ring / kStages) & 1);
        const unsigned long long tl_b = tl_now();
        if (j == 0) tl_first = tl_b;
        fence_async_shared();
        attend(stages + stage * 2 * Smem::kTileBytes, span.first_pos + j * Smem::kTile);
        __syncwarp();
        if (blockIdx.x < 8 && threadIdx.x == 0) tl_record(0xfffd, static_cast<unsigned long long>(ring) | (static_cast<unsigned long long>(work.rows) << 32), tl_a, tl_b, tl_now(), 0);''')
p.write_text(s)
