"""xlacc.spec.sharding: the Shardy-style rules in xlacc.toml, parsed once and checked against the op."""

from __future__ import annotations

import time

import pytest

from xlacc.spec import sharding


@pytest.mark.parametrize(
    "text, operands, results",
    [
        ("..., ... -> ...", (("...",), ("...",)), (("...",),)),
        ("... c, c -> ... c", (("...", "c"), ("c",)), (("...", "c"),)),
        ("s (k g) d, b t k d, s -> s (k g) d", (("s", ("k", "g"), "d"), ("b", "t", "k", "d"), ("s",)), (("s", ("k", "g"), "d"),)),
        (" ,x->x", ((), ("x",)), (("x",),)),  # a scalar operand names no dim
    ],
)
def test_rules_parse_into_one_factor_per_dim(text, operands, results):
    rule = sharding.parse(text)
    assert (rule.operands, rule.results) == (operands, results)
    assert sharding.parse(rule.text) == rule  # the normalised text reads back the same


@pytest.mark.parametrize(
    "text, message",
    [
        ("x, y", "'->'"),
        ("x -> y -> z", "'->'"),
        ("c ... -> c", "'...' may only come first"),
        ("(k) -> k", "two or more names"),
        ("(k (g)) -> k", "do not nest"),
        ("(k g -> k", "unclosed"),
        ("x x -> x", "names two dims"),
        ("x-y -> x", "not a factor name"),
        ("a" * 32 + " -> x", "at most 31 characters"),
    ],
)
def test_a_bad_rule_says_what_is_wrong(text, message):
    with pytest.raises(sharding.RuleError, match=message):
        sharding.parse(text)


def test_a_rule_must_fit_the_op():
    rule = sharding.parse("... c, c -> ... c")
    sharding.check(rule, ("x", "w"), ("out",), {"x": None, "w": 1, "out": None}, ("c",))
    with pytest.raises(sharding.RuleError, match="2 operand entries; the op has 3 inputs"):
        sharding.check(rule, ("x", "w", "b"), ("out",), {}, ())
    with pytest.raises(sharding.RuleError, match="1 result entries; the op has 2 outputs"):
        sharding.check(rule, ("x", "w"), ("out", "rstd"), {}, ())
    with pytest.raises(sharding.RuleError, match="w has 2 dims"):
        sharding.check(rule, ("x", "w"), ("out",), {"w": 2}, ())
    with pytest.raises(sharding.RuleError, match="'rows' is not a factor"):
        sharding.check(rule, ("x", "w"), ("out",), {}, ("rows",))


@pytest.mark.parametrize(
    "text, message",
    [
        ("a, b -> c", "factor 'c' appears only in results"),  # once a traceback from jax's partitioner
        ("a, b -> (a c)", "factor 'c' appears only in results"),
        ("a, b -> ... a", "'...' in a result needs '...' in an operand"),
    ],
)
def test_every_result_dim_comes_from_an_operand(text, message):
    with pytest.raises(sharding.RuleError, match=message):
        sharding.check(sharding.parse(text), ("x", "y"), ("out",), {}, ())


def test_what_may_be_split_and_where_a_vmap_batch_folds():
    rms = sharding.parse("... c, c -> ... c")
    assert rms.splittable(("c",)) == ("...",)
    assert rms.fold_factor == "..." and rms.folds(rms.operands) == (True, False)
    paged = sharding.parse("s (k g) d, b t k d, b t k d, s m, s -> s (k g) d")
    # g only ever rides inside (k g) as its minor part: it cannot be split on its own.
    assert paged.splittable(("d", "b", "t", "m")) == ("s", "k")
    assert paged.folds(paged.operands) == (True, False, False, True, True)
    assert sharding.parse("(a b) -> (a b)").fold_factor is None


def test_a_saved_tensor_takes_its_inputs_leading_factors():
    assert sharding.sliced(("...", "c"), -1) == ("...",)
    assert sharding.sliced(("r", "c"), None) == ("r", "c")
    with pytest.raises(sharding.RuleError, match="no 1 trailing named dims"):
        sharding.sliced(("...",), -1)


def test_an_elementwise_rule_names_every_operand():
    assert sharding.elementwise(2, 3) == "..., ... -> ..., ..., ..."


def _parse_and_check(factors: int) -> float:
    names = [f"f{i}" for i in range(factors)]
    text = f"{' '.join(names)} -> {' '.join(names)}"
    started = time.process_time()
    rule = sharding.parse(text)
    sharding.check(rule, ("x",), ("out",), {"x": factors, "out": factors}, tuple(names))
    return time.process_time() - started


def test_a_rule_of_many_factors_reads_in_linear_time():
    """A spec whose rule had 40,000 factors took 31 s to build (a count per name): 4x the factors
    now costs at most 5x the CPU time."""
    _parse_and_check(1_000)  # warm
    small, large = min(_parse_and_check(10_000) for _ in range(3)), min(_parse_and_check(40_000) for _ in range(3))
    assert large < 5 * small + 0.05, f"10k factors {small:.3f} s, 40k {large:.3f} s"


def test_an_error_about_a_long_whole_list_shows_a_few_names_and_a_count():
    rule = sharding.parse("i -> i")
    whole = tuple(f"w{i}" for i in range(20_000))
    with pytest.raises(sharding.RuleError) as raised:
        sharding.check(rule, ("x",), ("out",), {"x": 1, "out": 1}, whole)
    message = str(raised.value)
    assert "and 19,992 more" in message and len(message) < 200 and "'w0' is not a factor" in message


def test_what_may_be_split_of_a_rule_of_many_factors_is_found_in_linear_time():
    def splittable(factors: int) -> float:
        names = [f"f{i}" for i in range(factors)]
        rule = sharding.parse(f"{' '.join(names)}, (a b) -> {' '.join(names)}")
        started = time.process_time()
        assert rule.splittable(tuple(names[::2])) == tuple(names[1::2]) + ("a",)
        return time.process_time() - started

    splittable(1_000)
    small, large = min(splittable(10_000) for _ in range(3)), min(splittable(40_000) for _ in range(3))
    assert large < 5 * small + 0.05, f"10k factors {small:.3f} s, 40k {large:.3f} s"
