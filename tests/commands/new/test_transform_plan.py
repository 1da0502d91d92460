"""xlacc.commands.new.transform_plan: what each template's op does under sharding, vmap and grad, derived from its spec."""

from __future__ import annotations

import pytest

from xlacc.commands.new import project as scaffold
from xlacc.commands.new import transform_plan as transforms


def spec_of(tmp_path, template, **flags):
    spec, _ = scaffold.spec_for(scaffold.NewRequest(name="op", template=template, platform="cpu", directory=tmp_path / "op", **flags))
    return spec


def test_each_template_declares_how_it_splits(tmp_path):
    add, rms, paged = (spec_of(tmp_path, t) for t in ("add", "rms-norm", "paged-attention"))
    assert [(s.factor, s.dims, s.result_dims) for s in transforms.splits(add)] == [("...", (0, 0), (0,))]
    assert [(s.factor, s.dims) for s in transforms.splits(rms)] == [("...", (0, None))]
    assert rms.sharding.whole == ("c",)
    # Sequences, and KV heads with their query heads (query's head dim is the compound (k g)).
    assert [(s.factor, s.dims, s.result_dims) for s in transforms.splits(paged)] == [
        ("s", (0, None, None, 0, 0), (0,)),
        ("k", (1, 2, 2, None, None), (1,)),
    ]


def test_a_blank_op_from_flags_is_elementwise_as_its_stub(tmp_path):
    spec = spec_of(tmp_path, "blank", inputs=["x", "k:i32"], outputs=["y", "z:f32"])
    assert spec.sharding.rule == "..., ... -> ..., ..."
    assert transforms.folding_inputs(spec) == ("x", "k")


def test_vmap_folds_where_the_kernel_takes_a_batch(tmp_path):
    assert transforms.folding_inputs(spec_of(tmp_path, "rms-norm")) == ("x",)
    assert transforms.folding_inputs(spec_of(tmp_path, "paged-attention")) == ("query", "block_tables", "seq_lens")
    text = transforms.describe_vmap(spec_of(tmp_path, "rms-norm"))
    assert "one launch" in text and "a batched weight runs one launch per example" in text


def test_vmap_never_folds_into_a_factor_the_kernel_needs_whole(tmp_path):
    """Packed tokens (ragged-paged-attention's t) start query and out, but a batch folded into them
    would be read against one cu_q_lens: one launch per example instead."""
    spec = spec_of(tmp_path, "ragged-paged-attention")
    assert spec.sharding.parsed.fold_factor == "t" and "t" in spec.sharding.whole
    assert transforms.folding_inputs(spec) is None
    assert "the rule's first factor is in `whole`" in transforms.describe_vmap(spec)


def test_grad_is_described_and_missing_grad_says_what_to_add(tmp_path):
    assert "rms_backward" not in transforms.describe_grad(spec_of(tmp_path, "rms-norm"))  # the op is named op here
    assert "op_backward_launch<T>() in kernel.cc" in transforms.describe_grad(spec_of(tmp_path, "rms-norm"))
    assert "jax.vjp of the reference" in transforms.describe_grad(spec_of(tmp_path, "add"))
    message = transforms.no_backward_message(spec_of(tmp_path, "paged-attention"))
    assert "[backward]" in message and "xlacc update" in message


@pytest.mark.parametrize("template", ["add", "rms-norm", "paged-attention"])
def test_the_shard_map_form_splits_what_the_rule_folds(tmp_path, template):
    example = transforms.shard_map_example(spec_of(tmp_path, template))
    expected = {
        "add": 'in_specs=(P("d"), P("d")), out_specs=P("d")',
        "rms-norm": 'in_specs=(P("d"), P()), out_specs=P("d")',
        "paged-attention": 'in_specs=(P("d"), P(), P(), P("d"), P("d")), out_specs=P("d")',
    }[template]
    assert example.startswith("jax.shard_map(") and expected in example
