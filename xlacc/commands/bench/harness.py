"""The bench child: ``python -m xlacc.commands.bench.harness --project DIR --records FILE [...]``.

For each problem it puts the operands on the device, prepares every contender (the op, the op
under vmap, XLA's own implementation of the reference, the peers), compiles each as a chain
(:mod:`xlacc.commands.bench.timing`), picks the fastest configuration of a peer that offers several, and
times them all in turns. Raw samples go to the records; ``xlacc bench`` does the statistics.

Exit codes as the run-smoke harnesses: 0 done; 1 a step failed; 3 a cuda project where jax sees no GPU.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from xlacc.commands.bench import environment, peers as peers_mod, timing
from xlacc.commands.bench.cards import card_for
from xlacc.commands.new import transform_plan
from xlacc.commands.smoke.harness import DEFAULT_SIZES, Harness, Project, as_tuple, first_line, leave, load_project, spec_dtype
from xlacc.commands.smoke.records import RecordWriter

COPY_BYTES = {"gpu": 256 << 20, "cpu": 32 << 20}
CPU_CACHE_FALLBACK_MIB = 32.0
PEER_PICK_SAMPLES = 2
COMPILE_THREADS = 8
MAX_SETS = 256  # operand copies --cold-l2 rotates through at most (a problem of a few bytes would need millions)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Time a project's op against its baselines and peers.")
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--records", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default="")
    parser.add_argument("--shapes", default="", help="shapes for the reference's bench_inputs: 64x2048,8x8192")
    parser.add_argument("--dtypes", default="")
    parser.add_argument("--peer", action="append", default=[], help="module:function (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--cold-l2", action="store_true")
    parser.add_argument("--vmap", type=int, default=0, help="also time the op under vmap over this many examples")
    parser.add_argument("--trace", type=Path)
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.shapes = [tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",") if s.strip()]
    args.dtypes = [d for d in args.dtypes.split(",") if d.strip()]
    return args


class Problem:
    """One row group of the table: a shape (or size) and dtype, its operands and attributes."""

    def __init__(self, label: str, operands: list[Any], attrs: dict[str, Any]):
        self.label, self.operands, self.attrs = label, operands, attrs


class BenchHarness(Harness):
    wordings: dict = {}

    def __init__(self, args: argparse.Namespace, writer: RecordWriter):
        super().__init__(writer)
        self.args = args
        self.project: Project | None = None
        self.device: Any = None
        self.op: Any = None
        self.on_gpu = False
        self.dispatch = 0.0
        self.l2_bytes = 0
        self.traced = 0

    @property
    def spec(self):
        return self.project.spec

    def run(self) -> int:
        with self.step("load", "project"):
            self.project = load_project(self.args.project)
        if self.project is None:
            return self.finish()
        with self.step("start jax", "jax"):
            self.start()
        if self.op is None:
            return self.finish()
        with self.step("copy and dispatch", "copy"):
            self.measure_limits()
        for number, make in enumerate(self.problems(), start=1):
            with self.step(f"bench problem {number}", f"bench problem {number}"):
                self.bench(make())
        return self.finish()

    # -- setting up ----------------------------------------------------------------------------
    def start(self) -> None:
        import jax  # lazy: jax only in the bench child

        dtypes = {d for t in self.spec.inputs + self.spec.outputs for d in t.dtypes}
        if dtypes & {"f64", "i64"}:
            jax.config.update("jax_enable_x64", True)
        platform = "cpu" if self.spec.platform == "cpu" else "gpu"
        try:
            self.device = jax.devices(platform)[0]
        except RuntimeError:
            self.needs_gpu = True
            self.check("device", None, f"not run: {self.spec.name} is a cuda project and jax sees no GPU here")
            return
        self.on_gpu = platform == "gpu"
        ops = self.project.module("jax")
        ops.register()
        self.op = getattr(ops, self.spec.name)
        self.writer.data("bench_env", environment.collect(self.device))

    def measure_limits(self) -> None:
        card = card_for(str(self.device.device_kind), self.device.platform)
        l2_mib = card.l2_mib if card else (environment.cpu_cache_mib() or CPU_CACHE_FALLBACK_MIB)
        self.l2_bytes = int(l2_mib * 2**20)
        self.dispatch = timing.dispatch_seconds(self.device)
        copy = timing.copy_rate(self.device, COPY_BYTES[self.device.platform], on_gpu=self.on_gpu)
        self.writer.data("bench_limits", {"dispatch_s": self.dispatch, **copy, "copy_bytes": COPY_BYTES[self.device.platform], "l2_bytes": self.l2_bytes,
                                          "l2_from": "the cards table" if card else "the CPU's largest cache (sysfs)"})  # fmt: skip

    def problems(self):
        """The shapes asked for (the reference's bench_inputs) or sizes (its example_inputs), by
        dtype; with neither, the reference's BENCH_SHAPES for this platform, else run-smoke's sizes."""
        rng = lambda: np.random.default_rng(self.args.seed)  # noqa: E731 (every problem from the same seed)
        module = self.project.reference_module
        shapes = self.args.shapes
        if not shapes and not self.args.sizes:
            shapes = [tuple(s) for s in getattr(module, "BENCH_SHAPES", {}).get("gpu" if self.on_gpu else "cpu", ())]
        if shapes and not hasattr(module, "bench_inputs"):
            self.failed = True
            self.writer.data("usage_error", f"--shape needs bench_inputs(shape, rng, dtype) in {self.spec.reference_file}; it has none: use --sizes")
            return
        dtypes = self.args.dtypes or [self.project.dtypes()[0]]
        for dtype in dtypes:
            if shapes:
                axes = tuple(getattr(module, "BENCH_AXES", ()))
                yield from (functools.partial(self.shaped, module, shape, axes, dtype, rng()) for shape in shapes)
                continue
            yield from (functools.partial(self.sized, size, dtype, rng()) for size in self.args.sizes or DEFAULT_SIZES["gpu" if self.on_gpu else "cpu"])

    def shaped(self, module: Any, shape: tuple[int, ...], axes: tuple[str, ...], dtype: str | None, rng: Any) -> Problem:
        made = module.bench_inputs(shape, rng, dtype) if dtype else module.bench_inputs(shape, rng)
        return Problem(self.shape_label(shape, axes, made[0], dtype), list(made[0]), dict(made[1]))

    def sized(self, size: int, dtype: str | None, rng: Any) -> Problem:
        operands, attrs = self.project.example_inputs(size, rng, dtype)
        return Problem(self.size_label(size, operands), operands, attrs)

    @staticmethod
    def shape_label(shape: tuple[int, ...], axes: tuple[str, ...], operands: list[Any], dtype: str | None) -> str:
        named = " ".join(f"{a}={d}" for a, d in zip(axes, shape)) if len(axes) == len(shape) else "x".join(map(str, shape))
        return f"{named} {dtype or spec_dtype(operands[0])}"

    @staticmethod
    def size_label(size: int, operands: list[Any]) -> str:
        return f"n={size} {'/'.join(dict.fromkeys(spec_dtype(a) for a in operands))}"

    # -- one problem -------------------------------------------------------------------------------
    def bench(self, problem: Problem) -> None:
        import jax  # lazy: jax only in the bench child

        operands = [jax.device_put(a, self.device) for a in problem.operands]
        op = functools.partial(self.op, **problem.attrs)
        outputs = as_tuple(jax.block_until_ready(jax.jit(op)(*operands)))
        result_bytes = sum(o.nbytes for o in outputs)
        host_outputs = [np.asarray(o) for o in outputs]
        contenders = self.contenders(problem, operands, op)
        unavailable = [c for c in contenders if isinstance(c, dict)]
        contenders = [c for c in contenders if not isinstance(c, dict)]
        length = timing.chain_length(timing.per_call_seconds(op, operands, self.on_gpu), result_bytes, self.on_gpu)
        sets = self.rotation(operands)
        for contender in contenders:
            contender.operand_sets = self.copies(contender.operand_sets[0], sets)
        self.compile_all(contenders, length, unavailable)
        contenders = self.pick_fastest(self.runnable(contenders, length, unavailable), length)
        for contender in contenders:
            timing.calibrate(contender, length, timing.SAMPLE_SECONDS, self.on_gpu)
        timing.interleave(contenders, length, self.args.rounds, self.args.samples)
        if self.args.trace:
            self.trace(contenders, problem.label)
        first = host_outputs[0]
        self.writer.data("bench_case", {
            "label": problem.label,
            "shapes": [[spec_dtype(a), list(np.shape(a))] for a in problem.operands],
            "bytes": self.project.bytes_moved(problem.operands, host_outputs),
            "flops": self.flops(problem.operands, host_outputs),
            "dtype": spec_dtype(problem.operands[0]),
            "chain": length,
            "sets": sets,
            "set_bytes": sum(a.nbytes for a in operands),
            "l2_bytes": self.l2_bytes,
            "launches_in_chain": self.launches(contenders, length),  # as many as calls (checked below)
            "contenders": [self.contender_record(c, first) for c in contenders],
            "unavailable": unavailable,
        })  # fmt: skip
        launches = self.launches(contenders, length)
        if self.on_gpu and launches != length:  # XLA merged or dropped calls: the time is not R kernels'
            self.check(f"bench {problem.label}", False, f"the compiled chain of {length} calls holds {launches} custom calls to {self.spec.target}: "
                       "XLA merged or dropped some, so its time per call is not the kernel's")  # fmt: skip
            return
        self.check(f"bench {problem.label}", True, f"{len(contenders)} timed, {length} calls per chain, {sets} operand set(s)")

    def contenders(self, problem: Problem, operands: list[Any], op: Any) -> list[Any]:
        import jax  # lazy: jax only in the bench child

        found: list[Any] = [timing.Contender(self.spec.name, "op", op, [operands])]
        if self.args.vmap:
            found.append(self.vmap_contender(problem, op))
        reference = functools.partial(self.project.reference, xp=jax.numpy, **problem.attrs)
        found.append(timing.Contender("xla", "xla", reference, [operands], "the reference under jax.jit (xp=jax.numpy)"))
        for reference_name in self.args.peer:
            try:
                calls = peers_mod.prepare(reference_name, operands, problem.attrs, self.device)
            except peers_mod.PeerUnavailable as exc:
                found.append({"name": peers_mod.name_of(reference_name), "reason": str(exc)})
                continue
            except Exception as exc:  # the peer's own code failed: said, the bench goes on
                found.append({"name": peers_mod.name_of(reference_name), "reason": f"prepare failed: {first_line(exc)}"})
                continue
            found += [timing.Contender(c.label, "peer", c.call, [[jax.device_put(a, self.device) for a in c.operands]], c.note) for c in calls]
        return found

    def vmap_contender(self, problem: Problem, op: Any) -> Any:
        """The op under jax.vmap over --vmap examples cut from the same operands: the same total size."""
        import jax  # lazy: the child imports jax once the project is loaded

        folding = transform_plan.folding_inputs(self.spec) or ()
        batch = self.args.vmap
        cut = [a.reshape((batch, a.shape[0] // batch) + a.shape[1:]) if t.name in folding and a.ndim and a.shape[0] % batch == 0 else None
               for t, a in zip(self.spec.inputs, problem.operands)]  # fmt: skip
        if not any(c is not None for c in cut):
            return {"name": f"vmap x{batch}", "reason": f"no input's leading dim splits into {batch} examples (or the op does not fold a batch)"}
        in_axes = [0 if c is not None else None for c in cut]
        batched = [c if c is not None else a for c, a in zip(cut, problem.operands)]
        shape = list(np.shape(next(c for c in cut if c is not None)))
        return timing.Contender(f"vmap x{batch}", "vmap", jax.vmap(op, in_axes=in_axes), [[jax.device_put(a, self.device) for a in batched]],
                                f"jax.vmap over {shape[0]} examples of {shape[1:]}, the same elements as the unbatched call")  # fmt: skip

    def rotation(self, operands: list[Any]) -> int:
        """Operand sets each call rotates through: 1, or with --cold-l2 enough for twice the L2."""
        if not self.args.cold_l2:
            return 1
        nbytes = max(1, sum(a.nbytes for a in operands))
        return min(MAX_SETS, max(2, math.ceil(2 * self.l2_bytes / nbytes)))

    @staticmethod
    def copies(operands: list[Any], sets: int) -> list[list[Any]]:
        import jax.numpy as jnp  # lazy: jax only in the bench child

        return [list(operands)] + [[jnp.copy(a) for a in operands] for _ in range(sets - 1)]

    def compile_all(self, contenders: list[Any], length: int, unavailable: list[dict]) -> None:
        """Compile every chain (in threads: XLA compiles without the GIL); a contender that does not
        compile is moved to ``unavailable`` (XLA's reference too: at a large shape its jnp attention
        may not fit, and the op's figures still count), the op's own failure is raised."""

        def compile_one(contender):
            try:
                timing.compile_chain(contender, length, self.scope(contender), self.on_gpu)
                return None
            except Exception as exc:
                if contender.role == "op":
                    raise
                return exc

        with ThreadPoolExecutor(max_workers=COMPILE_THREADS if self.on_gpu else 1) as pool:
            errors = list(pool.map(compile_one, contenders))
        for contender, error in zip(list(contenders), errors):
            if error is not None:
                unavailable.append({"name": contender.name, "reason": f"does not compile here: {first_line(error)[:300]}"})
                contenders.remove(contender)

    def runnable(self, contenders: list[Any], length: int, unavailable: list[dict]) -> list[Any]:
        """The contenders whose chain runs (warmed up and calibrated); another contender's failure at
        run time moves it to ``unavailable``, the op's is raised."""
        kept = []
        for contender in contenders:
            try:
                timing.calibrate(contender, length, timing.SAMPLE_SECONDS, self.on_gpu)
            except Exception as exc:
                if contender.role == "op":
                    raise
                unavailable.append({"name": contender.name, "reason": f"failed when run: {first_line(exc)[:300]}"})
                continue
            kept.append(contender)
        return kept

    def scope(self, contender: Any) -> str:
        """The jax.named_scope a contender's calls run under: the op's name for the op itself."""
        if contender.role == "op":
            return self.spec.name
        return f"{self.spec.name}.{''.join(ch if ch.isalnum() else '_' for ch in contender.name).strip('_')}"

    def pick_fastest(self, contenders: list[Any], length: int) -> list[Any]:
        """Of a peer's configurations (labels sharing the part before " ("), keep the fastest."""
        groups: dict[str, list[Any]] = {}
        for contender in contenders:
            groups.setdefault(contender.name.split(" (")[0] if contender.role == "peer" else contender.name, []).append(contender)
        kept = []
        for members in groups.values():
            if len(members) > 1:
                for member in members:
                    timing.calibrate(member, length, timing.SAMPLE_SECONDS, self.on_gpu)
                timing.interleave(members, length, 1, PEER_PICK_SAMPLES)
                best = min(members, key=lambda m: sorted(m.samples)[len(m.samples) // 2])
                best.note = (best.note + "; " if best.note else "") + f"fastest of {len(members)} configurations"
                best.samples, best.queued = [], []
                members = [best]
            kept += members
        return kept

    def launches(self, contenders: list[Any], length: int) -> int | None:
        """Custom calls to the op's target in its compiled chain (``length`` when the chain holds)."""
        op = next(c for c in contenders if c.role == "op")
        return op.compiled.as_text().count(f'custom_call_target="{self.spec.target}"')

    def flops(self, operands: list[Any], outputs: list[Any]) -> int | None:
        counter = getattr(self.project.reference_module, "flops", None)
        return int(counter(operands, outputs)) if counter is not None else None

    def contender_record(self, contender: Any, expected: Any) -> dict[str, Any]:
        record = {"name": contender.name, "role": contender.role, "note": contender.note, "reps": contender.reps,
                  "samples": contender.samples, "queued": contender.queued}  # fmt: skip
        record["max_abs_diff"] = self.disagreement(contender, expected)
        return record

    @staticmethod
    def disagreement(contender: Any, expected: Any) -> float | None:
        """The largest difference of the contender's first result from the op's (same elements)."""
        got = np.asarray(as_tuple(timing.run_chain(contender)[-1])[0])
        if got.size != expected.size:
            return None
        return float(np.max(np.abs(got.reshape(expected.shape).astype(np.float64) - expected.astype(np.float64)), initial=0.0))

    def trace(self, contenders: list[Any], label: str) -> None:
        """Each contender's chain once more under jax.profiler, into a folder of --trace per problem."""
        import jax  # lazy: jax only in the bench child

        self.traced += 1
        folder = self.args.trace / f"{self.traced:02d}-{''.join(c if c.isalnum() else '-' for c in label).strip('-')}"
        folder.mkdir(parents=True, exist_ok=True)
        with jax.profiler.trace(str(folder), create_perfetto_trace=True):
            for contender in contenders:
                timing.wait(timing.run_chain(contender))
        self.writer.data("bench_trace", {"label": label, "dir": str(folder)})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return BenchHarness(args, RecordWriter(args.records)).run()


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    leave(main())
