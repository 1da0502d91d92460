"""Where a decode step of the model path spends its GPU time: kernels by kind, from jax's profiler.

    python3 benchmarks/profile_model.py --tp 4 --batch 256                  # tensor parallel over 4 GPUs
    python3 benchmarks/profile_model.py --tp 4 --batch 256 --tp 1           # ... and one GPU beside it
    python3 benchmarks/profile_model.py --tp 4 --xla-options '[null, {"xla_gpu_enable_latency_hiding_scheduler": true}]'

The model is bench_model.py's (its "gpu" preset: 8 Llama layers, bf16), served by the Engine of a
paged-attention project with a paged-kv-write project's write (--workdir: bench_model.py builds
them). For each device count, steps per call and XLA option set (a set replaces the Engine's
defaults): the decode step's time on the host's clock (--calls calls queued back to back, as
generate() runs them, and the host's time to queue one), then two traced calls: per step, the GPU
time of device 0's kernels by kind (GEMM, all-reduce, the attention op, the KV write, XLA's
fusions, copies) and of its busiest kernels, the time no kernel ran on that device ("idle"), what
each idle stretch waited for and what the host ran during the longest; and what the compiled
decode call holds (its all-reduces and all-gathers, and any copy of a layer's whole cache). Every run is one table on
stdout (and one JSON line in --out).
"""

from __future__ import annotations

import argparse
import collections
import glob
import itertools
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

import bench_model

TRACED_CALLS = 2  # queued back to back, so the trace shows what lies between two calls too

# a kernel's kind, by its name: the first pattern that matches (kernel names differ between
# cuBLAS, NCCL and XLA versions, so these are loose on purpose)
KINDS = (
    ("all-reduce", r"nccl|all_?reduce|allreduce|collective"),
    ("gemm", r"gemm|nvjet|cutlass|xmma|cublas|matmul|splitK"),
    ("attention op", r"paged_attention|ragged_|split_kv|combine_splits|attention"),
    ("kv write", r"write_rows|kv_write|kvw|reshape_and_cache"),
    ("copy", r"memcpy|memset|copy"),
    ("xla fusion", r"fusion|loop_|input_|reduce|transpose|concatenate|convert|broadcast|slice|gather|scatter|triton"),
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tp", type=int, action="append", help="devices of a tensor-parallel mesh (repeatable; 1: one GPU)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--prompt", type=int, default=2048)
    p.add_argument("--steps-per-call", type=int, action="append", help="decode steps per jitted call (repeatable; default 4)")
    p.add_argument("--calls", type=int, default=8, help="timed decode calls per run")
    p.add_argument("--xla-options", type=json.loads, default=[None],
                   help="JSON list of XLA option sets for the tensor-parallel runs (null: the Engine's defaults)")
    p.add_argument("--preset", choices=sorted(bench_model.PRESETS), default="gpu", help="bench_model.py's model shape (tiny: a CPU dry run)")
    p.add_argument("--top", type=int, default=12, help="kernels listed per run")
    p.add_argument("--out", type=Path, default=None, help="also append each JSON record to this file")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/xlacc_model_projects"))
    args = p.parse_args(argv)
    args.tp = args.tp or [1]
    args.steps_per_call = args.steps_per_call or [4]
    return args


def kind_of(kernel: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, kernel, re.IGNORECASE):
            return kind
    return "other"


def device_kernels(data, device: int) -> list:
    """(name, start_ns, duration_ns) of every kernel and copy on one GPU's streams (data: a
    jax.profiler.ProfileData)."""
    plane = next((p for p in data.planes if p.name == f"/device:GPU:{device}"), None)
    if plane is None:
        return []
    # the plane's other lines ("XLA Ops", "XLA Modules", ...) are derived from its streams' kernels
    return [(e.name, e.start_ns, e.duration_ns) for line in plane.lines if line.name.startswith("Stream") for e in line.events]


def plane_lines(data, device: int) -> list:
    return [line.name for p in data.planes if p.name == f"/device:GPU:{device}" for line in p.lines]


def host_events_in_gaps(data, kernels: list, count: int) -> list:
    """What the host ran during the kernels' longest idle stretch: its longest events overlapping it."""
    gaps = idle_gaps(kernels)
    if not gaps:
        return []
    gap, _, _, begin = max(gaps, key=lambda g: g[0])
    found = [(min(e.end_ns, begin + gap) - max(e.start_ns, begin), e.name, line.name)
             for plane in data.planes if plane.name.startswith("/host")
             for line in plane.lines for e in line.events]
    return [{"us": round(o / 1e3, 1), "event": n[:80], "thread": t[:40]} for o, n, t in sorted(found, key=lambda f: -f[0])[:count] if o > 0]


def busy_ns(kernels: list) -> float:
    """The time at least one kernel ran (kernels on several streams overlap)."""
    total, end = 0.0, float("-inf")
    for _, start, duration in sorted(kernels, key=lambda k: k[1]):
        stop = start + duration
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def idle_gaps(kernels: list) -> list:
    """(gap_ns, kernel before, kernel after, start_ns) for every stretch in which no kernel ran."""
    gaps, end, last = [], None, None
    for name, start, duration in sorted(kernels, key=lambda k: k[1]):
        if end is not None and start > end:
            gaps.append((start - end, last, name, end))
        if end is None or start + duration > end:
            end, last = start + duration, name
    return gaps


def breakdown(kernels: list, steps: int, top: int) -> dict:
    """Per step: µs by kind and count, the busiest kernels, and the span's idle time."""
    by_kind, by_name = collections.defaultdict(lambda: [0.0, 0]), collections.defaultdict(lambda: [0.0, 0])
    for name, _, duration in kernels:
        for table, key in ((by_kind, kind_of(name)), (by_name, name)):
            table[key][0] += duration
            table[key][1] += 1
    span = max(s + d for _, s, d in kernels) - min(s for _, s, _ in kernels)
    busy = busy_ns(kernels)
    per_step = {kind: {"us": round(ns / steps / 1e3, 1), "count": round(n / steps, 1)} for kind, (ns, n) in
                sorted(by_kind.items(), key=lambda kv: -kv[1][0])}
    busiest = [{"kernel": name[:90], "kind": kind_of(name), "us_per_step": round(ns / steps / 1e3, 1), "per_step": round(n / steps, 1),
                "us_each": round(ns / n / 1e3, 2)} for name, (ns, n) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:top]]
    return {"span_us_per_step": round(span / steps / 1e3, 1), "busy_us_per_step": round(busy / steps / 1e3, 1),
            "idle_us_per_step": round((span - busy) / steps / 1e3, 1), "kernels_per_step": round(len(kernels) / steps, 1),
            "by_kind": per_step, "busiest": busiest, "idle_before": idle_before(kernels, steps), "longest_gaps": longest_gaps(kernels, top)}


