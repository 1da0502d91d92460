# Modelled on silencelamb/vllm playground/custom_call/naive_ctypes/simple_add/test_custom_call_simple_add.py
# (Apache-2.0); rewritten, not copied: see SOURCE.md. Trying platform names until one is accepted.
import ctypes

import torch_xla

lib = ctypes.CDLL("./xla_simple_add.so")
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule = PyCapsule_New(ctypes.cast(lib.XlaGpuSimpleAdd, ctypes.c_void_p).value, None, None)

for platform in ["GPU", "Host", "Interpreter", "cuda", "gpu"]:
    try:
        torch_xla._XLAC._xla_register_custom_call_target("XlaGpuSimpleAdd", capsule, platform)
        print(f"registered for {platform}")
        break
    except Exception as exc:
        print(f"{platform}: {exc}")
