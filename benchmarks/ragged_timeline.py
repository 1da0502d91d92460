"""Where the ragged op's persistent prefill kernel spends its time, item by item: a timeline of
every item its product warps serve (the SM, the rows, the wait for the item's rows, the first tile,
the end; %globaltimer), from a build of the op instrumented for it.

On a CPU machine (nvcc), from the repository root, with DIR a build made by
`bench_ragged.py --build-only --arch sm_90a --workdir DIR`:

    python3 benchmarks/ragged_timeline.py instrument DIR [ARCH]   # patches DIR/ragged/kernel.cu, rebuilds (sm_90a)

then on the GPU machine:

    python3 benchmarks/ragged_timeline.py run DIR OUT              # OUT/POINT.npz, OUT/summary.json, the table

The instrumentation is one atomic and one 64-byte record per item from one thread, off the copy
loop: the mixed batch ran 219-223 us a call instrumented against 224 uninstrumented (H200).
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

import bench_paged_attention as base
import bench_ragged

RECORDS = 16384
END = 0xFFFF  # the rows of a CTA's last record: its product warps found no more items
# The points: the mixed batch and its two parts, the decode part given padding tokens so that the
# prefill kernel serves its items (a decode-shaped call goes to the 64-row kernel), and a large prefill.
POINTS = {
    "mixed": ((1,) * 60 + (512,) * 4, (2048,) * 64, 0),
    "prefill_part": ((512,) * 4, (2048,) * 4, 0),
    "decode_part": ((1,) * 60, (2048,) * 60, 64),
    "prefill_8x2048": ((2048,) * 8, (2048,) * 8, 0),
}

DEVICE_CODE = r"""
#define XLACC_TL_RECORDS @RECORDS@
__device__ unsigned long long xlacc_tl[8 * XLACC_TL_RECORDS];
__device__ unsigned int xlacc_tl_count;
__device__ __forceinline__ unsigned long long tl_now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ void tl_record(unsigned long long what, unsigned long long token, unsigned long long wait, unsigned long long ready,
                                          unsigned long long first, unsigned long long end) {
  const unsigned i = atomicAdd(&xlacc_tl_count, 1u);
  if (i >= XLACC_TL_RECORDS) return;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  unsigned long long* r = xlacc_tl + 8ull * i;
  r[0] = sm, r[1] = blockIdx.x, r[2] = what, r[3] = token, r[4] = wait, r[5] = ready, r[6] = first, r[7] = end;
}
extern "C" __attribute__((visibility("default"))) int xlacc_tl_read(unsigned long long* host, unsigned* count) {
  cudaDeviceSynchronize();
  if (cudaMemcpyFromSymbol(count, xlacc_tl_count, sizeof(unsigned)) != cudaSuccess) return 1;
  const unsigned n = *count < XLACC_TL_RECORDS ? *count : XLACC_TL_RECORDS;
  return cudaMemcpyFromSymbol(host, xlacc_tl, n * 8ull * sizeof(unsigned long long)) != cudaSuccess ? 2 : 0;
}
extern "C" __attribute__((visibility("default"))) int xlacc_tl_reset() {
  cudaDeviceSynchronize();
  const unsigned zero = 0;
  return cudaMemcpyToSymbol(xlacc_tl_count, &zero, sizeof(unsigned)) != cudaSuccess ? 1 : 0;
}
""".replace("@RECORDS@", str(RECORDS))

# (what the rendered kernel holds, what it becomes): each must match exactly once.
EDITS = [
    ("\nnamespace {\n", DEVICE_CODE + "\nnamespace {\n"),
    ("""    mbarrier_wait(q_ready + buffer * 8, (item / kQBuffers) & 1);
    const CtaWork& work = sync.work[buffer];
    if (!work.live) return;""",
     """    const unsigned long long tl_wait = tl_now();
    mbarrier_wait(q_ready + buffer * 8, (item / kQBuffers) & 1);
    const unsigned long long tl_ready = tl_now();
    unsigned long long tl_first = 0;
    const CtaWork& work = sync.work[buffer];
    if (!work.live) {
      if (threadIdx.x == 0) tl_record(0xffff, 0, tl_wait, tl_ready, 0, tl_now());
      return;
    }"""),
    ("""        mbarrier_wait(full + stage * 8, (ring / kStages) & 1);
        fence_async_shared();""",
     """        mbarrier_wait(full + stage * 8, (ring / kStages) & 1);
        if (j == 0) tl_first = tl_now();
        fence_async_shared();"""),
    ("""      rows.template store_through<T, kStages>(p, work, q_tile, warp, lane);
    }
    __syncwarp();""",
     """      rows.template store_through<T, kStages>(p, work, q_tile, warp, lane);
    }
    if (threadIdx.x == 0) {
      tl_record(static_cast<unsigned long long>(work.rows) | static_cast<unsigned long long>(span.tiles) << 16, static_cast<unsigned long long>(work.q_start + work.q_first),
                tl_wait, tl_ready, tl_first, tl_now());
    }
    __syncwarp();"""),
]


def instrument(build: Path, arch: str) -> int:
    project = build / bench_ragged.NAME
    kernel = project / "kernel.cu"
    text = kernel.read_text()
    for old, new in EDITS:
        if text.count(old) != 1:
            print(f"ragged_timeline: {kernel} does not hold this once (a kernel changed since the tool was written):\n{old}", file=sys.stderr)
            return 1
        text = text.replace(old, new)
    kernel.write_text(text)
    library = project / bench_ragged.NAME / f"lib{bench_ragged.NAME}.so"
    built = subprocess.run(base.nvcc_command(project, library, arch, {}, name=bench_ragged.NAME), capture_output=True, text=True, check=False)
    if built.returncode != 0:
        print(f"ragged_timeline: nvcc failed:\n{(built.stdout + built.stderr)[-3000:]}", file=sys.stderr)
    return built.returncode


def record_one_call(step, args, library):
    import jax
    import numpy as np

    assert library.xlacc_tl_reset() == 0
    jax.block_until_ready(step(*args))
    host, count = np.zeros((RECORDS, 8), np.uint64), ctypes.c_uint(0)
    assert library.xlacc_tl_read(host.ctypes.data_as(ctypes.POINTER(ctypes.c_ulonglong)), ctypes.byref(count)) == 0
    return host[: min(count.value, RECORDS)].astype(np.int64)


def summary(timeline) -> dict:
    """Per kind of item (few: at most 8 rows, a decoding token's; full: more): count, mean time
    from its rows' hand-over to its end, per 128-position tile, the waits; and the CTAs' spans."""
    import numpy as np

    start = timeline[:, 4].min()
    items = timeline[(timeline[:, 2] & 0xFFFF) != END]
    rows, tiles = items[:, 2] & 0xFFFF, (items[:, 2] >> 16) & 0xFFFF
    served = (items[:, 7] - items[:, 5]) / 1e3
    out = {"span_us": float((timeline[:, 7].max() - start) / 1e3), "ctas": int(len(timeline) - len(items))}
    for kind, mask in (("few", rows <= 8), ("full", rows > 8)):
        if mask.any():
            out[kind] = {"items": int(mask.sum()), "tiles": float(tiles[mask].mean()), "us": float(served[mask].mean()),
                         "us_per_tile": float((served[mask] / np.maximum(tiles[mask], 1)).mean()),
                         "wait_for_rows_us": float(((items[mask, 5] - items[mask, 4]) / 1e3).mean()),
                         "to_first_tile_us": float(((items[mask, 6] - items[mask, 5]) / 1e3).mean())}  # fmt: skip
    return out


def run(build: Path, out: Path) -> int:
    import jax
    import jax.numpy as jnp
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    module = base.load_module(build / bench_ragged.NAME, "jax", name=bench_ragged.NAME)
    module.register()
    op = getattr(module, bench_ragged.NAME)
    library = ctypes.CDLL(str(build / bench_ragged.NAME / bench_ragged.NAME / f"lib{bench_ragged.NAME}.so"))
    if not hasattr(library, "xlacc_tl_read"):
        print(f"ragged_timeline: {build} is not instrumented: run `ragged_timeline.py instrument {build}` first", file=sys.stderr)
        return 2
    found = {}
    for name, (q_lens, kv_lens, padding) in POINTS.items():
        arrays = bench_ragged.operands(bench_ragged.Point("part", name, q_lens, kv_lens))
        query = arrays.pop("query")
        if padding:
            query = jnp.concatenate([query, jnp.zeros((padding, *query.shape[1:]), query.dtype)])
        step = jax.jit(lambda q, a: bench_ragged.xlacc_call(op, q, a))
        for _ in range(3):
            jax.block_until_ready(step(query, arrays))
        timelines = [record_one_call(step, (query, arrays), library) for _ in range(3)]
        np.savez(out / f"{name}.npz", *timelines)
        found[name] = {"us_per_call": base.seconds_per_call(step, [query, arrays], 5, 20) * 1e6, **summary(timelines[-1])}
        print(name, json.dumps(found[name]), flush=True)
    (out / "summary.json").write_text(json.dumps(found, indent=1))
    return 0


def main(args: list[str]) -> int:
    if len(args) in (2, 3) and args[0] == "instrument":
        return instrument(Path(args[1]), args[2] if len(args) == 3 else "sm_90a")
    if len(args) == 3 and args[0] == "run":
        return run(Path(args[1]), Path(args[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
