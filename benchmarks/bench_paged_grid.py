"""Paged-attention decode over a grid of shapes: xlacc's kernel, JAX's Pallas GPU kernel, the jnp reference.

On a machine with an NVIDIA GPU and jax with CUDA, after building the template's project
(`bench_paged_attention.py --build-only --arch sm_90 --workdir DIR`, or drop --prebuilt to build here):

    PYTHONPATH=. python3 benchmarks/bench_paged_grid.py --workdir DIR --prebuilt --dtypes bf16,f16 --out grid.json
    python3 benchmarks/bench_paged_grid.py --markdown grid.json      # the table of benchmarks/RESULTS.md

Every point (sequences x context x GQA x dtype at head 128, plus head 64 and 256 at one shape) is
timed three ways in this one process:

  xlacc   the paged-attention template's custom call (split-KV chosen from the shape)
  pallas  jax.experimental.pallas.ops.gpu.paged_attention, the best of its k_splits x
          pages_per_compute_block candidates at this point, searched in this run; it reads its own
          page layout [kv_heads, pages, page_size, head_size] and takes no scale (q is pre-scaled)
  jnp     the template's reference under jax.jit (left out where XLA's buffers would not fit)

Each time is one call of a chain of R dependent calls in one jit (each output is the next
query), queued back to back, so neither host dispatch nor launch gaps between jit calls are
timed; R grows until a chain lasts about 0.3 ms. Everything is compiled (in threads) before
anything is timed. At each point the contenders take turns: each is warmed up, then in each of
--rounds rounds every one is timed (median of --samples samples), the first one changing from
round to round, and the median round is kept; Pallas's candidates are searched the same way
first. A sample queues chains for --sample-ms: each sample starts on an idle GPU and pays a
fixed cost the calls do not (3 ms samples timed the same chains 2-34% slower than 12 ms ones at
the 64 MiB points). KV bytes read per second are compared with a
device-to-device copy measured in the same process (bytes read + written). Points whose caches do
not fit in GPU memory are skipped and listed. The JSON is rewritten after every point.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.94")  # the largest points need most of the GPU

import argparse
import functools
import json
import math
import statistics
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_paged_attention as base  # noqa: E402

BLOCK_SIZE = 16
GOAL_VS_PALLAS, GOAL_COPY_SHARE, GOAL_MIN_BYTES = 1.0, 0.75, 64 << 20
CHAIN_MICROSECONDS = 300.0  # a chain of R calls lasts about this long
SAMPLE_SECONDS = 0.012  # each sample queues chains for about this long (--sample-ms)
ITEMSIZE = {"bf16": 2, "f16": 2, "f32": 4}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True, help="where the paged-attention project is (or is built)")
    parser.add_argument("--prebuilt", action="store_true", help="use the library bench_paged_attention.py --build-only left in --workdir")
    parser.add_argument("--out", type=Path, help="JSON file for every figure")
    parser.add_argument("--seqs", default="1,4,16,64,256")
    parser.add_argument("--contexts", default="512,2048,8192,32768")
    parser.add_argument("--kv-heads", default="8,4", help="kv heads for --num-heads query heads (32: GQA 4:1 and 8:1)")
    parser.add_argument("--num-heads", type=int, default=32)
    parser.add_argument("--dtypes", default="bf16,f16")
    parser.add_argument("--head-size", type=int, default=128)
    parser.add_argument("--other-head-sizes", default="64,256", help="also time these head sizes at --other-shape")
    parser.add_argument("--other-shape", default="16x8192", help="SEQSxCONTEXT of the other head sizes (GQA of the first --kv-heads)")
    parser.add_argument("--pallas-blocks", default="4,8,16", help="pages_per_compute_block candidates")
    parser.add_argument("--pallas-k-window", type=int, default=3, help="k_splits candidates around the one that fills the SMs")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--sample-ms", type=float, default=SAMPLE_SECONDS * 1e3, help="how long each sample queues chains")
    parser.add_argument("--budget", type=float, default=540.0, help="seconds; points left when it runs out are listed as not run")
    parser.add_argument("--compile-threads", type=int, default=16)
    parser.add_argument("--variant", default="", help="time this --variants build of bench_paged_attention.py instead of the default one")
    parser.add_argument("--only-xlacc", action="store_true", help="time xlacc alone (for comparing builds)")
    parser.add_argument("--builds", default="", help="also time these --variants builds of bench_paged_attention.py (LABEL,...), "
                        "in turns with the others: figures of separate processes drift more than builds differ")
    parser.add_argument("--rounds", type=int, default=5, help="rounds in which the contenders of a point take turns")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Point:
    num_seqs: int
    context: int
    num_kv_heads: int
    dtype: str
    head_size: int
    num_heads: int

    @property
    def pages(self) -> int:  # pages (blocks) per sequence
        return self.context // BLOCK_SIZE

    @property
    def kv_bytes(self) -> int:
        """Bytes of K and V the decode step reads."""
        return 2 * self.num_seqs * self.context * self.num_kv_heads * self.head_size * ITEMSIZE[self.dtype]

    @property
    def label(self) -> str:
        return f"{self.num_seqs:>3} x {self.context:>5} GQA {self.num_heads // self.num_kv_heads}:1 {self.dtype} head {self.head_size}"

    @property
    def chain(self) -> int:
        """Calls per chain: enough for about CHAIN_MICROSECONDS at roughly copy speed plus launch."""
        estimate_us = self.kv_bytes / 2.4e12 * 1e6 + 4.0
        return int(min(32, max(1, math.ceil(CHAIN_MICROSECONDS / estimate_us))))


def grid_points(args) -> list[Point]:
    ints = lambda text: [int(v) for v in text.split(",") if v.strip()]  # noqa: E731
    points = [
        Point(seqs, context, kv, dtype, args.head_size, args.num_heads)
        for dtype in args.dtypes.split(",")
        for kv in ints(args.kv_heads)
        for seqs in ints(args.seqs)
        for context in ints(args.contexts)
    ]
    seqs, context = (int(v) for v in args.other_shape.split("x"))
    points += [Point(seqs, context, ints(args.kv_heads)[0], dtype, head, args.num_heads) for dtype in args.dtypes.split(",") for head in ints(args.other_head_sizes)]
    return points


def pallas_configs(point: Point, sms: int, blocks: list[int], window: int) -> list[tuple[int, int]]:
    """(k_splits, pages_per_compute_block) candidates: the k_splits that first gives every SM a
    program (grid = sequences x kv heads x k_splits), its neighbours, each with every block size
    (Pallas needs pages % k_splits == 0; a block larger than a split is the split)."""
    splits = [k for k in (1, 2, 4, 8, 16, 32, 64, 128) if point.pages % k == 0]
    filling = next((i for i, k in enumerate(splits) if point.num_seqs * point.num_kv_heads * k >= sms), len(splits) - 1)
    low = max(0, filling - window // 2)
    chosen = splits[low : low + window]
    return sorted({(k, min(b, point.pages // k)) for k in chosen for b in blocks})


# -- the three implementations, as chains of dependent calls ------------------------------------


def chained(op, length: int):
    def run(query, *rest):
        for _ in range(length):
            query = op(query, *rest)
        return query

    return run


def operand_shapes(point: Point, layout: str):
    import jax

    dtype = _jnp_dtype(point.dtype)
    blocks = point.num_seqs * point.pages
    cache = (blocks, BLOCK_SIZE, point.num_kv_heads, point.head_size) if layout == "xlacc" else (point.num_kv_heads, blocks, BLOCK_SIZE, point.head_size)
    return [
        jax.ShapeDtypeStruct((point.num_seqs, point.num_heads, point.head_size), dtype),
        jax.ShapeDtypeStruct(cache, dtype),
        jax.ShapeDtypeStruct(cache, dtype),
        jax.ShapeDtypeStruct((point.num_seqs, point.pages), np.int32),
        jax.ShapeDtypeStruct((point.num_seqs,), np.int32),
    ]


def _jnp_dtype(name: str):
    import jax.numpy as jnp

    return {"bf16": jnp.bfloat16, "f16": jnp.float16, "f32": jnp.float32}[name]


def compile_chain(op, point: Point, layout: str):
    import jax

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jax.jit(chained(op, point.chain)).lower(*operand_shapes(point, layout)).compile()


def time_chain(compiled, args: list, point: Point, samples: int) -> float:
    """Median seconds per call: each sample queues whole chains for about SAMPLE_SECONDS."""
    return base.seconds_per_call(compiled, args, samples, base.calls_lasting(compiled, args, SAMPLE_SECONDS, 200)) / point.chain


# -- one point ----------------------------------------------------------------------------------


def free_bytes() -> int:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return int(stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0))


def random_array(key, shape: tuple[int, ...], dtype, axis: int):
    """Normal random values; above 2**30 elements, random blocks along `axis` repeated (the
    generator counts in 32 bits)."""
    import jax
    import jax.numpy as jnp

    limit = 1 << 30
    if math.prod(shape) <= limit:
        return jax.random.normal(key, shape, dtype)
    per_block = math.prod(shape) // shape[axis]
    small = jax.random.normal(key, (*shape[:axis], max(1, limit // per_block), *shape[axis + 1 :]), dtype)
    return jnp.take(small, jnp.arange(shape[axis]) % small.shape[axis], axis=axis)


def random_operands(point: Point, layout: str, seed: int = 0) -> list:
    """Random queries and caches, every sequence `context` tokens long over randomly placed blocks."""
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.key(seed), 4)
    shapes = operand_shapes(point, layout)
    blocks = point.num_seqs * point.pages
    tables = jax.random.permutation(keys[3], blocks).astype(jnp.int32).reshape(point.num_seqs, point.pages)
    lens = jnp.full((point.num_seqs,), point.context, jnp.int32)
    block_axis = 0 if layout == "xlacc" else 1
    query = jax.random.normal(keys[0], shapes[0].shape, shapes[0].dtype)
    caches = [random_array(k, s.shape, s.dtype, block_axis) for k, s in zip(keys[1:3], shapes[1:3])]
    return [query, *caches, tables, lens]


def interleaved(contenders: dict, point: Point, samples: int, rounds: int) -> dict[str, float]:
    """Microseconds per call of each contender ((executable, operands) by label): each is warmed
    up, then every round times each once, starting one later each round, and the median round
    counts. A contender timed first after a pause ran on a GPU still raising its clocks: timed
    alone, one after another, whoever went first lost up to 40% at the small points."""
    labels = list(contenders)
    for exe, args in contenders.values():
        time_chain(exe, args, point, 1)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for turn in range(rounds):
        for label in labels[turn % len(labels) :] + labels[: turn % len(labels)]:
            exe, args = contenders[label]
            times[label].append(time_chain(exe, args, point, samples) * 1e6)
    return {label: statistics.median(values) for label, values in times.items()}


def measure_point(point: Point, compiled: dict, copy_gbps: float, samples: int, rounds: int) -> dict:
    """xlacc (and --builds) and jnp on the xlacc layout, Pallas's best candidate on its own layout,
    timed in turns (see interleaved); where the caches fit only once, Pallas is timed after."""
    import jax

    row: dict = {**asdict(point), "kv_bytes": point.kv_bytes, "chain": point.chain}
    if point.kv_bytes > 0.9 * free_bytes():
        return row | {"skipped": f"the caches ({point.kv_bytes / 1e9:.1f} GB) do not fit in the {free_bytes() / 1e9:.1f} GB free"}
    operands = random_operands(point, "xlacc")
    contenders = {"xlacc": (compiled["xlacc"], operands), **{f"build {label}": (exe, operands) for label, exe in compiled["builds"].items()}}
    if "jnp" in compiled:
        jnp_exe, jnp_temp = compiled["jnp"]
        if jnp_temp > 0.9 * free_bytes():
            row["jnp_skipped"] = f"XLA's temporaries ({jnp_temp / 1e9:.1f} GB) do not fit"
        else:
            contenders["jnp"] = (jnp_exe, operands)
    if "pallas" not in compiled:  # --only-xlacc
        return row | figures(interleaved(contenders, point, samples, rounds), point, copy_gbps)
    # Pallas reads the same data transposed where there is room for both layouts (and the outputs
    # are compared); otherwise a random cache of its own layout, timed once ours are gone.
    check = point.kv_bytes < 0.85 * free_bytes()
    if check and "jnp" in contenders and jnp_temp + point.kv_bytes > 0.85 * free_bytes():  # not beside Pallas's layout
        row["jnp_us"] = interleaved({"xlacc": contenders["xlacc"], "jnp": contenders.pop("jnp")}, point, samples, rounds)["jnp"]
    if check:
        ours = compiled["xlacc_once"](*operands)
        scale = 1.0 / math.sqrt(point.head_size)
        to_pages = jax.jit(lambda c: c.transpose(2, 0, 1, 3))
        pallas_operands = [operands[0] * scale, to_pages(operands[1]), to_pages(operands[2]), operands[3], operands[4]]
    else:
        row |= figures(interleaved(contenders, point, samples, rounds), point, copy_gbps)
        contenders = {}
        del operands
        pallas_operands = random_operands(point, "pallas")
    if compiled["pallas_refused"]:
        row["pallas_refused"] = compiled["pallas_refused"]
    candidates = interleaved({config: (exe, pallas_operands) for config, exe in compiled["pallas"].items()}, point, samples, 1)
    best = min(candidates, key=candidates.get)
    row.update(pallas_config={"k_splits": best[0], "pages_per_compute_block": best[1]},
               pallas_candidates={f"{k}x{b}": us for (k, b), us in candidates.items()})  # fmt: skip
    contenders["pallas"] = (compiled["pallas"][best], pallas_operands)
    row |= figures(interleaved(contenders, point, samples, rounds), point, copy_gbps)
    if check:
        theirs = compiled["pallas_once"][best](*pallas_operands)
        row["max_abs_diff_vs_pallas"] = float(jax.numpy.max(jax.numpy.abs(ours.astype(np.float32) - theirs.astype(np.float32))))
    row.update(vs_pallas=row["pallas_us"] / row["xlacc_us"], pallas_copy_share=point.kv_bytes / (row["pallas_us"] * 1e-6) / 1e9 / copy_gbps)
    if "jnp_us" in row:
        row["vs_jnp"] = row["jnp_us"] / row["xlacc_us"]
    return row


def figures(times: dict[str, float], point: Point, copy_gbps: float) -> dict:
    """The row's fields for timed contenders: us per call, and xlacc's KV bytes per second."""
    row = {f"{label}_us": us for label, us in times.items() if not label.startswith("build ")}
    builds = {label.removeprefix("build "): us for label, us in times.items() if label.startswith("build ")}
    if builds:
        row["builds_us"] = {"default": times["xlacc"], **builds}
    if "xlacc" in times:
        row["xlacc_gbps"] = point.kv_bytes / (times["xlacc"] * 1e-6) / 1e9
        row["xlacc_copy_share"] = row["xlacc_gbps"] / copy_gbps
    return row


def compile_point(point: Point, xlacc_op, reference, pallas, args, sms: int, builds: dict) -> dict:
    """Every executable a point needs, compiled ahead (in a worker thread while earlier points run)."""
    import jax
    import jax.numpy as jnp

    scale = 1.0 / math.sqrt(point.head_size)
    ours = functools.partial(xlacc_op, scale=scale)
    compiled_builds = {label: compile_chain(functools.partial(call, scale=scale), point, "xlacc") for label, call in builds.items()}
    if args.only_xlacc:
        return {"xlacc": compile_chain(ours, point, "xlacc"), "builds": compiled_builds}
    jnp_exe = compile_chain(functools.partial(reference.reference, scale=scale, xp=jnp), point, "xlacc")
    analysis = jnp_exe.memory_analysis()
    configs = pallas_configs(point, sms, [int(b) for b in args.pallas_blocks.split(",")], args.pallas_k_window)
    candidates = {c: functools.partial(pallas, k_splits=c[0], pages_per_compute_block=c[1]) for c in configs}
    pallas_exes, refused = {}, {}
    for config, op in candidates.items():
        try:
            pallas_exes[config] = compile_chain(op, point, "pallas")
        except Exception as exc:  # a config Pallas cannot compile for this shape (shared memory)
            refused[f"{config[0]}x{config[1]}"] = str(exc).splitlines()[0][:160]
    return {
        "xlacc": compile_chain(ours, point, "xlacc"),
        "xlacc_once": jax.jit(ours),
        "jnp": (jnp_exe, int(getattr(analysis, "temp_size_in_bytes", 0) or 0)),
        "pallas": pallas_exes,
        "pallas_refused": refused,
        "pallas_once": {c: jax.jit(candidates[c]) for c in pallas_exes},
        "builds": compiled_builds,
    }


def compile_or_error(point: Point, *args) -> dict | str:
    try:
        return compile_point(point, *args)
    except Exception as exc:
        return f"failed to compile: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


# -- report -------------------------------------------------------------------------------------


def summary_line(row: dict) -> str:
    point = Point(**{k: row[k] for k in ("num_seqs", "context", "num_kv_heads", "dtype", "head_size", "num_heads")})
    if "skipped" in row or "not_run" in row:
        return f"{point.label}: {row.get('skipped') or row.get('not_run')}"
    builds = "  " + " ".join(f"{label} {us:.1f}" for label, us in row["builds_us"].items()) if "builds_us" in row else ""
    if "pallas_us" not in row:
        return f"{point.label} {row['kv_bytes'] / 2**20:9.1f} MiB  xlacc {row['xlacc_us']:9.1f} us {100 * row['xlacc_copy_share']:5.1f}%{builds}"
    config = row["pallas_config"]
    jnp_text = f"{row['jnp_us']:9.1f}" if "jnp_us" in row else "        -"
    return (f"{point.label} {row['kv_bytes'] / 2**20:9.1f} MiB  xlacc {row['xlacc_us']:9.1f} us {100 * row['xlacc_copy_share']:5.1f}%  "
            f"pallas {row['pallas_us']:9.1f} ({config['k_splits']:>3}x{config['pages_per_compute_block']:<2})  jnp {jnp_text}  "
            f"{row['vs_pallas']:5.2f}x pallas{builds}")  # fmt: skip


def goals(rows: list[dict]) -> dict:
    timed = [r for r in rows if "pallas_us" in r]
    slower = [r for r in timed if r["vs_pallas"] < GOAL_VS_PALLAS]
    large = [r for r in rows if "xlacc_us" in r and r["kv_bytes"] >= GOAL_MIN_BYTES]
    below = [r for r in large if r["xlacc_copy_share"] < GOAL_COPY_SHARE]
    return {
        "points": len(rows), "timed": len(timed),
        "min_vs_pallas": min((r["vs_pallas"] for r in timed), default=None),
        "below_pallas": [summary_line(r) for r in slower],
        "large_points": len(large), "min_copy_share_large": min((r["xlacc_copy_share"] for r in large), default=None),
        "below_copy_share": [summary_line(r) for r in below],
        "not_timed": [summary_line(r) for r in rows if "xlacc_us" not in r],
    }  # fmt: skip


def markdown(report: dict) -> str:
    """The grid as a Markdown table, one row per point, in the order of the JSON (by KV bytes)."""
    lines = ["| sequences x context | GQA | dtype | head | KV MiB | xlacc us | % of copy | Pallas us (k_splits x pages) | jnp us | xlacc vs Pallas | xlacc vs jnp |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in report["rows"]:
        shape = f"{row['num_seqs']} x {row['context']} | {row['num_heads'] // row['num_kv_heads']}:1 | {row['dtype']} | {row['head_size']} | {row['kv_bytes'] / 2**20:.0f}"
        if "pallas_us" not in row:
            lines.append(f"| {shape} | {row.get('skipped') or row.get('not_run') or 'xlacc only'} | | | | | |")
            continue
        config = row["pallas_config"]
        jnp_us, vs_jnp = (f"{row['jnp_us']:.1f}", f"{row['vs_jnp']:.2f}x") if "jnp_us" in row else (row.get("jnp_skipped", "-"), "-")
        mark = "" if row["vs_pallas"] >= GOAL_VS_PALLAS else " (below)"
        share = f"{100 * row['xlacc_copy_share']:.1f}%" + (" (below)" if row["kv_bytes"] >= GOAL_MIN_BYTES and row["xlacc_copy_share"] < GOAL_COPY_SHARE else "")
        lines.append(f"| {shape} | {row['xlacc_us']:.1f} | {share} | {row['pallas_us']:.1f} ({config['k_splits']} x {config['pages_per_compute_block']}) "
                     f"| {jnp_us} | {row['vs_pallas']:.2f}x{mark} | {vs_jnp} |")  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--markdown":  # render a saved run, no GPU needed
        print(markdown(json.loads(Path(sys.argv[2]).read_text())))
        return 0
    args = parse_args(argv)
    global SAMPLE_SECONDS
    SAMPLE_SECONDS = args.sample_ms / 1e3
    started = time.perf_counter()
    import jax
    from jax.experimental.pallas.ops.gpu import paged_attention as pallas_module

    project = args.workdir / base.NAME
    if args.variant:  # the generated package loads the library this variable names
        os.environ[f"{base.NAME.upper()}_LIBRARY"] = str(project / "build" / f"lib{base.NAME}_{args.variant}.so")
    if not args.prebuilt:
        base.render(project)
        base.build(project, base.gpu_arch(), {})
    reference = base.load_module(project, "reference")
    ops = base.load_module(project, "jax")
    ops.register()
    xlacc_op = getattr(ops, base.NAME)
    sms = int(getattr(jax.devices()[0], "core_count", 0) or 132)
    labels = [label for label in args.builds.split(",") if label.strip()]
    scratch = base.scratch_shape(project)
    builds = {label: base.register(project / "build" / f"lib{base.NAME}_{label}.so", f"{base.NAME}_{label}", f"xlacc_{base.NAME}_ffi", scratch) for label in labels}
    copy = base.copy_gbps(10, 5)  # before anything else takes GPU memory
    copy_limit = max(copy.values())
    report = {"environment": base.environment(), "command": " ".join(sys.argv), "copy_gbps": copy, "sms": sms, "rows": []}
    print(json.dumps(report["environment"]), f"\ncopy {copy_limit:.0f} GB/s ({copy}); {sms} SMs", flush=True)

    points = sorted(grid_points(args), key=lambda p: p.kv_bytes)
    # Everything compiles first, in threads: compiling while timing would slow the host's dispatch.
    with ThreadPoolExecutor(max_workers=args.compile_threads) as pool:
        compiled = list(pool.map(lambda p: compile_or_error(p, xlacc_op, reference, pallas_module.paged_attention, args, sms, builds), points))
    print(f"[{time.perf_counter() - started:6.1f} s] compiled {len(points)} points", flush=True)
    for point, executables in zip(points, compiled):
        if time.perf_counter() - started > args.budget:
            row = {**asdict(point), "kv_bytes": point.kv_bytes, "not_run": "not run: the time budget ran out"}
        elif isinstance(executables, str):
            row = {**asdict(point), "kv_bytes": point.kv_bytes, "skipped": executables}
        else:
            try:
                row = measure_point(point, executables, copy_limit, args.samples, args.rounds)
            except Exception as exc:  # an out-of-memory point is reported, the grid goes on
                row = {**asdict(point), "kv_bytes": point.kv_bytes, "skipped": f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
        report["rows"].append(row)
        print(f"[{time.perf_counter() - started:6.1f} s] {summary_line(row)}", flush=True)
        if args.out:
            args.out.write_text(json.dumps(report | {"goals": goals(report["rows"])}, indent=1))
    report["goals"] = goals(report["rows"])
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["goals"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
