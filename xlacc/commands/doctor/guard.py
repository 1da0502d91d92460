"""A rule that raises is a finding of its own: doctor names the rule and the error's last line, asks
for a report, and runs the other rules. A bug in one rule must not hide what the others found."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TypeVar

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding

T = TypeVar("T")


def rule_crashed(rule: Callable, error: BaseException) -> Finding:
    """The finding for ``rule`` raising ``error``: its module and name, and the exception's last line."""
    name = f"{rule.__module__.rsplit('.', 1)[-1]}.{getattr(rule, '__qualname__', rule)}"
    last_line = traceback.format_exception_only(type(error), error)[-1].strip()
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" at {where.filename.rsplit('/xlacc/', 1)[-1]}:{where.lineno}" if where else ""
    return make("rule-crashed", f"doctor's rule {name} raised {last_line}{at}")


def run_rule(rule: Callable[..., T], *args, empty: T, crashes: list[Finding], **kwargs) -> T:
    """``rule(*args, **kwargs)``; where it raises, ``empty`` and a ``rule-crashed`` finding in ``crashes``."""
    try:
        return rule(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - any bug of a rule becomes a finding; the others still run
        crashes.append(rule_crashed(rule, error))
        return empty
