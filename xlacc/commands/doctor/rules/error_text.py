"""Error text (a log, a traceback, a command's output) read against the rules of
:mod:`.error_text_table` and :mod:`.error_text_frameworks`: data, each a pattern for one message
and the causes it points to, ranked by likelihood. A message with several causes yields one finding
per cause, each saying how to tell it apart.

Text is matched twice over: once with log prefixes removed and line breaks turned into spaces (a
message wrapped at a space, or cut into lines by a logger), then, for rules that did not match,
with the lines glued back together without a space (a terminal that wrapped inside a word).
Patterns therefore write whitespace as ``\\s+`` (``\\s*`` in the glued pass).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import string
from dataclasses import dataclass

from xlacc.commands.doctor.rules import hlo_constants, hlo_sharding
from xlacc.commands.doctor.rules.error_text_frameworks import FRAMEWORK_RULES
from xlacc.commands.doctor.rules.error_text_table import RULES as CORE_RULES
from xlacc.commands.doctor.rules.error_text_table import Cause, TextRule  # noqa: F401 - the table's shapes, for its readers
from xlacc.commands.doctor.rules.hlo import diagnose_hlo
from xlacc.ground.catalogue import entry, make
from xlacc.ground.report import Finding

MAX_LINE = 4096  # longer lines are cut before any rule sees them
HLO_WORDS = ("HloModule", "ENTRY", "func.func", "custom")
MAX_EXCERPT = 240
FOLD_ABOVE = 1 << 16  # characters: a longer text of repeated lines is searched once per distinct line
MIN_TERMINAL_WIDTH = 40




RULES: tuple[TextRule, ...] = CORE_RULES + FRAMEWORK_RULES


# Prefixes that loggers and test runners put before a message (removed from every line).
LOG_PREFIXES = re.compile(
    r"""^(?:
        [IWEF]\d{4}\s+\d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[\w.\-]+:\d+\]\s?               # glog / absl: E1122 10:00:00.123 123 f.cc:88]
      | \d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?:?\s+[IWEF]\s+[\w./\-]+:\d+\]\s?  # TF: 2025-01-01 10:00:00.1: E f.cc:1]
      | (?:DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL):[\w.]*:                         # logging.basicConfig: ERROR:root:
      | \[(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\]\s?                      # [ERROR]
      | E\s{2,}                                                                       # pytest's failure lines
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class NormalizedText:
    spaced: str  # lines joined by one space, whitespace runs collapsed
    glued: str  # lines joined with nothing (words cut by a terminal come back whole)


def strip_prefixes(line: str) -> str:
    line = line.strip()
    for _ in range(3):  # a line may carry two prefixes (a logger inside a test runner)
        stripped = LOG_PREFIXES.sub("", line, count=1).strip()
        if stripped == line:
            break
        line = stripped
    return line


def terminal_width(raw_lines: list[str]) -> int | None:
    """The width a terminal cut lines at: a length of at least 40 that two or more lines share as
    the longest (a message cut at a fixed width leaves all but its last piece that long)."""
    lengths = [len(line) for line in raw_lines]
    widest = max(lengths, default=0)
    return widest if widest >= MIN_TERMINAL_WIDTH and lengths.count(widest) >= 2 else None


def normalize(text: str) -> NormalizedText:
    raw = text.splitlines()
    lines = [strip_prefixes(line) for line in raw]
    width = terminal_width(raw)
    pieces = []
    for index, line in enumerate(lines):
        cut_inside_word = (
            width is not None
            and index > 0
            and len(raw[index - 1]) == width
            and re.search(r"\w$", raw[index - 1]) is not None
            and re.match(r"\w", line) is not None
        )
        pieces.append(line if cut_inside_word or index == 0 else " " + line)
    spaced = re.sub(r"\s+", " ", "".join(pieces)).strip()
    glued = "".join(lines)
    return NormalizedText(spaced, glued)


@functools.lru_cache(maxsize=None)
def _patterns(rule: TextRule) -> tuple[re.Pattern, re.Pattern]:
    """The rule's pattern, and the same with optional spaces (for text whose words the terminal glued
    when it wrapped); compiled the first time an anchor of the rule is seen."""
    return re.compile(rule.pattern, rule.flags), re.compile(rule.pattern.replace(r"\s+", r"\s*"), rule.flags)


def _compiled() -> tuple[tuple[TextRule, re.Pattern, re.Pattern], ...]:
    return tuple((rule, *_patterns(rule)) for rule in RULES)


@dataclass(frozen=True)
class Anchors:
    """The words text rules look for, as plain substrings, found with ``str.find``: substring
    scans run at memory speed where a regular expression of alternatives does not, and no word
    contains another, so none is scanned for twice. A long text of repeated lines is first read
    once per distinct line, with every digit no word holds read as 0 (a log's numbered chatter
    folds to a few templates); that can only add a false hit, which the unfolded text then lacks."""

    words: tuple[str, ...]

    def __post_init__(self):
        if any("\n" in word for word in self.words):
            raise ValueError("an anchor word spans lines: logs are searched line by line")

    def within(self, text: str) -> Anchors | None:
        """The words ``text`` holds; None when it holds none."""
        folded = _folded(text, self._digits_as_zero)
        found = tuple(word for word in self.words if word in folded)
        return Anchors(found) if found else None

    def segments_holding(self, text: str, starts: list[int]) -> set[int]:
        """Which segments of ``text`` hold a word, segment i starting at ``starts[i]`` (in order,
        the first at 0): a word found, the search goes on from the next segment, so the work is
        one scan per word and one step per segment that holds it."""
        holding = set()
        for word in self.words:
            at = text.find(word)
            while at >= 0:
                segment = bisect.bisect_right(starts, at) - 1
                holding.add(segment)
                at = text.find(word, starts[segment + 1]) if segment + 1 < len(starts) else -1
        return holding

    @functools.cached_property
    def _digits_as_zero(self) -> dict[int, int]:
        held = {char for word in self.words for char in word}
        return str.maketrans({digit: "0" for digit in "123456789" if digit not in held})


def _folded(text: str, table: dict[int, int]) -> str:
    """A long text whose start repeats a few line templates, as its distinct lines translated by
    ``table``; any other text as it is (folding distinct lines would only add to the search)."""
    if len(text) <= FOLD_ABOVE:
        return text
    sample = text[:FOLD_ABOVE].translate(table).split("\n")
    if len(set(sample)) * 2 > len(sample):
        return text
    return "\n".join(set(text.translate(table).split("\n")))


@functools.lru_cache(maxsize=1)
def interesting() -> Anchors:
    """Any word a text rule (or the HLO check) looks for: the lines of a long log worth keeping."""
    words = {anchor for rule in RULES for anchor in rule.anchors} | set(HLO_WORDS)
    return Anchors(tuple(sorted(w for w in words if not any(o != w and o in w for o in words))))


def cap_lines(text: str, limit: int = MAX_LINE) -> str:
    """Lines longer than ``limit`` cut to it: no rule ever sees a megabyte-long token."""
    if len(text) <= limit or all(len(line) <= limit for line in text.split("\n")):
        return text
    return "\n".join(line[:limit] for line in text.split("\n"))


def _fill(template: str | None, groups: dict[str, str]) -> str | None:
    """The template with the match's groups, or None when it names a group that did not match."""
    if not template:
        return None
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    if any(not groups.get(name) for name in names):
        return None
    return template.format(**groups)


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_EXCERPT else text[: MAX_EXCERPT - 3] + "..."


def _evidence(match_text: str, groups: dict[str, str], how_to_tell: str | None) -> str:
    lines = [f"`{_excerpt(match_text)}`"]
    if groups.get("target"):
        where = f" (platform {groups['platform']})" if groups.get("platform") else ""
        lines.append(f"target: `{groups['target']}`{where}")
    if how_to_tell:
        lines.append(how_to_tell)
    return "\n".join(lines)


def _findings_for(rule: TextRule, match: re.Match) -> list[Finding]:
    groups = {k: (v or "").strip() for k, v in match.groupdict().items()}
    if "header" in groups:  # include-missing: one name for the header whichever compiler's words matched
        groups["header"] = groups["header"] or groups.get("clang") or groups.get("edg") or ""
    findings = []
    for cause in rule.causes:
        if not cause.applies(groups):
            continue
        findings.append(
            make(
                cause.code,
                _evidence(match.group(0), groups, _fill(cause.how_to_tell, groups) or None),
                title=_fill(cause.title, groups),
                fix=_fill(cause.fix, groups),
                likelihood=cause.likelihood,
                severity=cause.severity,
            )
        )
    return findings


def diagnose_text(text: str, hlo: bool = True) -> list[Finding]:
    """Every finding the text rules draw from ``text``; with ``hlo``, also the HLO checks (a folded op,
    gathered inputs, large constants)."""
    text = cap_lines(text)
    normalized = normalize(text)
    findings: list[Finding] = []
    for rule in RULES:
        if not any(anchor in normalized.glued or anchor in normalized.spaced for anchor in rule.anchors):
            continue
        spaced, glued = _patterns(rule)
        matches = list(itertools.islice(spaced.finditer(normalized.spaced), rule.max_matches))
        if not matches:
            matches = list(itertools.islice(glued.finditer(normalized.glued), rule.max_matches))
        for match in matches:
            findings.extend(_findings_for(rule, match))
    if hlo:
        findings.extend(diagnose_hlo(text))
        findings.extend(hlo_sharding.diagnose(text))
        findings.extend(hlo_constants.diagnose(text))
    return findings


def rule_codes() -> set[str]:
    """Every code a text rule can produce (for the catalogue test)."""
    codes = {cause.code for rule in RULES for cause in rule.causes}
    codes |= {"op-optimized-away", "custom-call-replicated", "closed-over-array"}
    for code in codes:
        entry(code)  # raises on a code missing from the catalogue
    return codes
