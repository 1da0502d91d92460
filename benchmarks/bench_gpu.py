"""GPU benchmarks of the generated kernels against XLA's own ops (issue: prove xlacc on the GPU).

Runs on a machine with an NVIDIA GPU, jax with CUDA, and (for the copy limit) torch:

    python benchmarks/bench_gpu.py --out results.json [--only large,small,loop,rmsnorm] [--sweep-xla-flags]

Each figure is a ratio against XLA's own implementation timed in the same process, plus achieved
GB/s against a device-to-device copy (the practical limit) and the datasheet bandwidth.
Projects are generated and built with xlacc itself (`xlacc new`, `xlacc build`).
"""

from __future__ import annotations

import argparse
import importlib
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
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path})
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")


_OPS: dict[str, object] = {}

# XLA flag sets the small-call benchmarks are repeated under (--sweep-xla-flags), each in its own process.
XLA_FLAG_SETS = {
    "default": "",
    "command buffers off": "--xla_gpu_enable_command_buffer=",
    "graphs of any size": "--xla_gpu_graph_min_graph_size=1",
    "loops in graphs": "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL --xla_gpu_graph_min_graph_size=1",
}


def load_module(project_dir: Path, module: str):
    """A module of a generated project's package (`NAME.jax`, `NAME.reference`)."""
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))
    return importlib.import_module(f"{project_dir.name}.{module}")


def project(workdir: Path, name: str, template: str, api: str, dtype: str | None = None):
    """Generate (once) and build a jax-only cuda project; return its op, registered."""
    if name in _OPS:
        return _OPS[name]
    if not (workdir / name / "xlacc.toml").is_file():
        args = ["new", name, "--template", template, "--platform", "cuda", "--api", api, "--framework", "jax"]
        xlacc(*(args + (["--dtype", dtype] if dtype else [])), cwd=workdir)
    xlacc("build", name, cwd=workdir)  # a cache hit when an earlier process built it
    module = load_module(workdir / name, "jax")
    module.register()
    _OPS[name] = getattr(module, name)
    return _OPS[name]


# -- timing -----------------------------------------------------------------------------------


CALLS_PER_SAMPLE = 10  # calls queued back to back per sample, so host dispatch overlaps GPU work


def median_seconds(fn, *args, repeats: int = 50, warmup: int = 5) -> float:
    """Median time of one call, each sample being CALLS_PER_SAMPLE calls queued then waited for."""
    for _ in range(warmup):
        fn(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(CALLS_PER_SAMPLE):
            out = fn(*args)
        out.block_until_ready()
        times.append((time.perf_counter() - start) / CALLS_PER_SAMPLE)
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


def small_adds(workdir: Path):
    """Two 1024-element operands, and XLA's add beside the add template's (ffi, legacy)."""
    import jax.numpy as jnp

    x = jnp.ones((1024,), jnp.float32)
    y = jnp.full((1024,), 1e-3, jnp.float32)
    ops = {"xla native add": lambda a, b: a + b}
    for api in ("ffi", "legacy"):
        ops[f"add template ({api})"] = project(workdir, f"add_{api}", "add", api)
    return x, y, ops


def bench_small(workdir: Path, calls: int = 100) -> list[dict]:
    import jax

    x, y, ops = small_adds(workdir)

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

    x, y, ops = small_adds(workdir)

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

    rows_out = []
    for dtype, jdtype in (("f32", jnp.float32), ("bf16", jnp.bfloat16)):
        op = project(workdir, f"rms_{dtype}", "rms-norm", "ffi", dtype)
        reference = load_module(workdir / f"rms_{dtype}", "reference")
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


def sweep_xla_flags(workdir: Path) -> list[dict]:
    """The small-call benchmarks again under each XLA flag set, each in a fresh process."""
    rows = []
    for label, flags in XLA_FLAG_SETS.items():
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [sys.executable, __file__, "--only", "small,loop", "--no-copy", "--workdir", str(workdir), "--out", out.name]
            done = subprocess.run(cmd, env={**os.environ, "XLA_FLAGS": flags}, capture_output=True, text=True)
            if done.returncode != 0:
                rows.append({"bench": "xla flags", "variant": label, "error": done.stderr.strip().splitlines()[-1:]})
                continue
            for row in json.loads(Path(out.name).read_text())["rows"]:
                rows.append({**row, "XLA_FLAGS": flags or "(none)", "flag set": label})
    return rows


def run(chosen: set[str], workdir: Path, measure_copy: bool) -> list[dict]:
    env_gpu = environment()["gpu"]
    datasheet = datasheet_for(env_gpu)
    rows: list[dict] = []
    limit = copy_gbps(768 * 1024 * 1024) if measure_copy else float("nan")
    if measure_copy:
        rows.append({"bench": "device-to-device copy, 768 MB", "variant": "torch copy_", "GB/s": limit, "vs datasheet": limit / datasheet if datasheet else None})
    if "large" in chosen:
        rows += bench_large(workdir, limit, datasheet)
    if "small" in chosen:
        rows += bench_small(workdir)
    if "loop" in chosen:
        rows += bench_loop(workdir)
    if "rmsnorm" in chosen:
        rows += bench_rmsnorm(workdir, limit)
    if "sweep" in chosen:
        rows += sweep_xla_flags(workdir)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--only", default="large,small,loop,rmsnorm", help="any of large,small,loop,rmsnorm,sweep")
    parser.add_argument("--sweep-xla-flags", action="store_true", help="also repeat small,loop under XLA_FLAG_SETS")
    parser.add_argument("--workdir", type=Path, help="where projects are generated (reused between runs)")
    parser.add_argument("--no-copy", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    chosen = set(args.only.split(",")) | ({"sweep"} if args.sweep_xla_flags else set())
    env = environment()
    print(json.dumps(env))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        rows = run(chosen, workdir, measure_copy=not args.no_copy)
    print_table(rows)
    if args.out:
        args.out.write_text(json.dumps({"environment": env, "rows": rows}, indent=2, default=str))


if __name__ == "__main__":
    main()
