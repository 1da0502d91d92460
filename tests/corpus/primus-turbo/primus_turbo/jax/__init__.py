# Modelled on AMD-AGI/Primus-Turbo primus_turbo/jax/__init__.py (MIT); rewritten, not copied: see SOURCE.md.
_initialized = False


def initialize():
    """Registers the FFI targets (ROCm only) and the primitives' rules, once."""
    global _initialized
    if _initialized:
        return
    import jax
    from jax.interpreters import mlir

    from primus_turbo.jax._C import registrations
    from primus_turbo.jax.primitive import ABSTRACT_EVAL_TABLE, IMPL_TABLE, LOWERING_TABLE

    for name, target in registrations().items():
        jax.ffi.register_ffi_target(name, target, platform="ROCM")
    for primitive, rule in IMPL_TABLE.items():
        primitive.def_impl(rule)
    for primitive, rule in ABSTRACT_EVAL_TABLE.items():
        primitive.def_abstract_eval(rule)
    for primitive, rule in LOWERING_TABLE.items():
        mlir.register_lowering(primitive, rule, platform="rocm")
    _initialized = True
