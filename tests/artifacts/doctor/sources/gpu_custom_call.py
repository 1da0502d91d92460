# _xla_gpu_custom_call always targets "triton_kernel_call" (and is gone in torch_xla 2.9).
import torch_xla


def simple_add(a, b, payload):
    return torch_xla._XLAC._xla_gpu_custom_call([a, b], payload, [a.shape], [a.dtype])
