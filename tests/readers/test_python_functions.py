"""xlacc.readers.python.functions: a module's own functions, their parameters and what they read."""

from __future__ import annotations

import textwrap

from xlacc.readers.python import module_functions, parse


def functions(source: str):
    return {f.name: f for f in module_functions(parse(textwrap.dedent(source)))}


def test_parameters_in_order_and_names_read():
    found = functions(
        """
        import numpy as np
        @decorate
        def example_inputs(size, rng, dtype=np.float32, *, scale=2):
            x = rng.normal(size=(4,))
            return [x.astype(dtype)], {}
        def uses(size: int):
            size += 1
        """
    )
    inputs = found["example_inputs"]
    assert inputs.params == ("size", "rng", "dtype") and inputs.line == 4
    assert "size" not in inputs.reads  # `size=` names a keyword, it reads nothing
    assert {"rng", "dtype", "np", "decorate", "x"} <= inputs.reads
    assert "size" in found["uses"].reads and "int" in found["uses"].reads


def test_functions_written_for_python_3_12_are_read():
    found = functions("type Size = int\ndef example_inputs[T](size: Size, rng):\n    return size\n")
    assert found["example_inputs"].params == ("size", "rng") and "size" in found["example_inputs"].reads


def test_a_file_that_does_not_parse_has_no_functions():
    assert module_functions(parse("def f(:\n")) == []
