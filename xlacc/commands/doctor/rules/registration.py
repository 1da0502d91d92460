"""Registering a custom call and calling it: the platform names XLA looks targets up under, the
registry (typed FFI or legacy) and api_version a target is registered and called with, and whether
it is registered at all.

The one home of platform-name, api-version-mismatch, api-version-invalid, legacy-api-deprecated,
target-not-registered and ld-preload. doctor's source rules hand these functions what they read
(Python registrations and calls, scripts, XLA's static registration macros); run-smoke's harnesses what they saw in jax's registries
and the lowered program, worded their own way (``context``, a key of the catalogue's WORDINGS).
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import TYPE_CHECKING

from xlacc.commands.doctor.program import registration_of
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx, hlo
from xlacc.spec import Spec, abi

if TYPE_CHECKING:  # what doctor read; a harness that imports this module reads no source
    from xlacc.commands.doctor.inputs import SourceFile
    from xlacc.commands.doctor.program import Program
    from xlacc.readers.python import PyCall, PyFacts, PyRegistration

# The platform strings jax.ffi.register_ffi_target maps onto a backend, by project platform.
JAX_PLATFORMS = {"cpu": ("cpu", "Host"), "cuda": ("CUDA", "gpu")}
# Platform names some backend registers a handler for; JAX keeps anything else pending forever.
LIVE_PLATFORMS = frozenset({"Host", "CUDA", "ROCM"})
JAX_REGISTER_API_VERSIONS = (abi.JAX_REGISTER_LEGACY, abi.JAX_REGISTER_FFI)  # register_ffi_target's own scale
REGISTRY_KIND = {"ffi": "typed FFI", "legacy": "legacy"}
JAX_REGISTRY = {abi.JAX_REGISTER_LEGACY: "the legacy registry", abi.JAX_REGISTER_FFI: "the typed FFI registry"}


def jax_registration(spec: Spec, platform: str, api_version: int, context: str) -> list[Finding]:
    """A ``jax.ffi.register_ffi_target`` of the spec's target with ``platform`` and ``api_version``:
    a platform jax keeps pending, an api_version it refuses, or the other registry than the call's."""
    call = f"register_ffi_target({spec.target!r}, platform={platform!r}, api_version={api_version})"
    findings = []
    accepted = JAX_PLATFORMS[spec.platform]
    if platform not in accepted:
        findings.append(make(
            "platform-name",
            f"{call}: a {spec.platform} project must register for {' or '.join(map(repr, accepted))}; "
            f"jax queues {platform!r} and XLA never sees the target",
            context=context,
        ))
    expected = spec.jax_register_api_version
    if api_version not in JAX_REGISTER_API_VERSIONS:
        findings.append(make(
            "api-version-invalid",
            f"{call}: jax takes api_version 1 (typed FFI) or 0 (legacy) here; this {spec.api} project registers with {expected}",
            context=context,
        ))
    elif api_version != expected:
        registry = JAX_REGISTRY.get(api_version, f"api_version {api_version}")
        findings.append(make(
            "api-version-mismatch",
            f"{call} puts the {REGISTRY_KIND[spec.api]} entry point into {registry}; "
            f"this {spec.api} project registers with api_version={expected} and calls with HLO api_version {spec.jax_api_version}",
            context=context,
        ))
    return findings


def jax_pending(target: str, queued_platform: str, name: str | None, context: str) -> Finding | None:
    """A registration jax holds back (``name``: the target, or None for an FFI type id) for a
    platform no backend uses: it never reaches XLA."""
    if queued_platform in LIVE_PLATFORMS or name not in (target, None):
        return None
    what = f"target {target!r}" if name else "an FFI type id"
    return make("platform-name", f"{what} is queued for platform {queued_platform!r}, which no jax backend uses; it is never registered", context=context)


def registered_kind(spec: Spec, platform: str, kind: str, context: str) -> Finding | None:
    """The spec's target found in XLA's ``platform`` registry as ``kind`` (typed FFI or legacy),
    where the project calls it as the other kind."""
    if kind == REGISTRY_KIND[spec.api]:
        return None
    return make(
        "api-version-mismatch",
        f"{spec.target!r} is registered for {platform} as {kind}, but the project calls it with api_version "
        f"{spec.jax_api_version} ({REGISTRY_KIND[spec.api]})",
        context=context,
    )


def not_registered(target: str, platform: str, queued: list[str], context: str | None = None) -> Finding:
    """After the project's register(), XLA's ``platform`` registry has no ``target``."""
    where = f" (queued for {', '.join(map(repr, queued))})" if queued else ""
    return make("target-not-registered", f"after register(), {target!r} is not in XLA's {platform} registry{where}", context=context)


