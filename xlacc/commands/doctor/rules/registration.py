"""Registering a custom call and calling it: the platform names XLA looks targets up under, the
registry (typed FFI or legacy) and api_version a target is registered and called with, and whether
it is registered at all.

The one home of platform-name, api-version-mismatch, api-version-invalid, legacy-api-deprecated,
target-not-registered and ld-preload. doctor's source rules hand these functions what they read
(Python registrations and calls, scripts, XLA's static registration macros); run-smoke's harnesses what they saw in jax's registries
and the lowered program, worded their own way (``context``, a key of the catalogue's WORDINGS).
"""

from __future__ import annotations

import difflib
import re
from pathlib import PurePath
from typing import TYPE_CHECKING

from xlacc.commands.doctor.program import EntryPoint, Program, registration_of
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx, hlo
from xlacc.spec import Spec, abi

if TYPE_CHECKING:  # what doctor read; a harness that imports this module reads no source
    from xlacc.commands.doctor.inputs import SourceFile
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


# -- ctypes callbacks: the platform they run on and the arguments their api_version passes --------

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


ARGUMENTS_PASSED = {"gpu": {1: 4, 2: 5, 3: 5}, "cpu": {1: 2, 2: 3, 3: 5}}


def _callback_side(reg: PyRegistration) -> str | None:
    """The platform a registration's callback is called on: "gpu", "cpu", or None when it can be either."""
    sides = {"gpu" if p in GPU_PLATFORMS else "cpu" if p in CPU_PLATFORMS else None for p in reg.platforms}
    return sides.pop() if len(sides) == 1 else None


def callback_fit(reg_facts: PyFacts, reg: PyRegistration, call: PyCall) -> str | None:
    """A ctypes callback's parameter count against the arguments the call's api_version passes."""
    callback, side = reg.callback, _callback_side(reg)
    if callback is None or side is None or call.api not in ARGUMENTS_PASSED[side]:
        return None
    fits = CALLBACK_APIS[side].get(callback.arity, ())
    if call.api in fits:
        return None
    passed = ARGUMENTS_PASSED[side][call.api]
    default = f"; {call.function} passes api_version {call.api} when none is given" if call.api_source == "default" else ""
    takes = f"which is api_version {' or '.join(map(str, fits))}" if fits else "which no api_version calls"
    return (
        f"{_at(reg_facts, callback.line)}: the ctypes callback `{callback.name}` registered at line {reg.line} takes "
        f"{callback.arity} parameters (`{callback.text}`), {takes} on the {side.upper()}; api {call.api} passes {passed}{default}"
    )


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


# -- registrations and calls against the entry points they reach (crossfile links them) -----------

def _api_fit(entry: EntryPoint, api: int) -> str | None:
    if api in entry.signature.apis:
        return None
    wanted = " or ".join(str(a) for a in sorted(entry.signature.apis))
    consequence = ""
    if entry.typed:
        consequence = "XLA would call a typed FFI handler as a legacy function: a crash at execution"
    elif api == 4:
        consequence = "XLA would look for a typed FFI handler and call it with one XLA_FFI_CallFrame*"
    elif entry.signature.kind in ("gpu-original", "cpu-original") and api in (2, 3):
        consequence = (
            "XLA passes one more argument, XlaCustomCallStatus*, that this function does not declare: calling it "
            "through that type is undefined behaviour and it can never report a failure"
        )
    elif entry.signature.kind == "gpu-status" and api == 1:
        consequence = "XLA passes no status: the fifth parameter holds garbage"
    return f"`{entry.symbol}` ({entry.where}) is `{entry.signature.text}`, which takes api_version {wanted}, not {api}" + (
        f": {consequence}" if consequence else ""
    )


