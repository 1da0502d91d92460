"""Registering a custom call and calling it: the platform names XLA looks targets up under, the
registry (typed FFI or legacy) and api_version a target is registered and called with, and whether
it is registered at all.

The one home of platform-name, api-version-mismatch, api-version-invalid and target-not-registered:
run-smoke's harnesses hand these functions what they saw in jax's registries and the lowered
program, and word the finding their own way (``context``, a key of the catalogue's WORDINGS).
"""

from __future__ import annotations

from xlacc.commands.doctor.program import registration_of
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx, hlo
from xlacc.spec import Spec, abi

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
