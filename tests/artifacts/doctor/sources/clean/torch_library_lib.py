# Two objects named `lib` in two scopes: the ctypes library and a torch.library.Library. Only
# the first is a shared object; `lib.define` and `lib.impl` are not symbol look-ups.
import ctypes

import torch
import torch_xla


def load():
    lib = ctypes.CDLL("./build/libpaged.so")
    capsule = ctypes.pythonapi.PyCapsule_New
    capsule.restype = ctypes.py_object
    capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    address = ctypes.cast(lib.paged_attention, ctypes.c_void_p).value
    torch_xla._XLAC._xla_register_custom_call_target("paged_attention", capsule(address, None, None), "CUDA")


lib = torch.library.Library("paged", "DEF")
lib.define("paged_attention(Tensor q, Tensor k, Tensor v) -> Tensor")


def paged_attention_xla(q, k, v):
    return torch_xla._XLAC._xla_custom_call([q, k, v], "paged_attention", [list(q.shape)], [q.dtype], False, "", 2, {})[0]


lib.impl("paged_attention", paged_attention_xla, "XLA")
