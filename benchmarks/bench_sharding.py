"""Benchmarks of the generated ops sharded over several GPUs, under vmap and under grad (issue 12).

Runs on a machine with two or more NVIDIA GPUs and jax with CUDA, from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_sharding.py --workdir DIR --out results.json

Projects are generated and built with xlacc (`xlacc new`, `xlacc build`; an existing build in
--workdir is used as it is). Every time is a median of interleaved samples taken in one process:

- sharded: 64M f32 add and [8192, 8192] rms norm (f32, bf16) split over the GPUs along their
  first dim, against XLA's own op on the same sharded inputs, with the collectives the compiled
  HLO of each holds; paged attention at 64 sequences x 2048 tokens (32/8 heads, head 128, bf16,
  block 16) split over sequences against the same call on one GPU;
- vmap: the add and rms-norm ops vmapped over a batch of 8, against one call on the same total
  size, with the number of custom calls and loops in the compiled HLO;
- grad: jax.test_util.check_grads of add and rms-norm on one GPU and sharded, against the reference.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_gpu import environment, interleaved, load_module, xlacc  # noqa: E402

COLLECTIVE = re.compile(r"\b(all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter)(?:-start)?\(")
GOALS = {"add": 0.95, "rms": 0.95, "paged_scaling": 1.8, "vmap": 1.05}
VMAP_BATCH = 8


PLATFORM = "cuda"  # "cpu" runs the same code on host devices (XLA_FLAGS=--xla_force_host_platform_device_count=2)


def project(workdir: Path, name: str, template: str, dtype: str):
    """The op of a jax-only project, generated and built once."""
    if not (workdir / name / "xlacc.toml").is_file():
        xlacc("new", name, "--template", template, "--platform", PLATFORM, "--framework", "jax", "--dtype", dtype, cwd=workdir)
    if not (workdir / name / name / f"lib{name}.so").is_file():
        xlacc("build", name, cwd=workdir)
    module = load_module(workdir / name, "jax")
    module.register()
    return getattr(module, name), load_module(workdir / name, "reference")


def collectives(fn, *args) -> list[str]:
    return sorted({m.group(1) for m in COLLECTIVE.finditer(fn.lower(*args).compile().as_text())})


def put(mesh, array, *spec):
    import jax

    return jax.device_put(array, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec)))


def row(bench: str, times: dict[str, float], baseline: str, **extra) -> dict:
    return {"bench": bench, "us": {k: t * 1e6 for k, t in times.items()}, "speed vs " + baseline: {k: times[baseline] / t for k, t in times.items()}, **extra}


# -- sharded ------------------------------------------------------------------------------------


def against_xla(bench: str, ours: tuple[str, object], xla: tuple[str, object], args: tuple, goal: float) -> dict:
    """Our op against XLA's own on the same sharded inputs: times, collectives, output sharding, difference."""
    import jax.numpy as jnp

    (our_name, custom), (xla_name, native) = ours, xla
    out = custom(*args)
    diff = float(jnp.max(jnp.abs(out.astype(jnp.float32) - native(*args).astype(jnp.float32))))
    times = interleaved({xla_name: native, our_name: custom}, *args)
    return row(
        bench, times, xla_name,
        collectives={our_name: collectives(custom, *args), xla_name: collectives(native, *args)},
        output_sharding=str(out.sharding.spec), max_abs_diff=diff, goal=goal,
    )  # fmt: skip


def bench_sharded_add(workdir: Path, mesh, n: int = 64 * 1024 * 1024) -> dict:
    import jax
    import jax.numpy as jnp

    op, _ = project(workdir, "add_f32", "add", "f32")
    x = put(mesh, jax.random.normal(jax.random.key(0), (n,), jnp.float32), "d")
    y = put(mesh, jax.random.normal(jax.random.key(1), (n,), jnp.float32), "d")
    ours, xla = ("add template", jax.jit(op)), ("xla add", jax.jit(lambda a, b: a + b))
    return against_xla(f"{n // 2**20}M f32 add split over {mesh.size} GPUs", ours, xla, (x, y), GOALS["add"])


