# Modelled on mpi4jax/mpi4jax mpi4jax/_src/xla_bridge/__init__.py (MIT); rewritten, not copied: see
# SOURCE.md. Each module's handlers under "<name>_ffi", for the platform it was built for ("SYCL"
# is the Intel GPU plugin's platform name).
from ..jax_compat import register_custom_call_target
from . import mpi_xla_bridge_cpu

try:
    from . import mpi_xla_bridge_cuda
except ImportError:
    HAS_CUDA_EXT = False
else:
    HAS_CUDA_EXT = True

try:
    from . import mpi_xla_bridge_xpu
except ImportError:
    HAS_XPU_EXT = False
else:
    HAS_XPU_EXT = True

_ffi_primitives = {"mpi_barrier", "mpi_allreduce"}

for name in _ffi_primitives:
    register_custom_call_target(f"{name}_ffi", mpi_xla_bridge_cpu.ffi_targets[name], platform="cpu")

if HAS_CUDA_EXT:
    for name in _ffi_primitives:
        register_custom_call_target(f"{name}_ffi", mpi_xla_bridge_cuda.ffi_targets[name], platform="CUDA")

if HAS_XPU_EXT:
    for name in _ffi_primitives:
        register_custom_call_target(f"{name}_ffi", mpi_xla_bridge_xpu.ffi_targets[name], platform="SYCL")