def called_with(call: hlo.CustomCall, expected: int, context: str, where: str | None = None, shown: int = 400) -> Finding | None:
    """A lowered custom call whose api_version is not the one the project's entry point takes
    (``where``: which program it was found in)."""
    if call.api_version == expected:
        return None
    line = call.line[:shown]
    return make("api-version-mismatch", f"{where}: {line}" if where else line, context=context)


# -- what doctor read in Python: registrations, calls, LD_PRELOAD ------------------------------

# Platform names jax.ffi.register_ffi_target applies; another spelling of those is queued forever.
JAX_PLATFORM_NAMES = frozenset({"cpu", "gpu", "CUDA", "Host", "ROCM"})
# Another spelling of those: a name like "SYCL" or "METAL" may be a plugin's own, and is let be.
MISSPELT_PLATFORM = re.compile(r"cuda|gpu|cpu|host|rocm|nvidia|^$", re.I)
TORCH_XLA_PLATFORM = "CUDA"
HLO_APIS = frozenset({1, 2, 3, 4})
JAX_REGISTER_APIS = frozenset(JAX_REGISTER_API_VERSIONS)
# A shell assignment (`LD_PRELOAD=./x.so python t.py`), or Python setting it in an environment.
LD_PRELOAD = {
    "sh": re.compile(r"(?<![\w\"'])LD_PRELOAD\s*=\s*[\"']?(?P<lib>[^\s\"';]{1,512})"),
    "py": re.compile(r"[\"']LD_PRELOAD[\"']\s*(?:\]\s*=|:|,)\s*f?[\"'](?P<lib>[^\"']{1,512})"),
}
SYSTEM_PRELOADS = re.compile(r"lib(?:stdc\+\+|gomp|tcmalloc|jemalloc|asan|ubsan|tsan|cuda|nccl|python)")


def python_registration(at: str, reg: PyRegistration) -> list[Finding]:
    """A registration in Python (at ``file:line``): platforms XLA never looks up, an api_version
    register_ffi_target refuses."""
    findings = []
    if reg.framework == "torch_xla":
        wrong = [p for p in reg.platforms if p != TORCH_XLA_PLATFORM]
        if wrong:
            findings.append(make("platform-name", f"{at}: `{reg.text}` registers for {_listed(wrong)}; torch_xla accepts exactly \"CUDA\"", likelihood=0.85))
    else:
        wrong = [p for p in reg.platforms if p not in JAX_PLATFORM_NAMES and MISSPELT_PLATFORM.search(p)]
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


def python_call(at: str, call: PyCall) -> list[Finding]:
    """A custom call made in Python (at ``file:line``): an api_version missing, invalid or deprecated."""
    if call.framework == "torch_xla" and call.api_source == "missing":
        return [make(
            "api-version-invalid",
            f"{at}: `{call.text}` passes {call.positional} arguments; `_xla_custom_call` has no defaults and "
            "takes api_version as its 7th (and frontend_attributes as its 8th)",
            likelihood=0.85,
        )]
    if call.api is not None and call.api not in HLO_APIS:
        default = " (stablehlo_custom_call's default)" if call.api_source == "default" else ""
        return [make("api-version-invalid", f"{at}: `{call.text}` calls with api_version {call.api}{default}", likelihood=0.9)]
    if call.api == 1:
        default = f" ({call.function}'s default)" if call.api_source == "default" else ""
        return [make("legacy-api-deprecated", f"{at}: `{call.text}` calls with api_version 1 (API_VERSION_ORIGINAL){default}", likelihood=0.7)]
    return []


def ld_preload(file: SourceFile) -> list[Finding]:
    """A script or Python file that preloads the op's library, as if loading it registered the target."""
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


# -- ctypes callbacks and foreign platforms (doctor.rules.callbacks reads the callbacks) ---------

GPU_PLATFORMS = frozenset({"CUDA", "gpu", "ROCM", "cuda", "rocm"})
CPU_PLATFORMS = frozenset({"cpu", "Host"})
# The legacy signatures by parameter count, and the HLO api_versions that call each (xla/service/custom_call_status.h).
CALLBACK_APIS = {
    "gpu": {4: (1,), 5: (2, 3)},  # (stream, buffers, opaque, len[, status])
    "cpu": {2: (1,), 3: (2,), 5: (3,)},  # (out, ins[, status]) / (out, ins, opaque, len, status)
}


def _at(facts: PyFacts, line: int) -> str:
    return f"{facts.name}:{line}"


