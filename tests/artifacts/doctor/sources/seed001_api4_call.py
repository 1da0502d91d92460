# From the user's note 001: api_version 4 (typed FFI) for a legacy (stream, buffers, opaque, len) function.
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import ctypes

lib = ctypes.CDLL("./xla_gpu_custom_ops.so", ctypes.RTLD_GLOBAL)
func_addr = ctypes.cast(lib.XlaGpuSimpleAdd, ctypes.c_void_p).value

PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule = PyCapsule_New(func_addr, None, None)

torch_xla._XLAC._xla_register_custom_call_target(
    "XlaGpuSimpleAdd",
    capsule,
    "CUDA"  # 或 "GPU"，取决于 XLA 配置
)

device = xm.xla_device()
a = torch.tensor([1.0, 2.0, 3.0]).to(device)
b = torch.tensor([4.0, 5.0, 6.0]).to(device)

result = torch_xla._XLAC._xla_custom_call(
    [a, b],
    "XlaGpuSimpleAdd",
    [[3]],
    [torch.float32],
    False,
    "",
    4,
    {}
)[0]
xm.mark_step()
print(f"Result: {result.cpu()}")
