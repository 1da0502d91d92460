"""xlacc.readers.python.facts: a call meets a registration by a constant or a computed name."""

from __future__ import annotations

import re

import pytest

from xlacc.readers.python import PyCall, PyRegistration, pattern_sample


def call(target: str | None, pattern: str | None) -> PyCall:
    return PyCall("jax", "ffi_call", target, pattern, 4, "default", 1, (), False, None, "none", None, 1, "")


def registration(target: str | None, pattern: str | None) -> PyRegistration:
    return PyRegistration("jax", "register_ffi_target", target, pattern, None, False, ("CUDA",), True, 1, False, "capsule", "", frozenset(), 1, "")


@pytest.mark.parametrize(
    "called, registered, meets",
    [
        (("op_f32", None), ("op_f32", None), True),
        (("op_f32", None), (None, "op_(?:f32|f64)"), True),
        (("op_bf16", None), (None, "op_(?:f32|f64)"), False),
        ((None, "op_.*"), ("op_f64", None), True),
        ((None, "op_.*"), (None, "op_(?:f32|f64)"), True),  # the registration's first name is one the call can build
        ((None, "op_(?:f32|f64)_fwd"), (None, "op_.*"), True),  # and the other way round
        ((None, "op_.*_bwd"), (None, "op_(?:f32|f64)_fwd"), False),
        ((None, None), (None, "op_.*"), False),
    ],
)
def test_a_call_reaches_a_registration_by_name_or_pattern(called, registered, meets):
    assert call(*called).reaches(registration(*registered)) is meets


@pytest.mark.parametrize(
    "pattern, sample",
    [("op_.*", "op_"), ("(?:a|b)_x", "a_x"), ("a|b", "a"), (re.escape("a.b(c)") + "(?:(?:x|y)z|w)q", "a.b(c)xzq")],
)
def test_pattern_sample_is_a_string_the_pattern_matches(pattern, sample):
    assert pattern_sample(pattern) == sample and re.fullmatch(pattern, sample)
