# Modelled on mpi4jax/mpi4jax mpi4jax/_src/jax_compat.py (MIT); rewritten, not copied: see SOURCE.md.
# The project's own register_custom_call_target: typed FFI (api_version 1) unless told otherwise.
import jax


def register_custom_call_target(name, fn, *, platform: str, api_version: int = 1):
    return jax.ffi.register_ffi_target(name, fn, platform=platform, api_version=api_version)
