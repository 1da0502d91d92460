"""`xlacc update`: regenerate a project from its current spec and the installed xlacc, keeping
everything the user wrote.

Per file: one that is still as xlacc wrote it is replaced by the new text; one the user edited is
merged three ways (the text xlacc wrote last time from ``.xlacc/base``, the user's text, the new
text), as copier does; a conflict is left marked in the file and reported, with exit code 1.
Line endings do not conflict: the LF forms are merged, and the result keeps the user's endings. A
file that is not UTF-8 text is never merged: it stays byte for byte as it is, and xlacc's new
text, when it changed, goes beside it (``FILE.xlacc-new``), a conflict too; one that is not a
regular file (a directory, a pipe) is a one-line error before anything is written. ``--dry-run``
shows the diffs and writes nothing. A project wrapping the user's kernel (``[from]``) whose
parameters no longer match the op in xlacc.toml is refused, saying what to change there.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path

from xlacc import spec as specmod
from xlacc.commands.new import migrate, wrap
from xlacc.commands.new import project as scaffold
from xlacc.commands.new import record as generated
from xlacc.ground import locks
from xlacc.ground.catalogue import entry
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Check, Finding, Report
from xlacc.spec import drift

CONFLICT_NAMES = ("yours", "xlacc")
NEW_SUFFIX = ".xlacc-new"


@dataclass
class UpdateRequest:
    project: Path
    dry_run: bool = False


@dataclass
class FileOutcome:
    path: str
    status: str  # up to date | added | updated | merged | kept | left behind | conflict | removed | left deleted
    text: str | None  # the text the file will hold; None: deleted or untouched
    detail: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # other files to write (path -> text)

    @property
    def changes_file(self) -> bool:
        return self.text is not None or self.status == "removed"


def run(request: UpdateRequest) -> Report:
    with locks.project_lock(specmod.find_spec(request.project).parent, "update"):
        return _run(request)


def _run(request: UpdateRequest) -> Report:
    spec = specmod.load(request.project)
    if spec.origin is not None:
        wrap.check_spec(spec)
    directory = spec.root
    meta = scaffold.template_meta(spec.template)
    rendered = scaffold.render(spec, meta)
    spec_text = generated.read_text(directory / specmod.SPEC_FILE)
    if spec_text is None:
        raise UsageError(f"{directory / specmod.SPEC_FILE} went away while xlacc update read it; nothing was written")
    # The spec is the user's input: xlacc only moves an earlier layout's record out of it.
    files = {path: text for path, text in rendered.items() if path != specmod.SPEC_FILE}
    recorded = dict(spec.generated.files) if spec.generated else {}
    outcomes = [
        still_marked(directory, outcome_of(directory, spec, path, files.get(path), recorded.get(path)))
        for path in sorted(set(files) | (set(recorded) - {specmod.SPEC_FILE}))
    ]
    report = Report(title=f"xlacc update {spec.name} (xlacc {spec.generated.xlacc if spec.generated else '?'} -> {generated.__version__})")
    if generated.holds_legacy_record(spec_text):
        report.add(Check(specmod.SPEC_FILE, True, f"moved xlacc's record ([generated]) to {generated.RECORD_FILE}: your keys and comments stay"))
    mismatches = drift.launch_mismatches(spec, kernel_text(directory, spec, outcomes))
    for outcome in outcomes:
        detail = f"{outcome.status}{': ' + outcome.detail if outcome.detail else ''}"
        if outcome.path == spec.kernel_file and mismatches:  # xlacc's part is done; the user's is below
            report.add(Check(outcome.path, None, f"{detail}; its launch function no longer takes what the entry points pass (below)"))
        elif outcome.status == "left behind":
            report.add(Check(outcome.path, None, detail))
        elif outcome.status == "left deleted" and outcome.path in (spec.kernel_file, spec.reference_file):
            report.add(Check(outcome.path, None, f"{detail}, and the project needs it: {restore_hint(directory, outcome.path)}"))
        else:
            report.add(Check(outcome.path, False if outcome.status == "conflict" else True, detail))
    conflicts = [o for o in outcomes if o.status == "conflict"]
    if conflicts:
        report.findings.append(conflict_finding(conflicts))
    report.checks += [Check("launch function", False, mismatch) for mismatch in mismatches]  # only the user can change it: exit 1
    if request.dry_run:
        report.notes += [diff for o in outcomes if (diff := unified_diff(directory, o))]
        report.notes.append("dry run: nothing was written")
    else:
        write(directory, spec, spec_text, rendered, outcomes)
    report.data.update(files={o.path: o.status for o in outcomes}, dry_run=request.dry_run)
    return report


def kernel_text(directory: Path, spec: specmod.Spec, outcomes: list[FileOutcome]) -> str:
    """The user's kernel file as the update leaves it."""
    outcome = next((o for o in outcomes if o.path == spec.kernel_file), None)
    if outcome is not None and outcome.text is not None:
        return outcome.text
    return (generated.read_bytes(directory / spec.kernel_file) or b"").decode("utf-8", "replace")  # notes only


