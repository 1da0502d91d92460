"""The torchax harness: ``python -m xlacc.commands.smoke.harness_torchax --project DIR --records FILE [...]``.

PyTorch on XLA through torchax (PyTorch on JAX; vLLM's TPU backend runs its models this way), the
route that runs a PyTorch program's custom call on XLA:GPU. Like the JAX harness it runs in a child
process and shares that harness's checks of jax's registries and of the lowered program; what it
adds is the torch side:

- registration: the jax target (as the JAX harness checks it), and the torch op ``xlacc::NAME``
  lowered to ``NAME.jax.NAME`` in torchax's environment (``NAME.torch.register_torchax()``);
- lowering: a torch program (``op(x + 0, ...) * 2``), jitted through torchax, is one XLA program
  holding the custom call next to torch's own ops, not a decomposition;
- numerics: that program on torch tensors against the reference, at the JAX harness's sizes and
  tolerances;
- ``--bench``: the op from torch under torchax, against the same op in plain torch ops under torchax
  (``torch_reference`` in reference.py), torch eager on the same device, and the op called from
  jax directly.

Exit codes as the JAX harness: 0 passed; 1 a check failed; 3 a cuda project where jax sees no GPU.
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from xlacc.commands.doctor.rules.environment import package_version
from xlacc.commands.smoke.harness import (
    DEFAULT_SIZES,
    as_tuple,
    case_label,
    first_line,
    leave,
    parse_args,
    spec_dtype,
)
from xlacc.commands.smoke.harness_jax import JaxHarness
from xlacc.commands.smoke.records import RecordWriter
from xlacc.commands.smoke.timing import time_call
from xlacc.commands.smoke.torch_arrays import (
    from_torch,
    read_only_views_allowed,
    to_torch,
)
from xlacc.readers import hlo

# torch's CUDA allocator shares the GPU with jax's: jax must not take 75% of it up front.
CHILD_JAX_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
# The torch ops the program wraps the op in, and the StableHLO ops they lower to.
TORCH_OPS_IN_PROGRAM = ("stablehlo.add", "stablehlo.multiply")
TORCH_REFERENCE = "torch_reference"
# Each timed sample queues calls for this long: the cost of an op in a running program, where
# torchax's Python dispatch (longer than jax's) overlaps the GPU's work. The dispatch itself is
# reported apart as the latency of one call waited for.
STEADY_SAMPLE_SECONDS = 0.02
LATENCY_CALLS = 20
EAGER_SIZE = 1001  # the problem the op is first called on, eagerly, as a model calls it


class TorchaxHarness(JaxHarness):
    def __init__(self, args: Any, writer: RecordWriter):
        super().__init__(args, writer)
        self.torch_ops: Any = None
        self.env: Any = None

    # -- the torch program --------------------------------------------------------------------
    def torch_op(self, attrs: dict[str, Any]):
        function = getattr(self.torch_ops, self.spec.name, None)
        if function is None:
            raise AttributeError(f"{self.spec.package}/torch.py defines no function {self.spec.name}()")
        return functools.partial(function, **attrs)

    def program(self, attrs: dict[str, Any]):
        """The op inside a torch program: torch ops before it (``+ 0``) and after it (``* 2``)."""
        op = self.torch_op(attrs)

        def program(*tensors):
            return tuple(out * 2 for out in self.results_of(op(*[t + 0 for t in tensors])))

        return program

    def results_of(self, returned: Any) -> tuple[Any, ...]:
        """What NAME.torch.NAME returned, as a tuple: one tensor for one result (as the op's fake
        returns it, and as a model uses it), a tuple for several."""
        import torch

        function = f"{self.spec.package}.torch.{self.spec.name}()"
        if len(self.spec.results) == 1:
            if not isinstance(returned, torch.Tensor):
                raise TypeError(f"{function} returned {type(returned).__name__}; with one result it returns a tensor, as its fake does")
            return (returned,)
        if not isinstance(returned, tuple) or len(returned) != len(self.spec.results):
            raise TypeError(f"{function} returned {type(returned).__name__}; it returns a tuple of its {len(self.spec.results)} results")
        return returned

    def op(self, attrs: dict[str, Any]):
        """The torch program as a jax function (what torchax jits): the JAX harness lowers and
        compiles this in its lowering check."""
        from torchax import interop

        as_jax = interop.jax_view(self.program(attrs))

        def run(*arrays):
            with self.env:
                return as_jax(*arrays)

        return run

    def jitted(self, function):
        """``function`` on torch tensors, jitted by torchax into one XLA program."""
        from torchax import interop

        return interop.jax_jit(function)

    def to_jax_tensors(self, operands: list[Any]) -> list[Any]:
        """NumPy operands as torchax tensors on the harness's jax device."""
        with self.env:
            return [to_torch(a).to("jax") for a in operands]

    # -- the run --------------------------------------------------------------------------------
    def check_transforms(self) -> None:
        """vmap, grad and sharding are properties of the jax function the torch op lowers to: the
        jax harness checks them; under torchax the op runs its raw custom call."""

    def start_jax(self) -> None:
        for name, value in CHILD_JAX_ENV.items():
            os.environ.setdefault(name, value)
        super().start_jax()
        import jax
        import torch  # noqa: F401 - torch first: torchax imports both
        import torchax

        if self.device is not None:
            jax.config.update("jax_default_device", self.device)
        self.env = torchax.default_env()
        self.writer.data("versions", {name: package_version(name) for name in ("torch", "torchax", "jax", "jaxlib")})

    def check_registration(self) -> None:
        self.torch_ops = self.project.module("torch")
        if not hasattr(self.torch_ops, "register_torchax"):
            self.check("torch op", False, f"{self.spec.package}/torch.py has no register_torchax(): run `xlacc update` (op.frameworks lists torchax)")
            return
        self.torch_ops.register_torchax(self.env)
        called = self.call_as_a_model_does()  # before the harness registers the jax target itself
        super().check_registration()
        ok, detail = self.torch_op_verdict()
        if ok and called is not None and not called[0]:
            ok, detail = called
        elif ok and called:
            detail += "; called first, eagerly, it registers its target itself"
        self.check("torch op", ok, detail)

    def call_as_a_model_does(self) -> tuple[bool, str] | None:
        """The op called eagerly on torchax tensors, first thing in the process: it must register its
        jax target itself and return what its fake returns. None where it cannot run (no GPU)."""
        if self.device is None:
            return None
        operands, attrs = self.project.example_inputs(EAGER_SIZE, np.random.default_rng(self.args.seed), self.project.dtypes()[0])
        tensors = self.to_jax_tensors(operands)
        try:
            with self.env:
                self.results_of(self.torch_op(attrs)(*tensors))
        except Exception as exc:  # the user's bindings: any failure is the check's verdict
            return False, f"{self.spec.package}.torch.{self.spec.name}() on torchax tensors, before anything else in the process: {first_line(exc)}"
        return True, "called"

    def torch_op_verdict(self) -> tuple[bool, str]:
        import torch

        name = f"xlacc::{self.spec.name}"
        packet = getattr(torch.ops.xlacc, self.spec.name, None)
        if packet is None:
            return False, f"{self.spec.package}.torch defines no torch op {name}"
        table = getattr(self.env, "_ops", None)  # torchax 0.0.13 keeps its lowerings, overrides included, here
        if table is None:
            return True, "register_torchax() ran; this torchax keeps no table of lowerings to check, so the program below is the proof"
        if packet.default not in table:
            return False, f"{name} has no lowering in torchax's environment after register_torchax()"
        return True, f"{name} lowers to the custom call of {self.spec.package}.jax in torchax's environment"

    def check_lowering(self) -> None:
        super().check_lowering()
        if not self.lowered_text:
            return
        calls = hlo.calls_to(hlo.stablehlo_custom_calls(self.lowered_text), self.spec.target)
        missing = [op for op in TORCH_OPS_IN_PROGRAM if op not in self.lowered_text]
        if calls and not missing:
            self.check("one program", True, f"the torch program jitted by torchax holds the custom call to {self.spec.target} and torch's ops ({', '.join(TORCH_OPS_IN_PROGRAM)})")
        elif calls:
            self.check("one program", False, f"the torch ops around the op are missing from the program: {', '.join(missing)}")

    # -- numerics (the loop is Harness.check_numerics) ------------------------------------------
    def run_op(self, operands: list[Any], attrs: dict[str, Any]) -> tuple[Any, ...]:
        program = self.jitted(self.program(attrs))
        tensors = self.to_jax_tensors(operands)
        with self.env, read_only_views_allowed():
            outputs = [out.to("cpu") for out in as_tuple(program(*tensors))]
        return tuple(_halved(from_torch(out)) for out in outputs)

    # -- bench ----------------------------------------------------------------------------------
    def bench(self) -> None:
        import jax

        sizes = self.args.sizes or DEFAULT_SIZES[self.numerics_device]
        size, dtype = max(sizes), self.project.dtypes()[0]
        operands, attrs = self.project.example_inputs(size, np.random.default_rng(self.args.seed), dtype)
        tensors = self.to_jax_tensors(operands)
        jitted = self.jitted(self.torch_op(attrs))
        on_torchax = lambda *ts: self._unwrap(jitted(*ts))  # noqa: E731 - the jax arrays, to wait on
        custom = time_call(on_torchax, tensors, sample_seconds=STEADY_SAMPLE_SECONDS)
        custom_s = custom.seconds
        outputs = [np.asarray(o) for o in on_torchax(*tensors)]
        moved = self.project.bytes_moved(operands, outputs)
        jax_op, arrays = jax.jit(super().op(attrs)), self.put(operands)
        jax_s = time_call(jax_op, arrays, sample_seconds=STEADY_SAMPLE_SECONDS).seconds
        result: dict[str, Any] = {
            "size": size,
            "dtype": "/".join(dict.fromkeys(spec_dtype(a) for a in operands)),
            "device": str(self.device),
            "bytes": moved,
            "samples": custom.samples,
            "torchax_us": custom_s * 1e6,
            "torchax_queue_us": custom.queued * 1e6,
            "torchax_host_bound": self.spec.platform == "cuda" and custom.host_bound,
            "torchax_gbps": moved / custom_s / 1e9,
            "jax_us": jax_s * 1e6,
            "torchax_over_jax": custom_s / jax_s,
            "torchax_latency_us": latency(on_torchax, tensors) * 1e6,
            "jax_latency_us": latency(jax_op, arrays) * 1e6,
        }
        baselines = self.bench_plain_torch(operands, attrs, tensors, moved)
        result.update(baselines)
        self.writer.data("bench", result)
        self.check("bench", True, bench_detail(case_label(size, operands), result))

    def bench_plain_torch(self, operands: list[Any], attrs: dict[str, Any], tensors: list[Any], moved: int) -> dict[str, Any]:
        """The same op in plain torch ops (reference.py's torch_reference): under torchax, and in
        torch eager on the device torch has (CUDA where it sees a GPU)."""
        reference = getattr(self.project.reference_module, TORCH_REFERENCE, None)
        if reference is None:
            return {"baseline": f"{self.spec.reference_file} has no {TORCH_REFERENCE}(): no plain-torch baseline"}
        plain = functools.partial(reference, **attrs)
        out: dict[str, Any] = {}
        try:
            on_torchax = self.jitted(plain)
            plain_s = time_call(lambda *ts: self._unwrap(on_torchax(*ts)), tensors, sample_seconds=STEADY_SAMPLE_SECONDS).seconds
            out.update(plain_torchax_us=plain_s * 1e6, plain_torchax_gbps=moved / plain_s / 1e9)
        except Exception as exc:  # a torch op torchax cannot lower: say so, keep the other rows
            import traceback

            traceback.print_exc(file=sys.stderr)
            out["plain_torchax_error"] = first_line(exc)
        import torch

        device = "cuda" if self.spec.platform == "cuda" and torch.cuda.is_available() else "cpu"
        eager_inputs = [to_torch(a).to(device) for a in operands]
        wait = torch.cuda.synchronize if device == "cuda" else (lambda *_: None)
        with torch.no_grad():
            eager_s = time_call(plain, eager_inputs, wait=lambda _: wait(), sample_seconds=STEADY_SAMPLE_SECONDS).seconds
        out.update(eager_device=device, eager_us=eager_s * 1e6, eager_gbps=moved / eager_s / 1e9)
        return out

    def _unwrap(self, outputs: Any) -> list[Any]:
        """The jax arrays inside torchax tensors (what jax.block_until_ready can wait on)."""
        return [out.jax() for out in as_tuple(outputs)]


