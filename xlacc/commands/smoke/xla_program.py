"""The program torch_xla emits, run by jaxlib's XLA.

torch_xla 2.9 cannot execute a custom call (it has no registration: `RegisterCustomCall not
implemented`), but the StableHLO it emits is an ordinary XLA program: jaxlib compiles and runs it
once the op's legacy entry point is registered with jax (``jax.ffi.register_ffi_target(...,
api_version=0)``). That proves torch_xla's route end to end except torch_xla's own runtime.

Two traps, both handled here: torch_xla numbers the program's parameters by its own order, not by
the operands' (``y`` can be ``%arg0``), and it turns Python scalars into parameters too; so each
parameter is mapped through torch_xla's tensor ids, never by position. And running a module from
text needs private jax APIs (a backend's ``compile_and_load``, ``execute_sharded``): they are all in
:func:`run_stablehlo`, and tests pin them on the jax this project is tested with.

Only child processes import this (it needs jax; :func:`emit` needs torch_xla).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from xlacc.commands.smoke.torch_arrays import from_torch

# jax.ffi.register_ffi_target's platform names for the legacy registry, by project platform.
JAX_LEGACY_PLATFORM = {"cpu": "cpu", "cuda": "CUDA"}
JAX_REGISTER_LEGACY = 0


@dataclass
class EmittedProgram:
    """StableHLO text as torch_xla emitted it, and what each of its parameters is."""

    text: str
    # Per parameter, in the program's order: the index of the op's operand it is, or a constant
    # torch_xla captured (a Python scalar of the program).
    parameters: list[int | np.ndarray] = field(default_factory=list)

    def arguments(self, operands: Sequence[Any]) -> list[np.ndarray]:
        return [np.asarray(operands[p]) if isinstance(p, int) else p for p in self.parameters]

    def to_json(self) -> dict[str, Any]:
        def one(p):
            if isinstance(p, int):
                return {"operand": p}
            return {"constant": np.asarray(p, dtype=np.float64).tolist(), "dtype": p.dtype.name, "shape": list(p.shape)}

        return {"text": self.text, "parameters": [one(p) for p in self.parameters]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "EmittedProgram":
        def one(p):
            if "operand" in p:
                return int(p["operand"])
            return np.asarray(p["constant"]).astype(_numpy_dtype(p["dtype"])).reshape(p["shape"])

        return cls(data["text"], [one(p) for p in data["parameters"]])


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def emit(outputs: Sequence[Any], inputs: Sequence[Any]) -> EmittedProgram:
    """The StableHLO torch_xla emits for ``outputs`` (XLA tensors), with each parameter mapped to
    the ``inputs`` tensor it is (by torch_xla's tensor id) or kept as the constant it holds."""
    import torch_xla
    import torch_xla.core.xla_model as xm

    text = xm.get_stablehlo(list(outputs))
    ids, values = torch_xla._XLAC._get_tensors_xla_device_data_node(list(outputs))
    position = {torch_xla._XLAC._xla_get_tensor_id(t): i for i, t in enumerate(inputs)}
    parameters: list[int | np.ndarray] = [
        position[tensor_id] if tensor_id in position else from_torch(value) for tensor_id, value in zip(ids, values)
    ]
    return EmittedProgram(text, parameters)


def register_legacy(target: str, library: Path, symbol: str, platform: str) -> ctypes.CDLL:
    """Register ``symbol`` of ``library`` as the legacy (api_version 1-3) target ``target`` for
    jaxlib's XLA on ``platform`` ("cpu" or "cuda"); returns the loaded library (keep it alive)."""
    import jax

    lib = ctypes.CDLL(str(library))
    capsule = jax.ffi.pycapsule(getattr(lib, symbol))
    jax.ffi.register_ffi_target(target, capsule, platform=JAX_LEGACY_PLATFORM[platform], api_version=JAX_REGISTER_LEGACY)
    return lib


def run_stablehlo(text: str, arguments: Sequence[np.ndarray], device: Any) -> list[np.ndarray]:
    """Compile StableHLO ``text`` for one jax ``device`` and run it on ``arguments``; the results as
    NumPy arrays. The only place that uses jax's private compile-and-run APIs."""
    import jax
    from jax._src import xla_bridge
    from jax._src.lib import xla_client

    backend = xla_bridge.get_backend(device.platform)
    executable = backend.compile_and_load(
        text,
        executable_devices=xla_client.DeviceList((device,)),
        compile_options=xla_client.CompileOptions(),
    )
    buffers = [jax.device_put(a, device) for a in arguments]
    results = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
    return [np.asarray(shards[0]) for shards in results]
