"""Benchmark of the paged-attention template's CUDA kernel against XLA's own (the jitted jax.numpy reference).

Runs on a machine with an NVIDIA GPU and jax with CUDA, from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_paged_attention.py [--out DIR] [--check] [--variants LABEL:MACRO=N,...]

or, where nvcc is but no GPU, build first and carry the libraries (--build-only --arch sm_90
--workdir DIR, then --prebuilt --workdir DIR on the GPU machine).

It renders the template (`xlacc new decode --template paged-attention`), builds it (`xlacc build`,
or nvcc by hand where that fails), and at 64 sequences x 2048 tokens, 32 heads, 8 KV heads, head
128, bf16, block 16 (the defaults) prints the custom call's time, GB/s on the bytes a perfect
kernel moves (the KV rows of the cached tokens, the query and the output), that as a share of the
device-to-device copy bandwidth measured in the same run, and the speedup over the jitted
reference. --check also compares the kernel with the float64 NumPy reference over every dtype,
head size and block size on ragged lengths up to 4096, with and without split-KV (for every
build); --variants times builds
with other tuning knobs (the XLACC_PA_* macros of kernel.cu); --batch-sweep times smaller batches.
--out DIR writes every figure to DIR/paged_attention.json.
"""

from __future__ import annotations

import argparse
import functools
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

import numpy as np

