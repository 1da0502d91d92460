# register_ffi_target counts 0 (legacy) and 1 (typed); 2 is an HLO api_version.
import ctypes

import jax

lib = ctypes.CDLL("./build/libop.so")
jax.ffi.register_ffi_target("my_add", jax.ffi.pycapsule(lib.my_add_legacy), platform="CUDA", api_version=2)
