# From the user's note 000: registers a 4-parameter function and calls it with api_version 1.
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import ctypes
import os

# 1. 加载共享库
lib = ctypes.CDLL("./xla_gpu_custom_ops.so", ctypes.RTLD_GLOBAL)
func_addr = ctypes.cast(lib.XlaGpuSimpleAdd, ctypes.c_void_p).value

# 2. 创建 PyCapsule
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule = PyCapsule_New(func_addr, None, None)

# 3. 注册 custom call
torch_xla._XLAC._xla_register_custom_call_target(
    "XlaGpuSimpleAdd",
    capsule,
    "CUDA"
)

# 4. 创建测试数据
device = xm.xla_device()
a = torch.tensor([1.0, 2.0, 3.0]).to(device)
b = torch.tensor([4.0, 5.0, 6.0]).to(device)

# 5. 调用 custom call
result = torch_xla._XLAC._xla_custom_call(
    [a, b],               # inputs
    "XlaGpuSimpleAdd",    # op_name (becomes custom_call_target)
    [[3]],                # output_shapes
    [torch.float32],      # output_dtypes
    False,                # has_side_effect
    "",                   # backend_config
    1,                    # api_version (1, 2, or 3 work)
    {}                    # alias_params
)[0]

xm.mark_step()
xm.wait_device_ops()
print(f"Result: {result.cpu()}")
