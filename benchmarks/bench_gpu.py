"""GPU benchmarks of the generated kernels against XLA's own ops (issue: prove xlacc on the GPU).

Runs on a machine with an NVIDIA GPU, jax with CUDA, and (for the copy limit) torch:

    python benchmarks/bench_gpu.py --out results.json [--only large,small,loop,rmsnorm] [--xla-flags-sweep]

Each figure is a ratio against XLA's own implementation timed in the same process, plus achieved
GB/s against a device-to-device copy (the practical limit) and the datasheet bandwidth.
Projects are generated and built with xlacc itself (`xlacc new`, `xlacc build`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATASHEET_GBPS = {"H100": 3350.0, "H200": 4800.0}  # HBM3 / HBM3e peak, SXM parts


# -- projects ---------------------------------------------------------------------------------


def xlacc(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "xlacc", *args]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")


def project(workdir: Path, name: str, template: str, api: str, dtype: str | None = None):
    """Generate and build a jax-only cuda project; import its jax_ops under a unique name."""
    args = ["new", name, "--template", template, "--platform", "cuda", "--api", api, "--framework", "jax"]
    if dtype:
        args += ["--dtype", dtype]
    xlacc(*args, cwd=workdir)
    xlacc("build", name, cwd=workdir)
    path = workdir / name / "jax_ops.py"
    spec = importlib.util.spec_from_file_location(f"{name}_jax_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.register()
    return getattr(module, name)


# -- timing -----------------------------------------------------------------------------------


def median_seconds(fn, *args, repeats: int = 50, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(fns: dict, *args, rounds: int = 5, repeats: int = 20) -> dict[str, float]:
    """Median per function, alternating between them so clocks and caches treat them alike."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(median_seconds(fn, *args, repeats=repeats, warmup=2))
    return {k: statistics.median(v) for k, v in samples.items()}


def copy_gbps(nbytes: int) -> float:
    """Device-to-device copy bandwidth (bytes read + written per second), via torch's cudaMemcpyAsync."""
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * nbytes / statistics.median(times) / 1e9


# -- the benchmarks ---------------------------------------------------------------------------------


def bench_large(workdir: Path, copy_limit: float, datasheet: float | None) -> list[dict]:
    import jax
    import jax.numpy as jnp

    n = 64 * 1024 * 1024
    x = jax.random.normal(jax.random.key(0), (n,), jnp.float32)
    y = jax.random.normal(jax.random.key(1), (n,), jnp.float32)
    fns = {"xla native add": jax.jit(lambda a, b: a + b)}
    for api in ("ffi", "legacy"):
        fns[f"add template ({api})"] = jax.jit(project(workdir, f"add_{api}", "add", api))
    times = interleaved(fns, x, y)
    moved = 3 * n * 4
    rows = []
    for name, t in times.items():
        gbps = moved / t / 1e9
        rows.append(
            {
                "bench": "large: 64M f32 add",
                "variant": name,
                "us": t * 1e6,
                "GB/s": gbps,
                "vs native (speed)": times["xla native add"] / t,
                "vs copy": gbps / copy_limit,
                "vs datasheet": gbps / datasheet if datasheet else None,
            }
        )
    return rows


def bench_small(workdir: Path, calls: int = 100) -> list[dict]:
    import jax
    import jax.numpy as jnp

    x = jnp.ones((1024,), jnp.float32)
    y = jnp.full((1024,), 1e-3, jnp.float32)
    ops = {"xla native add": lambda a, b: a + b}
    for api in ("ffi", "legacy"):
        ops[f"add template ({api})"] = project(workdir, f"small_{api}", "add", api)

    def chain(op):
        def run(a, b):
            for _ in range(calls):
                a = op(a, b)
            return a

        return jax.jit(run)

    times = interleaved({k: chain(op) for k, op in ops.items()}, x, y, repeats=50)
    return [
        {"bench": f"small: {calls} dependent 1024-element adds in one jit", "variant": k, "us per call": t * 1e6 / calls}
        for k, t in times.items()
    ]


