# torch_xla registers for the exact string "CUDA" only.
import ctypes

import torch_xla

lib = ctypes.CDLL("./build/libop.so")
new_capsule = ctypes.pythonapi.PyCapsule_New
new_capsule.restype = ctypes.py_object
new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
address = ctypes.cast(lib.my_add_legacy, ctypes.c_void_p).value
torch_xla._XLAC._xla_register_custom_call_target("my_add", new_capsule(address, None, None), "cuda")