def bench_sharded_rms(workdir: Path, mesh, dtype: str, size: int = 8192) -> dict:
    import jax
    import jax.numpy as jnp

    op, reference = project(workdir, f"rms_{dtype}", "rms-norm", dtype)
    jdtype = {"f32": jnp.float32, "bf16": jnp.bfloat16}[dtype]
    x = put(mesh, jax.random.normal(jax.random.key(2), (size, size), jnp.float32).astype(jdtype), "d", None)
    w = put(mesh, jax.random.normal(jax.random.key(3), (size,), jnp.float32).astype(jdtype))
    ours = ("rms-norm template", jax.jit(lambda a, b: op(a, b, eps=1e-6)))
    xla = ("xla fused rms norm", jax.jit(lambda a, b: reference.reference(a, b, eps=1e-6, xp=jnp)))
    return against_xla(f"rms norm [{size}, {size}] {dtype} split over {mesh.size} GPUs by rows", ours, xla, (x, w), GOALS["rms"])


def bench_sharded_paged_attention(workdir: Path, mesh, seqs: int = 64, tokens: int = 2048, steps: int = 20) -> dict:
    """One call, and `steps` decode steps in one jit (each step's output is the next query), so
    that the GPUs' throughput is timed rather than the host's dispatch of a ~100 us call to two
    devices; on one GPU, on the GPUs split by sequence, and on one GPU for one device's share."""
    import jax
    import numpy as np

    op, reference = project(workdir, "decode_bf16", "paged-attention", "bf16")
    operands, attrs = reference.make_inputs(np.random.default_rng(0), "bf16", [tokens] * seqs, num_heads=32, num_kv_heads=8, head_size=128, block_size=16)
    share = seqs // mesh.size
    device = mesh.devices.flat[0]
    one = [jax.device_put(a, device) for a in operands]
    split = [put(mesh, operands[0], "d"), put(mesh, operands[1]), put(mesh, operands[2]), put(mesh, operands[3], "d"), put(mesh, operands[4], "d")]
    part = [one[0][:share], one[1], one[2], one[3][:share], one[4][:share]]
    call = jax.jit(functools.partial(op, **attrs))

    @jax.jit
    def decode(query, *rest):
        return jax.lax.fori_loop(0, steps, lambda _, q: op(q, *rest, **attrs), query)

    diff = float(np.max(np.abs(np.asarray(call(*one), np.float32) - np.asarray(call(*split), np.float32))))
    calls = interleaved({"one GPU": lambda *a: call(*a[:5]), f"{mesh.size} GPUs": lambda *a: call(*a[5:])}, *one, *split)
    loops = interleaved(
        {"one GPU": lambda *a: decode(*a[:5]), f"{mesh.size} GPUs": lambda *a: decode(*a[5:10]), f"one GPU, {share} sequences": lambda *a: decode(*a[10:])},
        *one, *split, *part,
    )  # fmt: skip
    per_step = {k: t / steps for k, t in loops.items()}
    return row(
        f"paged attention {seqs} x {tokens}, bf16, split over {mesh.size} GPUs by sequence: {steps} decode steps in one jit, per step",
        per_step, "one GPU",
        single_call=row("one call per jit", calls, "one GPU"),
        collectives=collectives(call, *split), loop_collectives=collectives(decode, *split),
        max_abs_diff_vs_one_gpu=diff, goal=GOALS["paged_scaling"],
    )  # fmt: skip


# -- vmap and grad ------------------------------------------------------------------------------


