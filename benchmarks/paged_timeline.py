"""Kernel timeline of chained paged-attention calls: xlacc's builds and Pallas, on the GPU.

    PYTHONPATH=. python3 benchmarks/paged_timeline.py --workdir PRE/bpa --builds old --out timeline.json

For each point (SEQSxCONTEXTxKV_HEADS, bf16, 32 heads, head 128) it runs a jitted chain of 8
dependent calls (as bench_paged_grid.py times them) three times under torch.profiler, whose CUPTI
tracing sees every kernel of the process, XLA's included, and prints each contender's span per
call; the JSON holds every kernel's name, start and duration (us). It shows what a per-call time
is made of: the attention kernel, the combine pass overlapping it through programmatic dependent
launch, and the gaps. Needs torch with CUDA beside jax.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_paged_attention as base
import bench_paged_grid as grid

CHAIN, RUNS = 8, 3
PALLAS_CONFIGS = {
    "4x512x4": (8, 4),
    "1x512x4": (32, 1),
    "16x2048x4": (4, 8),
    "4x8192x4": (16, 8),
    "1x32768x4": (64, 4),
}  # best found by the grid


def kernels(chain, inputs) -> list[tuple[str, float, float]]:
    """(name, start, end) in us of every GPU kernel while the chain runs RUNS times."""
    import jax
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        jax.block_until_ready([chain(*inputs) for _ in range(RUNS)])
    events = [
        e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
    ]
    return sorted(
        ((e.name, e.time_range.start, e.time_range.end) for e in events),
        key=lambda k: k[1],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workdir",
        type=Path,
        required=True,
        help="where bench_paged_attention.py --build-only left the project",
    )
    parser.add_argument(
        "--builds", default="", help="also these --variants builds (LABEL,...)"
    )
    parser.add_argument("--points", default="4x512x4,16x2048x4,4x8192x4")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import jax
    from jax.experimental.pallas.ops.gpu import paged_attention as pallas

    project = args.workdir / base.NAME
    ops = base.load_module(project, "jax")
    ops.register()
    scratch = base.scratch_shape(project)
    builds = {"default": getattr(ops, base.NAME)}
    for label in filter(None, args.builds.split(",")):
        builds[label] = base.register(
            project / "build" / f"lib{base.NAME}_{label}.so",
            f"{base.NAME}_{label}",
            f"xlacc_{base.NAME}_ffi",
            scratch,
        )
    result = {}
    for spec in args.points.split(","):
        seqs, context, kv_heads = map(int, spec.split("x"))
        point = grid.Point(
            num_seqs=seqs,
            context=context,
            num_kv_heads=kv_heads,
            dtype="bf16",
            head_size=128,
            num_heads=32,
        )
        operands = grid.random_operands(point, "xlacc")
        runs = {
            label: (functools.partial(op, scale=1 / math.sqrt(128)), operands)
            for label, op in builds.items()
        }
        if spec in PALLAS_CONFIGS:
            k_splits, pages = PALLAS_CONFIGS[spec]
            runs["pallas"] = (
                functools.partial(
                    pallas.paged_attention,
                    k_splits=k_splits,
                    pages_per_compute_block=pages,
                ),
                grid.random_operands(point, "pallas"),
            )
        for label, (op, inputs) in runs.items():
            chain = jax.jit(grid.chained(op, CHAIN))
            for _ in range(20):
                jax.block_until_ready(chain(*inputs))
            trace = kernels(chain, inputs)
            origin = trace[0][1]
            result[f"{spec}/{label}"] = [
                (name[:60], round(start - origin, 2), round(end - start, 2))
                for name, start, end in trace
            ]
            print(
                f"{spec} {label}: {len(trace)} kernels, {(trace[-1][2] - origin) / (RUNS * CHAIN):.2f} us per call",
                flush=True,
            )
    if args.out:
        args.out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
