# Modelled on silencelamb/vllm playground/custom_call/naive_ctypes/reshape_and_cache_flash/test_simple.py
# (Apache-2.0); rewritten, not copied: see SOURCE.md. One field too many in the descriptor (50 bytes
# for a 48-byte struct): the scale flags are read from the wrong bytes.
import ctypes
import struct

import torch
import torch_xla

lib = ctypes.CDLL("./reshape_and_cache_flash_xla.so", ctypes.RTLD_GLOBAL)
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
func_addr = ctypes.cast(lib.reshape_and_cache_flash_xla_custom_call, ctypes.c_void_p).value
torch_xla._XLAC._xla_register_custom_call_target("vllm_reshape_and_cache_flash", PyCapsule_New(func_addr, None, None), "CUDA")


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, block_size):
    num_tokens, num_kv_heads, head_size = key.shape
    descriptor = struct.pack("qqqqqiibb", num_tokens, num_kv_heads, head_size, key_cache.shape[0], block_size, 0, 0, 0, 0)
    buffers = [key_cache, value_cache, key, value, slot_mapping]
    return torch_xla._XLAC._xla_custom_call(
        buffers, "vllm_reshape_and_cache_flash", [list(key_cache.shape), list(value_cache.shape)],
        [key_cache.dtype, value_cache.dtype], True, descriptor, 2, {},
    )