def bench_vmap(workdir: Path, n: int = 64 * 1024 * 1024, size: int = 8192) -> list[dict]:
    import jax
    import jax.numpy as jnp

    add, _ = project(workdir, "add_f32", "add", "f32")
    rms, _ = project(workdir, "rms_f32", "rms-norm", "f32")
    x, y = (jax.random.normal(jax.random.key(k), (n,), jnp.float32) for k in (4, 5))
    a = jax.random.normal(jax.random.key(6), (size, size), jnp.float32)
    w = jax.random.normal(jax.random.key(7), (size,), jnp.float32)
    cases = [
        (f"{n // 2**20}M f32 add", jax.jit(add), jax.jit(jax.vmap(add)), (x, y), (x.reshape(VMAP_BATCH, -1), y.reshape(VMAP_BATCH, -1))),
        (
            f"rms norm [{size}, {size}] f32",
            jax.jit(lambda p, q: rms(p, q)),
            jax.jit(jax.vmap(lambda p, q: rms(p, q), in_axes=(0, None))),
            (a, w),
            (a.reshape(VMAP_BATCH, -1, size), w),
        ),
    ]
    rows = []
    for name, single, batched, args, batched_args in cases:
        compiled = batched.lower(*batched_args).compile().as_text()
        launches = len(re.findall(r"custom-call\(", compiled))
        loops = len(re.findall(r"\bwhile\(", compiled))
        k = len(args)
        times = interleaved(
            {"unbatched": lambda *z, f=single, k=k: f(*z[:k]), f"vmap over {VMAP_BATCH}": lambda *z, f=batched, k=k: f(*z[k:])}, *args, *batched_args
        )
        rows.append(row(f"vmap: {name}", times, "unbatched", custom_calls=launches, loops=loops, goal_time_ratio=GOALS["vmap"]))
    return rows


def check_grads(workdir: Path, mesh) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.test_util import check_grads as jax_check_grads

    rows = []
    for name, template, shapes in (("add_f32", "add", [(4098,), (4098,)]), ("rms_f32", "rms-norm", [(512, 1000), (1000,)])):
        op, reference = project(workdir, name, template, "f32")
        rng = np.random.default_rng(8)
        args = [jnp.asarray(rng.standard_normal(s, dtype=np.float32)) for s in shapes]
        jax_check_grads(op, args, order=1, modes=("rev",), eps=1e-3)
        cotangent = jnp.asarray(rng.standard_normal(shapes[0], dtype=np.float32))
        got = jax.vjp(op, *args)[1](cotangent)
        want = jax.vjp(functools.partial(reference.reference, xp=jnp), *args)[1](cotangent)
        rows_split = ("d", *([None] * (len(shapes[0]) - 1)))
        split = [put(mesh, args[0], *rows_split)] + [put(mesh, a) for a in args[1:]]
        split_cotangent = put(mesh, cotangent, *rows_split)
        sharded = jax.jit(lambda *a, f=op, c=split_cotangent: jax.vjp(f, *a)[1](c))(*split)
        rows.append(
            {
                "bench": f"grad: {template}",
                "check_grads": "passed",
                "max abs diff vs reference vjp": max(float(jnp.max(jnp.abs(g - r))) for g, r in zip(got, want)),
                f"max abs diff sharded over {mesh.size} GPUs": max(float(jnp.max(jnp.abs(g - r))) for g, r in zip(sharded, want)),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where to write the JSON")
    parser.add_argument("--workdir", type=Path, help="where the projects are generated and built (default: a temporary folder)")
    parser.add_argument("--only", default="add,rms,paged,vmap,grad", help="which benchmarks to run (comma-separated)")
    args = parser.parse_args()
    import jax
    import numpy as np

    gpus = jax.devices("gpu" if PLATFORM == "cuda" else "cpu")
    if len(gpus) < 2:
        raise SystemExit(f"needs two or more GPUs; jax sees {len(gpus)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="xlacc-sharding-"))
    workdir.mkdir(parents=True, exist_ok=True)
    mesh = jax.sharding.Mesh(np.array(gpus), ("d",))
    results = {"environment": environment(), "rows": []}
    benches = {
        "add": lambda: bench_sharded_add(workdir, mesh),
        "rms": lambda: [bench_sharded_rms(workdir, mesh, "f32"), bench_sharded_rms(workdir, mesh, "bf16")],
        "paged": lambda: bench_sharded_paged_attention(workdir, mesh),
        "vmap": lambda: bench_vmap(workdir),
        "grad": lambda: check_grads(workdir, mesh),
    }
    for name in args.only.split(","):
        produced = benches[name.strip()]()
        for item in produced if isinstance(produced, list) else [produced]:
            results["rows"].append(item)
            print(json.dumps(item), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
