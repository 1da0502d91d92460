# Modelled on rdyro/torch2jax torch2jax/api.py (MIT); rewritten, not copied: see SOURCE.md.
# The PyTorch function is stored on the torch module under a unique id, and the FFI call passes that
# id as an attribute; every wrapped function goes through the one "torch_call" target.
from inspect import signature

import jax
import torch

try:
    from jax import ffi
except ImportError:
    from jax.extend import ffi

from .compile import compile_extension
from .utils import find_unique_id


def _ffi_call(outshapes, vmap_method):
    if signature(ffi.ffi_call).return_annotation.startswith("Callable"):
        return ffi.ffi_call("torch_call", outshapes, vmap_method=vmap_method)
    return lambda *args, fn_id: ffi.ffi_call("torch_call", outshapes, *args, vectorized=False, fn_id=fn_id)


def torch2jax_flat(fn, input_shapes, output_shapes, vmap_method="sequential"):
    compile_extension()
    fn_id = find_unique_id()
    setattr(torch, f"_torch2jax_fn_{fn_id}", lambda args: tuple(fn(*args)))
    call = _ffi_call(output_shapes, vmap_method)
    return jax.jit(lambda *args: call(*args, fn_id=fn_id))
