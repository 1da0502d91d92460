"""How a run ended, and what it showed: a signal, the steps that passed before it, and the ranking
of what the output says against what the program's code says."""

from __future__ import annotations

import dataclasses
import re

from xlacc.commands.doctor.rules.crash import crash_finding, crash_fix, signal_name
from xlacc.commands.doctor.rules.error_text import diagnose_text
from xlacc.ground.report import Finding

__all__ = ["crash_finding", "diagnose_output", "rank_with_code", "signal_name"]

# Codes from the program's source that explain a crash or a failed run when the run shows no text of its own.
EXPLAINS_A_CRASH = frozenset({"api-version-mismatch", "hardcoded-size", "buffer-order", "operand-mismatch", "result-mismatch",
                              "backend-config-invalid", "opaque-size-mismatch", "exception-escapes", "stream-ignored"})
EXPLAINS_WRONG_RESULTS = frozenset({"hardcoded-size", "buffer-order", "operand-mismatch", "opaque-size-mismatch",
                                    "stream-ignored", "op-optimized-away", "api-version-mismatch", "unchecked-launch"})
# Text rules that list several causes of one message; the program tells which one it is.
AMBIGUOUS_CODES = frozenset({"target-not-registered", "api-version-mismatch", "platform-name", "ld-preload", "ffi-api-skew",
                             "symbol-missing", "symbol-mangled", "symbol-hidden", "operand-mismatch", "result-mismatch",
                             "backend-config-invalid", "library-not-found", "dependency-missing"})
CONFIRMED = 0.97
MATCHED = 0.985  # a code finding of the very code the output shows
# Among several source defects that could explain a run, the more specific first: a registration
# that crashes at once, then mix-ups of operands, then sizes (a crash needs the wrong size to matter).
CRASH_ORDER = {"api-version-mismatch": 0.0, "buffer-order": 0.01, "operand-mismatch": 0.015, "opaque-size-mismatch": 0.015,
               "hardcoded-size": 0.02, "stream-ignored": 0.03}
# Wrong results: a size or a mix-up of operands computes them; a mismatched api_version more often crashes.
WRONG_RESULTS_ORDER = {"hardcoded-size": 0.0, "buffer-order": 0.01, "operand-mismatch": 0.015, "opaque-size-mismatch": 0.015,
                       "stream-ignored": 0.02, "op-optimized-away": 0.02, "api-version-mismatch": 0.03}
DEMOTED = 0.5  # factor on a text guess the program's code does not support
ALSO = 0.3  # likelihood of a code finding that does not explain what the run printed: it follows as "also in the code"
# XLA found no target of that name on that platform: a registration that missed (its name, platform,
# registry or library) explains it; a function called with the wrong arguments does not.
LOOKUP_FAILED = re.compile(r"No\s+registered\s+implementation|No\s+FFI\s+handler\s+registered")
LOOKUP_CAUSES = frozenset({"target-not-registered", "platform-name", "ld-preload", "ffi-api-skew", "symbol-missing",
                           "symbol-hidden", "symbol-mangled"})


def diagnose_output(text: str, returncode: int | None = None, passed: list[str] | None = None, during: str | None = None) -> list[Finding]:
    """Text rules over a process's output, plus kernel-crash when it died from a signal; ``passed``
    (the steps that passed) and ``during`` (the step it died in) rank the causes of a crash."""
    findings = diagnose_text(text)
    if passed is not None or during is not None:
        findings = [
            dataclasses.replace(f, fix=crash_fix(passed, during)) if f.code == "kernel-crash" else f for f in findings
        ]
    crash = crash_finding(returncode, passed, during)
    if crash is not None:
        findings.append(crash)
    return findings


def rank_with_code(run: list[Finding], code: list[Finding], returncode: int | None) -> list[Finding]:
    """What a run showed, ranked with what its program's code says.

    A code finding whose cause explains the error the output shows (the same code, and for a failed
    lookup a registration that missed, not a call with the wrong arguments) confirms it and goes
    first, with the place to fix; the output's other guesses for that message drop below it, and the
    code's other findings follow as "also in the code". When the output names no error (a crash,
    wrong results, an exit 1 without a known message), a source defect that explains such an end
    goes first instead, the most specific first."""
    failed = returncode is None or returncode != 0
    crashed = signal_name(returncode) is not None
    shown = [f for f in run if f.code != "kernel-crash" and f.severity == "error"]
    run_codes = {f.code for f in shown}
    explaining = EXPLAINS_A_CRASH if crashed else EXPLAINS_WRONG_RESULTS
    confirmed: list[Finding] = []
    also: list[Finding] = []
    for finding in code:
        if finding.severity == "info":
            continue
        if finding.severity == "error" and any(_explains(finding, message) for message in shown):
            likelihood = MATCHED + finding.likelihood / 100
        elif finding.severity == "error" and failed and not run_codes and finding.code in explaining:
            order = (CRASH_ORDER if crashed else WRONG_RESULTS_ORDER).get(finding.code, 0.04)
            likelihood = CONFIRMED - order + finding.likelihood / 100
        else:
            also.append(finding)
            continue
        confirmed.append(dataclasses.replace(
            finding, likelihood=likelihood, evidence=f"{finding.evidence}\n(the run {_how(returncode)}; the code says why)"
        ))
    confirmed_codes = {f.code for f in confirmed if f.likelihood > CONFIRMED - 0.05}
    if confirmed_codes and run_codes:
        also = [dataclasses.replace(f, likelihood=min(f.likelihood, ALSO), evidence=f"also in the code: {f.evidence}") for f in also]
    ranked = []
    for finding in run:
        if confirmed_codes and finding.code in AMBIGUOUS_CODES and finding.code not in confirmed_codes:
            finding = dataclasses.replace(finding, likelihood=finding.likelihood * DEMOTED)
        elif confirmed_codes and finding.code == "kernel-crash":
            explained = ", ".join(sorted(confirmed_codes))
            finding = dataclasses.replace(finding, likelihood=finding.likelihood * DEMOTED, fix=f"The code explains it: {explained} (above).")
        elif finding.code in confirmed_codes:
            continue  # the code's finding says the same, with the place to fix
        ranked.append(finding)
    return confirmed + ranked + also


def _explains(finding: Finding, message: Finding) -> bool:
    """Does a finding of the code explain an error message the run printed?"""
    if LOOKUP_FAILED.search(message.evidence):
        if finding.code == "api-version-mismatch":
            # the one kind that makes a lookup miss: registered in one registry, looked up in the other
            # (registration's call_mismatches names the registry a call searches in those reasons, and only there)
            return " registry" in finding.evidence
        return finding.code in LOOKUP_CAUSES
    return finding.code == message.code


def _how(returncode: int | None) -> str:
    name = signal_name(returncode)
    if returncode is None:
        return "timed out"
    if name:
        return f"was killed by {name}"
    return f"exited {returncode}"