def idle_before(kernels: list, steps: int) -> dict:
    """Per step: µs of idle time by the kind of the kernel that ends it (what the device waited for)."""
    table = collections.defaultdict(float)
    for gap, _, after, _ in idle_gaps(kernels):
        table[kind_of(after)] += gap
    return {kind: round(ns / steps / 1e3, 1) for kind, ns in sorted(table.items(), key=lambda kv: -kv[1])}


def longest_gaps(kernels: list, count: int) -> list:
    return [{"us": round(gap / 1e3, 1), "after": before[:60], "before": after[:60]} for gap, before, after, _ in
            sorted(idle_gaps(kernels), key=lambda g: -g[0])[:count]]


def profile_run(args, model, prompts, tp: int, steps: int, options) -> dict:
    import jax
    import kvw.jax as kvw_jax
    import pa.model as xm

    mesh = xm.model_mesh(tp=tp) if tp > 1 else None
    calls = 2 + args.calls + TRACED_CALLS  # two warm calls (the first compiles), the timed ones, the traced ones
    engine = xm.Engine(model, max_seqs=args.batch, max_len=args.prompt + steps * calls + 2, kv_write=kvw_jax.kvw, mesh=mesh,
                       steps_per_call=steps, max_prefill_tokens=1 << 16, compiler_options=options)
    max_new = steps * calls + 1
    try:
        run = engine.start(prompts, max_new_tokens=max_new)
        t0 = time.perf_counter()
        for _ in range(2):
            engine.step(run)
            jax.block_until_ready(run.produced[-1])
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        dispatch = []
        for _ in range(args.calls):  # queued back to back, as generate() runs them
            start = time.perf_counter()
            engine.step(run)
            dispatch.append(time.perf_counter() - start)
        jax.block_until_ready(run.produced[-1])
        decode_s = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as trace_dir:
            with jax.profiler.trace(trace_dir):
                for _ in range(TRACED_CALLS):
                    engine.step(run)
                jax.block_until_ready(run.produced[-1])
            data = jax.profiler.ProfileData.from_file(glob.glob(f"{trace_dir}/**/*.xplane.pb", recursive=True)[0])
            kernels, lines = device_kernels(data, 0), plane_lines(data, 0)
            host = host_events_in_gaps(data, kernels, args.top)
        engine.finish(run)
        program = decode_program(engine, args.batch)
    finally:
        engine.cache.layers = None
    record = {"event": "profile", "devices": tp, "batch": args.batch, "steps_per_call": steps,
              "xla_options": engine.compiler_options, "compile_s": round(compile_s, 1), "decode_program": program,
              "ms_per_step": round(decode_s / (args.calls * steps) * 1e3, 3),
              "host_ms_per_call": round(sum(dispatch) / len(dispatch) * 1e3, 3), "host_during_longest_gap": host, "device_kind": jax.devices()[0].device_kind}
    if kernels:
        record.update(breakdown(kernels, steps * TRACED_CALLS, args.top))
    else:
        record["error"] = f"the trace holds no kernels of /device:GPU:0 (its lines: {lines})"
    return record


