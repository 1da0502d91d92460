"""xlacc.readers.python.registrations: names, platforms, api_versions and capsules of registrations."""

from __future__ import annotations

import textwrap

from xlacc.readers.python import read


def registrations(source: str):
    return read("ops.py", textwrap.dedent(source)).registrations


def test_a_name_built_from_a_loop_over_dtypes_is_a_pattern_of_exactly_those_names():
    [reg] = registrations(
        """
        import jax
        from . import _ops
        for dtype in ("f32", "f64"):
            jax.ffi.register_ffi_target(f"solve_{dtype}", _ops.capsules[dtype], platform="CUDA")
        """
    )
    assert reg.target is None and reg.target_pattern == "solve_(?:f32|f64)"
    assert reg.names("solve_f64") and not reg.names("solve_bf16")
    assert reg.from_module == "_ops" and reg.platforms == ("CUDA",)


def test_a_projects_own_register_function_keeps_its_own_defaults():
    [reg] = registrations(
        """
        from .compat import register_custom_call_target
        register_custom_call_target("op", capsule)
        """
    )
    assert (reg.api_version, reg.platforms, reg.api_given) == (None, (), False)


def test_torch_xla_registration_without_a_capsule():
    [reg] = registrations("import torch_xla\ntorch_xla._XLAC._xla_register_custom_call_target('op')\n")
    assert (reg.framework, reg.capsule, reg.capsule_text, reg.platform_given) == ("torch_xla", "unknown", "None", False)


def test_legacy_registration_through_the_removed_module_is_recorded_once_per_line():
    facts = read(
        "old.py",
        "from jax.lib import xla_client\nxla_client.register_custom_call_target(b'f', fn, platform='gpu')\n",
    )
    assert [line for line, _ in facts.legacy_jax_api] == [1, 2]
    assert facts.legacy_guards == {}
