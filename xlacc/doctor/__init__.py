"""``xlacc doctor``: what is wrong with a custom call, why, and how to fix it.

:func:`diagnose_output` is the entry point for other commands (run-smoke diagnoses a child's
output with it); it imports only the text rules, never jax, torch or the ELF reader.
"""

from __future__ import annotations

from xlacc.doctor.rules.runtime import diagnose_output

__all__ = ["diagnose_output"]
