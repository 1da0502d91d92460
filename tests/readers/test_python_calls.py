"""xlacc.readers.python.calls: every API that calls a custom-call target, read alike."""

from __future__ import annotations

import textwrap

from xlacc.readers.python import read


def calls(source: str):
    return read("ops.py", textwrap.dedent(source)).calls


def test_an_ffi_call_applied_later_gets_its_operands_and_attributes():
    [call] = calls(
        """
        import jax, jax.numpy as jnp
        def f(x):
            op = jax.ffi.ffi_call("rms", jax.ShapeDtypeStruct(x.shape, x.dtype))
            return op(x, jnp.arange(4, dtype=jnp.int32), eps=1e-5)
        """
    )
    assert (call.target, call.api, call.api_source) == ("rms", 4, "default")
    assert call.operands == ("x", "jnp.arange(4, dtype=jnp.int32)") and call.operand_dtypes == (None, "int32")
    assert call.attrs == ("eps",)


def test_builder_defaults_and_a_spread_that_may_hold_the_api_version():
    found = calls(
        """
        from jaxlib import xla_client
        from jax.interpreters import mlir
        def lower(ctx, x, **kw):
            xla_client.ops.CustomCall(builder, b"old", operands=(x,))
            mlir.custom_call("spread", result_types=[], operands=[x], **kw)
        """
    )
    assert [(c.function, c.target, c.api, c.api_source) for c in found] == [
        ("CustomCall", "old", 1, "default"),
        ("custom_call", "spread", None, "unknown"),
    ]


def test_torch_xla_calls_missing_and_defaulted_api_versions():
    found = calls(
        """
        import torch_xla
        torch_xla._XLAC._xla_custom_call([a], "short", [[4]], [torch.float32], False, "")
        stablehlo_custom_call = torch_xla.experimental.stablehlo_custom_call.stablehlo_custom_call
        stablehlo_custom_call([a], "wrapped", [[4]], ["float32"])
        """
    )
    assert [(c.target, c.api, c.api_source) for c in found] == [("short", None, "missing"), ("wrapped", 0, "default")]
    assert found[1].dtype_problem == '"float32"'


def test_backend_config_kinds():
    found = calls(
        """
        import json, struct, torch_xla
        x = torch_xla._XLAC._xla_custom_call
        x([a], "a", [[1]], [t], False, "{n = 3 : i64}", 4, {})
        x([a], "b", [[1]], [t], False, json.dumps({"n": 3}), 4, {})
        x([a], "c", [[1]], [t], False, f"{{n = {n} : i64}}", 4, {})
        x([a], "d", [[1]], [t], False, struct.pack("<qf", 1, 2.0), 2, {})
        """
    )
    assert [(c.target, c.backend_config_kind) for c in found] == [("a", "constant"), ("b", "json"), ("c", "fstring"), ("d", "struct-pack")]
    assert found[0].backend_config == "{n = 3 : i64}" and found[3].opaque_format == "<qf"


def test_a_call_under_a_guard_says_which():
    [call] = calls(
        """
        import jax
        if hasattr(jax, "ffi"):
            jax.ffi.ffi_call("t", None)(x)
        """
    )
    assert call.guard == '`if hasattr(jax, "ffi")` (line 3)'
