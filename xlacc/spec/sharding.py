"""How an op may be split over devices: a sharding rule in Shardy's einsum-like notation.

``"... c, c -> ... c"`` (rms-norm) names one factor per dim of each operand, then of each result:
``...`` stands for any number of leading dims (only first in an entry), ``(k g)`` is one dim made
of two factors, major first. jax's ``custom_partitioning(sharding_rule=...)`` reads the same text;
xlacc parses it once here to validate it against the op's signature and to give the generated code
each entry's factors as data, so that code never parses the rule itself.

What the generated code derives from a rule (``NAME/_jax_transforms.py``):

- sharding: each dim is split as its factor is split; a factor in ``whole`` must not be split;
  a result without a factor that is split among the operands is summed over those devices;
- vmap: the batch folds into the rule's *fold factor*, the first factor of the first operand,
  for every operand and result that starts with it (one launch); otherwise one launch per example.

Hand-written because jax's own parser (``jax._src.custom_partitioning_sharding_rule``) is private
and only checks the syntax, not the fit to an op's inputs and outputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlacc.ground.wording import first_repeated, shown_list

ELLIPSIS = "..."
FACTOR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,30}$")
TOKEN = re.compile(r"\.\.\.|\(|\)|[^\s()]+")

class RuleError(ValueError):
    """A rule that does not parse, or does not fit the op's signature."""


@dataclass(frozen=True)
class Rule:
    """Each entry holds one factor per dim: a name, "..." (any leading dims), or a compound of names
    (one dim, major first)."""

    operands: tuple[tuple[str | tuple[str, ...], ...], ...]
    results: tuple[tuple[str | tuple[str, ...], ...], ...]

    @property
    def text(self) -> str:
        """The rule in the notation jax's custom_partitioning reads."""
        return f"{', '.join(map(entry_text, self.operands))} -> {', '.join(map(entry_text, self.results))}"

    @property
    def factors(self) -> tuple[str, ...]:
        """Every named factor, in order of first appearance (``...`` excluded)."""
        seen: dict[str, None] = {}
        for entry in self.operands + self.results:
            for factor in entry:
                for name in (factor,) if isinstance(factor, str) else factor:
                    if name != ELLIPSIS:
                        seen.setdefault(name)
        return tuple(seen)

    @property
    def fold_factor(self) -> str | None:
        """The factor a vmap batch folds into: the first operand's first one (None: not a plain factor)."""
        first = self.operands[0][0] if self.operands and self.operands[0] else None
        return first if isinstance(first, str) else None

    def folds(self, entries: tuple[tuple[str | tuple[str, ...], ...], ...]) -> tuple[bool, ...]:
        """Which entries start with the fold factor (a batch folds into them)."""
        fold = self.fold_factor
        return tuple(fold is not None and bool(entry) and entry[0] == fold for entry in entries)

    def splittable(self, whole: tuple[str, ...]) -> tuple[str, ...]:
        """The factors the op may be split along: every one not in ``whole`` (``...`` first when used)."""
        uses_ellipsis = any(ELLIPSIS in entry for entry in self.operands)
        kept_whole, minor = set(whole), _only_minor(self)
        return ((ELLIPSIS,) if uses_ellipsis else ()) + tuple(f for f in self.factors if f not in kept_whole and f not in minor)


def _only_minor(rule: Rule) -> set[str]:
    """The factors that appear only as a minor part of compounds: splitting one alone is impossible."""
    major: set[str] = set()
    minor: set[str] = set()
    for entry in rule.operands + rule.results:
        for factor in entry:
            if isinstance(factor, tuple):
                major.add(factor[0])
                minor.update(factor[1:])
            else:
                major.add(factor)
    return minor - major


def entry_text(entry: tuple[str | tuple[str, ...], ...]) -> str:
    return " ".join(f if isinstance(f, str) else f"({' '.join(f)})" for f in entry)


def parse(text: str) -> Rule:
    """``"... c, c -> ... c"`` -> a Rule; raises RuleError naming what is wrong."""
    if not isinstance(text, str) or text.count("->") != 1:
        raise RuleError(f"{text!r}: write the operands' factors, '->', then the results', such as \"... c, c -> ... c\"")
    left, right = text.split("->")
    return Rule(_entries(left), _entries(right))


