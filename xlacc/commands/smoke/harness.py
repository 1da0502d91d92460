"""What the harnesses share: arguments, loading the project's Python files, steps that record.

Imported only in the child process (it imports NumPy); the harnesses add jax, torchax or torch_xla.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np

from xlacc import spec as spec_mod
from xlacc.commands.smoke import numerics
from xlacc.commands.smoke.records import RecordWriter
from xlacc.commands.doctor.rules import project as project_rules
from xlacc.ground.report import EXIT_NEEDS_GPU, EXIT_OK, EXIT_PROBLEM, Finding

# Problem sizes (elements) when --sizes is not given: 1, a size no block or vector width divides,
# and a large one (16M on a GPU; smaller on the CPU, where the point is correctness, not bandwidth).
DEFAULT_SIZES = {"gpu": [1, 1_000_003, 1 << 24], "cpu": [1, 10_007, 1 << 20]}
NUMPY_TO_SPEC_DTYPE = {info["numpy"]: name for name, info in spec_mod.DTYPE_INFO.items()}


def parse_args(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--records", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default="", help="comma-separated element counts")
    parser.add_argument("--rtol", type=float, default=None)
    parser.add_argument("--atol", type=float, default=None)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--devices", type=int, default=0, help="devices to shard over (0: every GPU when there are several)")
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    return args


class ExampleInputsError(Exception):
    """The reference's example_inputs failed, or returned something else than (operands, attrs)."""


@dataclass
class Project:
    spec: spec_mod.Spec
    reference_module: ModuleType

    @property
    def reference(self) -> Callable[..., Any]:
        return getattr(self.reference_module, self.spec.reference_function)

    def example_inputs(self, size: int, rng: Any, dtype: str | None) -> tuple[list[Any], dict[str, Any]]:
        """The user's example_inputs(size, rng[, dtype]); what goes wrong in it is named as its own."""
        where = f"example_inputs({size}) in {self.spec.reference_file}"
        example_inputs = self.reference_module.example_inputs
        try:
            made = example_inputs(size, rng) if dtype is None else example_inputs(size, rng, dtype)
        except Exception as exc:  # the user's code: its failure is the answer
            raise ExampleInputsError(f"{where}: {first_line(exc)}") from exc
        if not (isinstance(made, (tuple, list)) and len(made) == 2 and isinstance(made[0], (tuple, list)) and isinstance(made[1], dict)):
            raise ExampleInputsError(f"{where} returned {type(made).__name__}; it returns (operands, attrs): a list of arrays and a dict")
        operands = list(made[0])
        for name, operand in zip([t.name for t in self.spec.inputs], operands):
            problem = _operand_problem(operand, self.spec.input(name).dtypes)
            if problem:
                raise ExampleInputsError(f"{where}: {name} is {problem}")
        return operands, dict(made[1])

    def bytes_moved(self, operands: list[Any], outputs: list[Any]) -> int:
        counter = getattr(self.reference_module, "bytes_moved", None)
        if counter is not None:
            return int(counter(operands, outputs))
        return int(sum(_nbytes(a) for a in list(operands) + list(outputs)))

    def dtypes(self) -> list[str | None]:
        """The dtypes to run: every one of a generic op, else the one example_inputs picks."""
        return list(self.spec.generic_dtypes) or [None]

    def module(self, name: str) -> ModuleType:
        """A module of the op's package: ``module("jax")`` imports ``NAME.jax``."""
        return importlib.import_module(f"{self.spec.package}.{name}")

    @property
    def package(self) -> ModuleType:
        return importlib.import_module(self.spec.package)


def load_project(path: Path) -> Project:
    """The spec and the reference; the project's root goes first on sys.path so that its package
    imports as `import NAME`, as the user's own code does."""
    spec = spec_mod.load(path)
    sys.path.insert(0, str(spec.root))
    return Project(spec, load_reference(spec))