def bench_loop(workdir: Path, iterations: int = 1000) -> list[dict]:
    import jax
    import jax.numpy as jnp

    x = jnp.ones((1024,), jnp.float32)
    y = jnp.full((1024,), 1e-3, jnp.float32)
    ops = {"xla native add": lambda a, b: a + b}
    for api in ("ffi", "legacy"):
        ops[f"add template ({api})"] = project(workdir, f"loop_{api}", "add", api)

    def loop(op):
        return jax.jit(lambda a, b: jax.lax.fori_loop(0, iterations, lambda i, acc: op(acc, b), a))

    times = interleaved({k: loop(op) for k, op in ops.items()}, x, y, rounds=3, repeats=5)
    native = times["xla native add"]
    return [
        {"bench": f"loop: {iterations} dependent adds in fori_loop", "variant": k, "us per iteration": t * 1e6 / iterations, "vs native (time)": t / native}
        for k, t in times.items()
    ]


def bench_rmsnorm(workdir: Path, copy_limit: float) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    rows_out = []
    for dtype, jdtype in (("f32", jnp.float32), ("bf16", jnp.bfloat16)):
        op = project(workdir, f"rms_{dtype}", "rms-norm", "ffi", dtype)
        sys.path.insert(0, str(workdir / f"rms_{dtype}"))
        ref_spec = importlib.util.spec_from_file_location(f"rms_{dtype}_reference", workdir / f"rms_{dtype}" / "reference.py")
        reference = importlib.util.module_from_spec(ref_spec)
        ref_spec.loader.exec_module(reference)
        x = jax.random.normal(jax.random.key(2), (8192, 8192), jnp.float32).astype(jdtype)
        w = jax.random.normal(jax.random.key(3), (8192,), jnp.float32).astype(jdtype)
        native = jax.jit(lambda a, b: reference.reference(a, b, eps=1e-6, xp=jnp))
        custom = jax.jit(lambda a, b: op(a, b, eps=1e-6))
        err = float(jnp.max(jnp.abs(native(x, w).astype(jnp.float32) - custom(x, w).astype(jnp.float32))))
        times = interleaved({"xla fused jnp rms norm": native, "rms-norm template (ffi)": custom}, x, w)
        moved = 2 * x.size * x.dtype.itemsize + w.size * w.dtype.itemsize
        for name, t in times.items():
            gbps = moved / t / 1e9
            rows_out.append(
                {
                    "bench": f"rms-norm [8192, 8192] {dtype}",
                    "variant": name,
                    "us": t * 1e6,
                    "GB/s": gbps,
                    "vs native (speed)": times["xla fused jnp rms norm"] / t,
                    "vs copy": gbps / copy_limit,
                    "max abs diff": err,
                }
            )
    return rows_out


# -- the environment and the report ----------------------------------------------------------------


def environment() -> dict:
    import jax
    import jaxlib

    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return {
        "date": time.strftime("%Y-%m-%d"),
        "gpu": smi,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "nvcc": nvcc[-1] if nvcc else "",
        "python": platform.python_version(),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
    }


def datasheet_for(gpu: str) -> float | None:
    return next((v for k, v in DATASHEET_GBPS.items() if k in gpu), None)


def print_table(rows: list[dict]) -> None:
    keys = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(f"{row[k]:.3f}" if isinstance(row.get(k), float) else str(row.get(k, "")) for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--only", default="large,small,loop,rmsnorm")
    args = parser.parse_args()
    chosen = set(args.only.split(","))
    env = environment()
    print(json.dumps(env))
    rows: list[dict] = []
    limit = copy_gbps(768 * 1024 * 1024)
    datasheet = datasheet_for(env["gpu"])
    rows.append({"bench": "device-to-device copy, 768 MB", "variant": "torch copy_", "GB/s": limit, "vs datasheet": limit / datasheet if datasheet else None})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "large" in chosen:
            rows += bench_large(work, limit, datasheet)
        if "small" in chosen:
            rows += bench_small(work)
        if "loop" in chosen:
            rows += bench_loop(work)
        if "rmsnorm" in chosen:
            rows += bench_rmsnorm(work, limit)
    print_table(rows)
    if args.out:
        args.out.write_text(json.dumps({"environment": env, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
