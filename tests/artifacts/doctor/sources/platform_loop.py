# Trying platform names until one "works": register_ffi_target accepts them all and queues the
# unknown ones, so the loop never fails and never tells which one XLA will use.
import ctypes

import jax

lib = ctypes.CDLL("./build/libsoftmax.so")
for platform in ["GPU", "Host", "cuda"]:
    try:
        jax.ffi.register_ffi_target("fused_softmax", jax.ffi.pycapsule(lib.FusedSoftmax), platform=platform)
        break
    except Exception as exc:
        print(f"{platform}: {exc}")