def callback_platform(facts: PyFacts, reg: PyRegistration) -> Finding | None:
    """A ctypes callback with an XLA:CPU signature registered for a GPU: XLA:GPU passes device pointers."""
    callback = reg.callback
    if callback is None or not GPU_PLATFORMS.intersection(reg.platforms):
        return None
    cpu_signature = callback.arity in CALLBACK_APIS["cpu"] and callback.arity not in CALLBACK_APIS["gpu"]
    if not (cpu_signature or (callback.arity == 5 and callback.stream is False)):
        return None
    gpu = ", ".join(f'"{p}"' for p in reg.platforms if p in GPU_PLATFORMS)
    shown = f"({', '.join(callback.params)})" if callback.params else f"with {callback.arity} parameters"
    return make(
        "platform-name",
        f"{_at(facts, reg.line)}: `{reg.text}` registers the ctypes callback `{callback.name}` {shown} "
        f"({_at(facts, callback.line)}: `{callback.text}`), an XLA:CPU signature with no stream, for {gpu}: XLA:GPU "
        "calls it on the host with device pointers in its buffers, and reading them there crashes or reads garbage",
        title="a CPU callback is registered for the GPU",
        fix="Register it for platform=\"cpu\" only. On the GPU, give XLA a compiled entry point that takes the stream "
        "(`void f(cudaStream_t, void** buffers, const char* opaque, size_t len, XlaCustomCallStatus*)`, api 2; "
        "`xlacc new` writes one), or call Python through `jax.pure_callback`.",
        likelihood=0.85,
    )


def foreign_platform(program: Program, facts: PyFacts, reg: PyRegistration) -> Finding | None:
    """A "tpu" registration in a GPU build: XLA on a GPU never looks it up."""
    tpu = [p for p in reg.platforms if p.lower() == "tpu"]
    if not tpu or not _gpu_build(program):
        return None
    return make(
        "platform-name",
        f"{_at(facts, reg.line)}: `{reg.text}` registers for \"{tpu[0]}\" in a GPU build: XLA on a GPU never looks "
        "that registration up, so it never applies here",
        title="a TPU registration in a GPU build",
        fix="Register for \"CUDA\" (or \"gpu\") where the GPU should run it; keep the TPU registration only for a TPU build.",
        severity="warning",
        likelihood=0.6,
    )


def _gpu_build(program: Program) -> bool:
    """CUDA sources, a GPU entry point, or a registration for the GPU anywhere in the program."""
    if any(s.name.endswith((".cu", ".cuh")) for s in program.sources) or any(e.gpu for e in program.entries):
        return True
    return any(GPU_PLATFORMS.intersection(r.platforms) for f in program.facts for r in f.registrations)


# -- XLA's static registration macros: where they reach a registry, and the platform names they take --

FFI_MACRO_PLATFORMS = frozenset({"cuda", "gpu", "host", "cpu", "rocm"})

LEGACY_MACRO_PLATFORMS = frozenset({"CUDA", "Host", "ROCM"})

# A file built into the binary that holds XLA's registry (jaxlib, torch_xla, XLA itself), where the
# static registration macros do reach it: it includes XLA's internals (the registry's own header
# xla/ffi/ffi_api.h, not the public xla/ffi/api/), jaxlib's or torch_xla's sources.
INSIDE_XLA = re.compile(
    r'^\s*#\s*include\s*"(?:jaxlib/|xla/service/|xla/pjrt/|xla/client/|xla/ffi/ffi_api\.h|tensorflow/|torch_xla/csrc/)', re.M
)


def static_registrations(source: cxx.CxxSource) -> list[Finding]:
    """XLA's registration macros fill the registry of the binary they are linked into: XLA's own build,
    jaxlib or torch_xla themselves, never theirs from a library loaded with ctypes or LD_PRELOAD."""
    findings = []
    inside_xla = INSIDE_XLA.search(source.text) is not None
    for use in source.xla_macros:
        registration = registration_of(use)
        if registration is None:
            continue
        if not inside_xla or registration.arity_problem:
            findings.append(_static_registration(registration, source))
        finding = _registration_platform(registration, source)
        if finding is not None:
            findings.append(finding)
    return findings


def _static_registration(registration, source: cxx.CxxSource) -> Finding:
    arity = f" ({registration.arity_problem})" if registration.arity_problem else ""
    return make(
        "ld-preload",
        f"{source.name}:{registration.line}: `{registration.text}` registers `{registration.target}` when the library "
        f"loads; that reaches only a registry linked into the same binary (XLA built from source), never the one "
        f"inside jaxlib or torch_xla{arity}",
        title="relying on loading the library to register a target",
        likelihood=0.6,
    )


def _registration_platform(registration, source: cxx.CxxSource) -> Finding | None:
    typed = registration.macro == "XLA_FFI_REGISTER_HANDLER"
    platform = registration.platform
    ok = platform.lower() in FFI_MACRO_PLATFORMS if typed else platform in LEGACY_MACRO_PLATFORMS
    if not platform or ok:
        return None
    allowed = "\"CUDA\" (or \"gpu\") / \"Host\" (or \"cpu\")" if typed else "exactly \"CUDA\" or \"Host\""
    return make(
        "platform-name",
        f"{source.name}:{registration.line}: `{registration.text}` registers for platform \"{platform}\"; "
        f"{registration.macro} needs {allowed}",
        likelihood=0.8,
    )
