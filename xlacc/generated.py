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
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from xlacc import __version__
from xlacc import spec as specmod
from xlacc.errors import UsageError

BASE_DIR = ".xlacc/base"
BACKUP_DIR = ".xlacc/backup"
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
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return ""  # not text xlacc wrote: treated as the user's


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
    plan = Plan(backup_dir=f"{BACKUP_DIR}/{time.strftime('%Y%m%dT%H%M%S')}")
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


def apply(directory: Path, plan: Plan) -> None:
    """Back up, then write everything, all or nothing."""
    writes = {f"{plan.backup_dir}/{path}": text for path, text in plan.backups.items()}
    writes.update(plan.writes)
    write_all(directory, writes)


# -- writing ------------------------------------------------------------------------------------


def check_writable(directory: Path, relative: str) -> Path:
    """The path xlacc may write: inside the project, not a directory, not reached through a link."""
    target = directory / relative
    root = directory.resolve()
    if not target.resolve().is_relative_to(root) or ".." in Path(relative).parts:
        raise UsageError(f"{target} is outside the project {directory}; nothing was written")
    for parent in [target, *target.parents]:
        if parent == directory or not parent.is_relative_to(directory):
            break
        if parent.is_symlink():
            raise UsageError(f"{parent} is a symbolic link; xlacc writes no file through one; nothing was written")
    if target.is_dir():
        raise UsageError(f"{target} is a directory where xlacc writes a file; nothing was written")
    return target


def write_all(directory: Path, files: dict[str, str]) -> None:
    """Write every file or none: each goes to a temporary file beside it, and only when all are
    written are they renamed into place. New files get the mode the umask allows; a file that
    already holds its text is left alone."""
    pending: list[tuple[Path, Path]] = []
    try:
        for relative, text in files.items():
            if read_text(directory / relative) == text:
                continue
            target = check_writable(directory, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            pending.append((Path(temporary), target))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.chmod(temporary, _mode_for(target))
        for temporary, target in pending:
            os.replace(temporary, target)
        pending.clear()
    except OSError as exc:
        raise UsageError(f"cannot write in {directory}: {exc.strerror or exc}; nothing was written") from None
    finally:
        for temporary, _ in pending:
            temporary.unlink(missing_ok=True)


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