def latency(function: Any, args: list[Any]) -> float:
    """Median seconds of one call waited for: the dispatch a lone call pays."""
    import jax

    times = []
    for _ in range(LATENCY_CALLS):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_detail(label: str, result: dict[str, Any]) -> str:
    parts = [
        f"{label}: custom call from torch under torchax {result['torchax_us']:.1f} us ({result['torchax_gbps']:.1f} GB/s), "
        f"{result['torchax_over_jax']:.3f}x the time of the same call from jax ({result['jax_us']:.1f} us); "
        f"one call waited for: {result['torchax_latency_us']:.1f} us from torch, {result['jax_latency_us']:.1f} us from jax"
    ]
    if result.get("torchax_host_bound"):
        parts[0] += (
            f" (host-bound: torch queued a call every {result['torchax_queue_us']:.1f} us, as long as the calls took, so this is "
            "torchax's dispatch, not the kernel; a model jitted whole pays it once a step)"
        )
    if "plain_torchax_us" in result:
        parts.append(f"plain torch under torchax {result['plain_torchax_us']:.1f} us ({result['plain_torchax_gbps']:.1f} GB/s)")
    elif "plain_torchax_error" in result:
        parts.append(f"plain torch under torchax failed: {result['plain_torchax_error']}")
    if "eager_us" in result:
        parts.append(f"torch eager {result['eager_device']} {result['eager_us']:.1f} us ({result['eager_gbps']:.1f} GB/s)")
    if "baseline" in result:
        parts.append(result["baseline"])
    return "; ".join(parts)


def _halved(array: np.ndarray) -> np.ndarray:
    """The op's result from the program's ``* 2`` (exact in every dtype)."""
    return (array // 2 if array.dtype.kind in "iu" else array / 2).astype(array.dtype)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, "Run a project's torch op through torchax (PyTorch on JAX) and record the checks.")
    return TorchaxHarness(args, RecordWriter(args.records)).run()


if __name__ == "__main__":
    leave(main())
