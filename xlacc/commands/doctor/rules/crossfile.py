"""Checks across files: the entry points kernels define against where Python registers and calls
the same targets (names, api_version, platform, operands, backend_config layout).

A target is linked to its entry point by the exported symbol a registration wraps, by the name a
C++ registrations dict gives a capsule (``dict["gpu_foo"] = EncapsulateFunction(gpu_foo)``), by a
static registration, or by the name itself. A name Python computes (``platform + "_foo_f32"``)
links to every entry point it can name.
"""

from __future__ import annotations

import dataclasses
import re

from xlacc.commands.doctor.program import EntryPoint, Program
from xlacc.commands.doctor.rules.buffers import (
    buffer_order,
    buffer_order_of_calls,
    buffer_uses,
)
from xlacc.commands.doctor.rules import custom_call, registration, symbols
from xlacc.commands.doctor.rules.entry_points import opaque_read
from xlacc.commands.doctor.rules.python import where
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers.python import (
    PyCall,
    PyFacts,
    PyRegistration,
    struct_layout,
    struct_size,
)

# Targets XLA, jaxlib and torch_xla register themselves: a call to one needs no registration here.
BUILTIN_TARGETS = re.compile(
    r"^(?:triton_kernel_call|tpu_custom_call|mosaic_gpu\w*|Sharding|SPMDFullToShardShape|SPMDShardToFullShape|"
    r"annotate_device_placement|xla_python_\w+|xla_ffi_python_\w+|cu\w+|hip\w+|lapack_\w+|cusolver\w+|cublas\w+|"
    r"__\w+|MoveToHost|MoveToDevice|LayoutConstraint|shard_barrier\w*)$"
)
# Element types of C buffers and FFI dtypes, as numpy names.
C_DTYPES = {
    "float": "float32", "double": "float64", "int": "int32", "int32_t": "int32", "unsigned": "uint32", "uint32_t": "uint32",
    "int64_t": "int64", "long": "int64", "long long": "int64", "uint64_t": "uint64", "size_t": "uint64", "int16_t": "int16",
    "short": "int16", "int8_t": "int8", "uint8_t": "uint8", "char": "int8", "bool": "bool", "half": "float16",
    "__half": "float16", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16",
}
FFI_DTYPES = {
    "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64", "S8": "int8", "S16": "int16", "S32": "int32",
    "S64": "int64", "U8": "uint8", "U16": "uint16", "U32": "uint32", "U64": "uint64", "PRED": "bool",
}
class Links:
    """Which entry points a registration or a call reaches."""

    def __init__(self, program: Program):
        self.program = program
        self.by_name: dict[str, list[EntryPoint]] = {}
        for entry in program.entries:
            for name in entry.names:
                self.by_name.setdefault(name, []).append(entry)
        self._of_module: dict[str, list[EntryPoint]] = {}
        self._by_registration: dict[int, list[EntryPoint]] = {}
        self._registrations: dict[str, list[tuple[PyFacts, PyRegistration]]] = {}  # by framework
        for facts in program.facts:
            for reg in facts.registrations:
                self._registrations.setdefault(reg.framework, []).append((facts, reg))
        self._found: dict[int, tuple[list[tuple[PyFacts, PyRegistration]], list[EntryPoint]]] = {}

    def named(self, name: str | None, pattern: str | None) -> list[EntryPoint]:
        if name is not None:
            return list(self.by_name.get(name, []))
        if pattern is None:
            return []
        matcher = re.compile(pattern)
        return [e for n, entries in self.by_name.items() if matcher.fullmatch(n) for e in entries]

    def of_module(self, module: str | None) -> list[EntryPoint]:
        """Entry points a C++ module's capsules carry (``PYBIND11_MODULE(gpu_ops, m)`` and its file)."""
        key = module or ""
        if key not in self._of_module:
            source = self.program.modules.get(key)
            self._of_module[key] = [] if source is None else [e for e in self.program.entries if source.name in e.capsule_sources]
        return self._of_module[key]

    def for_registration(self, reg: PyRegistration) -> list[EntryPoint]:
        key = id(reg)
        if key not in self._by_registration:
            self._by_registration[key] = self._for_registration(reg)
        return self._by_registration[key]

    def _for_registration(self, reg: PyRegistration) -> list[EntryPoint]:
        found = [e for symbol in reg.symbols for e in self.by_name.get(symbol, [])]
        source = self.program.modules.get(reg.from_module or "")
        if not found and source is not None:
            found = [e for e in self.program.entries if source.name in e.capsule_sources or e.source == source.name]
            if reg.target or reg.target_pattern:
                found = [e for e in found if any(self._matches(reg, n) for n in e.names)] or found
        if not found and reg.from_module is None:
            found = self.named(reg.target, reg.target_pattern)
        return _unique(found)

    @staticmethod
    def _matches(reg: PyRegistration, name: str) -> bool:
        if reg.target is not None:
            return reg.target == name
        return reg.target_pattern is not None and re.fullmatch(reg.target_pattern, name) is not None

    def registrations(self, call: PyCall) -> list[tuple[PyFacts, PyRegistration]]:
        """Where Python registers the target ``call`` uses, in the registry its framework reads."""
        return [(facts, reg) for facts, reg in self._registrations.get(call.framework, ()) if self._reaches(call, reg)]

    def _reaches(self, call: PyCall, reg: PyRegistration) -> bool:
        """A constant or computed name the call can name, or a key of the module the capsules come from."""
        if (reg.target is not None or reg.target_pattern is not None) and call.reaches(reg):
            return True
        keys = (k for e in self.of_module(reg.from_module) for k in e.capsule_keys) if reg.target is None and reg.from_module else ()
        return any(call.matches(k) for k in keys)

    def of_call(self, call: PyCall, facts: PyFacts | None = None) -> tuple[list[tuple[PyFacts, PyRegistration]], list[EntryPoint]]:
        """The registrations a call's target has and the entry points the call reaches (computed once
        per call)."""
        key = id(call)
        if key not in self._found:
            registrations = self.registrations(call)
            self._found[key] = (registrations, self.for_call(call, registrations, facts))
        return self._found[key]

    def for_call(self, call: PyCall, registrations: list[tuple[PyFacts, PyRegistration]], facts: PyFacts | None = None) -> list[EntryPoint]:
        entries = [
            e for _, reg in registrations for e in self.for_registration(reg) if any(call.matches(n) for n in e.names) or reg.symbols
        ]
        return nearest(_unique(entries or self.named(call.target, call.target_pattern)), facts.name if facts else None)


