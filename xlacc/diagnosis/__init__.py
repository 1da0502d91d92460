"""``xlacc doctor``: what is wrong with a custom call, why, and how to fix it.

    inputs.py      what to read: file kinds, folder walks, notes, notebooks, bounded logs
    program.py     the parsed program: kernels, entry points, the Python that registers and calls them
    analysis.py    the source rules run over a program, findings per file
    command.py     `doctor -- COMMAND`: run it, read what it runs, rank what it showed
    rules/         one module per subject: text, hlo, kernel, python, crossfile, library, environment, runtime
    findings.py    the catalogue: every code, title and fix
    engine.py      what to examine for a request, and the report

:func:`diagnose_output` is the entry point for other commands (run-smoke diagnoses a child's
output with it); importing this package loads nothing else until it is called.
"""

from __future__ import annotations

__all__ = ["diagnose_output"]


def diagnose_output(*args, **kwargs):
    from xlacc.diagnosis.rules.runtime import diagnose_output as diagnose

    return diagnose(*args, **kwargs)
