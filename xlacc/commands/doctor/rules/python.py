"""Checks over one Python file (and shell scripts, for LD_PRELOAD): how it registers and calls
custom calls, what it hands to them, and how it starts processes."""

from __future__ import annotations

from xlacc.commands.doctor.inputs import SourceFile
from xlacc.commands.doctor.rules import custom_call, registration
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers.python import PyCall, PyFacts, PyRegistration


def where(facts: PyFacts, line: int) -> str:
    return f"{facts.name}:{line}"


def registration_findings(facts: PyFacts, reg: PyRegistration) -> list[Finding]:
    findings = []
    at = where(facts, reg.line)
    if reg.capsule in ("int-address", "ctypes-pointer", "ctypes-function"):
        what = {"int-address": "an int address", "ctypes-pointer": "a ctypes pointer", "ctypes-function": "a ctypes function"}[reg.capsule]
        findings.append(make("capsule-required", f"{at}: `{reg.text}` passes {what} (`{reg.capsule_text}`)", likelihood=0.85))
    return findings + registration.python_registration(at, reg)


def call_findings(facts: PyFacts, call: PyCall) -> list[Finding]:
    at = where(facts, call.line)
    findings = registration.python_call(at, call)
    if call.dtype_problem:
        findings.append(make("output-dtype-type", f"{at}: output dtype `{call.dtype_problem}` in `{call.text}`", likelihood=0.85))
    return findings + custom_call.python_call_config(at, call)


def python_findings(facts: PyFacts) -> list[Finding]:
    findings = []
    for reg in facts.registrations:
        findings.extend(registration_findings(facts, reg))
    for call in facts.calls:
        findings.extend(call_findings(facts, call))
    for line, text, triton in facts.gpu_custom_call:
        if not triton:  # torch_xla's documented Triton route is what _xla_gpu_custom_call is for
            findings.append(make("fixed-target-api", f"{where(facts, line)}: `{text}`", likelihood=0.9))
    findings.extend(_legacy_jax_findings(facts))
    for line, function, returned in facts.constant_impls:
        findings.append(custom_call.constant_implementation(where(facts, line), function, returned))
    fork = _fork_after_init(facts)
    if fork:
        findings.append(fork)
    return findings


def _legacy_jax_findings(facts: PyFacts) -> list[Finding]:
    """One finding per file for the removed ``jax.lib.xla_client`` API: an error for its unguarded
    uses (the import and every call), an info when each use is a guarded fallback (in ``except
    AttributeError:``, under ``hasattr`` or a version check), which runs only where the old API is."""
    if not facts.legacy_jax_api:
        return []
    exposed = [(line, text) for line, text in facts.legacy_jax_api if line not in facts.legacy_guards]
    if exposed:
        (line, text), *more = exposed
        return [make("jax-legacy-api-removed", f"{where(facts, line)}: `{text}`{_also(more)}", likelihood=0.9)]
    (line, text), *more = facts.legacy_jax_api
    return [make(
        "jax-legacy-api-removed",
        f"{where(facts, line)}: `{text}` is a fallback inside {facts.legacy_guards[line]}{_also(more)}: it runs only "
        "where jax still has the old API, and the new one is taken where it does not",
        title="old JAX custom-call API, kept as a guarded fallback",
        fix="Nothing to change while the guard holds; drop the fallback once the oldest jax you support has jax.ffi (0.4.31).",
        severity="info",
        likelihood=0.2,
    )]


def _also(more: list[tuple[int, str]]) -> str:
    return f"; also line{'s' if len(more) > 1 else ''} {', '.join(str(line) for line, _ in more)}" if more else ""


def _fork_after_init(facts: PyFacts) -> Finding | None:
    """A device initialised, then a fork later in the same function (or both at module level)."""
    if facts.spawn_configured:
        return None
    for init_line, init, scope in facts.gpu_inits:
        later = [(line, text) for line, text, fork_scope in facts.forks if fork_scope == scope and line > init_line]
        if later:
            return make(
                "cuda-init-before-fork",
                f"{where(facts, init_line)}: `{init}` initialises the device, then {where(facts, later[0][0])}: "
                f"`{later[0][1]}` forks, and no 'spawn' start method is set",
                severity="warning",
                likelihood=0.6,
            )
    return None


def ld_preload_findings(file: SourceFile) -> list[Finding]:
    return registration.ld_preload(file)
