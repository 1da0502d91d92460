"""Checks over one Python file (and shell scripts, for LD_PRELOAD): how it registers and calls
custom calls, what it hands to them, and how it starts processes."""

from __future__ import annotations

import re
from pathlib import PurePath

from xlacc.commands.doctor.inputs import SourceFile
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers.python import PyCall, PyFacts, PyRegistration

JAX_PLATFORMS = frozenset({"cpu", "gpu", "CUDA", "Host", "ROCM"})
# Another spelling of those: a name like "SYCL" or "METAL" may be a plugin's own, and is let be.
MISSPELT_PLATFORM = re.compile(r"cuda|gpu|cpu|host|rocm|nvidia|^$", re.I)
TORCH_XLA_PLATFORM = "CUDA"
HLO_APIS = frozenset({1, 2, 3, 4})
JAX_REGISTER_APIS = frozenset({0, 1})
# A shell assignment (`LD_PRELOAD=./x.so python t.py`), or Python setting it in an environment.
LD_PRELOAD = {
    "sh": re.compile(r"(?<![\w\"'])LD_PRELOAD\s*=\s*[\"']?(?P<lib>[^\s\"';]{1,512})"),
    "py": re.compile(r"[\"']LD_PRELOAD[\"']\s*(?:\]\s*=|:|,)\s*f?[\"'](?P<lib>[^\"']{1,512})"),
}
SYSTEM_PRELOADS = re.compile(r"lib(?:stdc\+\+|gomp|tcmalloc|jemalloc|asan|ubsan|tsan|cuda|nccl|python)")


def where(facts: PyFacts, line: int) -> str:
    return f"{facts.name}:{line}"


def registration_findings(facts: PyFacts, reg: PyRegistration) -> list[Finding]:
    findings = []
    at = where(facts, reg.line)
    if reg.capsule in ("int-address", "ctypes-pointer", "ctypes-function"):
        what = {"int-address": "an int address", "ctypes-pointer": "a ctypes pointer", "ctypes-function": "a ctypes function"}[reg.capsule]
        findings.append(make("capsule-required", f"{at}: `{reg.text}` passes {what} (`{reg.capsule_text}`)", likelihood=0.85))
    if reg.framework == "torch_xla":
        wrong = [p for p in reg.platforms if p != TORCH_XLA_PLATFORM]
        if wrong:
            findings.append(make("platform-name", f"{at}: `{reg.text}` registers for {_listed(wrong)}; torch_xla accepts exactly \"CUDA\"", likelihood=0.85))
    else:
        wrong = [p for p in reg.platforms if p not in JAX_PLATFORMS and MISSPELT_PLATFORM.search(p)]
        if wrong:
            tried = f" (it tries {_listed(reg.platforms)} in turn)" if len(reg.platforms) > 1 else ""
            findings.append(make(
                "platform-name",
                f"{at}: `{reg.text}` registers for {_listed(wrong)}{tried}: JAX queues such a registration silently and never "
                "applies it (only \"CUDA\"/\"gpu\" and \"cpu\"/\"Host\" do)",
                likelihood=0.85,
            ))
    if reg.framework == "jax" and reg.api_version is not None and reg.api_version not in JAX_REGISTER_APIS:
        findings.append(make(
            "api-version-invalid",
            f"{at}: `{reg.text}` uses api_version={reg.api_version}; register_ffi_target takes 0 (legacy) or 1 "
            "(typed FFI), not the HLO numbers 1-4",
            likelihood=0.9,
        ))
    return findings


def _listed(values) -> str:
    return ", ".join(f'"{v}"' for v in values)


def call_findings(facts: PyFacts, call: PyCall) -> list[Finding]:
    findings = []
    at = where(facts, call.line)
    if call.framework == "torch_xla" and call.api_source == "missing":
        findings.append(make(
            "api-version-invalid",
            f"{at}: `{call.text}` passes {call.positional} arguments; `_xla_custom_call` has no defaults and "
            "takes api_version as its 7th (and frontend_attributes as its 8th)",
            likelihood=0.85,
        ))
    elif call.api is not None and call.api not in HLO_APIS:
        default = " (stablehlo_custom_call's default)" if call.api_source == "default" else ""
        findings.append(make("api-version-invalid", f"{at}: `{call.text}` calls with api_version {call.api}{default}", likelihood=0.9))
    elif call.api == 1:
        default = f" ({call.function}'s default)" if call.api_source == "default" else ""
        findings.append(make("legacy-api-deprecated", f"{at}: `{call.text}` calls with api_version 1 (API_VERSION_ORIGINAL){default}", likelihood=0.7))
    if call.dtype_problem:
        findings.append(make("output-dtype-type", f"{at}: output dtype `{call.dtype_problem}` in `{call.text}`", likelihood=0.85))
    findings.extend(_config_findings(at, call))
    return findings


def _config_findings(at: str, call: PyCall) -> list[Finding]:
    problems = []
    if call.function == "ffi_call" and call.api is not None and call.api < 4 and call.attrs:
        problems.append(f"attributes {', '.join(call.attrs)} are passed with custom_call_api_version={call.api}; "
                        "attributes need api 4 (legacy calls take legacy_backend_config)")
    if call.function == "ffi_call" and call.api == 4 and call.legacy_config:
        problems.append("legacy_backend_config is passed to a typed FFI call (api 4); pass attributes as keyword arguments")
    if call.framework == "torch_xla" and call.api == 4:
        text = (call.backend_config or "").strip()
        not_dictionary = call.backend_config_kind == "constant" and text and not (text.startswith("{") and text.endswith("}"))
        if not_dictionary or call.backend_config_kind in ("json", "str-call"):
            shown = f'"{text}"' if call.backend_config_kind == "constant" else f"a {call.backend_config_kind} value"
            problems.append(f"backend_config {shown} with api_version 4 is not an MLIR dictionary (`{{n = 3 : i64}}`)")
    return [make("backend-config-invalid", f"{at}: `{call.text}`: {p}", likelihood=0.8) for p in problems]


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
        findings.append(make(
            "op-optimized-away",
            f"{where(facts, line)}: the XLA implementation `{function}` returns `{returned}`: a constant that XLA "
            "folds away, so the HLO holds no custom-call",
            likelihood=0.8,
        ))
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
    findings = []
    for match in LD_PRELOAD[file.kind].finditer(file.text):
        library = match.group("lib")
        if ".so" not in library or SYSTEM_PRELOADS.search(PurePath(library).name):
            continue
        line = file.line_offset + file.text.count("\n", 0, match.start()) + 1
        findings.append(make(
            "ld-preload",
            f"{file.group}:{line}: `{' '.join(match.group(0).split())}`: preloading {library} registers no custom-call target",
            likelihood=0.7,
        ))
    return findings
