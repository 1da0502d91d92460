"""The JAX harness's checks of the op under jax.vmap, jax.grad and jax.jit over sharded inputs.

What the op should do under each comes from ``xlacc.commands.new.transform_plan`` (the spec's [sharding] and
[backward]); these checks run it and read the compiled HLO: one launch under vmap, gradients
against finite differences and the reference, and per sharded factor no collective around the
custom call, the output split as the inputs, numerics against the reference. With ``--bench``:
the sharded op against XLA's own on the same sharded inputs and against one device (vmap against
the unbatched call is `xlacc bench --vmap`, which run-smoke --bench runs).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from xlacc.commands.doctor.rules import hlo_sharding
from xlacc.commands.new import transform_plan as transforms
from xlacc.commands.smoke import numerics
from xlacc.commands.smoke.harness import DEFAULT_SIZES, as_tuple, first_line
from xlacc.commands.smoke.timing import time_call

COLLECTIVE = re.compile(r"\b(all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter)(?:-start)?\(")
WHILE = re.compile(r"\bwhile\(")
VMAP_EXAMPLES = 3
VMAP_SIZE = 10_007
GRAD_SIZE = 300
GRAD_RTOL = GRAD_ATOL = 1e-4


class TransformChecks:
    """Runs on a JaxHarness whose op compiled: its spec, project, writer, op(), put() and device."""

    def __init__(self, harness: Any):
        self.h = harness
        self.spec = harness.spec

    def run(self) -> None:
        with self.h.step("vmap"):
            self.check_vmap()
        with self.h.step("grad"):
            self.check_grad()
        devices = self.devices()
        if devices:
            with self.h.step(f"sharded over {len(devices)} devices", "sharding"):
                self.check_sharding(devices)
        if self.h.args.bench and devices:
            with self.h.step("bench sharded"):
                self.bench_sharded(devices)

    # -- helpers --------------------------------------------------------------------------------
    def example(self, size: int, seed_offset: int = 0, dtype: str | None = None) -> tuple[list[Any], dict[str, Any]]:
        dtype = dtype or self.h.project.dtypes()[0]
        return self.h.project.example_inputs(size, np.random.default_rng(self.h.args.seed + seed_offset), dtype)

    def target_calls(self, compiled: str) -> int:
        return compiled.count(f'custom_call_target="{self.spec.target}"')

    def largest_size(self) -> int:
        return max(self.h.args.sizes or DEFAULT_SIZES[self.h.numerics_device])

    # -- vmap -----------------------------------------------------------------------------------
    def batched_example(self, size: int) -> tuple[list[Any], list[int | None], list[list[Any]], dict[str, Any]]:
        """VMAP_EXAMPLES examples stacked along the inputs a batch folds into (or the first input,
        where none does); the others stay unbatched."""
        operands, attrs = self.example(size)
        folding = transforms.folding_inputs(self.spec) or (self.spec.inputs[0].name,)
        in_axes = [0 if t.name in folding else None for t in self.spec.inputs]
        examples = [[a * (i + 1) if axis == 0 and _is_float(a) else a for a, axis in zip(operands, in_axes)] for i in range(VMAP_EXAMPLES)]
        stacked = [np.stack([e[k] for e in examples]) if axis == 0 else a for k, (a, axis) in enumerate(zip(operands, in_axes))]
        return stacked, in_axes, examples, attrs

    def check_vmap(self) -> None:
        import jax

        stacked, in_axes, examples, attrs = self.batched_example(VMAP_SIZE)
        call = jax.jit(jax.vmap(self.h.op(attrs), in_axes=in_axes))
        args = self.h.put(stacked)
        compiled = call.lower(*args).compile().as_text()
        launches, loops = self.target_calls(compiled), len(WHILE.findall(compiled))
        got = [np.asarray(o) for o in as_tuple(call(*args))]
        single = jax.jit(self.h.op(attrs))
        worst = []
        for i, example in enumerate(examples):
            for out_spec, g, w in zip(self.spec.outputs, got, as_tuple(single(*self.h.put(example)))):
                worst.append(numerics.compare(out_spec.name, g[i], np.asarray(w)))
        bad = next((c for c in worst if not c.ok), None)
        batched = ", ".join(t.name for t, axis in zip(self.spec.inputs, in_axes) if axis == 0)
        shape = f"jit(vmap({self.spec.name})) over {VMAP_EXAMPLES} examples of {batched}"
        if bad is not None:
            self.h.check("vmap", False, f"{shape}: example results differ from the unbatched call: {bad.detail}")
        elif transforms.folding_inputs(self.spec) is None:  # right, one launch at a time, and saying why
            why = transforms.describe_vmap(self.spec).rpartition(": ")[2]  # "vmap: one launch per example (jax.lax.map): WHY"
            self.h.check("vmap", True, f"{shape}: each example matches the unbatched call; one launch per example ({loops} loop): {why}")
        elif launches == 1 and not loops:
            self.h.check("vmap", True, f"{shape}: one launch (1 custom call to {self.spec.target}, no loop); each example matches the unbatched call")
        else:
            self.h.check("vmap", False, f"{shape}: {launches} custom calls and {loops} loops in the compiled HLO, expected one launch")

    # -- grad -----------------------------------------------------------------------------------
    def check_grad(self) -> None:
        import jax
        import jax.test_util

        operands, attrs = self.example(GRAD_SIZE, 1, "f32" if "f32" in self.spec.op_dtypes else None)
        positions = [i for i, t in enumerate(self.spec.inputs) if self.spec.backward and t.name in self.spec.backward.grads]
        if self.spec.backward is None:
            self.check_grad_refused(operands, attrs)
            return
        if "f32" not in self.spec.op_dtypes:
            self.h.check("grad", None, f"not checked: the gradient check runs in f32; the kernel is built for {', '.join(self.spec.op_dtypes)}")
            return
        if not positions:
            self.h.check("grad", None, "not checked: [backward] grads names no input")
            return
        op = self.h.op(attrs)
        reference = self.h.project.reference

        def substituted(function):
            def call(*values):
                args = list(operands)
                for position, value in zip(positions, values):
                    args[position] = value
                return function(*args)

            return call

        primals = self.h.put([operands[p] for p in positions])
        jax.test_util.check_grads(substituted(op), primals, order=1, modes=("rev",), eps=1e-3)
        out, pullback = jax.vjp(substituted(op), *primals)
        _, reference_pullback = jax.vjp(substituted(lambda *a: reference(*a, xp=jax.numpy, **attrs)), *primals)
        cotangent = jax.tree.map(lambda o: jax.numpy.asarray(np.random.default_rng(7).standard_normal(o.shape), o.dtype), out)
        results = [
            numerics.compare(f"grad_{self.spec.inputs[p].name}", np.asarray(g), np.asarray(w), GRAD_RTOL, GRAD_ATOL)
            for p, g, w in zip(positions, pullback(cotangent), reference_pullback(cotangent))
        ]
        how = f"the backward kernel {self.spec.target}_backward" if self.spec.backward.kind == "kernel" else "jax.vjp of the reference"
        errors = ", ".join(f"grad_{self.spec.inputs[p].name} max abs err {r.max_abs:.3g}" for p, r in zip(positions, results))
        detail = f"through {how}: jax.test_util.check_grads (reverse mode) passes; against jax.vjp of the reference (xp=jax.numpy): {errors}"
        bad = [r.detail for r in results if not r.ok]
        self.h.check("grad", not bad, "; ".join(bad) if bad else detail)

    def check_grad_refused(self, operands: list[Any], attrs: dict[str, Any]) -> None:
        import jax

        position = next((i for i, a in enumerate(operands) if _is_float(a)), None)
        if position is None:
            self.h.check("grad", None, "not defined, and the op has no floating-point input to differentiate")
            return

        def loss(value):
            args = list(operands)
            args[position] = value
            return sum(jax.numpy.sum(o.astype("float32")) for o in as_tuple(self.h.op(attrs)(*args)))

        try:
            jax.grad(loss)(self.h.put([operands[position]])[0])
        except NotImplementedError as exc:
            if "[backward]" in str(exc):
                self.h.check("grad", None, f"not defined: jax.grad says what to add ({first_line(exc)[:160]}...)")
                return
            raise
        self.h.check("grad", False, "xlacc.toml has no [backward], yet jax.grad ran: the op's jax.py is not xlacc's")

    # -- sharding -------------------------------------------------------------------------------
    def devices(self) -> list[Any]:
        """The devices to shard over: --devices N, or by default every visible GPU when there are several."""
        import jax

        platform = "gpu" if self.spec.platform == "cuda" else "cpu"
        visible = [d for d in jax.devices() if d.platform == platform]
        wanted = self.h.args.devices or (len(visible) if platform == "gpu" else 1)
        if wanted > len(visible):
            self.h.check("sharding", False, f"--devices {wanted}: jax sees {len(visible)} {platform} device(s)")
            return []
        return visible[:wanted] if wanted > 1 else []

    def check_sharding(self, devices: list[Any]) -> None:
        splits = transforms.splits(self.spec)
        if not splits:  # no [sharding]: show what XLA does with the op on split inputs
            dims = tuple(0 if t.shape is None or len(t.shape) else None for t in self.spec.inputs)
            splits = [transforms.Split("dim 0", dims, tuple(None for _ in self.spec.outputs))]
        for split in splits:
            self.check_split(split, devices)
        self.check_whole_refused(devices)

    def sharded_case(self, split: transforms.Split, devices: list[Any], size: int):
        import jax

        mesh = jax.sharding.Mesh(np.array(devices), ("d",))
        operands, attrs = self.example(size, 2)
        operands = [_even(a, dim, len(devices)) for a, dim in zip(operands, split.dims)]
        sharded = [jax.device_put(a, jax.sharding.NamedSharding(mesh, _split_along(dim, np.ndim(a)))) for a, dim in zip(operands, split.dims)]
        return mesh, operands, sharded, attrs

    def check_split(self, split: transforms.Split, devices: list[Any]) -> None:
        import jax

        name = f"sharded along {_label(split.factor)} over {len(devices)} devices"
        mesh, operands, sharded, attrs = self.sharded_case(split, devices, self.largest_size())
        call = jax.jit(self.h.op(attrs))
        compiled = call.lower(*sharded).compile().as_text()
        for finding in hlo_sharding.diagnose(compiled, where=f"compiled HLO of jit({self.spec.name}) over {name}"):
            self.h.record(finding, once=False)
        collectives = sorted({m.group(1) for m in COLLECTIVE.finditer(compiled)})
        outputs = as_tuple(call(*sharded))
        expected = as_tuple(self.h.project.reference(*[numerics.widen(a) for a in operands], **attrs))
        problems = [f"{', '.join(collectives)} in the compiled HLO"] if collectives else []
        for out_spec, out, dim in zip(self.spec.outputs, outputs, split.result_dims):
            want = jax.sharding.NamedSharding(mesh, _split_along(dim, out.ndim))
            if not out.sharding.is_equivalent_to(want, out.ndim):
                problems.append(f"{out_spec.name} is {out.sharding.spec}, expected {want.spec}")
        results = [numerics.compare(o.name, np.asarray(out), ref, self.h.args.rtol, self.h.args.atol) for o, out, ref in zip(self.spec.outputs, outputs, expected)]
        problems += [r.detail for r in results if not r.ok]
        shape = ", ".join(f"{t.name}{list(np.shape(a))}" for t, a in zip(self.spec.inputs, operands))
        if problems:
            self.h.check(name, False, f"{shape}: " + "; ".join(problems))
            return
        splits = ", ".join(f"{t.name} dim {d}" for t, d in zip(self.spec.inputs, split.dims) if d is not None)
        self.h.check(name, True, f"{shape} split along {splits}: no collective; outputs split as the inputs; " + "; ".join(r.detail for r in results))

    def check_whole_refused(self, devices: list[Any]) -> None:
        """Splitting a dim the kernel needs whole is an error that names it, never a silent gather."""
        import jax

        if self.spec.sharding is None or not self.spec.sharding.whole:
            return
        rule = self.spec.sharding.parsed
        place = next(
            ((i, dim, f) for i, entry in enumerate(rule.operands) for dim, f in enumerate(entry) if f in self.spec.sharding.whole),
            None,
        )
        if place is None:
            return
        position, dim, factor = place
        dims = tuple(dim if i == position else None for i in range(len(self.spec.inputs)))
        _, _, sharded, attrs = self.sharded_case(transforms.Split(factor, dims, ()), devices, self.largest_size())
        name = f"split {self.spec.inputs[position].name} dim {dim} ({factor})"
        try:
            jax.block_until_ready(jax.jit(self.h.op(attrs))(*sharded))
        except Exception as exc:  # the refusal comes back through XLA's partitioner as a runtime error
            message = str(exc)
            if "must stay whole" not in message and "needs factor" not in message:
                raise
            said = next(line for line in message.splitlines() if "needs factor" in line)
            self.h.check(name, True, f"refused: {said.strip()[:300]}")
            return
        self.h.check(name, False, f"ran although [sharding] whole = {list(self.spec.sharding.whole)}: the op gathered it silently")

    # -- bench ----------------------------------------------------------------------------------
    def bench_sharded(self, devices: list[Any]) -> None:
        import functools

        import jax

        split = next(iter(transforms.splits(self.spec)), None)
        if split is None:
            self.h.check("bench sharded", None, "not run: xlacc.toml has no [sharding]")
            return
        _, operands, sharded, attrs = self.sharded_case(split, devices, self.largest_size())
        custom = jax.jit(self.h.op(attrs))
        native = jax.jit(functools.partial(self.h.project.reference, xp=jax.numpy, **attrs))
        one_device = [jax.device_put(a, devices[0]) for a in operands]
        custom_s = time_call(custom, sharded).seconds
        native_s = time_call(native, sharded).seconds
        single_s = time_call(custom, one_device).seconds
        result = {
            "factor": split.factor,
            "devices": len(devices),
            "shapes": [list(np.shape(a)) for a in operands],
            "custom_us": custom_s * 1e6,
            "native_us": native_s * 1e6,
            "one_device_us": single_s * 1e6,
            "ratio": native_s / custom_s,
            "scaling": single_s / custom_s,
        }
        self.h.writer.data("bench_sharded", result)
        self.h.check(
            "bench sharded",
            True,
            f"split along {_label(split.factor)} over {len(devices)} devices: custom {custom_s * 1e6:.1f} us, XLA {native_s * 1e6:.1f} us "
            f"({result['ratio']:.3f}x XLA's speed); one device {single_s * 1e6:.1f} us ({result['scaling']:.2f}x from sharding)",
        )


def _label(factor: str) -> str:
    return "leading dims" if factor == "..." else factor


def _is_bf16(array: Any) -> bool:
    return getattr(getattr(array, "dtype", None), "name", "") == "bfloat16"


def _is_float(array: Any) -> bool:
    return np.issubdtype(np.asarray(array).dtype, np.floating) or _is_bf16(array)


def _even(array: Any, dim: int | None, parts: int) -> Any:
    if dim is None or np.ndim(array) == 0:
        return array
    keep = array.shape[dim] - array.shape[dim] % parts
    return np.take(array, np.arange(keep), axis=dim)


def _split_along(dim: int | None, rank: int):
    import jax

    return jax.sharding.PartitionSpec(*[("d" if i == dim else None) for i in range(rank)])
