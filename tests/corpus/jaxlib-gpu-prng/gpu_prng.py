# Modelled on jax-ml/jax jaxlib/gpu_prng.py (Apache-2.0); rewritten, not copied: see SOURCE.md.
# The names come from the C++ registrations; typed handlers (`*_ffi`) register with api_version 1.
from .plugin_support import import_from_plugin

_cuda_prng = import_from_plugin("cuda", "_prng")


def registrations():
    registrations = {"CUDA": []}
    for name, value in _cuda_prng.registrations().items():
        api_version = 1 if name.endswith("_ffi") else 0
        registrations["CUDA"].append((name, value, api_version))
    return registrations
