"""One call of the instrumented ragged op per point; the prefill kernel's per-item timeline saved."""
import ctypes, json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, "benchmarks")
import bench_ragged as br
import bench_paged_attention as base
import jax
import jax.numpy as jnp

project = Path(sys.argv[1]); out = Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
module = base.load_module(project, "jax", name="ragged_op"); module.register(); op = module.ragged_op
lib = ctypes.CDLL(str(project / "ragged_op" / "libragged_op.so"))
points = {
    "mixed": br.Point("mixed", "mixed", (1,) * 60 + (512,) * 4, (2048,) * 64),
    "prefill_part": br.Point("part", "prefill part", (512,) * 4, (2048,) * 4),
    "decode_part": br.Point("part", "decode part", (1,) * 60, (2048,) * 60),
    "prefill_8x2048": br.Point("prefill", "8x2048", (2048,) * 8, (2048,) * 8),
}
summary = {}
for name, point in points.items():
    arrays = br.operands(point)
    query = arrays["query"]
    if name == "decode_part":  # 64 padding tokens: the shape has room for prefill, so the prefill kernel serves the decode items
        query = jnp.concatenate([query, jnp.zeros((64,) + query.shape[1:], query.dtype)])
    paged = {k: arrays[k] for k in ("key_cache", "value_cache", "cu_q_lens", "q_lens", "kv_lens", "tables", "num_seqs")}
    step = jax.jit(lambda q, a: br.xlacc_call(op, q, a))
    for _ in range(3):
        jax.block_until_ready(step(query, paged))
    seconds = base.seconds_per_call(step, [query, paged], 5, 20)
    records = []
    for _ in range(3):
        assert lib.xlacc_tl_reset() == 0
        jax.block_until_ready(step(query, paged))
        host = np.zeros((16384, 8), np.uint64); count = ctypes.c_uint(0)
        assert lib.xlacc_tl_read(host.ctypes.data_as(ctypes.POINTER(ctypes.c_ulonglong)), ctypes.byref(count)) == 0
        records.append(host[: min(count.value, 16384)].copy())
    np.savez(out / f"{name}.npz", *records)
    tl = records[-1]
    span = (int(tl[:, 7].max()) - int(tl[:, 4].min())) / 1e3 if len(tl) else 0
    summary[name] = {"us_per_call": seconds * 1e6, "records": int(len(tl)), "timeline_span_us": span}
    print(name, summary[name], flush=True)
    del arrays, paged, query
(out / "summary.json").write_text(json.dumps(summary, indent=1))