REPO = Path(__file__).resolve().parent.parent
# This checkout's xlacc renders the projects, not an installed one: an editable install of another
# worktree would render that tree's templates, and two builds meant to differ would be one kernel.
sys.path.insert(0, str(REPO))
NAME = "decode"
DATASHEET_GBPS = {"H100": 3350.0, "H200": 4800.0}  # HBM3 / HBM3e peak, SXM parts
GOAL_SPEEDUP, GOAL_COPY_SHARE = 3.0, 0.70


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="directory for paged_attention.json")
    parser.add_argument("--num-seqs", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--num-heads", type=int, default=32)
    parser.add_argument("--num-kv-heads", type=int, default=8)
    parser.add_argument("--head-size", type=int, default=128)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    parser.add_argument("--samples", type=int, default=30, help="timed samples (each the mean of --calls calls)")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--check", action="store_true", help="check numerics over dtypes x head sizes x block sizes first")
    parser.add_argument("--variants", default="", help="extra builds to time: LABEL:MACRO=N,MACRO=N;... (e.g. 4x3:XLACC_PA_WARPS=4,XLACC_PA_STAGES=3)")
    parser.add_argument("--batch-sweep", default="", help="also time every build at these numbers of sequences (e.g. 1,4,16)")
    parser.add_argument("--extra-dtypes", default="", help="also time the default build in these dtypes (e.g. f16,f32)")
    parser.add_argument("--profile", action="store_true", help="only a few calls of the custom call (run this under ncu)")
    parser.add_argument("--workdir", type=Path, help="where to render and build (default: a temporary directory)")
    parser.add_argument("--build-only", action="store_true", help="render and build (nvcc, --arch) into --workdir, run nothing")
    parser.add_argument("--prebuilt", action="store_true", help="use the project and libraries --build-only left in --workdir")
    parser.add_argument("--arch", default="", help="GPU arch for --build-only (default: the visible GPU's)")
    parser.add_argument("--seq-lens", default="", help="also time one sequence of each of these lengths (e.g. 16384,32768)")
    return parser.parse_args(argv)


# -- building ---------------------------------------------------------------------------------


def render(directory: Path, api: str = "ffi", name: str = NAME, template: str = "paged-attention") -> Path:
    from xlacc.commands.new.project import NewRequest, create

    create(NewRequest(name=name, template=template, platform="cuda", api=api, frameworks=["jax"], directory=directory, force=True))
    return directory


def gpu_arch() -> str:
    import jax

    capability = getattr(jax.devices("gpu")[0], "compute_capability", "9.0")
    return "sm_" + str(capability).replace(".", "")


def nvcc_command(project: Path, library: Path, arch: str, defines: dict[str, int], name: str = NAME) -> list[str]:
    import jax

    from xlacc.commands.build.plan import XLACC_INCLUDE

    number = arch.removeprefix("sm_")
    return [
        os.environ.get("NVCC", "nvcc"), "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden",
        "-gencode", f"arch=compute_{number},code=[sm_{number},compute_{number}]",
        *[f"-D{k}={v}" for k, v in defines.items()],
        f"-I{jax.ffi.include_dir()}", f"-I{XLACC_INCLUDE}", f"-I{project}", "-o", str(library), str(project / name / "_entry_points.cu"),
    ]  # fmt: skip


def parse_variants(text: str) -> dict[str, dict[str, int]]:
    """``4x3:XLACC_PA_WARPS=4,XLACC_PA_STAGES=3;wide:XLACC_PA_WIDE_BELOW=100`` -> {label: {macro: value}}."""
    variants = {}
    for item in filter(None, (v.strip() for v in text.split(";"))):
        label, _, defines = item.partition(":")
        variants[label] = {k.strip(): int(v) for k, _, v in (d.partition("=") for d in defines.split(",") if d.strip())}
    return variants


def variant_libraries(project: Path, variants) -> dict[str, Path]:
    return {"default": project / NAME / f"lib{NAME}.so", **{label: project / "build" / f"lib{NAME}_{label}.so" for label in variants}}


def build_with_nvcc(project: Path, arch: str, variants: dict[str, dict[str, int]]) -> dict[str, Path]:
    """Every library with nvcc for `arch`, in parallel (no GPU needed)."""
    libraries = variant_libraries(project, variants)
    for library in libraries.values():
        library.parent.mkdir(parents=True, exist_ok=True)
    jobs = {label: subprocess.Popen(nvcc_command(project, path, arch, variants.get(label, {})), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for label, path in libraries.items()}  # fmt: skip
    for label, job in jobs.items():
        output, _ = job.communicate()
        if job.returncode != 0:
            raise SystemExit(f"nvcc failed for {label}:\n{output[-3000:]}")
    return libraries


def build_projects(workdir: Path, projects, arch: str) -> None:
    """Render each (name, template) project under workdir and build its library with nvcc, side by side."""
    from xlacc.ground.resources import templates_root

    print(f"rendering {', '.join(template for _, template in projects)} from {templates_root()}", flush=True)
    jobs = []
    for name, template in projects:
        project = render(workdir / name, name=name, template=template)
        library = project / name / f"lib{name}.so"
        jobs.append(subprocess.Popen(nvcc_command(project, library, arch, {}, name=name), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for job in jobs:
        output, _ = job.communicate()
        if job.returncode != 0:
            raise SystemExit(f"nvcc failed:\n{output[-3000:]}")


def build(project: Path, arch: str, variants: dict[str, dict[str, int]]) -> dict[str, Path]:
    """The project's library (via `xlacc build`, else nvcc) and one library per variant, built in parallel."""
    libraries = {"default": project / NAME / f"lib{NAME}.so"}
    jobs = {}
    xlacc_build = subprocess.Popen(
        [sys.executable, "-m", "xlacc", "build", str(project)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    for label, defines in variants.items():
        libraries[label] = project / "build" / f"lib{NAME}_{label}.so"
        jobs[label] = subprocess.Popen(nvcc_command(project, libraries[label], arch, defines), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = xlacc_build.communicate()
    if xlacc_build.returncode != 0 or not libraries["default"].is_file():
        print(f"xlacc build failed ({xlacc_build.returncode}): {output.strip().splitlines()[-1] if output.strip() else ''}; building with nvcc by hand")
        libraries["default"].parent.mkdir(exist_ok=True)
        subprocess.run(nvcc_command(project, libraries["default"], arch, {}), check=True, capture_output=True)
    else:
        print("built with xlacc build")
    for label, job in jobs.items():
        output, _ = job.communicate()
        if job.returncode != 0:
            raise SystemExit(f"nvcc failed for variant {label}:\n{output[-3000:]}")
    return libraries


def load_module(project: Path, module: str, name: str = NAME):
    """A module of the generated project's package."""
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))
    return importlib.import_module(f"{name}.{module}")


def scratch_shape(project: Path) -> tuple[int, ...]:
    """The shape of the template's scratch output (split-KV partials), from the project's spec."""
    from xlacc import spec as specmod

    return next(t.shape for t in specmod.load(project).outputs if t.scratch)


def register(library: Path, target: str, symbol: str, scratch: tuple[int, ...]):
    """Registers one build under its own target name and returns a jax function calling it."""
    import ctypes

    import jax

    lib = ctypes.CDLL(str(library))
    jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(lib, symbol)), platform="CUDA", api_version=1)

    def call(query, key_cache, value_cache, block_tables, seq_lens, *, scale):
        results = (jax.ShapeDtypeStruct(query.shape, query.dtype), jax.ShapeDtypeStruct(scratch, np.float32))
        call = jax.ffi.ffi_call(target, results, vmap_method="sequential")
        return call(query, key_cache, value_cache, block_tables, seq_lens, scale=np.float32(scale))[0]

    call.library = lib  # keeps the library loaded
    return call


# -- timing -----------------------------------------------------------------------------------


def seconds_per_call(fn, args, samples: int, calls: int) -> float:
    """Median over samples of (time of `calls` back-to-back calls) / calls, after warm-up, each
    sample timed in steady state (xlacc's steady_seconds: from the end of a call queued first, so
    that no sample counts an executable's launch on an idle GPU)."""
    import jax

    from xlacc.commands.smoke.timing import steady_seconds

    for _ in range(3):
        jax.block_until_ready(fn(*args))
    return statistics.median(steady_seconds(lambda: fn(*args), calls, jax.block_until_ready, pipelined=True)[0] for _ in range(samples))


def calls_lasting(fn, args, seconds: float, most: int) -> int:
    """Back-to-back calls of fn that last about `seconds`: at least 2, at most `most`."""
    import jax

    from xlacc.commands.smoke.timing import steady_seconds

    jax.block_until_ready(fn(*args))
    once = steady_seconds(lambda: fn(*args), 1, jax.block_until_ready, pipelined=True)[0]
    return int(max(2, min(most, seconds // max(once, 1e-6))))


def copy_gbps(samples: int, calls: int) -> dict[str, float]:
    """Bytes read + written per second by XLA: a copy and a streaming x + 1 over 2 GiB."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones((1 << 29,), jnp.float32)
    figures = {}
    for label, fn in {"copy": jax.jit(jnp.copy), "x_plus_1": jax.jit(lambda a: a + 1)}.items():
        figures[label] = 2 * x.nbytes / seconds_per_call(fn, [x], samples, calls) / 1e9
    del x
    return figures


# -- numerics ---------------------------------------------------------------------------------


def check_grid(call, reference, seed: int = 0) -> list[dict]:
    """The kernel against the float64 reference over dtypes x head sizes x block sizes, ragged lengths up to 4096."""
    import jax.numpy as jnp

    from xlacc.commands.smoke import numerics

    rows = []
    groups = {64: (8, 8), 128: (32, 8), 256: (12, 1)}  # (num_heads, num_kv_heads): GQA 1, 4 and 12 (two CTAs per kv head)
    # A few sequences, one of them long, and one very long sequence: split-KV; many sequences: one
    # CTA per (sequence, kv head).
    batches = {"split": lambda rng, block: np.concatenate([[1, 4096, 0, block * 3 + 5, block, 17], rng.integers(1, 4097, size=2)]),
               "long": lambda rng, block: np.array([32000]),
               "whole": lambda rng, block: np.concatenate([[1, 0, block * 3 + 5], rng.integers(1, 200, size=197)])}  # fmt: skip
    for dtype in ("bf16", "f16", "f32"):
        for head_size in reference.HEAD_SIZES:
            for block_size in reference.BLOCK_SIZES:
                for batch, lengths in batches.items():
                    rng = np.random.default_rng(seed)
                    heads, kv_heads = groups[head_size]
                    operands, attrs = reference.make_inputs(rng, dtype, lengths(rng, block_size), num_heads=heads, num_kv_heads=kv_heads,
                                                            head_size=head_size, block_size=block_size)  # fmt: skip
                    got = np.asarray(call(*[jnp.asarray(a) for a in operands], **attrs))
                    want = reference.reference(*[numerics.widen(a) for a in operands], **attrs)
                    result = numerics.compare("out", got, want)
                    rows.append({"dtype": dtype, "head_size": head_size, "block_size": block_size, "batch": batch, "ok": result.ok, "detail": result.detail})
                    print(f"  {'ok  ' if result.ok else 'FAIL'} {dtype:4} head {head_size:3} block {block_size} {batch}: {result.detail}", flush=True)
    return rows


# -- main -------------------------------------------------------------------------------------


def environment() -> dict:
    import jax

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem", "--format=csv,noheader"],
                         capture_output=True, text=True)  # fmt: skip
    nvcc = subprocess.run([os.environ.get("NVCC", "nvcc"), "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return {
        "device": str(jax.devices("gpu")[0].device_kind),
        "nvidia_smi": smi.stdout.strip(),
        "jax": jax.__version__,
        "jaxlib": __import__("jaxlib").__version__,
        "nvcc": nvcc[-1] if nvcc else "?",
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def bench_inputs(reference, args, dtype: str, num_seqs: int):
    lens = np.full(num_seqs, args.seq_len, dtype=np.int32)
    return reference.make_inputs(np.random.default_rng(0), dtype, lens, num_heads=args.num_heads, num_kv_heads=args.num_kv_heads,
                                 head_size=args.head_size, block_size=args.block_size, spare_blocks=0)  # fmt: skip


def first_seqs(operands: list, num_seqs: int) -> list:
    """The same problem for the first `num_seqs` sequences (the caches stay whole)."""
    query, key_cache, value_cache, tables, lens = operands
    return [query[:num_seqs], key_cache, value_cache, tables[:num_seqs], lens[:num_seqs]]


def time_case(calls: dict, reference, operands: list, attrs: dict, args, copy_limit: float, datasheet: float | None) -> dict:
    """Every build and the jitted reference on one problem: time, GB/s, share of copy and of the datasheet, speedup."""
    import jax
    import jax.numpy as jnp

    device_operands = [jnp.asarray(a) for a in operands]
    custom = {label: jax.jit(functools.partial(call, **attrs)) for label, call in calls.items()}
    native = jax.jit(functools.partial(reference.reference, xp=jnp, **attrs))
    out = np.asarray(custom["default"](*device_operands))
    moved = reference.bytes_moved(operands, [out])
    native_s = seconds_per_call(native, device_operands, max(5, args.samples // 3), max(2, args.calls // 3))
    agreement = float(np.max(np.abs(np.asarray(native(*device_operands), np.float32) - out.astype(np.float32))))
    rows = []
    for label, fn in custom.items():
        seconds = seconds_per_call(fn, device_operands, args.samples, args.calls)
        gbps = moved / seconds / 1e9
        rows.append({
            "build": label, "us": seconds * 1e6, "gbps": gbps, "copy_share": gbps / copy_limit,
            "datasheet_share": gbps / datasheet if datasheet else None, "speedup": native_s / seconds,
        })  # fmt: skip
    return {"num_seqs": len(operands[4]), "dtype": str(operands[0].dtype), "bytes_moved": moved, "native_us": native_s * 1e6,
            "native_gbps": moved / native_s / 1e9, "max_abs_diff_vs_native": agreement, "results": rows}  # fmt: skip


def print_case(case: dict) -> None:
    print(f"{case['num_seqs']} seqs{' x ' + str(case['seq_len']) + ' tokens' if 'seq_len' in case else ''}, {case['dtype']}: {case['bytes_moved'] / 1e6:.1f} MB moved; XLA reference {case['native_us']:.1f} us "
          f"({case['native_gbps']:.0f} GB/s); max |custom - XLA| = {case['max_abs_diff_vs_native']:.3g}")  # fmt: skip
    print(f"{'build':>12} {'us':>8} {'GB/s':>7} {'% copy':>7} {'% spec':>7} {'speedup':>8}")
    for r in case["results"]:
        spec_share = f"{100 * r['datasheet_share']:6.1f}%" if r["datasheet_share"] else "      -"
        print(f"{r['build']:>12} {r['us']:8.1f} {r['gbps']:7.0f} {100 * r['copy_share']:6.1f}% {spec_share} {r['speedup']:7.2f}x")


def main(argv=None) -> int:
    args = parse_args(argv)
    import jax
    import jax.numpy as jnp

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_paged_attention_"))
    project, variants = workdir / NAME, parse_variants(args.variants)
    started = time.perf_counter()
    if args.prebuilt:
        libraries = variant_libraries(project, variants)
        missing = [str(path) for path in libraries.values() if not path.is_file()]
        if missing:
            raise SystemExit(f"--prebuilt: not built: {', '.join(missing)} (run with --build-only first)")
    else:
        render(project)
        if args.build_only:
            libraries = build_with_nvcc(project, args.arch or gpu_arch(), variants)
            print(f"built {', '.join(map(str, libraries.values()))} in {time.perf_counter() - started:.1f} s")
            return 0
        libraries = build(project, gpu_arch(), variants)
        print(f"built {len(libraries)} libraries in {time.perf_counter() - started:.1f} s", flush=True)
    reference = load_module(project, "reference")
    scratch = scratch_shape(project)
    calls = {label: register(path, f"{NAME}_{label}", f"xlacc_{NAME}_ffi", scratch) for label, path in libraries.items()}
    report: dict = {"environment": environment(), "config": {k: v for k, v in vars(args).items() if k not in ("out", "workdir")}}
    print(json.dumps(report["environment"], indent=1), flush=True)

    if args.check:
        report["check"] = {}
        for label, call in calls.items():
            print(f"numerics of build {label} (custom call vs float64 reference):", flush=True)
            report["check"][label] = check_grid(call, reference)

    operands, attrs = bench_inputs(reference, args, args.dtype, args.num_seqs)
    if args.profile:
        device_operands = [jnp.asarray(a) for a in operands]
        for _ in range(3):
            jax.block_until_ready(jax.jit(functools.partial(calls["default"], **attrs))(*device_operands))
        return 0

    copy = copy_gbps(args.samples, args.calls)
    copy_limit = max(copy.values())
    datasheet = next((v for k, v in DATASHEET_GBPS.items() if k in report["environment"]["device"]), None)
    report.update(copy_gbps=copy, datasheet_gbps=datasheet)
    shape = f"{args.seq_len} tokens, {args.num_heads} heads / {args.num_kv_heads} kv, head {args.head_size}, block {args.block_size}"
    print(f"\npaged attention decode, {shape}, on {report['environment']['device']}; copy {copy_limit:.0f} GB/s "
          f"({', '.join(f'{k} {v:.0f}' for k, v in copy.items())}), datasheet {datasheet or '?'} GB/s")  # fmt: skip

    main_case = time_case(calls, reference, operands, attrs, args, copy_limit, datasheet)
    report["main"] = main_case
    sweep = [int(n) for n in args.batch_sweep.split(",") if n.strip()]
    report["batch_sweep"] = [time_case(calls, reference, first_seqs(operands, n), attrs, args, copy_limit, datasheet) for n in sweep]
    report["long"] = []
    for seq_len in [int(n) for n in args.seq_lens.split(",") if n.strip()]:
        long_args = argparse.Namespace(**{**vars(args), "seq_len": seq_len})
        long_operands, long_attrs = bench_inputs(reference, long_args, args.dtype, 1)
        report["long"].append(time_case(calls, reference, long_operands, long_attrs, args, copy_limit, datasheet) | {"seq_len": seq_len})
        del long_operands
    default_only = {"default": calls["default"]}
    report["dtypes"] = []
    for dtype in filter(None, args.extra_dtypes.split(",")):
        extra, extra_attrs = bench_inputs(reference, args, dtype, args.num_seqs)
        report["dtypes"].append(time_case(default_only, reference, extra, extra_attrs, args, copy_limit, datasheet))
        del extra
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "paged_attention.json").write_text(json.dumps(report, indent=1))

    for case in [*report["batch_sweep"], *report["long"], *report["dtypes"], main_case]:
        print()
        print_case(case)
    best = main_case["results"][0]
    met = best["speedup"] >= GOAL_SPEEDUP and best["copy_share"] >= GOAL_COPY_SHARE
    print(f"goals (default build, {args.num_seqs} seqs, {args.dtype}): >= {GOAL_SPEEDUP}x the reference and >= "
          f"{100 * GOAL_COPY_SHARE:.0f}% of copy bandwidth: {'met' if met else 'NOT met'}")  # fmt: skip
    failed = [(label, r) for label, rows in report.get("check", {}).items() for r in rows if not r["ok"]]
    if failed:
        print(f"numerics FAILED in {len(failed)} cases")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
