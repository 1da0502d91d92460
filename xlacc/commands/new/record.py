"""What xlacc generated in a project, so that no run of xlacc loses what the user wrote.

Two records, both xlacc's, under ``.xlacc/`` (as copier keeps its answers apart from the user's
files), written whenever xlacc writes a project's files:
- ``.xlacc/record.toml``: the xlacc version, the template, a digest of the signature, and a digest
  of each file's text as written (an edited file no longer matches);
- ``.xlacc/base/``: each file's text as written, the common ancestor ``xlacc update`` merges from.

xlacc.toml holds only the user's choices. Before the record moved, it was a ``[generated]`` table
at the end of xlacc.toml (``LEGACY_HEADER``); :func:`without_record` cuts that table out, and the
digest of xlacc.toml is taken without it, so a record of either layout matches the same text.

A file xlacc would replace that the user has edited is backed up under ``.xlacc/backup/`` first,
byte for byte (``new --force``), or merged (``update``). A file that is not UTF-8 is never xlacc's,
and is never read as text that lost its bytes (``NotText``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from xlacc import spec as specmod
from xlacc.ground import paths
from xlacc.ground.catalogue import make
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Finding
from xlacc.ground.version import __version__
from xlacc.spec.reading import tomllib

BASE_DIR = specmod.BASE_DIR
BACKUP_DIR = f"{specmod.RECORD_DIR}/backup"
MAX_PROJECT_FILE_BYTES = 64_000_000  # a project file compared with xlacc's text
RECORD_FILE = specmod.RECORD_FILE
RECORD_HEADER = (
    "# Written by xlacc: what it generated, so that `xlacc update` can tell your edits from its own.\n"
    "# Keep the .xlacc/ folder (commit it); xlacc rewrites this file.\n"
)
LEGACY_HEADER = (  # the lines xlacc wrote above xlacc.toml's [generated] table
    "# Written by xlacc: what it generated, so that `xlacc update` can tell your edits from its own.\n"
    "# Keep this table and the .xlacc/ folder (commit both).\n"
)
RECORD_HEADER_LINES = frozenset(LEGACY_HEADER.splitlines())
# A table's header line: [a.b] or [[a.b]], spaces and a comment allowed, keys bare or quoted.
TABLE_HEADER = re.compile(r"^[ \t]*\[\[?(?P<key>[^\]\n]*)\]\]?[ \t]*(?:#.*)?$")


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def without_record(spec_text: str) -> str:
    """``xlacc.toml`` without its ``[generated]`` tables, wherever they are: every other table is
    the user's and stays. Checked by parsing both texts; where they differ by more than the record
    (a header-like line inside a multi-line string), a UsageError, and nothing is lost."""
    kept: list[str] = []
    trailing: list[str] = []  # comments and blank lines after the record's last key: the next table's
    in_record = False
    for line in spec_text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        header = TABLE_HEADER.match(bare)
        if header:
            in_record = _first_key(header["key"]) == "generated"
            if not in_record:
                kept += trailing
            trailing = []
            while in_record and kept and kept[-1].rstrip("\r\n") in RECORD_HEADER_LINES:
                kept.pop()
        if not in_record:
            kept.append(line)
        elif not header and (not bare.strip() or bare.lstrip().startswith("#")):
            trailing.append(line)
        else:
            trailing = []  # a key of the record: what came before it was inside the record
    text = "".join(kept + trailing).strip("\r\n") + line_ending(spec_text)
    _check_only_the_record_went(spec_text, text)
    return text


def _first_key(dotted: str) -> str:
    """The first key of a table header's dotted key: ``generated`` of ``generated.files``, of
    ``"generated"`` and of `` generated ``."""
    dotted = dotted.strip()
    if dotted[:1] in ("'", '"'):
        return dotted[1 : dotted.find(dotted[0], 1)]
    return dotted.split(".", 1)[0].strip()


def _check_only_the_record_went(spec_text: str, text: str) -> None:
    try:
        before = tomllib.loads(spec_text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError:
        return  # not TOML: reading the spec says where, and xlacc writes nothing from it
    before.pop("generated", None)
    try:
        after = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError:
        after = None
    if before != after:
        raise UsageError(
            f"{specmod.SPEC_FILE}: its [generated] table cannot be told apart from your tables "
            "(a line like a table header inside a multi-line string?): move [generated] to the end of the file; nothing was written"
        )


def holds_legacy_record(spec_text: str) -> bool:
    """Whether xlacc.toml still holds a ``[generated]`` table, the record's home before RECORD_FILE."""
    try:
        return "generated" in tomllib.loads(spec_text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError:
        return False


def file_digest(path: str, text: str) -> str:
    return digest(without_record(text) if path == specmod.SPEC_FILE else text)


def record_text(spec: specmod.Spec, files: dict[str, str]) -> str:
    """``.xlacc/record.toml``: the record of xlacc's text of ``files``."""
    lines = [
        RECORD_HEADER.rstrip("\n"),
        f"xlacc = {_toml_string(__version__)}",
        f"template = {_toml_string(spec.template)}",
        f"signature = {_toml_string(spec.signature_digest)}",
        "",
        "[files]",
    ]
    lines += [f"{_toml_string(path)} = {_toml_string(file_digest(path, files[path]))}" for path in sorted(files)]
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """A TOML basic string: a JSON string, once DEL (which JSON leaves bare) is escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def line_ending(text: str) -> str:
    """CRLF when most of the lines of ``text`` end so, else LF."""
    return "\r\n" if 2 * text.count("\r\n") > text.count("\n") else "\n"


def recorded_files(directory: Path) -> dict[str, str]:
    """The digests an existing project's record holds (empty if none can be read)."""
    try:
        return dict(specmod.load(directory).generated.files)
    except (UsageError, AttributeError):
        return {}


class NotText(UsageError):
    """A project file that is not UTF-8 text: never xlacc's, and never rewritten from a decoding
    that would lose its bytes."""


def read_bytes(path: Path) -> bytes | None:
    """A project file's bytes; None when it does not exist (UsageError: not a regular file, too large)."""
    try:
        return paths.read_user_file(path, MAX_PROJECT_FILE_BYTES)
    except FileNotFoundError:
        return None


def read_text(path: Path) -> str | None:
    """A project file's text; None when it does not exist; NotText when it is not UTF-8."""
    data = read_bytes(path)
    return None if data is None else _decoded(path, data)


def _decoded(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise NotText(f"{path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})") from None


CONFLICT_MARKER = re.compile(r"^(?:<<<<<<< yours|>>>>>>> xlacc)\r?$", re.MULTILINE)  # what `xlacc update` leaves around a conflict (either end)


def conflict_finding(conflicts: list[tuple[str, str]], fix: str | None = None) -> Finding:
    """update-conflict for files an update could not merge, each as (path, what is wrong there): the
    one place it is made, for update itself and for the markers build, run-smoke and doctor find."""
    return make("update-conflict", "; ".join(f"{path}: {detail}" for path, detail in conflicts), fix=fix)


def marker_findings(spec: specmod.Spec, markers: list[str]) -> list[Finding]:
    """One update-conflict per file whose conflict markers (``path:line``) are still there."""
    return [conflict_finding([(str(spec.root / where), "`<<<<<<< yours` left by `xlacc update`")]) for where in markers]


def conflict_markers(spec: specmod.Spec) -> list[str]:
    """``path:line`` of the first conflict marker `xlacc update` left in each file it tracks."""
    found = []
    for path in sorted(spec.generated.files) if spec.generated else []:
        try:
            text = read_text(spec.root / path) or ""
        except UsageError:  # not text, no longer a regular file, or too large: not one xlacc wrote
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
    backups: dict[str, bytes] = field(default_factory=dict)  # project path -> the user's file, byte for byte
    backup_dir: str = ""

    def backups_json(self) -> dict[str, str]:
        return {path: f"{self.backup_dir}/{path}" for path in self.backups}


def plan_new(directory: Path, files: dict[str, str], record: str, force: bool) -> Plan:
    """Decide, before writing anything, what ``xlacc new`` writes (``files``, their merge bases and
    the ``record`` of them) and which of the user's files it must back up. Refuses a non-empty
    directory without ``force``."""
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
        current = read_bytes(directory / path)
        kind = _new_action(path, current, text, recorded.get(path))
        if kind == "backup":
            plan.backups[path] = current
        plan.actions[path] = Action(kind)
        plan.writes[path] = text
    for path, text in files.items():
        plan.writes[f"{BASE_DIR}/{path}"] = text
    plan.writes[RECORD_FILE] = record
    return plan


def _new_action(path: str, current: bytes | None, text: str, recorded: str | None) -> str:
    """What ``xlacc new`` does to a file that holds ``current``: a file that is not UTF-8 is not
    xlacc's, so it is backed up."""
    if current is None:
        return "new"
    if current == text.encode("utf-8"):
        return "unchanged"
    try:
        if recorded == file_digest(path, current.decode("utf-8")):
            return "replace"
    except UnicodeDecodeError:
        pass
    return "backup"


def _new_backup_dir(directory: Path) -> str:
    """A folder no earlier run used: two runs within one second must not share one."""
    stamp = f"{BACKUP_DIR}/{time.strftime('%Y%m%dT%H%M%S')}"
    candidates = (stamp if n == 1 else f"{stamp}-{n}" for n in itertools.count(1))
    return next(c for c in candidates if not (directory / c).exists())


def apply(directory: Path, plan: Plan) -> None:
    """Back up, then write everything, all or nothing."""
    writes: dict[str, str | bytes] = {f"{plan.backup_dir}/{path}": data for path, data in plan.backups.items()}
    writes.update(plan.writes)
    write_all(directory, writes)


# -- writing ------------------------------------------------------------------------------------


def check_writable(directory: Path, relative: str) -> Path:
    """Where xlacc may write ``relative``: inside the project, not a directory (xlacc.ground.paths)."""
    return paths.target_path(directory, relative)


def write_all(directory: Path, files: dict[str, str | bytes]) -> None:
    """All or nothing (xlacc.ground.paths.write_all); a file that already holds its text is left alone.
    What an earlier, killed write left beside these files goes first."""
    paths.clear_leftovers(directory, _earlier_writes(directory, files))
    changed = {relative: data for relative, data in files.items() if read_bytes(directory / relative) != paths.as_bytes(data)}
    if changed:
        paths.write_all(directory, changed)


def _earlier_writes(directory: Path, files: dict[str, str | bytes]) -> list[str]:
    """What earlier runs may have been writing: these files, the project files whose merge bases
    are among them (a run writes the base of each file it generates), and their backups."""
    project_files = [path.removeprefix(f"{BASE_DIR}/") for path in files if path.startswith(f"{BASE_DIR}/")]
    folders = sorted(p.name for p in (directory / BACKUP_DIR).glob("*") if p.is_dir() and not p.is_symlink())
    return [*files, *project_files, *(f"{BACKUP_DIR}/{folder}/{path}" for folder in folders for path in project_files)]