def call_mismatches(facts: PyFacts, call: PyCall, registrations: list, entries: list[EntryPoint]) -> list[Finding]:
    """A call against what it reaches (crossfile links them): the registrations of its target and
    the entry points they wrap, whose signatures take other api_versions than the call's."""
    if call.api not in HLO_APIS:  # unknown, or invalid (api-version-invalid says so)
        return []
    reasons = []
    if call.framework == "torch_xla" and call.api == 4:
        reasons.append("torch_xla registers targets only in the legacy registry, so api_version 4 (typed FFI) never finds them")
    misfits = [reason for entry in entries if (reason := _api_fit(entry, call.api))]
    if entries and len(misfits) == len(entries):
        reasons.extend(misfits)
    for reg_facts, reg in registrations:
        if reg.framework != "jax" or reg.api_version not in JAX_REGISTER_APIS:
            continue
        if reg.api_version == 1 and call.api in (1, 2, 3):
            reasons.append(f"{_at(reg_facts, reg.line)} registers it as typed FFI (api_version=1), but api {call.api} looks in the legacy registry")
        elif reg.api_version == 0 and call.api == 4:
            reasons.append(f"{_at(reg_facts, reg.line)} registers it as legacy (api_version=0), but api 4 looks in the typed FFI registry")
    reasons.extend(reason for reg_facts, reg in registrations if (reason := callback_fit(reg_facts, reg, call)))
    if not reasons:
        return _cpu_deprecation(facts, call, entries)
    default = f" ({call.function}'s default)" if call.api_source == "default" else ""
    named = call.target or (" or ".join(f"`{n}`" for n in sorted({e.symbol for e in entries}))[1:-1] if entries else "?")
    return [make(
        "api-version-mismatch",
        f"{_at(facts, call.line)}: `{call.text}` calls `{named}` with api_version "
        f"{call.api}{default}:\n- " + "\n- ".join(dict.fromkeys(reasons)),
        likelihood=0.9 if entries else 0.7,
    )]


def _cpu_deprecation(facts: PyFacts, call: PyCall, entries: list[EntryPoint]) -> list[Finding]:
    """On XLA:CPU, api 2 logs the deprecation line as api 1 does (measured with jax 0.10.2); 3 does not."""
    entry = entries[0] if len(entries) == 1 else None
    if entry is None or entry.signature.kind != "cpu-status" or call.api != 2:
        return []
    return [make(
        "legacy-api-deprecated",
        f"{_at(facts, call.line)}: `{call.text}` calls the XLA:CPU entry point `{entry.symbol}` ({entry.where}) "
        "with api_version 2 (API_VERSION_STATUS_RETURNING), which XLA:CPU reports as deprecated",
        fix="On XLA:CPU use api_version 3 with `void f(void* out, const void** in, const char* opaque, size_t "
        "opaque_len, XlaCustomCallStatus*)`, or a typed FFI handler (api 4).",
        likelihood=0.6,
    )]