def decode_program(engine, batch: int) -> dict:
    """What the compiled decode call holds: its collectives, and copies of a whole layer's cache
    (there should be none: the cache is updated in place)."""
    text = engine.compiled_decode_text(batch)
    cache = engine.cache.layers[0][0]
    local = ",".join(str(n) for n in cache.sharding.shard_shape(cache.shape))
    ops = collections.Counter(re.findall(r"= \S+ ([a-z][\w-]*)\(", text))
    return {"all-reduce": ops["all-reduce-start"] + ops["all-reduce"], "all-gather": ops["all-gather-start"] + ops["all-gather"],
            "cache_copies": len(re.findall(rf"\[{local}\]\S* copy\(", text))}


def render(record: dict) -> str:
    lines = [f"== {record['devices']} device(s), {record['steps_per_call']} steps a call, options {record['xla_options']}: {record['ms_per_step']} ms a step "
             f"(trace: {record.get('span_us_per_step')} us a step, {record.get('idle_us_per_step')} us of it idle, "
             f"{record.get('kernels_per_step')} kernels)"]
    for kind, cell in record.get("by_kind", {}).items():
        lines.append(f"   {kind:<14} {cell['us']:>8} us  {cell['count']:>6} kernels")
    lines.append(f"   host: {record.get('host_ms_per_call')} ms to queue a call; during the longest gap: "
                 + "; ".join(f"{h['event']} {h['us']} us" for h in record.get("host_during_longest_gap", [])[:5]))
    lines.append(f"   decode program: {record.get('decode_program')}")
    lines.append("   idle, by the kind of kernel it waited for (us a step): " + json.dumps(record.get("idle_before", {})))
    for gap in record.get("longest_gaps", [])[:6]:
        lines.append(f"   gap {gap['us']:>7} us  after {gap['after']}  before {gap['before']}")
    for row in record.get("busiest", []):
        lines.append(f"   {row['us_per_step']:>8} us  {row['per_step']:>5} x {row['us_each']:>7} us  {row['kind']:<12} {row['kernel']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    import numpy as np
    import torch

    torch.set_grad_enabled(False)
    model_args = bench_model.parse_args(["--preset", args.preset, "--batch", str(args.batch), "--prompt", str(args.prompt)])
    bench_model.projects(args.workdir, model_args.platform, model_args.dtype, ragged=False)
    model = bench_model.make_model(model_args, model_args.platform, {"f32": torch.float32, "bf16": torch.bfloat16}[model_args.dtype])
    prompts = list(np.random.default_rng(0).integers(0, model_args.vocab, size=(args.batch, args.prompt)).astype(np.int32))
    for tp in args.tp:
        for steps, options in itertools.product(args.steps_per_call, args.xla_options if tp > 1 else [None]):
            try:
                record = profile_run(args, model, prompts, tp, steps, options)
            except Exception as e:  # noqa: BLE001  (an option set XLA refuses: say so, go on with the next)
                record = {"event": "error", "devices": tp, "xla_options": options, "error": f"{type(e).__name__}: {e}"[:1500]}
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(record) + "\n")
            print(render(record) if record["event"] == "profile" else json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
