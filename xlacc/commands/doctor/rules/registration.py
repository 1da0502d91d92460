"""XLA's static registration macros: where they reach a registry, and the platform names they take."""

from __future__ import annotations

import re

from xlacc.commands.doctor.program import registration_of
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx

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
