"""The decode step of examples/decode_step.py on the GPU: xlacc's two ops against the same step in jax.numpy.

    PYTHONPATH=. python3 benchmarks/bench_decode_step.py --workdir DIR [--prebuilt] --out decode_step.json

(--build-only --arch sm_90 builds both projects with nvcc where there is no GPU.) Per shape
(sequences x context; 32 query heads, 8 kv heads, head 128, block 16, bf16, --layers layers):
the step's time with the caches donated, xlacc (paged-kv-write then paged-attention per layer)
against jax.numpy (a scatter, then the attention reference), and whether the compiled step
aliases every cache (no copy). Then the cache write alone, donated, on caches of two sizes as
the new tokens grow: its time must follow the tokens, not the cache, which a copy would. Each
write is timed as one jit call (host dispatch included) and as one of 16 writes chained in one
jit (the GPU's time); in place means the donated cache's buffer came back as the result.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "examples"), str(Path(__file__).resolve().parent)]
import bench_paged_attention as base  # noqa: E402
import decode_step as example  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--prebuilt", action="store_true")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--shapes", default="64x2048,1x32768,256x512", help="SEQSxCONTEXT,...")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--num-heads", type=int, default=32)
    parser.add_argument("--num-kv-heads", type=int, default=8)
    parser.add_argument("--head-size", type=int, default=128)
    parser.add_argument("--write-blocks", default="4096,65536", help="blocks of the caches the write-alone sweep writes into")
    parser.add_argument("--write-tokens", default="1,16,256,4096,65536")
    parser.add_argument("--samples", type=int, default=7)
    return parser.parse_args(argv)


PROJECTS = ((example.ATTEND, "paged-attention"), (example.WRITE, "paged-kv-write"))


def build(workdir: Path, arch: str) -> None:
    base.build_projects(workdir, PROJECTS, arch)


def timed(step, state, *, samples: int, calls: int = 5):
    """Median seconds per call of state = step(state) (the state donated each call)."""
    import jax

    for _ in range(2):
        state = step(state)
    jax.block_until_ready(state)
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(calls):
            state = step(state)
        jax.block_until_ready(state)
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times), state


def cache_copies(compiled_text: str, cache_shape: tuple[int, ...]) -> int:
    """Copy instructions of a cache-shaped array in compiled HLO."""
    dims = ",".join(map(str, cache_shape))
    return sum(1 for line in compiled_text.splitlines() if f"[{dims}]" in line and " copy(" in line)


def step_case(ops, args, seqs: int, context: int) -> dict:
    import jax
    import jax.numpy as jnp

    write, attend, write_ref, attend_ref = ops
    model = example.Model(layers=args.layers, seqs=seqs, num_heads=args.num_heads, num_kv_heads=args.num_kv_heads,
                          head_size=args.head_size, max_context=context)  # fmt: skip
    rng = np.random.default_rng(0)
    blocks_per_seq = context // example.BLOCK_SIZE
    cache_shape = (seqs * blocks_per_seq, example.BLOCK_SIZE, model.num_kv_heads, model.head_size)
    keys = jax.random.split(jax.random.key(0), 2 * model.layers)
    caches = tuple((jax.random.normal(keys[2 * i], cache_shape, jnp.bfloat16), jax.random.normal(keys[2 * i + 1], cache_shape, jnp.bfloat16))
                   for i in range(model.layers))  # fmt: skip
    tables = jnp.asarray(rng.permutation(seqs * blocks_per_seq).astype(np.int32).reshape(seqs, blocks_per_seq))
    lens = np.full(seqs, context - 1, np.int32)  # the new token is the context's last
    slots = jnp.asarray((np.asarray(tables)[np.arange(seqs), lens // example.BLOCK_SIZE] * example.BLOCK_SIZE + lens % example.BLOCK_SIZE).astype(np.int32))
    draw = lambda heads, k: jax.random.normal(k, (model.layers, seqs, heads, model.head_size), jnp.bfloat16)  # noqa: E731
    q, k_new, v_new = draw(model.num_heads, keys[0]), draw(model.num_kv_heads, keys[1]), draw(model.num_kv_heads, keys[2])
    fixed = (tables, jnp.asarray(lens + 1), slots)
    scale = 1.0 / np.sqrt(model.head_size)
    steps = {"xlacc": example.make_step(write, attend, scale=scale),
             "jnp": example.make_step(functools.partial(write_ref, xp=jnp), functools.partial(attend_ref, xp=jnp), scale=scale)}  # fmt: skip
    row = {"seqs": seqs, "context": context, "layers": model.layers, "kv_bytes_per_step": 2 * model.layers * seqs * context * model.num_kv_heads * model.head_size * 2}
    for label, step in steps.items():
        compiled = step.lower(q, k_new, v_new, caches, *fixed).compile().as_text()
        row[f"{label}_cache_copies"] = cache_copies(compiled, cache_shape)
        seconds, caches = timed(lambda c, step=step: step(q, k_new, v_new, c, *fixed)[1], caches, samples=args.samples)
        row[f"{label}_us"] = seconds * 1e6
    row["speedup"] = row["jnp_us"] / row["xlacc_us"]
    return row


WRITE_CHAIN = 16  # writes per jit call in the chained timing, which leaves host dispatch out


def chained_writes(write, length: int):
    def run(key, value, key_cache, value_cache, slots):
        for _ in range(length):
            key_cache, value_cache = write(key, value, key_cache, value_cache, slots)
        return key_cache, value_cache

    return run


def write_sweep(ops, args) -> list[dict]:
    """The write alone, donated, on caches of each of --write-blocks blocks, as the new tokens grow."""
    rows = []
    for blocks in [int(b) for b in args.write_blocks.split(",")]:
        rows += write_sweep_one_cache(ops, args, blocks)
    return rows


def in_place(writer, args_before: list) -> bool:
    """Whether a donated call hands back the caches' own buffers (the key cache is args_before[2])."""
    import jax

    pointer = args_before[2].unsafe_buffer_pointer()
    out = jax.block_until_ready(writer(*args_before))
    return out[0].unsafe_buffer_pointer() == pointer and args_before[2].is_deleted(), out


