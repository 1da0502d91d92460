# Modelled on pytorch/xla test/test_triton.py (BSD-3-Clause); rewritten, not copied: see SOURCE.md.
# torch_xla's documented Triton route: _xla_gpu_custom_call carries the compiled kernel.
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


def test_gpu_custom_call_triton_add():
    size = 16
    x = torch.arange(size, dtype=torch.int64).to("xla")
    y = torch.arange(size, dtype=torch.int64).to("xla")
    output = torch.empty_like(x)
    grid = (triton.cdiv(size, 8),)
    payload = xla_triton.triton_call(x, y, output, size, kernel=add_kernel, grid=grid, BLOCK_SIZE=8)
    output = torch_xla._XLAC._xla_gpu_custom_call([x, y], payload, [output.shape], [torch.int64])
    assert torch.allclose(output[0].cpu(), x.cpu() + y.cpu())
