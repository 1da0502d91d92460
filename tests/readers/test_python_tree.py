"""xlacc.readers.python.tree: parsing with tree-sitter's grammar, whatever Python runs the reader."""

from __future__ import annotations

import sys
import textwrap

import pytest

from xlacc.readers.python import tree

# Syntax newer than the oldest Python xlacc runs on: `ast` of 3.10 or 3.11 refuses each of these.
NEWER_SYNTAX = {
    "type alias (3.12)": "type Shape = tuple[int, ...]\n",
    "generic function (3.12)": "def first[T](xs: list[T]) -> T:\n    return xs[0]\n",
    "generic class (3.12)": "class Box[T: (int, float)]:\n    value: T\n",
    "t-string (3.14)": "name = t'op_{dtype}'\n",
    "except* (3.11)": "try:\n    pass\nexcept* ValueError:\n    pass\n",
    "match (3.10)": "match x:\n    case [1, *rest]:\n        pass\n    case {'k': v}:\n        pass\n",
    "nested f-string quotes (3.12)": "s = f\"{'a' + f'{x}'}\"\n",
}


@pytest.mark.parametrize("source", NEWER_SYNTAX.values(), ids=NEWER_SYNTAX.keys())
def test_newer_syntax_parses_on_any_interpreter(source):
    parsed = tree.parse(source)
    assert parsed.problem is None and parsed.root is not None


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def f(:\n", "line 1: invalid syntax"),
        ("import jax\n\nx = = 3\n", "line 3: invalid syntax"),
        ("x = " + "(" * 5000 + ")" * 5000 + "\n", "line 1: too many nested parentheses"),
        ("x = " + "-" * 100_000 + "1\n", "nested too deeply for Python's parser"),
    ],
)
def test_a_file_that_does_not_parse_says_where(source, problem):
    parsed = tree.parse(source)
    assert (parsed.root, parsed.problem) == (None, problem)


def test_a_note_that_elides_parameters_still_parses():
    parsed = tree.parse("def op_xla(q, k, ...):\n    return q\n")
    assert parsed.problem is None and "..." not in parsed.text


@pytest.mark.skipif(sys.version_info < (3, 11), reason="a starred subscript is Python 3.11 syntax")
def test_syntax_the_grammar_lacks_is_read_when_the_interpreter_accepts_it():
    # `x[*(...)]` (3.11) is not in tree-sitter-python 0.25: the file still reads, from the recovered tree.
    parsed = tree.parse("import jax\ny = x[*(i for i in r)]\njax.ffi.register_ffi_target('t', None)\n")
    assert parsed.problem is None and parsed.root is not None and parsed.root.has_error


def test_text_is_the_code_on_one_line_and_a_comment_is_left_out():
    source = textwrap.dedent(
        """
        call(
            "é",   # the target
            [a, b],
            n=-1, *rest,
        )
        """
    )
    parsed = tree.parse(source)
    call = parsed.root.named_children[0].named_children[0]
    assert parsed.text_of(call) == "call('é', [a, b], n=-1, *rest)"
    assert parsed.text_of(None) == "None"


def test_long_text_is_shortened():
    parsed = tree.parse("f(" + ", ".join(["argument"] * 40) + ")\n")
    text = parsed.text_of(parsed.root.named_children[0])
    assert len(text) == tree.MAX_TEXT and text.endswith("...")


def test_arguments_positional_keywords_and_spread():
    parsed = tree.parse("f(a, *more, k=1, **rest)\n")
    call = parsed.root.named_children[0].named_children[0]
    arguments = tree.Arguments(call)
    assert [parsed.slice(n) for n in arguments.positional] == ["a", "*more"]
    assert arguments.names == ("k",) and arguments.spread
    assert arguments.argument(2, "k").type == "integer"  # after a *splat, only the keyword counts
    assert arguments.argument(0, "x").type == "identifier"
