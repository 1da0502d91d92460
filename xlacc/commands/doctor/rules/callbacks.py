"""ctypes callbacks as entry points: a Python function made into a C function pointer by
``ctypes.CFUNCTYPE`` and registered through a capsule is called by XLA with the arguments its
api_version passes, on the platform it is registered for (the legacy conventions of
xla/service/custom_call_status.h). A callback registered for a platform it cannot run on is a
platform-name, made in ``rules.registration``."""

from __future__ import annotations

from xlacc.commands.doctor.rules.python import where
from xlacc.commands.doctor.rules.registration import CALLBACK_APIS, CPU_PLATFORMS, GPU_PLATFORMS
from xlacc.commands.doctor.rules.registration import callback_platform, foreign_platform  # noqa: F401  (crossfile imports them from here)
from xlacc.readers.python import PyCall, PyFacts, PyRegistration

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


