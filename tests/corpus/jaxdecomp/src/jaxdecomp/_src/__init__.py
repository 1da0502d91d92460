# Modelled on DifferentiableUniverseInitiative/jaxDecomp src/jaxdecomp/_src/__init__.py (MIT); rewritten, not copied: see SOURCE.md.
import jax

from jaxdecomp._src import _jaxdecomp

# The typed FFI handlers (an empty dictionary in a build without cuDecomp).
for name, fn in _jaxdecomp.registrations().items():
    jax.ffi.register_ffi_target(name, fn, platform="CUDA", api_version=1)
