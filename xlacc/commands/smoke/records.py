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

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FOLLOW_SECONDS = 0.1  # how often a followed records file is read for new records


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
    return _parsed(text.splitlines())


def _parsed(lines: list[str]) -> list[dict[str, Any]]:
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "type" in record:
            records.append(record)
    return records


@contextlib.contextmanager
def followed(path: str | Path, on_record: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """Call ``on_record`` with each record the child appends to ``path`` while the block runs,
    in order, from a thread (and for the last ones as the block ends)."""
    stop = threading.Event()
    offset = 0  # bytes of whole lines read so far: only complete records are passed on

    def read_new() -> None:
        nonlocal offset
        try:
            with open(path, "rb") as stream:
                stream.seek(offset)
                chunk = stream.read()
        except OSError:
            return
        whole = chunk[: chunk.rfind(b"\n") + 1]
        offset += len(whole)
        for record in _parsed(whole.decode("utf-8", errors="replace").splitlines()):
            on_record(record)

    def follow() -> None:
        while not stop.wait(FOLLOW_SECONDS):
            read_new()

    thread = threading.Thread(target=follow, name="xlacc-records", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        read_new()
