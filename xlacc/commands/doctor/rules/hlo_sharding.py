"""Compiled HLO in which a custom call is fed by all-gathers: XLA could not split the call over the
devices, so it gathered every input onto each of them and runs the kernel on the whole array.

Read from an HLO file, the modules of an ``--xla_dump_to`` folder, or the dump of a command that
doctor runs with ``--xla_dump_to`` added to ``XLA_FLAGS``.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import hlo

# Instructions that pass a buffer through unchanged in content: the gather behind them still feeds the call.
PASS_THROUGH = frozenset({"copy", "bitcast", "reshape", "transpose", "get-tuple-element", "all-gather-done", "async-done", "copy-done"})
GATHERS = frozenset({"all-gather", "all-gather-start"})
MAX_HOPS = 6
# Custom calls that belong to XLA itself (library calls, SPMD and layout markers), never a user's kernel.
INTERNAL_TARGET = re.compile(r"^(__|Sharding$|SPMD|CustomSPMDPartitioning$|LayoutConstraint$|MoveTo|xla\.|annotate_device_placement$)")
LINE_NAME = re.compile(r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=")
# The files of an --xla_dump_to folder that hold the compiled program, one per module.
DUMP_MODULES = ("*after_optimizations.txt",)
DUMP_FLAGS = "--xla_dump_to={dir} --xla_dump_hlo_as_text"
DUMP_TO = re.compile(r"--xla_dump_to=(?P<dir>\S+)")


def diagnose(text: str, where: str | None = None) -> list[Finding]:
    """custom-call-replicated for each custom call (of a user's target) an all-gather feeds."""
    instructions = hlo.hlo_instructions(text)
    if not instructions:
        return []
    lines = _lines_by_name(text)
    findings = []
    for call in hlo.hlo_custom_calls(text):
        if not call.target or INTERNAL_TARGET.match(call.target):
            continue
        gathered = [g for g in (_gather_behind(name, instructions, lines) for name in call.operands) if g is not None]
        if gathered:
            findings.append(_finding(call, gathered, where))
    return findings


def _lines_by_name(text: str) -> dict[str, str]:
    lines = {}
    for line in text.splitlines():
        match = LINE_NAME.match(line)
        if match:
            lines[match["name"]] = line.strip()
    return lines


def _gather_behind(name: str, instructions: dict, lines: dict[str, str]) -> str | None:
    """The all-gather's line if ``name`` is one, or passes one through; else None."""
    for _ in range(MAX_HOPS):
        instruction = instructions.get(name)
        if instruction is None:
            return None
        if instruction.opcode in GATHERS or (instruction.opcode == "async-start" and "all-gather" in lines.get(name, "")):
            return lines.get(name, name)
        if instruction.opcode not in PASS_THROUGH or not instruction.operands:
            return None
        name = instruction.operands[0]
    return None


def _finding(call: hlo.CustomCall, gathered: list[str], where: str | None) -> Finding:
    prefix = f"{where}: " if where else ""
    shown = "\n".join(f"  {_short(line)}" for line in gathered[:3])
    evidence = (
        f"{prefix}{len(gathered)} of the {len(call.operands)} operands of custom_call_target=\"{call.target}\" "
        f"come from an all-gather:\n{shown}\n  {_short(call.line)}"
    )
    return make("custom-call-replicated", evidence, title=f"`{call.target}` runs on gathered, unsplit inputs", likelihood=0.85)


def _short(line: str, limit: int = 220) -> str:
    line = re.sub(r",\s*metadata=\{[^}]*\}", "", line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- where compiled HLO comes from --------------------------------------------------------------


def dump_modules(directory: Path) -> list[Path]:
    """The compiled modules of an ``--xla_dump_to`` folder (empty when it is not one)."""
    return sorted(path for pattern in DUMP_MODULES for path in Path(directory).glob(pattern) if path.is_file())


def is_dump(directory: Path) -> bool:
    return bool(dump_modules(directory))


def dump_environment() -> tuple[dict[str, str], Path, tempfile.TemporaryDirectory | contextlib.nullcontext]:
    """The environment for a command whose compiled HLO doctor reads, and the folder XLA dumps it
    to: the command's own --xla_dump_to, else a temporary folder added to XLA_FLAGS (the context
    manager removes it)."""
    flags = os.environ.get("XLA_FLAGS", "")
    own = DUMP_TO.search(flags)
    if own:
        return dict(os.environ), Path(own["dir"]), contextlib.nullcontext()
    folder = tempfile.TemporaryDirectory(prefix="xlacc-dump-")
    added = " ".join(part for part in (flags, DUMP_FLAGS.format(dir=folder.name)) if part)
    return {**os.environ, "XLA_FLAGS": added}, Path(folder.name), folder
