"""The channel from a harness (child process) to xlacc: one JSON object per line in a file.

A file, not stdout: stray prints and XLA's logging can never corrupt it. Each record is written
and flushed on its own, so everything recorded before a crash survives it.

Record types:
  {"type": "step", "name": ...}                                   a step starts (tells where a crash happened)
  {"type": "check", "name", "ok" (true|false|null), "detail"}     one result line
  {"type": "finding", "code", "severity", "title", "evidence", "fix"}
  {"type": "data", "key", "value"}                                 numbers for Report.data (seed, sizes, bench)
  {"type": "exit", "code", "reason"}                              the harness finished on its own
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RecordWriter:
    """Appends records to ``path``; every call reaches the OS before it returns."""

    def __init__(self, path: str | Path):
        self._file = open(path, "a", encoding="utf-8")

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()

    def step(self, name: str) -> None:
        self._write({"type": "step", "name": name})

    def check(self, name: str, ok: bool | None, detail: str = "") -> bool | None:
        self._write({"type": "check", "name": name, "ok": ok, "detail": detail})
        return ok

    def finding(self, code: str, severity: str, title: str, evidence: str, fix: str) -> None:
        self._write(
            {"type": "finding", "code": code, "severity": severity, "title": title, "evidence": evidence, "fix": fix}
        )

    def data(self, key: str, value: Any) -> None:
        self._write({"type": "data", "key": key, "value": value})

    def exit(self, code: int, reason: str = "") -> None:
        self._write({"type": "exit", "code": code, "reason": reason})

    def close(self) -> None:
        self._file.close()


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record in ``path``; a line cut short by a crash is dropped."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "type" in record:
            records.append(record)
    return records