def outcome_for(directory: Path, path: str, new: str | None, recorded: str | None, owner: str) -> FileOutcome:
    try:
        current = generated.read_text(directory / path)
    except generated.NotText as exc:  # not xlacc's, and never merged
        return left_as_it_is(directory, path, new, without_path(exc, directory / path))
    except UsageError as exc:  # not a regular file, or too large
        raise UsageError(f"{exc}: xlacc update reads each file it wrote; move it away (or restore the file); nothing was written") from None
    edited = current is not None and recorded is not None and generated.file_digest(path, current) != recorded
    if current is None:
        if new is None:
            return FileOutcome(path, "up to date", None, "no longer generated")
        if recorded is not None and owner == scaffold.USER:
            return FileOutcome(path, "left deleted", None, "you removed it")
        return FileOutcome(path, "added", new)
    if new is None:
        if edited or recorded is None:
            return FileOutcome(path, "left behind", None, "no longer generated, but edited by you: nothing uses it now (a renamed op's package is new); carry your edits into the file xlacc uses")
        return FileOutcome(path, "removed", None, "no longer generated")
    if current == new:
        return FileOutcome(path, "up to date", None)
    if recorded is not None and not edited:
        return FileOutcome(path, "updated", new)
    return merge(directory, path, current, new)


def outcome_of(directory: Path, spec: specmod.Spec, path: str, new: str | None, recorded: str | None) -> FileOutcome:
    """What update does to one file: replace, merge, or move an earlier layout's tests."""
    return moved_tests(directory, spec, outcome_for(directory, path, new, recorded, scaffold.owner_of(spec, path)), new)


def moved_tests(directory: Path, spec: specmod.Spec, outcome: FileOutcome, new: str | None) -> FileOutcome:
    """The test file of an earlier layout, which held the generic checks: xlacc's new file, which
    imports them from NAME/checks.py, with the user's own tests and edits carried into it."""
    base = base_text(directory, outcome.path)
    checks = f"{spec.package}.checks"
    if outcome.path != f"test_{spec.name}.py" or new is None or base is None or not migrate.moved_checks(base, new, checks):
        return outcome
    where = f"{spec.package}/checks.py"
    if outcome.status == "updated":
        return replace(outcome, detail=f"the generic checks moved to {where}")
    if outcome.status not in ("merged", "conflict"):
        return outcome
    try:
        current = generated.read_text(directory / outcome.path) or ""
        moved = migrate.move_tests(lf_text(base), lf_text(current), new, checks, outcome.path)
    except (SyntaxError, UsageError):
        return outcome  # not Python the migration can read: merged (or marked) line by line instead
    kept = f"; kept yours: {', '.join(moved.kept)}" if moved.kept else ""
    kept += f" (with what they use: {', '.join(moved.needed)})" if moved.needed else ""
    skipped = f"; left out {', '.join(moved.skipped)}, which you had removed" if moved.skipped else ""
    text = moved.text.replace("\n", generated.line_ending(current))
    return FileOutcome(outcome.path, "merged", text, f"the generic checks moved to {where}{kept}{skipped}")


def lf_text(text: str) -> str:
    return text.replace("\r\n", "\n")


def left_as_it_is(directory: Path, path: str, new: str | None, why: str) -> FileOutcome:
    """A file that is not UTF-8 keeps its bytes; xlacc's new text, when it changed, goes beside it."""
    if new is None:
        return FileOutcome(path, "kept", None, f"{why}; no longer generated")
    if base_text(directory, path) == new:
        return FileOutcome(path, "kept", None, f"{why}; xlacc's text did not change")
    return FileOutcome(
        path, "conflict", None, f"{why}, so not merged: left as it is; xlacc's new text is in {path}{NEW_SUFFIX}", {path + NEW_SUFFIX: new}
    )


def without_path(error: Exception, path: Path) -> str:
    """An error about ``path`` without the path it starts with: the report names the file."""
    text = str(error)
    return text[len(str(path)) :].lstrip(": ") if text.startswith(str(path)) else text


def base_text(directory: Path, path: str) -> str | None:
    """What xlacc wrote last time; None when it is missing, or cannot be read as text."""
    try:
        return generated.read_text(directory / generated.BASE_DIR / path)
    except UsageError:
        return None


