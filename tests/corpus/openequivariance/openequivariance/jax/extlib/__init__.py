# Modelled on PASSIONLab/OpenEquivariance openequivariance/openequivariance/jax/extlib/__init__.py (BSD-3-Clause); rewritten, not copied: see SOURCE.md.
import jax
import openequivariance_extjax as oeq_extjax

# One build serves either vendor: the platform follows the backend it was compiled for.
platform = "ROCM" if oeq_extjax.is_hip() else "CUDA"

for name, target in oeq_extjax.registrations().items():
    jax.ffi.register_ffi_target(name, target, platform=platform)
