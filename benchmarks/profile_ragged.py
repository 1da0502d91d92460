"""One call of the ragged op at the named grid points, for a profiler that starts at cuProfilerStart.

The figures of benchmarks/RESULTS.md's Nsight Compute sections, on the GPU machine, from the
repository root, with DIR a build made by `bench_ragged.py --build-only` (or run_ragged_on_gpu.sh build):

    PRE=DIR ncu --clock-control none --cache-control none --profile-from-start off -k regex:ragged_prefill \\
        --section SpeedOfLight --section WarpStateStats --export OUT \\
        python3 benchmarks/profile_ragged.py "prefill 8 x 2048"

Each point is compiled and run twice first, so the profiled call is the third. With
--decode-template first, the decode template's call (DIR's decode project) at decode points instead:
the same kernels' counters side by side.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

import bench_paged_attention as base
import bench_ragged


def main(args: list[str]) -> int:
    template = bool(args) and args[0] == "--decode-template"
    labels = args[1:] if template else args
    points = {point.label: point for point in bench_ragged.grid() if point.kind == "decode" or not template}
    unknown = [label for label in labels if label not in points]
    project = bench_ragged.DECODE if template else bench_ragged.NAME
    prebuilt = Path(os.environ.get("PRE", ""))
    if unknown or not labels:
        wrong = f"no {'decode ' if template else ''}grid point {unknown[0]!r}" if unknown else "name one or more grid points"
        print(f"profile_ragged: {wrong}; the points: {', '.join(points)}", file=sys.stderr)
        return 2
    if not (prebuilt / project).is_dir():
        print(f"profile_ragged: PRE={prebuilt} holds no built {project} project (bench_ragged.py --build-only)", file=sys.stderr)
        return 2
    import jax

    module = base.load_module(prebuilt / project, "jax", name=project)
    module.register()
    op = getattr(module, project)
    cuda = ctypes.CDLL("libcuda.so.1")
    # The arrays as arguments, not constants compiled in.
    call = jax.jit(functools.partial(bench_ragged.decode_call, op) if template else functools.partial(bench_ragged.xlacc_call, op))
    for label in labels:
        data = bench_ragged.operands(points[label])
        for _ in range(2):
            jax.block_until_ready(call(data["query"], data))
        cuda.cuProfilerStart()
        jax.block_until_ready(call(data["query"], data))
        cuda.cuProfilerStop()
        print("profiled", label, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
