"""xlacc.readers.python.values: constants, and a regex for a string built at run time."""

from __future__ import annotations

import re
import textwrap

import pytest

from xlacc.readers.python.tree import parse
from xlacc.readers.python.values import Values


def last_value(source: str) -> tuple[Values, object]:
    """The module and the value the file's last assignment assigns (or its last call)."""
    values = Values(parse(textwrap.dedent(source)))
    assignments = sorted(values.nodes["assignment"], key=lambda n: n.start_byte)
    if assignments:
        return values, assignments[-1].child_by_field_name("right")
    return values, max(values.nodes["call"], key=lambda n: n.start_byte)


@pytest.mark.parametrize(
    "expression, value",
    [
        ("'a\\n' 'b'", "a\nb"),
        ("b'\\x00k'", b"\x00k"),
        ("r'\\d'", "\\d"),
        ("-3", -3),
        ("0x10", 16),
        ("1_000", 1000),
        ("2.5", 2.5),
        ("None", None),
        ("True", True),
        ("xla_client.ops.CustomCallApiVersion.API_VERSION_STATUS_RETURNING", 2),
    ],
)
def test_constants(expression, value):
    values, node = last_value(f"x = {expression}\n")
    assert values.constants(node) == [value]


def test_an_fstring_or_a_mixed_concatenation_is_not_a_constant():
    values, node = last_value("x = f'a' 'b'\n")
    assert values.constants(node) is None
    values, node = last_value("x = 'a' b'b'\n")
    assert values.constants(node) is None


@pytest.mark.parametrize(
    "source, pattern, names, not_names",
    [
        ("def f(prefix):\n    x = prefix + '_kepler_f32'", ".*_kepler_f32", ["gpu_kepler_f32"], ["gpu_kepler_f64"]),
        ("def f(dtype):\n    x = f'op_{dtype}'", "op_.*", ["op_f32", "op_"], ["xop_f32"]),
        ("for t in ['f32', 'f64']:\n    x = f'op_{t}_fwd'", "op_(?:f32|f64)_fwd", ["op_f64_fwd"], ["op_bf16_fwd"]),
        ("def f(t):\n    x = 'op_{}_{k}'.format(t, k='fwd')", "op_.*_fwd", ["op_f32_fwd"], ["op_f32_bwd"]),
        ("def f(t):\n    x = 'op_{0}'.format(t).encode()", "op_.*", ["op_s8"], ["p_s8"]),
        ("def f(t):\n    x = 'op_%s_%d' % (t, 3)", "op_.*_3", ["op_f32_3"], ["op_f32_4"]),
        ("def f(t):\n    x = 'op_%(t)s%%' % {'t': t}", "op_.*%", ["op_a%"], ["op_a"]),
        ("def f(n):\n    x = rf'a\\d{{{n}}}'", r"a\\d\{.*\}", ["a\\d{7}"], ["a7"]),
        ("def f(n):\n    x = f'{n:>3}_op'", ".*_op", ["  1_op"], ["op"]),
    ],
)
def test_a_computed_name_becomes_a_pattern(source, pattern, names, not_names):
    values, node = last_value(source)
    found = values.pattern(node)
    assert found == pattern
    assert all(re.fullmatch(found, n) for n in names) and not any(re.fullmatch(found, n) for n in not_names)


def test_nothing_known_is_no_pattern():
    values, node = last_value("def f(a, b):\n    x = f'{a}{b}'\n")
    assert values.pattern(node) is None


def test_dotted_names_follow_imports_and_assignments():
    values, _ = last_value("import jax.numpy as jnp\nzeros = jnp.zeros\nzeros(3)\n")
    call = max(values.nodes["call"], key=lambda n: n.start_byte)
    assert values.dotted(call.child_by_field_name("function")) == "jax.numpy.zeros"
