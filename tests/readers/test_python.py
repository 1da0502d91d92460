"""xlacc.readers.python: what a Python file registers, calls and loads (the reader's first tests, kept whole)."""

from __future__ import annotations

import textwrap

import pytest

from xlacc.readers import python as pyparse


def read(source: str) -> pyparse.PyFacts:
    return pyparse.read("ops.py", textwrap.dedent(source))


def test_registration_names_followed_through_assignments_and_loops():
    facts = read(
        """
        import ctypes
        import jax
        lib = ctypes.cdll.LoadLibrary("./build/libops.so")
        PLATFORMS = ["cpu", "CUDA"]
        for platform in PLATFORMS:
            jax.ffi.register_ffi_target("add_f32", jax.ffi.pycapsule(lib.AddF32), platform=platform)
        """
    )
    [reg] = facts.registrations
    assert (reg.framework, reg.target, reg.platforms, reg.platform) == ("jax", "add_f32", ("cpu", "CUDA"), None)
    assert reg.api_version == 1 and not reg.api_given  # register_ffi_target's own default: typed FFI
    assert reg.symbols == {"AddF32"}
    assert [load.path for load in facts.libraries] == ["./build/libops.so"]


def test_a_local_name_is_not_the_module_name():
    facts = read(
        """
        import jax
        TARGET = "module_level"
        def register():
            TARGET = "local"
            jax.ffi.register_ffi_target(TARGET, None, platform="cpu")
        """
    )
    assert [r.target for r in facts.registrations] == ["local"]


def test_a_computed_name_becomes_a_pattern():
    facts = read(
        """
        import jax
        def call(prefix, x):
            return jax.ffi.ffi_call(prefix + "_kepler_f32", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
        """
    )
    [call] = facts.calls
    assert call.target is None and call.matches("gpu_kepler_f32") and not call.matches("gpu_kepler_f64")


def test_api_version_constants_and_builder_defaults():
    facts = read(
        """
        from jax.interpreters import mlir
        from jaxlib import hlo_helpers
        from jax._src.lib import xla_client
        STATUS = xla_client.ops.CustomCallApiVersion.API_VERSION_STATUS_RETURNING
        def lower_a(ctx, x):
            return mlir.custom_call("a", result_types=[], operands=[x], api_version=STATUS).results
        def lower_b(ctx, x):
            return hlo_helpers.custom_call("b", result_types=[], operands=[x]).results
        """
    )
    by_target = {c.target: c for c in facts.calls}
    assert (by_target["a"].api, by_target["a"].api_source) == (2, "given")
    assert (by_target["b"].api, by_target["b"].api_source) == (2, "default")
    assert by_target["a"].operands == ("x",)


def test_a_projects_wrapper_has_an_unknown_api_version():
    facts = read(
        """
        from jax.interpreters import mlir
        def custom_call(name, **kwargs):
            return mlir.custom_call(name, **kwargs)
        def lower(ctx, x):
            return custom_call("my_op", result_types=[], operands=[x])
        """
    )
    # The wrapper's own call passes **kwargs: its api_version is unknown, and so is the target.
    assert [(c.target, c.api, c.api_source) for c in facts.calls] == [(None, None, "unknown")]


def test_capsules_from_a_compiled_module():
    facts = read(
        """
        import jax
        from . import gpu_ops
        for name, fn in gpu_ops.registrations().items():
            jax.ffi.register_ffi_target(name, fn, platform="CUDA", api_version=0)
        """
    )
    [reg] = facts.registrations
    assert (reg.from_module, reg.keys_are_names, reg.api_version, reg.target) == ("gpu_ops", True, 0, None)
    assert ".gpu_ops" in facts.imports


def test_struct_pack_format_and_operand_dtypes():
    facts = read(
        """
        import struct
        import jax
        import jax.numpy as jnp
        def f(x):
            y = jnp.zeros((4,), jnp.int32)
            opaque = struct.pack("<iif", 1, 2, 0.5)
            return jax.ffi.ffi_call("k", jax.ShapeDtypeStruct((4,), jnp.float32), custom_call_api_version=2,
                                    legacy_backend_config=opaque)(x, y)
        """
    )
    [call] = facts.calls
    assert call.opaque_format == "<iif" and call.backend_config_kind == "struct-pack"
    assert call.operand_dtypes[1:] == ("int32",)
    assert pyparse.struct_size("<iif") == 12
    assert pyparse.struct_layout("<iif") == [(0, 4), (4, 4), (8, 4)]
    assert pyparse.struct_layout("@id") == [(0, 4), (8, 8)]  # native alignment pads before the double


def test_torch_xla_registration_and_call():
    facts = read(
        """
        import torch_xla
        torch_xla._XLAC._xla_register_custom_call_target("my_add", capsule, "CUDA")
        out = torch_xla._XLAC._xla_custom_call([a, b], "my_add", [[4]], [torch.float32], False, "", 1)
        """
    )
    [reg] = facts.registrations
    [call] = facts.calls
    assert (reg.framework, reg.target, reg.platform) == ("torch_xla", "my_add", "CUDA")
    assert (call.framework, call.target, call.api, call.positional) == ("torch_xla", "my_add", 1, 7)


def test_gpu_init_before_fork_facts_carry_their_scope():
    facts = read(
        """
        import multiprocessing
        import torch
        def setup():
            torch.zeros(1, device="cuda")
        pool = multiprocessing.Pool(2)
        """
    )
    assert [(scope, code) for _, code, scope in facts.gpu_inits] == [("setup", 'torch.zeros(1, device="cuda")')]
    assert [scope for _, _, scope in facts.forks] == ["<module>"]


def test_text_is_the_source_as_written_on_one_line():
    facts = read(
        """
        import jax
        jax.ffi.register_ffi_target(
            "é_target",   # a comment inside: written out without it
            None,
            platform="cpu",
        )
        jax.ffi.register_ffi_target("plain",  None, platform="cpu")
        """
    )
    texts = [r.text for r in facts.registrations]
    assert texts[0] == "jax.ffi.register_ffi_target('é_target', None, platform='cpu')"
    assert texts[1] == 'jax.ffi.register_ffi_target("plain",  None, platform="cpu")'.replace("  ", " ")


@pytest.mark.parametrize(
    "source, error",
    [
        ("def f(:\n", "line 1: invalid syntax"),
        ("x = " + "(" * 5000 + ")" * 5000 + "\n", "line 1: too many nested parentheses"),
        ("x = " + "-" * 100_000 + "1\n", "nested too deeply for Python's parser"),
    ],
)
def test_unparsable_files_give_a_syntax_error_fact(source, error):
    assert pyparse.read("bad.py", source + "import jax\n").syntax_error == error


def test_files_without_a_relevant_word_are_not_parsed():
    assert not pyparse.relevant("import numpy as np\nprint(np.ones(3))\n")
    assert pyparse.relevant("import ctypes\n")
    assert pyparse.read("plain.py", "import numpy\n").calls == []
