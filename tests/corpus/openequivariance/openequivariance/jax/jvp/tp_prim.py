# Modelled on PASSIONLab/OpenEquivariance openequivariance/openequivariance/jax/jvp/tp_prim.py and conv_prim.py (BSD-3-Clause); rewritten, not copied: see SOURCE.md.
import jax
from jax.extend import core
from jax.interpreters import mlir

tp_fwd_p = core.Primitive("tp_fwd")


def tp_fwd_impl(X, Y, W, *, L3_dim, kernel, hash):
    out = jax.ShapeDtypeStruct((X.shape[0], L3_dim), X.dtype)
    return jax.ffi.ffi_call("tp_forward", out)(X, Y, W, kernel=kernel, hash=hash)


tp_bwd_p = core.Primitive("tp_bwd")
tp_bwd_p.multiple_results = True


def tp_bwd_impl(X, Y, W, dZ, *, kernel, hash):
    outs = tuple(jax.ShapeDtypeStruct(a.shape, X.dtype) for a in (X, Y, W))
    return jax.ffi.ffi_call("tp_backward", outs)(X, Y, W, dZ, kernel=kernel, hash=hash)


conv_fwd_p = core.Primitive("conv_fwd")


def conv_fwd_impl(X, Y, W, rows, cols, workspace, sender_perm, *, L3_dim, kernel, hash):
    out = jax.ShapeDtypeStruct((X.shape[0], L3_dim), X.dtype)
    return jax.ffi.ffi_call("conv_forward", out)(X, Y, W, rows, cols, workspace, sender_perm, kernel=kernel, hash=hash)


conv_bwd_p = core.Primitive("conv_bwd")
conv_bwd_p.multiple_results = True


def conv_bwd_impl(X, Y, W, dZ, rows, cols, workspace, sender_perm, *, kernel, hash):
    outs = tuple(jax.ShapeDtypeStruct(a.shape, X.dtype) for a in (X, Y, W))
    call = jax.ffi.ffi_call("conv_backward", outs)
    return call(X, Y, W, dZ, rows, cols, workspace, sender_perm, kernel=kernel, hash=hash)


for _prim, _impl, _multiple in ((tp_fwd_p, tp_fwd_impl, False), (tp_bwd_p, tp_bwd_impl, True),
                                (conv_fwd_p, conv_fwd_impl, False), (conv_bwd_p, conv_bwd_impl, True)):
    _prim.def_impl(_impl)
    for _platform in ("cuda", "rocm"):
        mlir.register_lowering(_prim, mlir.lower_fun(_impl, multiple_results=_multiple), platform=_platform)