def merge(directory: Path, path: str, current: str, new: str) -> FileOutcome:
    """Three-way merge of the user's text and xlacc's new text from the text xlacc wrote before."""
    import merge3  # lazy: only an update with edits on both sides merges

    base = base_text(directory, path)
    if base is None:
        return FileOutcome(
            path,
            "conflict",
            None,
            f"edited, and {generated.BASE_DIR}/{path} (what xlacc wrote before) is missing: compare with {path}{NEW_SUFFIX}",
            {path + NEW_SUFFIX: new},
        )
    if base == new:
        return FileOutcome(path, "up to date", None, "your edits kept; xlacc's text did not change")
    merger = merge3.Merge3(*(lf_lines(text) for text in (base, current, new)))
    merged = "".join(merger.merge_lines(name_a=CONFLICT_NAMES[0], name_b=CONFLICT_NAMES[1])).replace("\n", generated.line_ending(current))
    conflicts = sum(1 for region in merger.merge_regions() if region[0] == "conflict")
    if conflicts:
        return FileOutcome(path, "conflict", merged, f"{conflicts} conflicting change(s) marked <<<<<<< yours ... >>>>>>> xlacc")
    return FileOutcome(path, "merged", merged, "your edits and xlacc's changes")


def lf_lines(text: str) -> list[str]:
    """The lines of ``text``, each ending in LF: a file saved with CRLF merges line by line too."""
    return text.replace("\r\n", "\n").splitlines(True)


def restore_hint(directory: Path, path: str) -> str:
    """How to bring back a file of the user's that xlacc wrote first."""
    if (directory / generated.BASE_DIR / path).is_file():
        return f"`cp {generated.BASE_DIR}/{path} {path}` brings back the text xlacc wrote"
    return "`xlacc new` of the same op in another folder writes the template's, to copy from"


def still_marked(directory: Path, outcome: FileOutcome) -> FileOutcome:
    """A file that will still hold the markers of an earlier update's conflict is a conflict, not
    "your edits kept": nothing builds until they are resolved."""
    if outcome.status == "conflict":
        return outcome
    try:
        text = outcome.text if outcome.text is not None else generated.read_text(directory / outcome.path)
    except UsageError:
        return outcome
    marker = generated.CONFLICT_MARKER.search(text or "")
    if marker is None:
        return outcome
    line = text.count("\n", 0, marker.start()) + 1
    return replace(outcome, status="conflict", detail=f"line {line} still holds an earlier update's conflict markers: resolve them")


def conflict_finding(conflicts: list[FileOutcome]) -> Finding:
    beside = [o.path for o in conflicts if o.path + NEW_SUFFIX in o.extra]
    fix = None
    if beside:  # not merged: xlacc's text is in a file of its own, no markers to edit
        files = ", ".join(f"{path} with {path}{NEW_SUFFIX}" for path in beside)
        fix = f"Compare {files}: carry what you need into your file, delete the {NEW_SUFFIX} file, then `xlacc build`."
        if len(beside) < len(conflicts):
            fix += f" In the other files, {entry('update-conflict').fix[0].lower()}{entry('update-conflict').fix[1:]}"
    return generated.conflict_finding([(o.path, o.detail) for o in conflicts], fix)


def write(directory: Path, spec: specmod.Spec, spec_text: str, rendered: dict[str, str], outcomes: list[FileOutcome]) -> None:
    """The files, their new merge bases and the new record (moved out of xlacc.toml where an
    earlier layout kept it there), all or nothing; then the removals.

    The record holds the digest of xlacc's text, not of a merged file: a file that keeps the
    user's edits stays "edited", so the next update merges it again instead of replacing it."""
    writes: dict[str, str] = {}
    for outcome in outcomes:
        if outcome.text is not None:
            writes[outcome.path] = outcome.text
        writes.update(outcome.extra)
    for path, text in rendered.items():
        writes[f"{generated.BASE_DIR}/{path}"] = text
    writes[generated.RECORD_FILE] = generated.record_text(spec, rendered)
    if generated.holds_legacy_record(spec_text):
        writes[specmod.SPEC_FILE] = generated.without_record(spec_text)
    generated.write_all(directory, writes)
    for outcome in outcomes:
        if outcome.status == "removed":
            (directory / outcome.path).unlink(missing_ok=True)
            (directory / generated.BASE_DIR / outcome.path).unlink(missing_ok=True)


def unified_diff(directory: Path, outcome: FileOutcome) -> str:
    if not outcome.changes_file:
        return ""
    before = (generated.read_bytes(directory / outcome.path) or b"").decode("utf-8", "replace")
    after = outcome.text or ""
    lines = difflib.unified_diff(
        before.splitlines(True), after.splitlines(True), f"a/{outcome.path}", f"b/{outcome.path}"
    )
    return "".join(lines).rstrip("\n")