def nearest(entries: list[EntryPoint], name: str | None) -> list[EntryPoint]:
    """Of several definitions of one name (copies in sibling folders), those closest to the Python
    file that uses it: a script loads the library built beside it."""
    if name is None or len(entries) < 2:
        return entries
    here = _folders(name.split(":", 1)[0])

    def shared(entry: EntryPoint) -> int:
        there = _folders(entry.source)
        return next((i for i, (a, b) in enumerate(zip(here, there)) if a != b), min(len(here), len(there)))

    by_symbol: dict[str, list[EntryPoint]] = {}
    for entry in entries:
        by_symbol.setdefault(entry.symbol, []).append(entry)
    chosen = []
    for same in by_symbol.values():
        best = max(shared(e) for e in same)
        chosen += [e for e in same if shared(e) == best][:1]
    return chosen


def _folders(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/")[:-1] if part not in ("", ".")]


def _unique(entries: list[EntryPoint]) -> list[EntryPoint]:
    return list({id(e): e for e in entries}.values())


# -- names --------------------------------------------------------------------------------------------


def unregistered_targets(program: Program, links: Links) -> list[Finding]:
    """A call to a constant target that nothing registers, next to a registered name it misspells."""
    registered: dict[str, set[str]] = {"jax": set(), "torch_xla": set()}
    patterns: dict[str, list[str]] = {"jax": [], "torch_xla": []}
    open_ended: set[str] = set()  # a framework with a registration whose name cannot be read
    for facts in program.facts:
        for reg in facts.registrations:
            if reg.target is not None:
                registered[reg.framework].add(reg.target)
            elif reg.target_pattern is not None:
                patterns[reg.framework].append(reg.target_pattern)
            elif reg.keys_are_names and program.modules.get(reg.from_module or ""):
                registered[reg.framework].update(k for e in links.of_module(reg.from_module) for k in e.capsule_keys)
            else:
                open_ended.add(reg.framework)
    static = {name for e in program.entries for name in e.registered}
    findings = []
    for facts in program.facts:
        for call in facts.calls:
            names = registered.get(call.framework, set())
            target = call.target
            if not target or not names or call.framework in open_ended or target in names or target in static:
                continue
            if BUILTIN_TARGETS.match(target) or any(re.fullmatch(p, target) for p in patterns[call.framework]):
                continue
            misspelt = registration.misspelt_target(where(facts, call.line), call, names)
            if misspelt is not None:
                findings.append(misspelt)
    return findings


# -- operands and backend_config ----------------------------------------------------------------------


def operand_dtypes(entry: EntryPoint, program: Program, facts: PyFacts, call: PyCall) -> Finding | None:
    """An operand whose element type (where the Python says it) differs from what the kernel reads."""
    if not call.operand_dtypes or not any(call.operand_dtypes):
        return None
    if entry.typed:
        expected = _binding_dtypes(entry.binding)
    else:
        expected = {u.index: C_DTYPES.get((u.element or "").rsplit("::", 1)[-1]) for u in buffer_uses(entry, program)}
    return custom_call.operand_dtypes(where(facts, call.line), call, entry, expected)


def _binding_dtypes(binding: str) -> dict[int, str | None]:
    found = {}
    for index, match in enumerate(re.finditer(r"\.Arg\s*<\s*([^()]*?)>\s*\(\s*\)", binding)):
        dtype = re.search(r"\b(?:ffi::|DataType::)?(F16|BF16|F32|F64|S8|S16|S32|S64|U8|U16|U32|U64|PRED)\b", match.group(1))
        found[index] = FFI_DTYPES[dtype.group(1)] if dtype and "Buffer" in match.group(1) else None
    return found


def opaque_size(entry: EntryPoint, program: Program, facts: PyFacts, call: PyCall) -> Finding | None:
    if call.opaque_format is None:
        return None
    read = opaque_read(entry, program)
    if read is None or read[0] is None:
        return None
    struct = program.struct(read[0])
    packed = struct_size(call.opaque_format)
    size = struct.size() if struct is not None else None
    if size is None or packed is None or size == packed:
        return None
    evidence = (
        f"{where(facts, call.line)}: backend_config `struct.pack(\"{call.opaque_format}\", ...)` is {packed} bytes; "
        f"`{entry.symbol}` ({entry.where}) reads it as `{struct.name}` ({size} bytes, line {struct.line})"
    )
    fields, values = struct.layout(), struct_layout(call.opaque_format)
    if fields == values and packed < size:  # the same fields; only the struct's tail padding is missing
        return make(
            "opaque-size-mismatch",
            f"{evidence}: the fields agree, and the kernel reads the {size - packed} bytes of tail padding past the "
            "string's end",
            severity="warning",
            likelihood=0.6,
        )
    return make("opaque-size-mismatch", f"{evidence}: the fields lie at other offsets", likelihood=0.85)


def call_contents(links: Links, facts: PyFacts, call: PyCall, entry: EntryPoint) -> list[Finding]:
    findings = [operand_dtypes(entry, links.program, facts, call), opaque_size(entry, links.program, facts, call)]
    return [f for f in findings if f is not None]


def cross_findings(program: Program) -> list[Finding]:
    links = Links(program)
    findings = []
    known = set(program.functions) | {e.symbol for e in program.entries}
    calls_of: dict[int, list[tuple[PyFacts, PyCall]]] = {}
    for facts in program.facts:
        for call in facts.calls:
            findings.extend(registration.call_mismatches(facts, call, *links.of_call(call, facts)))
            _, entries = links.of_call(call, facts)
            if len(entries) == 1:
                findings.extend(call_contents(links, facts, call, entries[0]))
            if call.operands is not None and (len(entries) == 1 or call.target is None):
                for entry in entries:  # a name built at run time passes its operands to each target it can name
                    calls_of.setdefault(id(entry), []).append((facts, call))
        for reg in facts.registrations:
            findings.extend(registration.registration_mismatches(program, facts, reg, links.for_registration(reg)))
        if program.entries:
            findings.extend(symbols.missing_in_sources(facts, known))
    findings.extend(unregistered_targets(program, links))
    for entry in program.entries:  # one finding per entry point, however many calls show it
        calls = calls_of.get(id(entry), [])
        found = buffer_order_of_calls(entry, program, calls)
        if found is None and not calls:
            found = buffer_order(entry, program, None, None)
        if found is not None:
            more = len(calls) - 1
            findings.append(found if more < 1 else dataclasses.replace(found, evidence=f"{found.evidence} (and {more} more call{'s' if more > 1 else ''})"))
    return findings
