# Modelled on silencelamb/vllm playground/custom_call/naive_ctypes/simple_add/test_simple_inplace.py
# (Apache-2.0); rewritten, not copied: see SOURCE.md.
import ctypes
import struct

import torch
import torch_xla

lib = ctypes.CDLL("./inplace_add.so")
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
torch_xla._XLAC._xla_register_custom_call_target(
    "XlaGpuInplaceAdd", PyCapsule_New(ctypes.cast(lib.XlaGpuInplaceAdd, ctypes.c_void_p).value, None, None), "CUDA"
)


def inplace_add(input, output):
    backend_config = struct.pack("<i", output.numel())
    return torch_xla._XLAC._xla_custom_call(
        [input, output], "XlaGpuInplaceAdd", [list(output.shape)], [output.dtype], True, backend_config, 2, {}
    )[0]
