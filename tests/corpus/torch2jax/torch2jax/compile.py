# Modelled on rdyro/torch2jax torch2jax/compile.py (MIT); rewritten, not copied: see SOURCE.md.
# The extension is compiled on first use with torch's cpp_extension against jax.ffi's headers, and
# its one target, "torch_call", is registered for the CPU and, when built with CUDA, the GPU.
import sys
from importlib import import_module
from pathlib import Path

import jax
import torch
from torch.utils import cpp_extension

try:
    from jax import ffi
except ImportError:
    from jax.extend import ffi

_MODULE = None


def compile_extension(force_recompile=False):
    global _MODULE
    if _MODULE is not None and not force_recompile:
        return _MODULE
    build_dir = Path(f"~/.cache/torch2jax/jax-{jax.__version__}").expanduser()
    build_dir.mkdir(exist_ok=True, parents=True)
    sys.path.insert(0, str(build_dir))
    try:
        assert not force_recompile
        mod = import_module("torch2jax_cpp")
    except (ImportError, AssertionError):
        sources = ["cpu_impl.cpp", "common.cpp", "main.cu"]
        flags = [f"-isystem {ffi.include_dir()}", "-O3"]
        if torch.cuda.is_available():
            sources.append("gpu_impl.cu")
            flags.append("-DTORCH2JAX_WITH_CUDA")
        here = Path(__file__).parent / "cpp"
        mod = cpp_extension.load(
            "torch2jax_cpp",
            sources=[here / name for name in sources],
            build_directory=build_dir,
            extra_cflags=flags,
            extra_cuda_cflags=flags,
            extra_ldflags=["-lcuda"] if torch.cuda.is_available() else [],
        )
    for name, target in mod.cpu_registrations().items():
        ffi.register_ffi_target(name, target, platform="cpu")
    if hasattr(mod, "gpu_registrations"):
        for name, target in mod.gpu_registrations().items():
            ffi.register_ffi_target(name, target, platform="gpu")
    _MODULE = mod
    return mod