def registration_mismatches(program: Program, facts: PyFacts, reg: PyRegistration, entries: list[EntryPoint]) -> list[Finding]:
    """A registration against the entry points it wraps (crossfile links them): the other registry,
    the other platform, a callback that cannot run there."""
    findings = [f for f in (callback_platform(facts, reg), foreign_platform(program, facts, reg)) if f is not None]
    at = _at(facts, reg.line)
    for entry in entries:
        legacy = not entry.typed
        if reg.framework == "jax" and reg.api_version == 1 and legacy:
            findings.append(make(
                "api-version-mismatch",
                f"{at}: `{reg.text}` registers `{entry.symbol}` ({entry.where}), a legacy `{entry.signature.text}`, as a "
                "typed FFI handler (api_version=1, the default): XLA calls it to read handler metadata and crashes during registration",
                fix="Register a legacy function with api_version=0 and call it with custom_call_api_version=2 (GPU) or 3 (CPU).",
                likelihood=0.95,
            ))
        elif reg.framework == "jax" and reg.api_version == 0 and not legacy:
            findings.append(make(
                "api-version-mismatch",
                f"{at}: `{reg.text}` registers the typed FFI handler `{entry.symbol}` ({entry.where}) as legacy "
                "(api_version=0): called with api 4 it is not found, with api 1-3 it crashes",
                fix="Register typed FFI handlers with api_version=1 (the default) and call them with api_version 4.",
                likelihood=0.9,
            ))
        elif reg.framework == "torch_xla" and not legacy:
            findings.append(make(
                "api-version-mismatch",
                f"{at}: `{reg.text}` registers the typed FFI handler `{entry.symbol}` ({entry.where}); torch_xla can only "
                "call legacy (api 1-3) targets",
                fix="Give torch_xla a status-returning legacy entry point (`xlacc new --framework torch-xla` writes one).",
                likelihood=0.9,
            ))
        platform = reg.platform
        if reg.framework == "jax" and platform in ("cpu", "Host") and entry.gpu:
            default = " (platform defaults to \"cpu\")" if not reg.platform_given else ""
            findings.append(make(
                "platform-name",
                f"{at}: `{reg.text}` registers `{entry.symbol}`, a GPU entry point ({entry.where}), for the CPU{default}",
                fix="Register GPU entry points with platform=\"CUDA\" (or \"gpu\").",
                likelihood=0.8,
            ))
        elif reg.framework == "jax" and platform in ("gpu", "CUDA") and entry.gpu is False:
            findings.append(make(
                "platform-name",
                f"{at}: `{reg.text}` registers `{entry.symbol}`, a CPU entry point ({entry.where}), for the GPU",
                fix="Register XLA:CPU entry points with platform=\"cpu\".",
                likelihood=0.8,
            ))
    return findings


# Below 0.8 a match takes another op's name (0.775 took te_fused_attn_score_mod_forward_ffi for
# te_fused_topk_with_score_function_forward_ffi).
MISSPELLING_CUTOFF = 0.8


def misspelt_target(at: str, call: PyCall, registered: set[str]) -> Finding | None:
    """A call (at ``file:line``) to a target nothing registers, next to a registered name it misspells."""
    close = difflib.get_close_matches(call.target, sorted(registered), n=1, cutoff=MISSPELLING_CUTOFF)
    if not close:
        return None
    return make(
        "target-not-registered",
        f"{at}: `{call.text}` calls `{call.target}`, which nothing registers; `{close[0]}` is registered",
        title=f"custom-call target `{call.target}` is not registered",
        fix=f"Call the registered name `{close[0]}` (names are case-sensitive), or register `{call.target}`.",
        likelihood=0.85,
    )


# -- the entry points' own signatures ------------------------------------------------------------

def deprecated_signatures(program: Program) -> dict[str, list[Finding]]:
    """The 4-parameter GPU entry points (API_VERSION_ORIGINAL): deprecated, and unable to report a
    failure. One finding for all of them, in the first one's source, with every place."""
    entries = [e for e in program.entries if e.signature.kind == "gpu-original"]
    if not entries:
        return {}
    first = entries[0]
    finding = make(
        "legacy-api-deprecated",
        f"{first.symbol} ({first.where}){and_other_entries(len(entries) - 1)} {'is' if len(entries) == 1 else 'are'} "
        f"`{first.signature.text}`: the api_version 1 (API_VERSION_ORIGINAL) signature, which XLA:GPU reports as "
        f"deprecated and due for removal, and which has no way to report a failure{_also_at(entries[1:])}",
        fix="Add `XlaCustomCallStatus* status` as a fifth parameter and call with api_version 2, or make it a typed "
        "FFI handler (`XLA_FFI_DEFINE_HANDLER_SYMBOL`, api_version 4).",
        likelihood=0.6,
    )
    return {first.source: [finding]}


def and_other_entries(count: int) -> str:
    return f" and {count} other entry point{'s' if count > 1 else ''}" if count else ""


def _also_at(entries: list[EntryPoint]) -> str:
    """Every other place, on a line of its own: a grouped finding names them all."""
    return f"\nalso: {', '.join(f'{e.symbol} ({e.where})' for e in entries)}" if entries else ""
