"""The catalogue of every finding code xlacc gives: what each means, why it happens, how to fix it,
and which rule module detects it.

It is the only source of codes and texts, for doctor's rules and for the other commands (build's
compiler messages, run-smoke's harnesses). Rules never write these texts themselves: they call
:func:`make` with a code and the evidence they saw, and may override the title or fix with
something more specific. Each entry names its ``home``, the one module that makes its findings:
build and run-smoke's harnesses hand that module what they saw, and a harness passes its
``context`` so that the finding takes its words from :data:`WORDINGS`. docs/doctor.md and the README's table are generated from this package
(``python tools/doctor_docs.py``), and a test keeps them equal. One module per group holds its
entries.
"""

from __future__ import annotations

from xlacc.ground.catalogue import build, environment, library, project, registration, runtime, source, transforms
from xlacc.ground.catalogue.entry import DEFAULT_LIKELIHOOD, GROUPS, CatalogueEntry
from xlacc.ground.catalogue.wordings import WORDINGS, Wording
from xlacc.ground.report import Finding, Severity

CATALOGUE: tuple[CatalogueEntry, ...] = (
    *environment.ENTRIES,
    *build.ENTRIES,
    *registration.ENTRIES,
    *library.ENTRIES,
    *source.ENTRIES,
    *runtime.ENTRIES,
    *project.ENTRIES,
    *transforms.ENTRIES,
)
BY_CODE: dict[str, CatalogueEntry] = {entry.code: entry for entry in CATALOGUE}
CODES: tuple[str, ...] = tuple(BY_CODE)

__all__ = ["BY_CODE", "CATALOGUE", "CODES", "GROUPS", "WORDINGS", "CatalogueEntry", "Wording", "entry", "make", "wordings"]


def wordings(context: str) -> dict[str, tuple[str, str, str]]:
    """``{code: (severity, title, fix)}`` for a harness: its words, the catalogue's severity."""
    return {
        code: (wording.severity or entry(code).severity, wording.title, wording.fix)
        for code, wording in WORDINGS[context].items()
    }


def entry(code: str) -> CatalogueEntry:
    try:
        return BY_CODE[code]
    except KeyError:
        raise ValueError(f"unknown finding code {code!r}") from None


def make(
    code: str,
    evidence: str,
    *,
    title: str | None = None,
    fix: str | None = None,
    likelihood: float | None = None,
    severity: Severity | None = None,
    context: str | None = None,
) -> Finding:
    """A Finding for ``code`` with the catalogue's title, fix and severity unless overridden; with a
    ``context`` (a key of :data:`WORDINGS`, as ``"run-smoke jax"``), in that command's words."""
    known = entry(code)
    if context is not None:
        worded = WORDINGS[context][code]
        title, fix, severity = title or worded.title, fix or worded.fix, severity or worded.severity
    return Finding(
        code=code,
        severity=severity or known.severity,
        title=title or known.title,
        evidence=evidence,
        fix=fix or known.fix,
        likelihood=DEFAULT_LIKELIHOOD if likelihood is None else likelihood,
    )
