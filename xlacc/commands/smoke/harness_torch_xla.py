"""The torch_xla harness: ``python -m xlacc.commands.smoke.harness_torch_xla --project DIR --records FILE``.

torch_xla 2.9 from PyPI has no CUDA device and no custom-call registration (``RegisterCustomCall
not implemented``). This harness proves the torch_xla route up to torch_xla's own runtime:
the generated torch op lowers (``torch_xla._XLAC._get_xla_tensors_hlo``, on the CPU device) to a
custom call with the right target, api_version, backend_config, operand order and result shapes;
then the StableHLO torch_xla emits for the op (``get_stablehlo``) runs through jaxlib's XLA with the
legacy entry point registered (``xlacc.commands.smoke.xla_program``), api 3 on the CPU and api 2 on the
GPU, and its results are compared with the reference. A cuda project where jax sees no GPU stops
after the lowering and exits 3 (``xlacc.ground.report.EXIT_NEEDS_GPU``). Where torch_xla itself has a
CUDA device (<= 2.8 built with CUDA) it registers through ``NAME.torch.register_torch_xla()`` and
runs the op on its own runtime.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from xlacc.commands.smoke import numerics, xla_program
from xlacc.commands.smoke.harness import (
    Harness,
    Project,
    as_tuple,
    case_label,
    leave,
    load_project,
    parse_args,
    spec_dtype,
)
from xlacc.commands.smoke.records import RecordWriter
from xlacc.commands.smoke.torch_arrays import from_torch, to_torch
from xlacc.commands.doctor.rules import custom_call, environment, registration, sizes
from xlacc.readers import hlo
from xlacc.spec import DTYPE_INFO

# Two sizes far enough apart that every template gives different shapes: the backend_config
# must change with them (sizes travel in it).
LOWERING_SIZES = (1000, 6007)
HLO_ELEMENT_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i32": "s32", "i64": "s64"}
_HLO_SHAPE = re.compile(r"(?P<type>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")


def _operand_tags() -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """(opcode in the HLO, torch op): each operand goes through its own elementwise op before the
    call, so the HLO shows which operand landed where (torch_xla numbers parameters by position,
    not by tensor). Each lowers to its opcode for float and integer types alike."""
    import torch

    return (
        ("negate", torch.neg),
        ("abs", torch.abs),
        ("maximum", lambda t: torch.maximum(t, t)),
        ("minimum", lambda t: torch.minimum(t, t)),
        ("add", lambda t: t + t),
        ("subtract", lambda t: t - t),
        ("remainder", lambda t: torch.fmod(t, t)),
        ("select", lambda t: torch.where(t == t, t, t)),
        ("power", torch.square),
    )


@dataclass
class Lowering:
    """What one lowering showed, and what went wrong with it."""

    call: hlo.CustomCall | None = None
    problems: dict[str, list[str]] = field(default_factory=dict)  # check name -> what failed

    def fail(self, check: str, message: str) -> None:
        self.problems.setdefault(check, []).append(message)


class TorchXlaHarness(Harness):
    context = "run-smoke torch-xla"

    def __init__(self, args: Any, writer: RecordWriter):
        super().__init__(writer)
        self.args = args
        self.project: Project | None = None
        self.ops: Any = None
        self.device: Any = None
        self.device_type = ""
        self.version = ""
        self.sizes_compared: list[str] = []
        self.jax_device: Any = None
        self._jaxlib_library: Any = None  # the library registered with jaxlib, kept loaded

    @property
    def spec(self):
        return self.project.spec

    @property
    def has_cuda(self) -> bool:
        return self.device_type in ("CUDA", "GPU")

    def run(self) -> int:
        with self.step("load", "project"):
            self.project = load_project(self.args.project)
        if self.project is None:
            return self.finish()
        with self.step("start torch_xla", "torch_xla"):
            self.start_torch_xla()
        if self.device is None:
            return self.finish()
        with self.step("import", "registration"):
            self.ops = self.project.module("torch")
        if self.ops is None:
            self.check("lowering", None, f"not run: {self.spec.package}.torch did not load")
            return self.finish()
        with self.step("registration"):
            self.check_registration()
        failed_before = self.failed
        with self.step("lowering"):
            self.check_lowering()
        if self.failed and not failed_before:
            self.check("execution", None, "not run: the op did not lower as it should (above)")
        elif self.has_cuda:
            self.check_numerics()
        else:
            self.run_through_jaxlib()
        if self.args.bench:
            self.check("bench", None, "--bench times the jax and torchax routes (torch_xla cannot run the op itself)")
        return self.finish()

    def run_through_jaxlib(self) -> None:
        """torch_xla cannot run a custom call: run the program it emits through jaxlib's XLA, with
        the legacy entry point registered there, and compare that with the reference."""
        started = False
        with self.step("start jax", "jaxlib"):
            self.jax_device = self.pick_jax_device()
            started = True
        if not started:
            return
        ran_through_jaxlib = self.jax_device is not None
        if not ran_through_jaxlib:
            self.needs_gpu = True
            self.check("numerics", None, "not run: the program torch_xla emits runs through jaxlib on a GPU, and jax sees none here")
        self.record(environment.torch_xla_cannot_run(self.version, self.device_type, ran_through_jaxlib, self.context))
        if not ran_through_jaxlib:
            return
        with self.step("registration for jaxlib", "execution"):
            self._jaxlib_library = xla_program.register_legacy(
                self.spec.target, self.project.package.library(), self.spec.legacy_symbol, self.spec.platform
            )
            self.check("execution", True, self.execution_detail())
        if self._jaxlib_library is not None:
            self.numerics_note = "run by jaxlib, not torch_xla: "
            self.check_numerics()

    def pick_jax_device(self) -> Any:
        """The jax device that runs torch_xla's program: the CPU for cpu projects, a GPU for cuda ones."""
        import jax

        try:
            return jax.devices("cpu" if self.spec.platform == "cpu" else "gpu")[0]
        except RuntimeError:  # this jax has no GPU backend, or sees no GPU
            return None

    def execution_detail(self) -> str:
        import jaxlib

        backend = "XLA:CPU" if self.spec.platform == "cpu" else "XLA:GPU"
        return (
            f"the program torch_xla {self.version} emits (get_stablehlo) runs on jaxlib {jaxlib.__version__}'s {backend} "
            f"({self.jax_device}) with {self.spec.legacy_symbol} registered as the legacy target {self.spec.target!r} "
            f"(api_version {self.spec.legacy_api_version}); torch_xla's own runtime is not used"
        )

    def start_torch_xla(self) -> None:
        os.environ.setdefault("PJRT_DEVICE", "CUDA" if importlib.util.find_spec("torch_xla_cuda_plugin") else "CPU")
        import torch_xla
        from torch_xla import runtime

        self.version = getattr(torch_xla, "__version__", "?")
        self.device = torch_xla.device()
        self.device_type = runtime.device_type() or os.environ["PJRT_DEVICE"]
        self.writer.data("seed", self.args.seed)
        self.writer.data("device", f"{self.device} ({self.device_type}, torch_xla {self.version})")

    # -- 1. registration ------------------------------------------------------------------------
    def check_registration(self) -> None:
        try:
            self.ops.register_torch_xla()
        except RuntimeError as exc:
            if self.has_cuda:
                raise
            self.check("registration", None, f"not possible on torch_xla {self.version} ({self.device_type}): {exc}")
            return
        if self.has_cuda:
            self.check("registration", True, f"{self.spec.target} registered for CUDA through torch_xla")
        else:
            self.check("registration", None, f"register() ran, but torch_xla {self.version} has no CUDA device to run it on")

    # -- 2. lowering ----------------------------------------------------------------------------
    def check_lowering(self) -> None:
        tags = _operand_tags()
        lowerings: list[tuple[str, int, Lowering]] = []
        for dtype in self.project.dtypes():
            pair = [(dtype or "", size, self.lower(size, dtype, tags)) for size in LOWERING_SIZES]
            self.verify_sizes_travel(pair)
            lowerings += pair
        self.summarize(lowerings)

    def verify_sizes_travel(self, pair: list[tuple[str, int, Lowering]]) -> None:
        (_, small, first), (_, large, second) = pair
        if first.call is None or second.call is None or first.call.operand_shapes == second.call.operand_shapes:
            return  # nothing to tell: the template gave both sizes the same shapes
        self.sizes_compared.append(f"n={small} and n={large}")
        if self.record(sizes.backend_config_fixed(small, large, first.call, second.call, self.context)):
            first.fail("backend_config", f"the same for n={small} and n={large}")

    def lower(self, size: int, dtype: str | None, tags) -> Lowering:
        import torch_xla

        operands, attrs = self.project.example_inputs(size, np.random.default_rng(self.args.seed), dtype)
        tensors = [to_torch(a).to(self.device) for a in operands]
        tagged = [tags[i][1](t) if i < len(tags) else t for i, t in enumerate(tensors)]
        outputs = as_tuple(getattr(self.ops, self.spec.name)(*tagged, **attrs))
        text = torch_xla._XLAC._get_xla_tensors_hlo(list(outputs))
        lowering = Lowering()
        calls = hlo.hlo_custom_calls(text)
        ours = hlo.calls_to(calls, self.spec.target)
        if not ours:
            evidence = f"the HLO of xlacc::{self.spec.name} holds no custom-call:\n{text.strip()[-1500:]}"
            if self.record(custom_call.optimized_away(evidence, calls, self.context)):
                lowering.fail("lowering", f"no custom-call to {self.spec.target} in the HLO")
            else:
                lowering.fail("lowering", f"the HLO calls {', '.join(sorted({c.target for c in calls}))}, not {self.spec.target}")
            return lowering
        lowering.call = call = ours[0]
        label = case_label(size, operands)
        self.verify_api(call, lowering)
        self.verify_backend_config(call, tensors, attrs, lowering)
        self.verify_operands(call, text, tensors, tags, label, lowering)
        expected = as_tuple(self.project.reference(*[numerics.widen(a) for a in operands], **attrs))
        self.verify_results(call, expected, operands, label, lowering)
        return lowering

    def verify_api(self, call: hlo.CustomCall, lowering: Lowering) -> None:
        expected = self.spec.legacy_api_version
        if self.record(registration.called_with(call, expected, self.context)):
            lowering.fail("lowering", f"api_version={hlo.api_version_name(call.api_version)}, expected {hlo.api_version_name(expected)}")

    def expected_backend_config(self, tensors: list[Any], attrs: dict[str, Any]) -> str:
        """What the op's backend_config must be for these operands: their shapes and the results'
        (from the spec), the attributes, the element type."""
        shapes = {t.name: list(tensor.shape) for t, tensor in zip(self.spec.inputs, tensors)}
        for out in self.spec.forward.outputs:  # the outputs, then what the op saves for its backward
            shapes[out.name] = shapes[out.like][: out.like_stop] if out.like else list(out.shape)
        values = {a.name: (float if a.type.startswith("f") else int)(attrs[a.name]) for a in self.spec.attrs if a.name in attrs}
        dtype = tensors[self.spec.op_dtype_index].dtype
        return self.project.package.backend_config(shapes, values, self.project.package.op_dtype(dtype))

    def verify_backend_config(self, call: hlo.CustomCall, tensors: list[Any], attrs: dict[str, Any], lowering: Lowering) -> None:
        expected = self.expected_backend_config(tensors, attrs)
        if not self.record(custom_call.backend_config(call.backend_config, expected, self.context)):
            return
        if call.backend_config != expected:
            lowering.fail("backend_config", f"{call.backend_config!r} instead of {expected!r}")
        else:
            lowering.fail("backend_config", f"{call.backend_config!r} is not key=value pairs")

    def verify_operands(self, call: hlo.CustomCall, text: str, tensors: list[Any], tags, label: str, lowering: Lowering) -> None:
        names = [t.name for t in self.spec.inputs]
        if self.record(custom_call.operand_count(call, len(tensors), names, self.context)):
            lowering.fail("operands", f"{len(call.operands)} operands for {len(names)} inputs")
            return
        instructions = hlo.hlo_instructions(text)
        tag_of = {opcode: i for i, (opcode, _) in enumerate(tags)}
        for position, (operand, shape, tensor) in enumerate(zip(call.operands, call.operand_shapes, tensors)):
            source = tag_of.get(_tag_opcode(operand, instructions, tag_of))
            if position < len(tags) and self.record(custom_call.operand_order(position, source, names, label, self.context)):
                got = custom_call.operand_name(source, names)
                lowering.fail("operands", f"operand {position} is {got}, expected {names[position]}")
            want = hlo_shape(tensor)
            if _shape_key(shape) != want:
                lowering.fail("operands", f"operand {position} ({names[position]}) is {shape}, expected {want}")

    def verify_results(self, call: hlo.CustomCall, expected: tuple[Any, ...], operands: list[Any], label: str, lowering: Lowering) -> None:
        got = [f"{m['type']}[{m['dims']}]" for m in _HLO_SHAPE.finditer(call.result_shape)]
        dtypes = [self.output_dtype(out, operands) for out in self.spec.forward.outputs]
        inputs = {t.name: np.shape(a) for t, a in zip(self.spec.inputs, operands)}
        references = iter(np.shape(ref) for ref in expected)  # scratch results are the spec's; the others the reference's
        shapes = [out.shape if out.scratch else next(references, ()) for out in self.spec.outputs]
        shapes += [inputs[t.like][: t.like_stop] for t in self.spec.saved]
        want = [f"{HLO_ELEMENT_TYPES[d]}[{','.join(str(n) for n in shape)}]" for d, shape in zip(dtypes, shapes)]
        if self.record(custom_call.results(label, call.result_shape, got, want, self.context)):
            lowering.fail("results", f"{', '.join(got)} instead of {', '.join(want)}")

    def output_dtype(self, out, operands: list[Any]) -> str:
        if not out.generic:
            return out.dtype
        generic_input = next(i for i, t in enumerate(self.spec.inputs) if t.generic)
        return spec_dtype(np.asarray(operands[generic_input]))

    def summarize(self, lowerings: list[tuple[str, int, Lowering]]) -> None:
        cases = ", ".join(f"n={size}{' ' + dtype if dtype else ''}" for dtype, size, _ in lowerings)
        call = next((low.call for _, _, low in lowerings if low.call is not None), None)
        evidence = {
            "lowering": f'custom_call_target="{self.spec.target}", {hlo.api_version_name(self.spec.legacy_api_version)} ({cases})',
            "backend_config": self.backend_config_evidence(call),
            "operands": f"{', '.join(t.name for t in self.spec.inputs)} in order, with their shapes",
            "results": f"{call.result_shape}" if call else "",
        }
        lowered = all(low.call is not None for _, _, low in lowerings)
        for name, detail in evidence.items():
            problems = sorted({p for _, _, low in lowerings for p in low.problems.get(name, [])})
            if problems:
                self.check(name, False, "; ".join(problems))
            elif name == "lowering" or lowered:
                self.check(name, True, detail)
            else:
                self.check(name, None, "not checked: the op did not lower to the custom call")

    def backend_config_evidence(self, call: hlo.CustomCall | None) -> str:
        if call is None:
            return ""
        if self.sizes_compared:
            return f"{call.backend_config!r} follows the operands' shapes ({self.sizes_compared[0]} differ)"
        return f"{call.backend_config!r} (the sizes tried gave the same shapes, so size-dependence was not checked)"

    # -- 3. numerics: torch_xla's program through jaxlib, or on a torch_xla with a CUDA device ----
    # (the loop is Harness.check_numerics)
    @property
    def numerics_device(self) -> str:
        return "gpu" if self.spec.platform == "cuda" else "cpu"

    def run_op(self, operands: list[Any], attrs: dict[str, Any]) -> tuple[Any, ...]:
        tensors = [to_torch(a).to(self.device) for a in operands]
        outputs = as_tuple(getattr(self.ops, self.spec.name)(*tensors, **attrs))
        if self.has_cuda:
            return tuple(from_torch(o) for o in outputs)
        program = xla_program.emit(outputs, tensors)
        return tuple(xla_program.run_stablehlo(program.text, program.arguments(operands), self.jax_device))


def hlo_shape(tensor: Any) -> str:
    name = str(tensor.dtype).removeprefix("torch.")
    spec_name = next(k for k, v in DTYPE_INFO.items() if v["torch"] == name)
    return f"{HLO_ELEMENT_TYPES[spec_name]}[{','.join(str(int(d)) for d in tensor.shape)}]"


def _shape_key(printed: str) -> str:
    match = _HLO_SHAPE.search(printed)
    return f"{match['type']}[{match['dims']}]" if match else printed


def _tag_opcode(name: str, instructions: dict[str, hlo.Instruction], tags: dict[str, int]) -> str | None:
    """The tag op an operand comes from, looking through single-input ops (convert, copy, reshape)."""
    seen = set()
    while name in instructions and name not in seen:
        seen.add(name)
        instruction = instructions[name]
        if instruction.opcode in tags:
            return instruction.opcode
        sources = set(instruction.operands)
        if len(sources) != 1:
            return None
        name = sources.pop()
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, "Check a project's torch_xla op: lowering always, execution where torch_xla has CUDA.")
    return TorchXlaHarness(args, RecordWriter(args.records)).run()


if __name__ == "__main__":
    leave(main())
