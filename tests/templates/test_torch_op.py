"""The generated torch op (NAME/torch.py): one `xlacc::NAME` for torchax and torch_xla, whose fake
implementation checks shapes and dtypes when the op is traced (here on meta tensors, no library)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from xlacc.commands.new import project as scaffold

# torch is imported by the tests, not when the file is collected (every xdist worker collects it).
if importlib.util.find_spec("torch") is None:
    pytest.skip("the torch op needs torch", allow_module_level=True)


def torch_module(tmp_path, name, template, frameworks=("jax", "torchax", "torch-xla")):
    """`NAME.torch` of a freshly generated cpu project (each test its own op name: ops are global)."""
    scaffold.create(scaffold.NewRequest(name=name, template=template, platform="cpu", frameworks=list(frameworks), directory=tmp_path / name))
    sys.path.insert(0, str(tmp_path / name))
    try:
        return importlib.import_module(f"{name}.torch")
    finally:
        sys.path.remove(str(tmp_path / name))


def meta(*shape, dtype: str = "float32"):
    import torch

    return torch.empty(*shape, dtype=getattr(torch, dtype), device="meta")


def test_the_fake_gives_the_result_shape_and_dtype(tmp_path):
    import torch

    module = torch_module(tmp_path, "fake_rms", "rms-norm")
    out, rstd = torch.ops.xlacc.fake_rms(meta(8, 3, 64, dtype="bfloat16"), meta(64, dtype="bfloat16"), 1e-6)
    assert out.shape == (8, 3, 64) and out.dtype == torch.bfloat16 and out.device.type == "meta"
    assert rstd.shape == (8, 3) and rstd.dtype == torch.float32  # saved by the forward for the backward
    assert module.fake_rms(meta(2, 64), meta(64), eps=1e-5).shape == (2, 64)


@pytest.mark.parametrize(
    "weight, error, message",
    [
        ((63, "float32"), ValueError, "x is [rows..., cols] and weight is [cols]; got x [4, 64], weight [63]"),
        ((64, "bfloat16"), TypeError, "weight has dtype torch.bfloat16; it must be x's, torch.float32"),
    ],
)
def test_the_fake_rejects_shapes_and_dtypes_the_kernel_cannot_take(tmp_path, weight, error, message):
    import torch

    torch_module(tmp_path, f"bad_rms_{error.__name__}", "rms-norm")
    op = getattr(torch.ops.xlacc, f"bad_rms_{error.__name__}")
    with pytest.raises(error) as info:
        op(meta(4, 64), meta(weight[0], dtype=weight[1]), 1e-6)
    assert message in str(info.value)


def test_a_dtype_the_kernel_is_not_built_for_is_refused(tmp_path):
    import torch

    torch_module(tmp_path, "f32_only", "add")
    with pytest.raises(TypeError, match="the kernel is built for f32"):
        torch.ops.xlacc.f32_only(meta(8, dtype="float16"), meta(8, dtype="float16"))
    with pytest.raises(ValueError, match=r"x and y must have the same shape; got x \[8\], y \[9\]"):
        torch.ops.xlacc.f32_only(meta(8), meta(9))


def test_paged_attention_checks_the_cache_and_the_tables(tmp_path):
    import torch

    torch_module(tmp_path, "paged_op", "paged-attention")
    query, cache = meta(4, 8, 64, dtype="bfloat16"), meta(10, 16, 2, 64, dtype="bfloat16")
    tables, lens = meta(4, 3, dtype="int32"), meta(4, dtype="int32")
    assert torch.ops.xlacc.paged_op(query, cache, cache, tables, lens, 0.125).shape == (4, 8, 64)
    with pytest.raises(TypeError, match="block_tables has dtype torch.int64; it must be torch.int32"):
        torch.ops.xlacc.paged_op(query, cache, cache, meta(4, 3, dtype="int64"), lens, 0.125)
    with pytest.raises(ValueError, match="num_heads must be a multiple of num_kv_heads"):
        torch.ops.xlacc.paged_op(meta(4, 7, 64, dtype="bfloat16"), cache, cache, tables, lens, 0.125)
    with pytest.raises(ValueError, match="seq_lens is \\[num_seqs\\]"):
        torch.ops.xlacc.paged_op(query, cache, cache, tables, meta(5, dtype="int32"), 0.125)


def test_plain_tensors_are_told_where_the_op_runs(tmp_path):
    import torch

    module = torch_module(tmp_path, "plain_add", "add")
    with pytest.raises(RuntimeError, match="runs on XLA tensors: torchax's .* or torch_xla's .*; x is on cpu"):
        module.plain_add(torch.ones(3), torch.ones(3))


def test_one_op_for_both_routes(tmp_path):
    """torch_xla's kernel is registered on the op itself; torchax's lowering once torchax is used."""
    import torch

    module = torch_module(tmp_path, "both_routes", "add")
    assert torch._C._dispatch_has_kernel_for_dispatch_key("xlacc::both_routes", "XLA")
    assert callable(module.register_torchax) and callable(module.register_torch_xla)
    only_torchax = torch_module(tmp_path, "only_torchax", "add", frameworks=("torchax",))
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("xlacc::only_torchax", "XLA")
    assert not hasattr(only_torchax, "register_torch_xla") and (tmp_path / "only_torchax" / "only_torchax" / "jax.py").is_file()