def _entries(side: str) -> tuple[tuple[str | tuple[str, ...], ...], ...]:
    return tuple(_entry(part) for part in side.split(","))


def _entry(part: str) -> tuple[str | tuple[str, ...], ...]:
    tokens = TOKEN.findall(part)
    factors: list[str | tuple[str, ...]] = []
    compound: list[str] | None = None
    for token in tokens:
        if token == "(":
            if compound is not None:
                raise RuleError(f"{part.strip()!r}: compound factors do not nest")
            compound = []
        elif token == ")":
            if compound is None or len(compound) < 2:
                raise RuleError(f"{part.strip()!r}: a compound factor is two or more names in parentheses, such as (k g)")
            factors.append(tuple(compound))
            compound = None
        elif token == ELLIPSIS:
            if factors or compound is not None:
                raise RuleError(f"{part.strip()!r}: '...' may only come first in an entry")
            factors.append(ELLIPSIS)
        elif FACTOR.match(token):
            (compound if compound is not None else factors).append(token)
        else:
            raise RuleError(f"{part.strip()!r}: {token!r} is not a factor name (letters, digits, '_', at most 31 characters)")
    if compound is not None:
        raise RuleError(f"{part.strip()!r}: unclosed '('")
    names = [n for f in factors if f != ELLIPSIS for n in ((f,) if isinstance(f, str) else f)]
    twice = first_repeated(names)
    if twice:
        raise RuleError(f"{part.strip()!r}: factor {twice!r} names two dims of one tensor")
    return tuple(factors)


def check(rule: Rule, inputs: tuple[str, ...], outputs: tuple[str, ...], ranks: dict[str, int | None], whole: tuple[str, ...]) -> None:
    """The rule fits the op: one entry per input and output, ranks that match fixed shapes, and
    ``whole`` naming factors of the rule."""
    if len(rule.operands) != len(inputs):
        raise RuleError(f"{rule.text!r} has {len(rule.operands)} operand entries; the op has {len(inputs)} inputs ({', '.join(inputs)})")
    if len(rule.results) != len(outputs):
        raise RuleError(f"{rule.text!r} has {len(rule.results)} result entries; the op has {len(outputs)} outputs ({', '.join(outputs)})")
    for name, entry in zip(inputs + outputs, rule.operands + rule.results):
        rank = ranks.get(name)
        if rank is not None and ELLIPSIS not in entry and len(entry) != rank:
            raise RuleError(f"{rule.text!r}: {name} has {rank} dims, its entry {entry_text(entry)!r} names {len(entry)}")
    _results_come_from_operands(rule)
    factors = set(rule.factors)
    unknown = next((f for f in whole if f not in factors), None)
    if unknown is not None:
        raise RuleError(f"whole = {shown_list(whole)}: {unknown!r} is not a factor of {rule.text!r}")


def _results_come_from_operands(rule: Rule) -> None:
    """A result's dims are sized by the operands' factors: one named only on the right has no size."""
    named = {n for entry in rule.operands for f in entry for n in ((f,) if isinstance(f, str) else f)}
    alone = next((f for f in rule.factors if f not in named), None)  # named is a set: one pass
    if alone is not None:
        raise RuleError(f"{rule.text!r}: factor {alone!r} appears only in results; every result dim takes an operand's factor")
    if any(ELLIPSIS in e for e in rule.results) and not any(ELLIPSIS in e for e in rule.operands):
        raise RuleError(f"{rule.text!r}: '...' in a result needs '...' in an operand to take its dims from")


def elementwise(n_inputs: int, n_outputs: int) -> str:
    """The rule of an op that is elementwise over any shape: ``..., ... -> ...``."""
    return f"{', '.join([ELLIPSIS] * n_inputs)} -> {', '.join([ELLIPSIS] * n_outputs)}"


def sliced(entry: tuple[str | tuple[str, ...], ...], stop: int | None) -> tuple[str | tuple[str, ...], ...]:
    """The factors of ``like.shape[:stop]``: a saved tensor shaped like an input's leading dims."""
    if stop is None:
        return entry
    if -stop > len(entry) - (1 if ELLIPSIS in entry else 0):
        raise RuleError(f"{entry_text(entry)!r} has no {-stop} trailing named dims to drop")
    return entry[:stop]
