"""What xlacc generated in a project, so that no run of xlacc loses what the user wrote.

Two records, written whenever xlacc writes a project's files:
- the ``[generated]`` table at the end of ``xlacc.toml``: the xlacc version, the template, a digest
  of the signature, and a digest of each file's text as written (an edited file no longer matches);
- ``.xlacc/base/``: each file's text as written, the common ancestor ``xlacc update`` merges from.

A file xlacc would replace that the user has edited is backed up under ``.xlacc/backup/`` first
(``new --force``), or merged (``update``).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from xlacc import __version__
from xlacc import spec as specmod
from xlacc.errors import UsageError

BASE_DIR = ".xlacc/base"
BACKUP_DIR = ".xlacc/backup"
MAX_PROJECT_FILE_BYTES = 64_000_000  # a project file compared with xlacc's text
RECORD_HEADER = (
    "# Written by xlacc: what it generated, so that `xlacc update` can tell your edits from its own.\n"
    "# Keep this table and the .xlacc/ folder (commit both).\n"
)
RECORD_START = re.compile(r"^(# Written by xlacc: what it generated.*\n)?(# Keep this table.*\n)?\[generated\]\s*$", re.MULTILINE)


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def without_record(spec_text: str) -> str:
    """``xlacc.toml`` without its ``[generated]`` tables (the last thing in the file)."""
    match = RECORD_START.search(spec_text)
    return spec_text if match is None else spec_text[: match.start()].rstrip("\n") + "\n"


def file_digest(path: str, text: str) -> str:
    return digest(without_record(text) if path == specmod.SPEC_FILE else text)


def with_record(spec_text: str, spec: specmod.Spec, files: dict[str, str]) -> str:
    """``spec_text`` ending in a ``[generated]`` table that records xlacc's text of ``files``."""
    lines = [
        RECORD_HEADER + "[generated]",
        f'xlacc = "{__version__}"',
        f'template = "{spec.template}"',
        f'signature = "{spec.signature_digest}"',
        "",
        "[generated.files]",
    ]
    for path in sorted(files):
        lines.append(f'"{path}" = "{file_digest(path, files[path])}"')
    return without_record(spec_text).rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"


def recorded_files(directory: Path) -> dict[str, str]:
    """The digests an existing project's ``xlacc.toml`` records (empty if none can be read)."""
    try:
        return dict(specmod.load(directory).generated.files)
    except (UsageError, AttributeError):
        return {}


def read_text(path: Path) -> str | None:
    from xlacc import paths

    try:
        return paths.read_user_file(path, MAX_PROJECT_FILE_BYTES).decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return ""  # not text xlacc wrote: treated as the user's


CONFLICT_MARKER = re.compile(r"^<<<<<<< yours$", re.MULTILINE)  # what `xlacc update` leaves where a merge conflicts


def conflict_markers(spec: specmod.Spec) -> list[str]:
    """``path:line`` of the first conflict marker `xlacc update` left in each file it tracks."""
    found = []
    for path in sorted(spec.generated.files) if spec.generated else []:
        try:
            text = read_text(spec.root / path) or ""
        except UsageError:  # no longer a regular file, or too large: not one xlacc wrote
            continue
        marker = CONFLICT_MARKER.search(text)
        if marker:
            found.append(f"{path}:{text.count(chr(10), 0, marker.start()) + 1}")
    return found


# -- new: what to write, and what to keep -------------------------------------------------------


@dataclass(frozen=True)
class Action:
    kind: str  # "new", "unchanged", "replace" (xlacc's own text), "backup" (the user's text is kept first)

    def suffix(self, dry_run: bool) -> str:
        return {
            "new": "",
            "unchanged": " (unchanged)",
            "replace": " (replaced xlacc's earlier version)",
            "backup": " (your version would be backed up)" if dry_run else " (your version was backed up)",
        }[self.kind]


@dataclass
class Plan:
    writes: dict[str, str] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    backups: dict[str, str] = field(default_factory=dict)  # project path -> text kept
    backup_dir: str = ""

    def backups_json(self) -> dict[str, str]:
        return {path: f"{self.backup_dir}/{path}" for path in self.backups}


def plan_new(directory: Path, files: dict[str, str], force: bool) -> Plan:
    """Decide, before writing anything, what ``xlacc new`` writes and which of the user's texts it
    must back up. Refuses a non-empty directory without ``force``."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory; nothing was written")
    if not force and directory.is_dir() and any(directory.iterdir()):
        raise UsageError(
            f"{directory} is not empty; nothing was written (use --force to regenerate xlacc's files there: edited files are backed up first)"
        )
    recorded = recorded_files(directory)
    plan = Plan(backup_dir=_new_backup_dir(directory))
    for path, text in files.items():
        check_writable(directory, path)
        current = read_text(directory / path)
        if current is None:
            kind = "new"
        elif current == text:
            kind = "unchanged"
        elif recorded.get(path) == file_digest(path, current):
            kind = "replace"
        else:
            kind = "backup"
            plan.backups[path] = current
        plan.actions[path] = Action(kind)
        plan.writes[path] = text
    for path, text in files.items():
        plan.writes[f"{BASE_DIR}/{path}"] = without_record(text) if path == specmod.SPEC_FILE else text
    return plan


def _new_backup_dir(directory: Path) -> str:
    """A folder no earlier run used: two runs within one second must not share one."""
    stamp = f"{BACKUP_DIR}/{time.strftime('%Y%m%dT%H%M%S')}"
    candidates = (stamp if n == 1 else f"{stamp}-{n}" for n in itertools.count(1))
    return next(c for c in candidates if not (directory / c).exists())


def apply(directory: Path, plan: Plan) -> None:
    """Back up, then write everything, all or nothing."""
    writes = {f"{plan.backup_dir}/{path}": text for path, text in plan.backups.items()}
    writes.update(plan.writes)
    write_all(directory, writes)


# -- writing ------------------------------------------------------------------------------------


def check_writable(directory: Path, relative: str) -> Path:
    """Where xlacc may write ``relative``: inside the project, not a directory (xlacc.paths)."""
    from xlacc import paths

    return paths.target_path(directory, relative)


def write_all(directory: Path, files: dict[str, str]) -> None:
    """All or nothing (xlacc.paths.write_all); a file that already holds its text is left alone."""
    from xlacc import paths

    changed = {relative: text for relative, text in files.items() if read_text(directory / relative) != text}
    if changed:
        paths.write_all(directory, changed)
