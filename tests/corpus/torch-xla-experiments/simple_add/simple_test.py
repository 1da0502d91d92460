# Modelled on silencelamb/vllm tests/xla_gpu/simple_test.py (Apache-2.0); rewritten, not copied: see
# SOURCE.md. A legacy function called with api_version 4 through torch_xla.
import ctypes

import torch
import torch_xla
import torch_xla.core.xla_model as xm

lib = ctypes.CDLL("./xla_gpu_custom_ops.so", ctypes.RTLD_GLOBAL)
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule = PyCapsule_New(ctypes.cast(lib.XlaGpuSimpleAdd, ctypes.c_void_p).value, None, None)
torch_xla._XLAC._xla_register_custom_call_target("XlaGpuSimpleAdd", capsule, "CUDA")

device = xm.xla_device()
a = torch.tensor([1.0, 2.0, 3.0]).to(device)
b = torch.tensor([4.0, 5.0, 6.0]).to(device)
result = torch_xla._XLAC._xla_custom_call([a, b], "XlaGpuSimpleAdd", [[3]], [torch.float32], False, "", 4, {})[0]
xm.mark_step()
print(result.cpu())