def load_reference(spec: spec_mod.Spec) -> ModuleType:
    """The reference module: a module of the op's package, or any file named in [op] reference."""
    path = (spec.root / spec.reference_file).resolve()
    package = (spec.root / spec.package).resolve()
    if path.parent == package and path.suffix == ".py":
        return importlib.import_module(f"{spec.package}.{path.stem}")
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist (the reference named in {spec_mod.SPEC_FILE})")
    module_spec = importlib.util.spec_from_file_location(f"{spec.package}_reference", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


def _operand_problem(operand: Any, dtypes: tuple[str, ...]) -> str | None:
    """What is wrong with an operand example_inputs gave: not an array, or of a dtype the op does not take."""
    if not (hasattr(operand, "shape") and hasattr(operand, "dtype")):
        return f"{type(operand).__name__}, not an array"
    given = spec_dtype(operand)
    if given not in dtypes:
        return f"{given}; the op takes {' or '.join(dtypes)}"
    return None


def as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def spec_dtype(array: Any) -> str:
    name = getattr(getattr(array, "dtype", None), "name", str(getattr(array, "dtype", "")))
    return NUMPY_TO_SPEC_DTYPE.get(name, name)


def case_label(size: int, operands: list[Any]) -> str:
    dtypes = list(dict.fromkeys(spec_dtype(a) for a in operands))
    return f"n={size} {'/'.join(dtypes)}"


def operand_shapes(spec: spec_mod.Spec, operands: list[Any]) -> str:
    """``x f32[8], y f32[8]``: the operands, named as the spec's inputs."""
    names = [operand.name for operand in spec.inputs] + [f"operand {i}" for i in range(len(spec.inputs), len(operands))]
    return ", ".join(f"{name} {spec_dtype(a)}{list(getattr(a, 'shape', ()))}" for name, a in zip(names, operands))


def _nbytes(array: Any) -> int:
    return int(getattr(array, "nbytes", 0))


class Harness:
    """Steps that record what they find; an exception fails the step's check, never the process."""

    def __init__(self, writer: RecordWriter):
        self.writer = writer
        self.failed = False
        self.needs_gpu = False
        self.reported: set[str] = set()

    def check(self, name: str, ok: bool | None, detail: str = "") -> bool | None:
        if ok is False:
            self.failed = True
        return self.writer.check(name, ok, detail)

    def record(self, finding: Finding | None, once: bool = True) -> bool:
        """Record a finding the rule that owns its code made from what this harness saw, once per
        code unless ``once`` is False (the first evidence is the most direct); True when there was one."""
        if finding is None:
            return False
        if once and finding.code in self.reported:
            return True
        self.reported.add(finding.code)
        if finding.severity == "error":
            self.failed = True
        fix = finding.fix.replace("NAME/", f"{self.spec.package}/")
        self.writer.finding(finding.code, finding.severity, finding.title, finding.evidence, fix)
        return True

    @contextmanager
    def step(self, name: str, check_name: str | None = None) -> Iterator[None]:
        """Record that ``name`` starts; an exception inside becomes a failed ``check_name`` check and
        its traceback goes to stderr, where the diagnosis rules read it."""
        self.writer.step(name)
        try:
            yield
        except (Exception, KeyboardInterrupt) as exc:  # every failure of the user's code (the harness has its own session: no terminal's Ctrl-C reaches it)
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            self.check(check_name or name, False, first_line(exc))

    # -- numerics: the op against the reference; each harness supplies run_op ----------------------
    context = ""  # each harness's key of the catalogue's WORDINGS: how it words what it saw
    # Set by each harness once the project is loaded.
    args: argparse.Namespace
    spec: spec_mod.Spec
    project: Project
    numerics_device = "cpu"  # picks DEFAULT_SIZES when --sizes is not given
    numerics_note = ""  # put before each numerics detail: what ran the op, where that is not obvious

    def run_op(self, operands: list[Any], attrs: dict[str, Any]) -> tuple[Any, ...]:
        """Run the custom call on the framework's device; return its outputs as NumPy arrays."""
        raise NotImplementedError

    def check_numerics(self) -> None:
        sizes = self.args.sizes or DEFAULT_SIZES[self.numerics_device]
        self.writer.data("sizes", sizes)
        problems: dict[int, str] = {}  # size -> the operands example_inputs gave for it
        for size in sizes:
            for dtype in self.project.dtypes():
                with self.step(f"numerics n={size}", f"numerics n={size} {dtype or ''}".strip()):
                    problems[size] = self.check_case(size, dtype)
        self.report_sizes_alike(problems)

    def report_sizes_alike(self, problems: dict[int, str]) -> None:
        """example_inputs that gave one problem for every size asked ran it under each size's label."""
        self.record(project_rules.example_inputs_gave_one_problem(problems))

    def check_case(self, size: int, dtype: str | None) -> str:
        """Check the op against the reference on example_inputs(size); return the operands' shapes."""
        operands, attrs = self.project.example_inputs(size, np.random.default_rng(self.args.seed), dtype)
        problem = operand_shapes(self.spec, operands)
        label = case_label(size, operands)
        outputs = self.run_op(operands, attrs)
        expected = as_tuple(self.project.reference(*[numerics.widen(a) for a in operands], **attrs))
        if len(outputs) != len(expected):
            names = ", ".join(t.name for t in self.spec.results)
            self.check(f"numerics {label}", False, f"the op returns {len(outputs)} outputs ({names}), the reference {len(expected)} values: it returns one array per output")
            return problem
        results = [
            numerics.compare(out_spec.name, out, ref, self.args.rtol, self.args.atol)
            for out_spec, out, ref in zip(self.spec.results, outputs, expected)
        ]
        detail = f"{self.numerics_note}seed {self.args.seed}: " + "; ".join(r.detail for r in results)
        self.check(f"numerics {label}", all(r.ok for r in results), detail)
        return problem

    def exit_code(self) -> int:
        if self.failed:
            return EXIT_PROBLEM
        return EXIT_NEEDS_GPU if self.needs_gpu else EXIT_OK

    def finish(self) -> int:
        code = self.exit_code()
        reasons = {EXIT_OK: "passed", EXIT_PROBLEM: "failed", EXIT_NEEDS_GPU: "execution needs a GPU"}
        self.writer.exit(code, reasons[code])
        self.writer.close()
        return code


def leave(code: int) -> None:
    """End a harness whose records are written. A thread the user's code left running, or an
    atexit handler that waits, would otherwise hold the process, and run-smoke, until its timeout."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
