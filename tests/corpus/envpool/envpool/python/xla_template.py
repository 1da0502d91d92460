# Modelled on sail-sg/envpool envpool/python/xla_template.py (Apache-2.0); rewritten, not copied: see SOURCE.md.
# Each pool object registers its own targets, named after its class, its id and the operation, for
# the CPU and (when built with CUDA) the GPU, and calls them with the pool's handle as an attribute.
import sys
from collections import namedtuple

import numpy as np
from jax import ShapeDtypeStruct, dtypes, ffi


def _row_major(shape):
    return tuple(range(len(shape)))


def _make_xla_function(obj, handle, name, specs, capsules):
    in_specs, out_specs = (tuple((tuple(s), dtypes.canonicalize_dtype(d)) for d, s in part) for part in specs)
    cpu_capsule, gpu_capsule = capsules
    call_target_name = f"{type(obj).__name__}_{id(obj)}_{name}"
    ffi.register_ffi_target(call_target_name, cpu_capsule, platform="cpu", api_version=1)
    if gpu_capsule is not None:
        ffi.register_ffi_target(call_target_name, gpu_capsule, platform="gpu", api_version=1)
    results = tuple(ShapeDtypeStruct(shape, dtype) for shape, dtype in out_specs)
    xla_func = ffi.ffi_call(
        call_target_name,
        results if len(results) > 1 else results[0],
        has_side_effect=True,
        input_layouts=tuple(_row_major(shape) for shape, _ in in_specs),
        output_layouts=tuple(_row_major(shape) for shape, _ in out_specs),
        input_output_aliases={0: 0},
    )
    handle_value = int.from_bytes(handle, byteorder=sys.byteorder, signed=False)

    def call(*args):
        return xla_func(*args, handle=handle_value)

    return call


def make_xla(obj):
    names, methods, handle = [], [], b""
    for name, (handle, specs, capsules) in obj._xla():
        names.append(name)
        methods.append(_make_xla_function(obj, handle, name, specs, capsules))
    XlaFunctions = namedtuple("XlaFunctions", ["handle", *names])
    return XlaFunctions(np.frombuffer(handle, dtype=np.uint8), *methods)
