"""xlacc.readers.python.scopes: names bound in their own scope, followed through assignments and loops."""

from __future__ import annotations

import textwrap

from xlacc.readers.python.tree import parse
from xlacc.readers.python.values import Values


def module(source: str) -> Values:
    return Values(parse(textwrap.dedent(source)))


def name_values(values: Values, name: str, occurrence: int = -1) -> list[str]:
    """What the name's ``occurrence``-th use (the last by default) can hold, as text."""
    uses = [n for n in values.nodes["identifier"] if n.text.decode() == name]
    uses.sort(key=lambda n: n.start_byte)
    return [values.text(v).replace('"', "'") for v in values.values(uses[occurrence])]


def test_a_function_sees_its_own_name_first_and_a_class_body_is_not_seen_by_its_methods():
    values = module(
        """
        lib = "module"
        class K:
            lib = "class"
            def method(self):
                return lib
        def local():
            lib = "local"
            return lib
        """
    )
    assert name_values(values, "lib", 2) == ["'module'"]  # inside method: the class's lib is not in scope
    assert name_values(values, "lib", -1) == ["'local'"]


def test_a_parameter_is_unknown_and_its_default_belongs_to_the_enclosing_scope():
    values = module(
        """
        size = 4
        def f(n, m=size):
            return n
        """
    )
    assert name_values(values, "n") == ["n"]
    assert name_values(values, "size") == ["4"]


def test_unpacking_chained_assignment_walrus_and_annotation():
    values = module(
        """
        a, (b, c) = 1, (2, 3)
        d = e = "both"
        f: str = "annotated"
        if (g := "walrus"):
            pass
        (h) = "grouped"
        print(a, b, c, d, e, f, g, h)
        """
    )
    assert [name_values(values, n) for n in "abcdefgh"] == [
        ["1"], ["2"], ["3"], ["'both'"], ["'both'"], ["'annotated'"], ["'walrus'"], ["'grouped'"]
    ]


def test_a_loop_binds_every_element_of_a_literal_even_one_named_later():
    values = module(
        """
        def register():
            for platform in PLATFORMS:
                use(platform)
        PLATFORMS = ("cpu", "CUDA")
        """
    )
    assert name_values(values, "platform") == ["'cpu'", "'CUDA'"]


def test_a_conditional_expression_can_be_either_branch():
    values = module("x = 'a' if flag else 'b'\nuse(x)\n")
    assert name_values(values, "x") == ["'a'", "'b'"]


def test_imports_as_names_stand_for_modules():
    values = module(
        """
        from __future__ import annotations
        import jax.numpy as jnp
        import os.path
        from . import gpu_ops
        from ..util import helper as h
        from jax.lib import *
        """
    )
    assert values.imports == {
        "annotations": "__future__.annotations",
        "jnp": "jax.numpy",
        "os": "os",
        "gpu_ops": ".gpu_ops",
        "h": "..util.helper",
        "*": "jax.lib.*",
    }


def test_scope_names_skip_lambdas_and_classes():
    values = module("def outer():\n    f = lambda: call()\nclass K:\n    x = call()\n")
    calls = sorted(values.nodes["call"], key=lambda n: n.start_byte)
    assert [values.scope_name(c) for c in calls] == ["outer", "<module>"]
