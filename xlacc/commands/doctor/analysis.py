"""The source rules over a program: findings per file (group), the checks across files, and a
one-line summary of what each file holds."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlacc.commands.doctor.guard import run_rule
from xlacc.commands.doctor.inputs import SourceFile
from xlacc.commands.doctor.program import Program
from xlacc.commands.doctor.rules import crossfile, kernel, python
from xlacc.ground.report import Finding

HIDDEN_VISIBILITY_FLAG = re.compile(r"-fvisibility=hidden")
# Python that registers or calls a custom call: a syntax error there hides what the rules would say.
XLA_PYTHON = re.compile(r"\bffi_call\b|register_ffi_target|custom_call|xla_client|_XLAC|jax\.extend")
PLURALS = {"launch": "launches"}


@dataclass
class SourceReport:
    """Findings per group (file), the cross-file findings, and a one-line summary per group."""

    by_group: dict[str, list[Finding]]
    summaries: dict[str, str]
    cross: list[Finding]
    program: Program
    unreadable: set[str]  # Python files about custom calls that do not parse: their facts are missing
    crashes: list[Finding]  # rule-crashed: a rule that raised, while the others ran


def _summary(parts: dict[str, int]) -> str:
    return ", ".join(f"{n} {what if n == 1 else PLURALS.get(what, what + 's')}" for what, n in parts.items() if n)


def analyze(files: list[SourceFile]) -> SourceReport:
    program = Program(files)
    by_group: dict[str, list[Finding]] = {f.group: [] for f in files}
    counts: dict[str, dict[str, int]] = {f.group: {} for f in files}

    def count(group: str, what: str, n: int) -> None:
        counts[group][what] = counts[group].get(what, 0) + n

    hidden_build = next((f.group for f in files if f.kind == "sh" and HIDDEN_VISIBILITY_FLAG.search(f.text)), None)
    looked_up = {symbol for facts in program.facts for symbol in facts.symbol_refs}
    looked_up |= {symbol for facts in program.facts for reg in facts.registrations for symbol in reg.symbols}
    crashes: list[Finding] = []
    for group, findings in run_rule(kernel.kernel_findings, program, looked_up, hidden_build, empty={}, crashes=crashes).items():
        by_group[group].extend(findings)
    for source in program.sources:
        count(source.name, "entry point", sum(1 for e in program.entries if e.origin is source))
        count(source.name, "launch", sum(len(f.launches) for f in source.functions))
    python_texts = {f.group: f.text for f in files if f.kind == "py"}
    unreadable = set()
    for facts in program.facts:
        by_group[facts.name].extend(run_rule(python.python_findings, facts, empty=[], crashes=crashes))
        count(facts.name, "registration", len(facts.registrations))
        count(facts.name, "custom call", len(facts.calls))
        if facts.syntax_error:
            count(facts.name, f"unparsed Python block ({facts.syntax_error})", 1)
            if XLA_PYTHON.search(python_texts.get(facts.name, "")):
                unreadable.add(facts.name)
    for file in files:
        if file.kind in ("py", "sh"):
            by_group[file.group].extend(run_rule(python.ld_preload_findings, file, empty=[], crashes=crashes))
    cross = run_rule(crossfile.cross_findings, program, empty=[], crashes=crashes)
    return SourceReport(by_group, {g: _summary(c) for g, c in counts.items()}, cross, program, unreadable, crashes)
