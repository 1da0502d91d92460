"""ctypes callbacks as entry points: a Python function made into a C function pointer by
``ctypes.CFUNCTYPE`` and registered through a capsule is called by XLA with the arguments its
api_version passes, on the platform it is registered for (the legacy conventions of
xla/service/custom_call_status.h). Also registrations for a platform the build never runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlacc.commands.doctor.rules.python import where
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers.python import PyCall, PyCallback, PyFacts, PyRegistration

if TYPE_CHECKING:
    from xlacc.commands.doctor.program import Program

GPU_PLATFORMS = frozenset({"CUDA", "gpu", "ROCM", "cuda", "rocm"})
CPU_PLATFORMS = frozenset({"cpu", "Host"})
# The legacy signatures by parameter count, and the HLO api_versions that call each (xla/service/custom_call_status.h).
CALLBACK_APIS = {
    "gpu": {4: (1,), 5: (2, 3)},  # (stream, buffers, opaque, len[, status])
    "cpu": {2: (1,), 3: (2,), 5: (3,)},  # (out, ins[, status]) / (out, ins, opaque, len, status)
}
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
        f"{where(reg_facts, callback.line)}: the ctypes callback `{callback.name}` registered at line {reg.line} takes "
        f"{callback.arity} parameters (`{callback.text}`), {takes} on the {side.upper()}; api {call.api} passes {passed}{default}"
    )


def callback_platform(facts: PyFacts, reg: PyRegistration) -> Finding | None:
    """A ctypes callback with an XLA:CPU signature registered for a GPU: XLA:GPU passes device pointers."""
    callback: PyCallback | None = reg.callback
    if callback is None or not GPU_PLATFORMS.intersection(reg.platforms):
        return None
    cpu_signature = callback.arity in CALLBACK_APIS["cpu"] and callback.arity not in CALLBACK_APIS["gpu"]
    if not (cpu_signature or (callback.arity == 5 and callback.stream is False)):
        return None
    gpu = ", ".join(f'"{p}"' for p in reg.platforms if p in GPU_PLATFORMS)
    shown = f"({', '.join(callback.params)})" if callback.params else f"with {callback.arity} parameters"
    return make(
        "platform-name",
        f"{where(facts, reg.line)}: `{reg.text}` registers the ctypes callback `{callback.name}` {shown} "
        f"({where(facts, callback.line)}: `{callback.text}`), an XLA:CPU signature with no stream, for {gpu}: XLA:GPU "
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
        f"{where(facts, reg.line)}: `{reg.text}` registers for \"{tpu[0]}\" in a GPU build: XLA on a GPU never looks "
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
