"""Ragged paged attention (prefill and decode in one call) against the best peers in one process.

On a machine with an NVIDIA GPU and jax with CUDA, from the repository root (or build first where
nvcc is, with --build-only --arch sm_90 --workdir DIR, and carry DIR):

    PYTHONPATH=. python3 benchmarks/bench_ragged.py --workdir DIR [--prebuilt] --out ragged.json
    python3 benchmarks/bench_ragged.py --markdown ragged.json     # the table of benchmarks/RESULTS.md

Grid (bf16, 32 query / 8 kv heads, head 128, block 16): decode-only 64 x 2048, 256 x 2048,
8 x 8192, 4 x 32768; prefill-only 1 x 4096, 8 x 2048, 32 x 512 new tokens from an empty cache and
4 x 512 new tokens onto 8192 cached; mixed: 60 decoding sequences at 2048 + 4 chunks of 512
onto 1536 cached, also run as its two parts (two calls). Contenders, where they apply:

  xlacc       the ragged-paged-attention template's custom call
  decode      the paged-attention (decode) template, decode points
  cudnn       cuDNN's paged attention (jax private API, one guarded function): Tq = 1 for decode,
              Tq = the new tokens with PADDING_CAUSAL for prefill from an empty cache; onto a
              cached context cuDNN's causal mask is aligned top-left (wrong for a chunk), so it
              runs PADDING (the chunk sees the whole context: 3% more work than causal)
  pallas      jax.experimental.pallas.ops.gpu.paged_attention (decode), best of a few configs
  cudnn_sdpa  jax.nn.dot_product_attention(implementation="cudnn", is_causal=True), dense
              [B, S, H, D], prefill from an empty cache
  jnp         the template's reference under jax.jit, where XLA's temporaries fit

A time is one call of a chain of R calls in one jit, so host dispatch does not count: each call on
the same query, ordered after the call before by an optimization barrier, as `xlacc bench` chains
them (--chain fed: each call's output is the next query, as this script chained before the
fourteenth session: chained so, cuDNN's paged prefill at 32 x 512 took about 270-280 us on an
H200 where `xlacc bench` gave it 232.5, the op's own time alike in both; a layout copy between
cuDNN calls fed one into the next is the suspect); the contenders of a point take turns over --rounds rounds and
the median round counts (spread: the slowest round over the fastest). KV bytes per second are
compared with a device-to-device copy measured in the same process, TFLOP/s (the causal work:
4 x heads x head_size per attended position) with the card's dense bf16 peak.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.9")

import argparse
import functools
import json
import math
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_paged_attention as base  # noqa: E402

NAME, DECODE = "ragged", "decode"
NUM_HEADS, NUM_KV_HEADS, HEAD, BLOCK = 32, 8, 128, 16
PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0}  # dense bf16, SXM
CHAIN_SECONDS = 1e-3


@dataclass(frozen=True)
class Point:
    kind: str  # decode, prefill, mixed, part
    label: str
    q_lens: tuple[int, ...]
    kv_lens: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return sum(self.q_lens)

    @property
    def kv_bytes(self) -> int:
        return 2 * sum(self.kv_lens) * NUM_KV_HEADS * HEAD * 2

    @property
    def flops(self) -> int:
        attended = sum(kv - q + i + 1 for q, kv in zip(self.q_lens, self.kv_lens) for i in range(q))
        return 4 * attended * NUM_HEADS * HEAD

    @property
    def uniform(self) -> bool:
        return len(set(self.q_lens)) == 1 and len(set(self.kv_lens)) == 1

    @property
    def chain(self) -> int:
        estimate = self.kv_bytes / 2.5e12 + self.flops / 300e12 + 5e-6
        return int(min(32, max(1, math.ceil(CHAIN_SECONDS / estimate))))


def grid() -> list[Point]:
    points = [Point("decode", f"decode {s} x {c}", (1,) * s, (c,) * s) for s, c in ((64, 2048), (256, 2048), (8, 8192), (4, 32768))]
    points += [Point("prefill", f"prefill {s} x {n}", (n,) * s, (n,) * s) for s, n in ((1, 4096), (8, 2048), (32, 512))]
    points.append(Point("prefill", "prefill 4 x 512 onto 8192", (512,) * 4, (8704,) * 4))
    mixed_q, mixed_kv = (1,) * 60 + (512,) * 4, (2048,) * 64
    points.append(Point("mixed", "mixed 60 x 1 + 4 x 512 at 2048", mixed_q, mixed_kv))
    points.append(Point("part", "mixed: decode part 60 x 2048", (1,) * 60, (2048,) * 60))
    points.append(Point("part", "mixed: prefill part 4 x 512 at 2048", (512,) * 4, (2048,) * 4))
    return points


# -- operands -------------------------------------------------------------------------------------


def operands(point: Point, seed: int = 0) -> dict:
    """Device arrays in every layout the contenders read: one pool without spare blocks."""
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.key(seed), 4)
    seqs, pages = len(point.q_lens), -(-max(point.kv_lens) // BLOCK)
    cache_shape = (seqs * pages, BLOCK, NUM_KV_HEADS, HEAD)
    tables = jax.random.permutation(keys[3], seqs * pages).astype(jnp.int32).reshape(seqs, pages)
    query = jax.random.normal(keys[0], (point.tokens, NUM_HEADS, HEAD), jnp.bfloat16)
    key_cache, value_cache = (jax.random.normal(k, cache_shape, jnp.bfloat16) for k in keys[1:3])
    cu = jnp.asarray(np.concatenate([[0], np.cumsum(point.q_lens)]), jnp.int32)
    return {"query": query, "key_cache": key_cache, "value_cache": value_cache, "cu_q_lens": cu,
            "q_lens": jnp.asarray(point.q_lens, jnp.int32), "kv_lens": jnp.asarray(point.kv_lens, jnp.int32),
            "tables": tables, "num_seqs": jnp.asarray([seqs], jnp.int32)}  # fmt: skip


def cudnn_paged(query, key_cache, value_cache, q_lens, kv_lens, tables, *, scale, causal):
    """cuDNN's paged attention through jax's private API (a benchmark baseline only): query
    [B, Tq, H, D]; the pool must hold exactly B x blocks_per_seq blocks."""
    from jax._src.cudnn.fused_attention_stablehlo import MaskType, paged_attention

    page_table = tables[:, None, :, None]
    mask = MaskType.PADDING_CAUSAL if causal else MaskType.PADDING
    return paged_attention(query, key_cache, value_cache, q_lens, kv_lens, page_table, page_table, scale=scale, mask_type=mask)


def xlacc_call(xlacc_op, query, arrays: dict):
    """The ragged op on a query and a point's arrays (operands()), at the grid's scale."""
    return xlacc_op(query, arrays["key_cache"], arrays["value_cache"], arrays["cu_q_lens"], arrays["kv_lens"], arrays["tables"],
                    arrays["num_seqs"], scale=1.0 / math.sqrt(HEAD))


def decode_call(decode_op, query, arrays: dict):
    """The decode template's op on a decode point's query and arrays (operands())."""
    return decode_op(query, arrays["key_cache"], arrays["value_cache"], arrays["tables"], arrays["kv_lens"], scale=1.0 / math.sqrt(HEAD))


def contenders(point: Point, ops: dict, xlacc_op, decode_op, pallas_op, reference, sms: int) -> dict:
    """label -> (step(query, arrays) -> next query, arrays): each contender as a chainable step. The
    caches and tables go into the jitted chain as arguments: closed over, jax would compile them in
    as constants (seconds of compile per GiB of cache, and a copy of each)."""
    import jax
    import jax.numpy as jnp

    scale = 1.0 / math.sqrt(HEAD)
    seqs = len(point.q_lens)
    paged = {name: ops[name] for name in ("key_cache", "value_cache", "cu_q_lens", "q_lens", "kv_lens", "tables", "num_seqs")}

    found = {"xlacc": (functools.partial(xlacc_call, xlacc_op), paged)}
    if point.kind == "part":
        return found
    if point.kind == "decode":
        found["decode"] = (functools.partial(decode_call, decode_op), paged)
    if point.kind == "decode" and pallas_op is not None:  # None: skipped, so its page layout is not built
        to_pages = jax.jit(lambda c: c.transpose(2, 0, 1, 3))
        pages = {"k": to_pages(ops["key_cache"]), "v": to_pages(ops["value_cache"]), "tables": ops["tables"], "kv_lens": ops["kv_lens"]}
        for ks, pb in pallas_configs(point, sms):
            step = functools.partial(lambda q, a, ks, pb: pallas_op(q * scale, a["k"], a["v"], a["tables"], a["kv_lens"], k_splits=ks, pages_per_compute_block=pb), ks=ks, pb=pb)
            found[f"pallas {ks}x{pb}"] = (step, pages)
    if point.uniform:
        q_len = point.q_lens[0]
        causal = point.q_lens[0] == point.kv_lens[0]
        shaped = (seqs, q_len, NUM_HEADS, HEAD)

        def cudnn(q, a):
            out = cudnn_paged(q.reshape(shaped), a["key_cache"], a["value_cache"], a["q_lens"], a["kv_lens"], a["tables"], scale=scale, causal=causal)
            return out.reshape(q.shape)

        found["cudnn"] = (cudnn, paged)
        if point.kind == "prefill" and causal:
            dense = {name: jax.random.normal(jax.random.key(seed), (seqs, q_len, NUM_KV_HEADS, HEAD), jnp.bfloat16) for name, seed in (("k", 5), ("v", 6))}
            found["cudnn_sdpa"] = (lambda q, a: jax.nn.dot_product_attention(q.reshape(shaped), a["k"], a["v"], scale=scale, is_causal=True,
                                                                             implementation="cudnn").reshape(q.shape), dense)  # fmt: skip
    found["jnp"] = (lambda q, a: reference.reference(q, a["key_cache"], a["value_cache"], a["cu_q_lens"], a["kv_lens"], a["tables"], a["num_seqs"], scale=scale, xp=jnp), paged)
    return found


def pallas_configs(point: Point, sms: int) -> list[tuple[int, int]]:
    pages = point.kv_lens[0] // BLOCK
    splits = [k for k in (1, 2, 4, 8, 16, 32, 64) if pages % k == 0]
    filling = next((i for i, k in enumerate(splits) if len(point.q_lens) * NUM_KV_HEADS * k >= sms), len(splits) - 1)
    return sorted({(k, min(b, pages // k)) for k in splits[max(0, filling - 1) : filling + 1] for b in (8, 16)})


# -- timing ---------------------------------------------------------------------------------------


def compile_chain(step, first, arrays: dict, length: int, style: str = "barrier"):
    import jax

    def fed(q, a):
        for _ in range(length):
            q = step(q, a)
        return q

    def barrier(q, a):
        results, previous = [], None
        for _ in range(length):
            operands = (q, a)
            if previous is not None:
                operands, previous = jax.lax.optimization_barrier((operands, previous))
                results[-1] = previous
            previous = step(*operands)
            results.append(previous)
        return results

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jax.jit(fed if style == "fed" else barrier).lower(first, arrays).compile()


def seconds(compiled, args: tuple, samples: int) -> float:
    return base.seconds_per_call(compiled, args, samples, base.calls_lasting(compiled, args, 0.02, 100))


def free_bytes() -> int:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return int(stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0))


def measure(point: Point, found: dict, first, samples: int, rounds: int, chain: str = "barrier") -> dict:
    """Per contender: median and spread (max / min over rounds) of microseconds per call, the chain
    starting from query `first`."""
    import jax
    import jax.numpy as jnp

    compiled, row = {}, {"refused": {}, "compile_s": {}}
    for label, (step, arrays) in found.items():
        try:
            started = time.perf_counter()
            print(f"  {point.label}: compiling {label}", file=sys.stderr, flush=True)  # says where a stalled point stalls
            exe = compile_chain(step, first, arrays, point.chain, chain)
            row["compile_s"][label] = round(time.perf_counter() - started, 1)
            temp = int(getattr(exe.memory_analysis(), "temp_size_in_bytes", 0) or 0)
            if temp > 0.8 * free_bytes():
                row["refused"][label] = f"temporaries of {temp / 1e9:.1f} GB do not fit"
                continue
            compiled[label] = (exe, (first, arrays))
        except Exception as exc:  # a peer that cannot run this shape says why; the others go on
            row["refused"][label] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    once = {label: np.asarray(jax.jit(found[label][0])(first, found[label][1]).astype(jnp.float32)) for label in compiled if label in ("xlacc", "cudnn", "decode")}
    if "xlacc" in once:
        row["max_abs_diff"] = {label: float(np.max(np.abs(once["xlacc"] - out))) for label, out in once.items() if label != "xlacc"}
    labels = list(compiled)
    for label in labels:
        seconds(*compiled[label], 1)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for turn in range(rounds):
        for label in labels[turn % len(labels) :] + labels[: turn % len(labels)]:
            times[label].append(seconds(*compiled[label], samples) / point.chain * 1e6)
    row["us"] = {label: statistics.median(t) for label, t in times.items()}
    row["spread"] = {label: max(t) / min(t) for label, t in times.items()}
    pallas = {label: us for label, us in row["us"].items() if label.startswith("pallas")}
    if pallas:
        best = min(pallas, key=pallas.get)
        row["pallas_best"] = best
        row["us"]["pallas"] = pallas[best]
    return row


def summary(point: Point, row: dict, copy_gbps: float, peak: float) -> dict:
    us = row["us"]
    ours = us.get("xlacc")
    row.update(label=point.label, kind=point.kind, chain=point.chain, kv_mib=point.kv_bytes / 2**20, gflop=point.flops / 1e9)
    if ours:
        row["xlacc_copy_share"] = point.kv_bytes / (ours * 1e-6) / 1e9 / copy_gbps
        row["tflops"] = {label: point.flops / (t * 1e-6) / 1e12 for label, t in us.items()}
        row["xlacc_peak_share"] = row["tflops"]["xlacc"] / peak
        row["xlacc_vs"] = {label: t / ours for label, t in us.items() if label != "xlacc" and not label.startswith("pallas ")}
    return row


def markdown(report: dict) -> str:
    lines = [f"{report['environment']['device']}, {report['environment']['date']}, jax {report['environment']['jax']}; copy {report['copy_gbps']:.0f} GB/s",
             "", "| point | KV MiB | xlacc us | % copy | TFLOP/s (% peak) | cuDNN paged | decode template | Pallas | cuDNN SDPA (TFLOP/s) | jnp |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in report["rows"]:
        us, vs = row.get("us", {}), row.get("xlacc_vs", {})
        if "xlacc" not in us:
            lines.append(f"| {row['label']} | {row['kv_mib']:.0f} | not run: {row.get('refused')} |")
            continue
        cell = lambda name: f"{us[name]:.1f} us ({vs[name]:.2f}x)" if name in us else "-"  # noqa: E731
        sdpa = f"{us['cudnn_sdpa']:.1f} us ({row['tflops']['cudnn_sdpa']:.0f}; {vs['cudnn_sdpa']:.2f}x)" if "cudnn_sdpa" in us else "-"
        lines.append(f"| {row['label']} | {row['kv_mib']:.0f} | {us['xlacc']:.1f} (spread {row['spread']['xlacc']:.2f}) | {100 * row['xlacc_copy_share']:.0f}% | "
                     f"{row['tflops']['xlacc']:.0f} ({100 * row['xlacc_peak_share']:.0f}%) | {cell('cudnn')} | {cell('decode')} | {cell('pallas')} | {sdpa} | {cell('jnp')} |")  # fmt: skip
    if "mixed_vs_parts" in report:
        lines.append(f"\nmixed batch in one call: {report['mixed_vs_parts']['mixed_us']:.1f} us; its decode part + prefill part as two calls: "
                     f"{report['mixed_vs_parts']['parts_us']:.1f} us ({report['mixed_vs_parts']['parts_over_mixed']:.2f}x)")  # fmt: skip
    lines.append("\n(N.NNx: that contender's time over xlacc's; above 1 xlacc is faster.)")
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------


def build(workdir: Path, arch: str) -> None:
    """The ragged and the decode template's projects, rendered and built with nvcc side by side."""
    base.build_projects(workdir, ((NAME, "ragged-paged-attention"), (DECODE, "paged-attention")), arch)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--markdown":
        print(markdown(json.loads(Path(sys.argv[2]).read_text())))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--prebuilt", action="store_true")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", default="", help="run only the points whose label holds one of these texts (comma-separated)")
    parser.add_argument("--skip", default="", help="leave out these contenders (comma-separated: jnp, pallas, decode, cudnn, cudnn_sdpa)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chain", choices=("barrier", "fed"), default="barrier", help="how a chain orders its calls (see above)")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds; points left after it are listed as not run")
    args = parser.parse_args(argv)
    if args.build_only or not args.prebuilt:
        build(args.workdir, args.arch if args.build_only else base.gpu_arch())
        if args.build_only:
            return 0
    started = time.perf_counter()
    import jax
    from jax.experimental.pallas.ops.gpu import paged_attention as pallas_module

    ops = {}
    for name in (NAME, DECODE):
        module = base.load_module(args.workdir / name, "jax", name=name)
        module.register()
        ops[name] = getattr(module, name)
    reference = base.load_module(args.workdir / NAME, "reference", name=NAME)
    device = str(jax.devices()[0].device_kind)
    peak = next((v for k, v in PEAK_TFLOPS.items() if k in device), 989.0)
    sms = int(getattr(jax.devices()[0], "core_count", 0) or 132)
    copy = max(base.copy_gbps(10, 5).values())
    report = {"environment": base.environment(), "command": " ".join(sys.argv), "chain": args.chain, "copy_gbps": copy, "peak_tflops": peak, "rows": []}
    print(f"{device}: copy {copy:.0f} GB/s, peak {peak} TFLOP/s", flush=True)
    wanted = [text for text in args.only.split(",") if text]
    chosen = [p for text in wanted for p in grid() if text in p.label] if wanted else grid()  # in the order --only names them
    for point in dict.fromkeys(chosen):
        if time.perf_counter() - started > args.budget:
            report["rows"].append({"label": point.label, "kind": point.kind, "kv_mib": point.kv_bytes / 2**20, "refused": "not run: budget"})
            continue
        data = operands(point)
        pallas_op = None if "pallas" in args.skip.split(",") else pallas_module.paged_attention
        found = contenders(point, data, ops[NAME], ops[DECODE], pallas_op, reference, sms)
        found = {label: c for label, c in found.items() if label.split(" ")[0] not in args.skip.split(",")}
        row = measure(point, found, data["query"], args.samples, args.rounds, args.chain)
        row = summary(point, row, copy, peak)
        report["rows"].append(row)
        del data
        shown = " ".join(f"{k} {v:.1f}" for k, v in row["us"].items() if not k.startswith("pallas "))
        print(f"[{time.perf_counter() - started:5.0f} s] {point.label}: {shown} | vs {json.dumps({k: round(v, 2) for k, v in row.get('xlacc_vs', {}).items()})} "
              f"| diff {row.get('max_abs_diff')} | refused {row['refused']} | compile s {row['compile_s']}", flush=True)  # fmt: skip
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))
    by_label = {row["label"]: row for row in report["rows"]}
    parts = [by_label.get(p.label, {}).get("us", {}).get("xlacc") for p in grid() if p.kind in ("mixed", "part")]
    if all(parts):
        report["mixed_vs_parts"] = {"mixed_us": parts[0], "parts_us": parts[1] + parts[2], "parts_over_mixed": (parts[1] + parts[2]) / parts[0]}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
