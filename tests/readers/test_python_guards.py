"""xlacc.readers.python.guards: legacy code that runs only where the old API is there."""

from __future__ import annotations

import textwrap

import pytest

from xlacc.readers.python import read

LEGACY = "xla_client.register_custom_call_target(name, fn, platform='gpu')"


@pytest.mark.parametrize(
    "source, guard",
    [
        (
            f"""
            try:
                register = jax.ffi.register_ffi_target
            except AttributeError:
                {LEGACY}
            """,
            "`except AttributeError:` (line 5)",
        ),
        (
            f"""
            try:
                {LEGACY}
            except (ImportError, AttributeError) as e:
                jax.ffi.register_ffi_target(name, fn)
            """,
            "`try:` (line 3) with `except ImportError, AttributeError:`",
        ),
        (
            f"""
            if hasattr(jax, "ffi"):
                jax.ffi.register_ffi_target(name, fn)
            else:
                {LEGACY}
            """,
            '`if hasattr(jax, "ffi")` (line 3)',
        ),
        (
            f"""
            JAX_VERSION = tuple(int(p) for p in jax.__version__.split(".")[:3])
            def register():
                if JAX_VERSION < (0, 4, 31):
                    {LEGACY}
            """,
            "`if JAX_VERSION < (0, 4, 31)` (line 5)",
        ),
        (
            f"""
            if jaxlib.version.__version_info__ >= (0, 5):
                pass
            elif True:
                {LEGACY}
            """,
            "`if jaxlib.version.__version_info__ >= (0, 5)` (line 3)",
        ),
        (
            f"""
            def _legacy():
                {LEGACY}
            try:
                jax.ffi.register_ffi_target(name, fn)
            except AttributeError:
                _legacy()
            """,
            "`except AttributeError:` (line 7), through `_legacy()`",
        ),
    ],
    ids=["except-fallback", "try-body", "hasattr", "version-name", "jaxlib-version-elif", "through-a-function"],
)
def test_a_guarded_legacy_use_names_its_guard(source, guard):
    text = "import jax, jaxlib\nfrom jax.lib import xla_client\n" + textwrap.dedent(source).strip("\n") + "\n"
    facts = read("compat.py", text)
    legacy_line = next(i for i, line in enumerate(text.splitlines(), 1) if "register_custom_call_target" in line)
    assert facts.legacy_guards.get(legacy_line) == guard
    assert 2 not in facts.legacy_guards  # the import itself is not guarded


def test_a_handler_for_another_error_a_plain_condition_or_an_unguarded_caller_is_no_guard():
    text = textwrap.dedent(
        f"""
        from jax.lib import xla_client
        try:
            {LEGACY}
        except KeyError:
            pass
        if debug:
            {LEGACY.replace("name", "other")}
        def register():
            {LEGACY.replace("name", "third")}
        if hasattr(jax, "ffi"):
            register()
        register()
        """
    )
    assert read("compat.py", text).legacy_guards == {}