def write_sweep_one_cache(ops, args, blocks: int) -> list[dict]:
    import jax
    import jax.numpy as jnp

    write, _, write_ref, _ = ops
    shape = (blocks, example.BLOCK_SIZE, args.num_kv_heads, args.head_size)
    keys = jax.random.split(jax.random.key(1), 4)
    caches = (jax.random.normal(keys[0], shape, jnp.bfloat16), jax.random.normal(keys[1], shape, jnp.bfloat16))
    cache_bytes = 2 * caches[0].nbytes
    rows = []
    plain = {"xlacc": write, "jnp": functools.partial(write_ref, xp=jnp)}
    writers = {label: jax.jit(op, donate_argnums=(2, 3)) for label, op in plain.items()}
    chains = {label: jax.jit(chained_writes(op, WRITE_CHAIN), donate_argnums=(2, 3)) for label, op in plain.items()}
    for tokens in [int(t) for t in args.write_tokens.split(",") if int(t) <= blocks * example.BLOCK_SIZE]:
        slots = jax.random.permutation(keys[2], blocks * example.BLOCK_SIZE)[:tokens].astype(jnp.int32)
        key, value = (jax.random.normal(k, (tokens, args.num_kv_heads, args.head_size), jnp.bfloat16) for k in jax.random.split(keys[3]))
        row = {"tokens": tokens, "cache_bytes": cache_bytes, "bytes_written": 2 * int(key.nbytes)}
        for label, writer in writers.items():
            compiled = writer.lower(key, value, *caches, slots).compile().as_text()
            row[f"{label}_cache_copies"] = cache_copies(compiled, shape)
            row[f"{label}_in_place"], caches = in_place(writer, [key, value, *caches, slots])
            seconds, caches = timed(lambda c, writer=writer: writer(key, value, *c, slots), caches, samples=args.samples)
            row[f"{label}_us"] = seconds * 1e6
            seconds, caches = timed(lambda c, chain=chains[label]: chain(key, value, *c, slots), caches, samples=args.samples, calls=2)
            row[f"{label}_chained_us"] = seconds / WRITE_CHAIN * 1e6
        rows.append(row)
        print(f"  write {tokens:>6} tokens into {cache_bytes / 1e9:.2f} GB of cache: xlacc {row['xlacc_us']:8.1f} us ({row['xlacc_chained_us']:7.1f} chained), "
              f"jnp scatter {row['jnp_us']:8.1f} us ({row['jnp_chained_us']:7.1f} chained) "
              f"(in place: {row['xlacc_in_place']}, {row['jnp_in_place']}; cache copies in the HLO: {row['xlacc_cache_copies']}, {row['jnp_cache_copies']})",
              flush=True)  # fmt: skip
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.build_only or not args.prebuilt:
        build(args.workdir, args.arch if args.build_only else base.gpu_arch())
        if args.build_only:
            return 0
    ops = example.load_ops(args.workdir)
    import jax

    jax.devices()
    copy = base.copy_gbps(10, 5)
    report = {"environment": base.environment(), "command": " ".join(sys.argv), "copy_gbps": copy, "steps": [], "write": []}
    print(json.dumps(report["environment"]), f"copy {max(copy.values()):.0f} GB/s", flush=True)
    for shape in filter(None, args.shapes.split(",")):
        seqs, context = (int(v) for v in shape.split("x"))
        row = step_case(ops, args, seqs, context)
        report["steps"].append(row)
        print(f"decode step, {args.layers} layers, {seqs} x {context}: xlacc {row['xlacc_us']:.1f} us, jax.numpy {row['jnp_us']:.1f} us "
              f"({row['speedup']:.2f}x); cache copies in the compiled step: xlacc {row['xlacc_cache_copies']}, jnp {row['jnp_cache_copies']}", flush=True)  # fmt: skip
    report["write"] = write_sweep(ops, args)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
