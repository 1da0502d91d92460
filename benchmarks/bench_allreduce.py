"""The all-reduce a tensor-parallel decode step waits on, alone: [rows, hidden] bf16 summed over N
GPUs, chained as a step chains them (each on the last one's result), under XLA's default, XLA's
one-shot kernel and NCCL's protocol, algorithm and channel settings: one child process per setting,
since NCCL reads its environment once.

    python benchmarks/bench_allreduce.py --gpus 4 --out allreduce.jsonl      # 256 x 4096, 64 chained
    python benchmarks/bench_allreduce.py --gpus 4 --cpu                      # a dry run on 4 CPU devices

Each record: microseconds per all-reduce (median of --samples calls of --chain all-reduces), the
algorithm bandwidth (bytes / time) and the bus bandwidth (x 2 (N - 1) / N, what a ring moves per
GPU), to set against NVLink's 450 GB/s per direction on an H100 or H200.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ONE_SHOT = "--xla_gpu_unsupported_use_all_reduce_one_shot_kernel=true"
SETTINGS = {  # name: environment on top of the parent's (NVLink multicast stays off: NCCL_NVLS_ENABLE=0)
    "nccl default": {},
    "xla one-shot kernel": {"XLA_FLAGS": ONE_SHOT},
    "NCCL_PROTO=LL128": {"NCCL_PROTO": "LL128"},
    "NCCL_PROTO=LL": {"NCCL_PROTO": "LL"},
    "NCCL_PROTO=Simple": {"NCCL_PROTO": "Simple"},
    "NCCL_ALGO=Tree": {"NCCL_ALGO": "Tree"},
    "NCCL_MIN_NCHANNELS=32": {"NCCL_MIN_NCHANNELS": "32"},
}


def measure(gpus: int, rows: int, hidden: int, chain: int, samples: int) -> dict:
    """In this process: the chained all-reduces over the first `gpus` devices, timed."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(jax.devices()[:gpus], ("tp",))

    def chained(x):
        for _ in range(chain):
            x = jax.lax.psum(x, "tp") * (1.0 / gpus)  # the next one depends on this one, as in a step
        return x

    step = jax.jit(jax.shard_map(chained, mesh=mesh, in_specs=P("tp"), out_specs=P("tp")))
    x = jax.device_put(jnp.ones((gpus * rows, hidden), jnp.bfloat16), NamedSharding(mesh, P("tp")))
    step = step.lower(x).compile()  # compiled once, for its text and the timed calls
    hlo = step.as_text()
    for _ in range(2):
        x = jax.block_until_ready(step(x))
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        x = jax.block_until_ready(step(x))
        times.append(time.perf_counter() - start)
    us = statistics.median(times) / chain * 1e6
    size = rows * hidden * 2
    return {"us_per_all_reduce": round(us, 2), "bytes": size, "algbw_gbps": round(size / us / 1e3, 1),
            "busbw_gbps": round(size * 2 * (gpus - 1) / gpus / us / 1e3, 1), "all_reduces_in_hlo": hlo.count("all-reduce-start") or hlo.count(" all-reduce(")}  # fmt: skip


def child(args: argparse.Namespace, name: str) -> dict:
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", **SETTINGS[name]}
    if args.cpu:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.gpus}"
        env["JAX_PLATFORMS"] = "cpu"
    cmd = [sys.executable, __file__, "--measure", "--gpus", str(args.gpus), "--rows", str(args.rows), "--hidden", str(args.hidden),
           "--chain", str(args.chain), "--samples", str(args.samples)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout, check=False)
    if done.returncode != 0:
        return {"setting": name, "error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return {"setting": name, **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--rows", type=int, default=256, help="the decode step's sequences")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--chain", type=int, default=64, help="all-reduces per call: 2 per layer of an 8-layer step x 4")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--only", default="", help="comma-separated setting names")
    parser.add_argument("--cpu", action="store_true", help="on CPU devices (a dry run of the script)")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--out")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.gpus, args.rows, args.hidden, args.chain, args.samples)))
        return 0
    names = [n for n in SETTINGS if not args.only or n in args.only.split(",")]
    for name in names:
        try:
            record = child(args, name)
        except subprocess.TimeoutExpired:
            record = {"setting": name, "error": f"no result in {args.timeout:.0f} s"}
        line = json.dumps({**record, "gpus": args.gpus, "rows": args.rows, "hidden": args.hidden, "chain": args.chain})
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
