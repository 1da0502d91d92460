"""xlacc.readers.python.libraries: ctypes libraries, symbols, capsules and callbacks."""

from __future__ import annotations

import textwrap

import pytest

from xlacc.readers.python import read


def facts(source: str):
    return read("ops.py", textwrap.dedent(source))


def test_symbols_looked_up_every_way_ctypes_allows():
    found = facts(
        """
        import ctypes
        lib = ctypes.CDLL("./libop.so")
        lib.first.restype = None
        second = getattr(lib, "second")
        third = lib["third"]
        """
    )
    assert set(found.symbol_refs) == {"first", "second", "third"}
    assert [load.path for load in found.libraries] == ["./libop.so"]


@pytest.mark.parametrize(
    "capsule, kind",
    [
        ("jax.ffi.pycapsule(lib.op)", "capsule"),
        ("lib.op", "ctypes-function"),
        ("ctypes.cast(lib.op, ctypes.c_void_p).value", "int-address"),
        ("ctypes.cast(lib.op, ctypes.c_void_p)", "ctypes-pointer"),
        ("12345", "int-address"),
    ],
)
def test_capsule_kinds(capsule, kind):
    found = facts(f"import ctypes, jax\nlib = ctypes.CDLL('x.so')\njax.ffi.register_ffi_target('t', {capsule}, platform='cpu')\n")
    assert found.registrations[0].capsule == kind


def test_a_decorated_callback_passed_through_pycapsule_is_an_entry_point_with_its_arity():
    found = facts(
        """
        import ctypes, jax
        CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
        @CALLBACK
        def add_cpu(out, ins):
            pass
        jax.ffi.register_ffi_target("add", jax.ffi.pycapsule(add_cpu), platform="CUDA", api_version=0)
        """
    )
    [reg] = found.registrations
    assert reg.callback is not None and (reg.callback.name, reg.callback.arity, reg.callback.params) == ("add_cpu", 2, ("out", "ins"))
    assert reg.callback.line == 3 and reg.callback.stream is False
    assert found.callbacks == [reg.callback]


def test_a_wrapped_callback_made_into_a_capsule_by_pycapsule_new():
    found = facts(
        """
        import ctypes
        from ctypes import CFUNCTYPE, c_void_p, c_char_p, c_size_t
        def kernel(stream, buffers, opaque, opaque_len):
            pass
        GPU_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_char_p, c_size_t)
        keep = GPU_FN(kernel)
        new_capsule = ctypes.pythonapi.PyCapsule_New
        capsule = new_capsule(ctypes.cast(keep, c_void_p), b"xla._CUSTOM_CALL_TARGET", None)
        jax.ffi.register_ffi_target("k", capsule, platform="gpu", api_version=0)
        """
    )
    callback = found.registrations[0].callback
    assert (callback.name, callback.arity, callback.stream) == ("kernel", 4, True)


def test_a_registration_without_a_callback_has_none():
    found = facts("import jax\njax.ffi.register_ffi_target('t', jax.ffi.pycapsule(mod.handler))\n")
    assert found.registrations[0].callback is None and found.callbacks == []
