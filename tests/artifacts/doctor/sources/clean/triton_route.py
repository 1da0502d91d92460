# torch_xla's documented way to run a Triton kernel: _xla_gpu_custom_call carries the kernel that
# torch_xla.experimental.triton compiled, under the target jaxlib registers (triton_kernel_call).
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


def add(x, y):
    output = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 8),)
    payload = xla_triton.triton_call(x, y, output, x.numel(), kernel=add_kernel, grid=grid, BLOCK_SIZE=8)
    return torch_xla._XLAC._xla_gpu_custom_call([x, y], payload, [output.shape], [output.dtype])
