# Modelled on silencelamb/vllm playground/custom_call/triton/add_kernel.py (Apache-2.0); rewritten, not
# copied: see SOURCE.md. torch_xla's Triton route, which is what _xla_gpu_custom_call is for.
import torch
import torch_xla
import torch_xla.experimental.triton as xla_triton
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


x = torch.arange(16, dtype=torch.int64).to("xla")
y = torch.arange(16, dtype=torch.int64).to("xla")
output = torch.empty_like(x)
payload = xla_triton.triton_call(x, y, output, 16, kernel=add_kernel, grid=(2,), BLOCK_SIZE=8)
output = torch_xla._XLAC._xla_gpu_custom_call([x, y], payload, [output.shape], [torch.int64])
