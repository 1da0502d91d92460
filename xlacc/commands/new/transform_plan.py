"""What an op's generated JAX bindings do under jax.jit over sharded inputs, jax.vmap and jax.grad.

One place derives it from the spec, for the generated docstrings and for run-smoke's checks, so the
words in ``NAME/jax.py`` and what run-smoke tests can never disagree; the code that does it is
``NAME/_jax_transforms.py`` (``templates/_common/project/jax_transforms.py.j2``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xlacc.spec import Spec, sharding


@dataclass(frozen=True)
class Split:
    """One way run-smoke splits the operands: ``factor`` over the mesh's one axis."""

    factor: str
    dims: tuple[int | None, ...]  # per input: the dim split (counted from the front; None: replicated)
    result_dims: tuple[int | None, ...]  # per output


def splits(spec: Spec) -> list[Split]:
    """Each factor the op may be split along, with the dim it is on in every operand and result.
    ``...`` splits the outermost leading dim; a compound (k g) is split through its major factor."""
    if spec.sharding is None:
        return []
    rule = spec.sharding.parsed
    return [
        Split(factor, tuple(_dim_of(entry, factor) for entry in rule.operands), tuple(_dim_of(entry, factor) for entry in rule.results))
        for factor in rule.splittable(spec.sharding.whole)
    ]


def _dim_of(entry: tuple, factor: str) -> int | None:
    for dim, f in enumerate(entry):
        if f == factor or (isinstance(f, tuple) and f[0] == factor):
            return dim
    return None


def folding_inputs(spec: Spec) -> tuple[str, ...] | None:
    """The inputs a vmap batch folds into (one launch); None when every batch runs once per example."""
    if spec.sharding is None:
        return None
    rule = spec.sharding.parsed
    # A factor the kernel needs whole (packed tokens, say) does not take a batch either.
    if rule.fold_factor is None or rule.fold_factor in spec.sharding.whole or not all(rule.folds(rule.results)):
        return None
    return tuple(t.name for t, folds in zip(spec.inputs, rule.folds(rule.operands)) if folds)


def _names(names) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def describe_sharding(spec: Spec) -> str:
    if spec.sharding is None:
        return (
            "Sharding: xlacc.toml has no [sharding], so XLA cannot split this op: under jax.jit over sharded "
            "inputs it gathers every input onto each device (`xlacc doctor` reports custom-call-replicated). "
            "Add [sharding] and run `xlacc update`."
        )
    rule, whole = spec.sharding.parsed, spec.sharding.whole
    free = ["any leading dim (`...`)" if f == sharding.ELLIPSIS else f"`{f}`" for f in rule.splittable(whole)]
    text = (
        f"Sharding ([sharding] in xlacc.toml): `{rule.text}`. jax.jit over inputs split along "
        f"{_names(free) or 'no dim'} runs the kernel once per device on its own shard, with no collective "
        "(jax.experimental.custom_partitioning with this Shardy rule)."
    )
    if whole:
        text += f" The kernel needs {_names(f'`{f}`' for f in whole)} whole: splitting one raises a ValueError naming the dim."
    return text


def shard_map_example(spec: Spec) -> str:
    """The op under jax.shard_map, split along the rule's first factor."""
    rule = spec.sharding.parsed if spec.sharding else None
    folds = rule.folds(rule.operands) if rule and rule.fold_factor else (True,) * len(spec.inputs)
    result_folds = rule.folds(rule.results) if rule and rule.fold_factor else (True,) * len(spec.outputs)
    attrs = "".join(f", {a.name}={a.default if a.default is not None else '...'}" for a in spec.attrs)
    call = f"functools.partial({spec.name}{attrs})" if spec.attrs else spec.name
    return f"jax.shard_map({call}, mesh=mesh, in_specs={_specs(folds)}, out_specs={_specs(result_folds, single=True)})"


def _specs(splits: tuple[bool, ...], single: bool = False) -> str:
    """P("d") for each split entry, P() for the others, as jax.shard_map takes them."""
    specs = ['P("d")' if split else "P()" for split in splits]
    if single and len(specs) == 1:
        return specs[0]
    return f"({specs[0]},)" if len(specs) == 1 else f"({', '.join(specs)})"


def describe_vmap(spec: Spec) -> str:
    folding = folding_inputs(spec)
    if folding is None:
        why = "xlacc.toml has no [sharding] to say which dims the kernel batches" if spec.sharding is None else (
            "the rule's first factor is in `whole`" if spec.sharding.parsed.fold_factor in spec.sharding.whole
            else "not every result starts with the rule's first factor"
        )
        return f"vmap: one launch per example (jax.lax.map): {why}."
    rule = spec.sharding.parsed
    others = [t.name for t in spec.inputs if t.name not in folding]
    into = "one more leading dim" if rule.fold_factor == sharding.ELLIPSIS else f"more `{rule.fold_factor}`"
    text = f"vmap: one launch: a batch of {_names(folding)} becomes {into} (unbatched ones among them are broadcast)"
    if others:
        text += f"; a batched {_names(others)} runs one launch per example (jax.lax.map), as the kernel takes it unbatched"
    return text + " (jax.custom_batching.custom_vmap)."


def describe_grad(spec: Spec) -> str:
    backward = spec.backward
    if backward is None:
        return f"grad: not defined: jax.grad raises NotImplementedError saying what to add. {no_backward_message(spec)}"
    grads = _names(f"grad_{g}" for g in backward.grads)
    if backward.kind == "reference":
        return f"grad: jax.custom_vjp; the backward is jax.vjp of the reference (xp=jax.numpy), so XLA computes {grads}."
    saved = f", the saved {_names(t.name for t in backward.saved)}" if backward.saved else ""
    return (
        f"grad: jax.custom_vjp; {spec.name}_backward_launch<T>() in {spec.kernel_file} computes {grads} "
        f"from the inputs{saved} and the outputs' cotangents (target {spec.target}_backward)."
    )


def no_backward_message(spec: Spec) -> str:
    return (
        f"{spec.name} has no backward: add a [backward] table to xlacc.toml, kind = \"reference\" (jax differentiates "
        f"reference.py) or kind = \"kernel\" (write {spec.name}_backward_launch<T>() in {spec.kernel_file}), then run "
        "`xlacc update` and `xlacc build`."
    )
