"""``xlacc doctor``: decide what to examine, run the rules over it, and gather one Report.

With no PATH, --so, --log or command, the environment is examined; otherwise only what was named.
Findings that differ only in where they were seen (the same launch on 20000 lines) are shown a few
times, the last of them counting the rest.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlacc import spec as spec_module
from xlacc.commands.doctor import inputs
from xlacc.commands.doctor.guard import run_rule
from xlacc.commands.doctor.inputs import SourceFile
from xlacc.commands.doctor.rules import hlo, hlo_constants, hlo_sharding
from xlacc.commands.doctor.rules import error_text as text
from xlacc.commands.doctor.section import Section
from xlacc.ground.catalogue import BY_CODE, CATALOGUE, GROUPS
from xlacc.ground import process
from xlacc.ground.errors import UsageError
from xlacc.ground.wording import counted
from xlacc.ground.report import Check, Finding, Report
from xlacc.readers import fatbin
from xlacc.spec import drift

if TYPE_CHECKING:
    from xlacc.commands.doctor.command import CommandResult

SCANNED_KINDS = frozenset({"c", "py", "sh"})
DEFAULT_TIMEOUT_S = 600.0
ALIKE_SHOWN = 3  # findings alike but for their line numbers: shown this many times, then counted
# Line numbers in evidence: "(line 12)", "lines 3-9", "kernel.cu:40", "notes.md:cell 2".
LOCATION = re.compile(r"(?<=\bline )\d+|(?<=\blines )\d+(?:-\d+)?|(?<=:)\d+|(?<=\bcell )\d+")


@dataclass
class DoctorRequest:
    paths: list[Path]
    so: Path | None = None
    symbols: list[str] = field(default_factory=list)
    arch: str | None = None
    log: str | None = None  # a file path, or "-" for stdin
    list_checks: bool = False
    only: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT_S  # for the command


@dataclass
class _Inputs:
    sources: list[SourceFile] = field(default_factory=list)
    documents: list[tuple[str, str]] = field(default_factory=list)  # (name, text)
    libraries: list[Path] = field(default_factory=list)
    specs: list = field(default_factory=list)  # Spec
    unbuilt: list[Path] = field(default_factory=list)
    empty: list[Path] = field(default_factory=list)  # directories with nothing doctor reads
    walks: list[tuple[Path, inputs.Walk]] = field(default_factory=list)
    dumps: list[Path] = field(default_factory=list)  # --xla_dump_to folders


def run(request: DoctorRequest) -> Report:
    only = _codes(request.only)
    if request.arch is not None:
        _check_arch(request.arch)
    if any(not symbol.strip() for symbol in request.symbols):
        raise UsageError("--symbol takes the name of an entry point the .so must export; got an empty value")
    if request.command:
        process.check_timeout(request.timeout)
    if request.list_checks:
        return _catalogue(only)
    if request.symbols and not (request.so or request.paths):
        raise UsageError("--symbol names entry points of a shared object: add --so FILE (or a project PATH)")
    asked = request.paths or request.so or request.log or request.command
    if not asked:
        from xlacc.commands.doctor.rules import environment  # lazy: only `xlacc doctor` alone checks the environment

        return _report("xlacc doctor: the environment", environment.check_environment(), only)
    gathered = _gather(request)
    sections: list[Section] = [_empty_directory_section(d) for d in gathered.empty]
    sections += [_walk_section(d, w) for d, w in gathered.walks if w.truncated or w.links_skipped]
    sections += _source_sections(gathered)
    sections += [_project_section(spec) for spec in gathered.specs]
    sections += _library_sections(request, gathered)
    sections += [_dump_section(directory) for directory in gathered.dumps]
    data: dict = {}
    notes: list[str] = []
    if request.log is not None:
        sections.append(_log_section(request.log))
    if request.command:
        command_sections, command_data, tail = _command_sections(request.command, request.timeout)
        sections += command_sections
        data["command"] = command_data
        if tail:
            notes.append(tail)
    report = _report("xlacc doctor", sections, only)
    report.data.update(data)
    report.notes.extend(notes)
    return report


def _report(title: str, sections: list[Section], only: set[str]) -> Report:
    return Report(
        title=title,
        checks=[section.check(only) for section in sections],
        findings=_fold_alike([finding for section in sections for finding in section.filtered(only)]),
    )


def _fold_alike(findings: list[Finding]) -> list[Finding]:
    """Of findings alike but for their line numbers, the first :data:`ALIKE_SHOWN`, the last of
    them saying how many more there are; exact repeats count once (as :func:`report.rank` keeps them)."""
    first: dict[tuple[str, str], Finding] = {}
    for finding in findings:
        first.setdefault((finding.code, finding.evidence), finding)
    total = Counter(map(_alike, first.values()))
    shown: Counter = Counter()
    folded = []
    for finding in first.values():
        key = _alike(finding)
        shown[key] += 1
        more = total[key] - ALIKE_SHOWN
        if shown[key] == ALIKE_SHOWN and more > 0:
            finding = replace(finding, evidence=f"{finding.evidence} (and {more} more like it)")
        if shown[key] <= ALIKE_SHOWN:
            folded.append(finding)
    return folded


def _alike(finding: Finding) -> tuple:
    return (finding.code, finding.severity, finding.likelihood, finding.title, finding.fix, LOCATION.sub("#", finding.evidence))


def _codes(only: list[str]) -> set[str]:
    unknown = [code for code in only if code not in BY_CODE]
    if unknown:
        raise UsageError(f"unknown finding code {unknown[0]!r}: `xlacc doctor --list-checks` lists them")
    return set(only)


def _check_arch(arch: str) -> None:
    if not arch.strip():
        raise UsageError("--arch takes a GPU architecture such as sm_90; got an empty value")
    try:
        fatbin.parse_arch(arch)
    except ValueError as exc:
        raise UsageError(f"--arch {arch}: {exc}") from None


def _catalogue(only: set[str]) -> Report:
    entries = [e for e in CATALOGUE if not only or e.code in only]
    return Report(
        title=f"xlacc doctor: {len(entries)} finding codes",
        checks=[Check(e.code, None, f"{GROUPS[e.group].lower()}, {e.severity}: {e.title}") for e in entries],
        data={"catalogue": [e.to_json() for e in entries]},
    )


# -- inputs -------------------------------------------------------------------------------------


def _gather(request: DoctorRequest) -> _Inputs:
    gathered = _Inputs()
    for path in request.paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        if path.is_dir():
            _gather_directory(path, gathered)
            continue
        inputs.require_regular_file(path)  # before anything opens it: a named pipe would block
        if path.name == "xlacc.toml":
            _gather_directory(path.parent, gathered)
        elif path.suffix == ".so" or ".so." in path.name or inputs.is_elf(path):
            gathered.libraries.append(path)
        else:
            kind = inputs.kind_of(path)
            if kind is None:
                raise UsageError(
                    f"{path}: not a kernel, script, note, log or library "
                    "(expected .cu .cc .cpp .h .py .sh .md .txt .log .ipynb or .so)"
                )
            _add_file(path, kind, gathered)
    return gathered


def _add_file(path: Path, kind: str, gathered: _Inputs) -> None:
    name = str(path)
    if kind == "notebook":
        blocks, prose = inputs.notebook_parts(name, inputs.read_text(path))
        gathered.documents.append((name, prose))
        gathered.sources.extend(blocks)
    elif kind == "text" and path.suffix.lower() == ".log":
        gathered.documents.append((name, inputs.read_log_file(path, text.interesting()).text))
    elif kind == "text":
        content = inputs.read_module(path) if inputs.is_module(path) else inputs.read_text(path)
        gathered.documents.append((name, content))
        gathered.sources.extend(b for b in inputs.code_blocks(name, content) if b.kind in SCANNED_KINDS)
    else:
        gathered.sources.append(SourceFile(name, kind, inputs.read_text(path), name))


def _gather_directory(directory: Path, gathered: _Inputs) -> None:
    if hlo_sharding.is_dump(directory):
        gathered.dumps.append(directory)
    spec = None
    if (directory / spec_module.SPEC_FILE).is_file():
        spec = spec_module.load(directory)
        gathered.specs.append(spec)
        (gathered.libraries if spec.library.is_file() else gathered.unbuilt).append(spec.library)
    walk = inputs.walk(directory)
    gathered.walks.append((directory, walk))
    for path in walk.files + (_sources_elsewhere(spec, walk.files) if spec else []):
        _add_file(path, inputs.kind_of(path), gathered)
    if not walk.files and not gathered.specs and directory not in gathered.dumps:
        gathered.empty.append(directory)


def _sources_elsewhere(spec, walked: list[Path]) -> list[Path]:
    """The project's own code outside its folder: a wrapped kernel (``[from]``), `[build] sources`
    elsewhere. Those that are regular files of a kind doctor reads, each once."""
    named = [spec.root / name for name in spec.code_files]
    seen = {path.resolve() for path in walked}
    found = []
    for path in named:
        resolved = path.resolve()
        if resolved in seen or not resolved.is_file() or inputs.kind_of(resolved) is None:
            continue
        try:
            inputs.require_regular_file(resolved)
        except UsageError:
            continue
        seen.add(resolved)
        found.append(resolved)
    return found


# -- sections -----------------------------------------------------------------------------------


def _empty_directory_section(directory: Path) -> Section:
    return Section(f"directory {directory}", "no kernels, scripts, notes, logs or xlacc.toml in it", skipped=True)


def _walk_section(directory: Path, walk: inputs.Walk) -> Section:
    parts = []
    if walk.truncated:
        parts.append(
            f"read {len(walk.files)} files, those that name XLA's custom-call API first (limit {inputs.MAX_FILES} files, "
            f"{inputs.MAX_ENTRIES} entries): name the folders that hold the op for the rest"
        )
    if walk.links_skipped:
        parts.append(f"{walk.links_skipped} symbolic link{'s' if walk.links_skipped > 1 else ''} not followed")
    return Section(f"directory {directory}", "; ".join(parts), skipped=True)


def _source_sections(gathered: _Inputs) -> list[Section]:
    if not gathered.sources and not gathered.documents:
        return []
    from xlacc.commands.doctor import analysis  # lazy: the source rules and parsers; doctor --so and --log need none

    report = analysis.analyze(gathered.sources)
    sections = []
    documents = dict(gathered.documents)
    groups = list(dict.fromkeys([name for name, _ in gathered.documents] + [f.group for f in gathered.sources]))
    for group in groups:
        findings = list(report.by_group.get(group, []))
        if group in documents:
            findings += _document_findings(group, documents[group])
        detail = report.summaries.get(group, "") or ("no code blocks" if group in documents else "")
        unreadable = group in report.unreadable if group not in documents else False
        if unreadable:
            detail += ": its registrations and calls cannot be checked until it parses"
        sections.append(Section(f"{'file' if group in documents else 'source'} {group}", detail, findings, failed=unreadable))
    if gathered.sources:
        sections.append(Section("entry points vs registrations and calls", "", report.cross + report.crashes))
    return sections


def _project_section(spec) -> Section:
    from xlacc.commands.doctor.rules import project  # lazy: a project's record and drift, only for a project

    findings: list[Finding] = []
    findings += run_rule(project.findings, spec, empty=[], crashes=findings)
    mismatches = drift.kernel_launch_mismatches(spec)  # a compile error to come: only the user can fix the kernel
    detail = "; ".join(mismatches) or ("" if findings else "the spec matches its generated code")
    return Section(f"project {spec.name}", detail, findings, failed=bool(mismatches))


def _document_findings(name: str, content: str) -> list[Finding]:
    """A note or log: the text rules over all of it; the HLO check per block when it has blocks."""
    blocks = inputs.code_blocks(name, content)
    findings: list[Finding] = []
    findings += run_rule(text.diagnose_text, content, hlo=not blocks, empty=[], crashes=findings)
    for block in blocks:
        if block.kind == "text":
            findings += run_rule(hlo.diagnose_hlo, block.text, where=block.name, empty=[], crashes=findings)
            findings += run_rule(hlo_constants.diagnose, block.text, where=block.name, empty=[], crashes=findings)
    return findings


def _library_sections(request: DoctorRequest, gathered: _Inputs) -> list[Section]:
    paths = list(gathered.libraries) + ([request.so] if request.so else [])
    if request.so is not None and not request.so.exists():
        raise UsageError(f"--so {request.so}: no such file")
    if request.so is not None and not request.so.is_dir():
        inputs.require_regular_file(request.so, "--so")
    symbols, symbols_from = request.symbols, "--symbol"
    if not symbols:  # the entry points of the project the library belongs to
        specs = gathered.specs or ([owner] if request.so and (owner := _owning_spec(request.so)) else [])
        if specs:
            symbols, symbols_from = list(specs[0].entry_points), "xlacc.toml"
    sections = [Section(f"shared object {p}", "not built yet: run `xlacc build`", skipped=True) for p in gathered.unbuilt if p not in paths]
    built_from = {spec.library: spec for spec in gathered.specs}
    if paths:
        from xlacc.commands.doctor.rules import library  # lazy: the library rules, only for a shared object
    project_sources = _c_sources(gathered) if built_from else None
    for path in dict.fromkeys(paths):
        crashes: list[Finding] = []
        sources = project_sources if path in built_from else None
        checked = run_rule(library.check_library, path, symbols, request.arch, symbols_from, sources, empty=[], crashes=crashes)
        checked = checked or ([Section(f"shared object {path}", "not checked", crashes)] if crashes else [])
        if path in built_from and checked:
            _mark_stale(checked[0], built_from[path])
        sections += checked
    return sections


def _c_sources(gathered: _Inputs) -> dict[Path, bytes]:
    """The C/C++/CUDA files read: a project's, beside the library built from them."""
    return {Path(s.group): s.text.encode() for s in gathered.sources if s.kind == "c"}


def _mark_stale(section: Section, spec) -> None:
    """A project's library older than a source: what runs is not what the source says."""
    newer = spec.sources_newer_than_library()
    if newer:
        section.failed = True
        section.detail = "; ".join(filter(None, [section.detail, f"older than {', '.join(newer)}, edited since the build: run `xlacc build`"]))


def _owning_spec(library: Path):
    """The project whose build this library is (``PROJECT/build/libNAME.so``), if any."""
    for directory in (library.resolve().parent, library.resolve().parent.parent):
        if (directory / spec_module.SPEC_FILE).is_file():
            try:
                spec = spec_module.load(directory)
            except UsageError:
                return None
            return spec if spec.library.resolve() == library.resolve() else None
    return None


def _dump_section(directory: Path) -> Section:
    """The compiled modules of an --xla_dump_to folder: custom calls fed by all-gathers, closed-over arrays."""
    findings: list[Finding] = []
    findings += _dump_findings(directory, crashes=findings)
    return Section(f"xla dump {directory}", f"{len(hlo_sharding.dump_modules(directory))} compiled modules", findings)


def _dump_findings(directory: Path, crashes: list[Finding]) -> list[Finding]:
    """The compiled-HLO rules over each module of an --xla_dump_to folder, each file read once."""
    findings: list[Finding] = []
    for path in hlo_sharding.dump_modules(directory):
        module = path.read_text(encoding="utf-8", errors="replace")
        for rule in (hlo_sharding.diagnose, hlo_constants.diagnose):
            findings += run_rule(rule, module, where=path.name, empty=[], crashes=crashes)
    return findings


def _log_section(log: str) -> Section:
    if log == "-":
        content, name = inputs.read_log(sys.stdin.buffer, text.interesting()), "stdin"
    else:
        content, name = inputs.read_log_file(Path(log), text.interesting()), log
    findings: list[Finding] = []
    findings += run_rule(text.diagnose_text, content.text, empty=[], crashes=findings)
    detail = counted(content.lines, "line")
    if content.cut:
        detail += f" ({content.bytes / 1e6:.1f} MB; read the first and last lines and every line a rule names)"
    return Section(f"log {name}", detail + ("" if findings else "; no known error text"), findings)


def _command_sections(argv: list[str], timeout: float) -> tuple[list[Section], dict, str]:
    from xlacc.commands.doctor import command  # lazy: running a command, only for doctor -- COMMAND
    from xlacc.commands.doctor.rules import run as runtime  # lazy: as above

    env, dump, cleanup = hlo_sharding.dump_environment()  # the command's compiled HLO, for custom-call-replicated and closed-over-array
    with cleanup:
        result = command.run(argv, timeout, text.interesting(), env=env)
        crashes: list[Finding] = []
        run_findings = run_rule(runtime.diagnose_output, result.output.text, result.returncode, empty=[], crashes=crashes)
        run_findings += _dump_findings(dump, crashes)
    program_section, code_findings = _program_section(argv)
    findings = run_rule(runtime.rank_with_code, run_findings, code_findings, result.returncode, empty=run_findings + code_findings, crashes=crashes)
    findings += crashes
    failed = result.returncode != 0
    sections = [Section(f"command {shlex.join(argv)}", _ended(result, timeout), findings, failed=failed)]
    if program_section is not None:
        sections.insert(0, program_section)
    data = {
        "argv": argv,
        "returncode": result.returncode,
        "signal": result.signal_name,
        "seconds": round(result.seconds, 3),
        "timeout": timeout,
        "output_tail": result.tail(),
    }
    tail = f"last lines of its output:\n{result.tail()}" if failed and result.output.text.strip() else ""
    return sections, data, tail


def _ended(result: CommandResult, timeout: float) -> str:
    from xlacc.commands.doctor.command import KILL_GRACE_S  # lazy: only for doctor -- COMMAND

    """How the command ended. At the timeout its group gets SIGTERM and, if the command has not
    exited :data:`command.KILL_GRACE_S` later, SIGKILL: that wait is not part of the timeout."""
    if result.returncode is None:
        stopped = result.seconds - timeout
        if stopped < KILL_GRACE_S:
            return f"timed out after {_duration(timeout)}; its process group was stopped"
        return f"timed out after {_duration(timeout)}; it ignored SIGTERM: its process group was stopped with SIGKILL {_duration(stopped)} later"
    if result.signal_name:
        return f"killed by {result.signal_name} after {_duration(result.seconds)}"
    return f"exit {result.returncode} in {_duration(result.seconds)}"


def _duration(seconds: float) -> str:
    """To two decimals at most: "3 s", "0.5 s", "2.01 s"; "less than 0.01 s" below that."""
    if seconds < 0.005:
        return "less than 0.01 s"
    return f"{seconds:.2f}".rstrip("0").rstrip(".") + " s"


def _program_section(argv: list[str]) -> tuple[Section | None, list[Finding]]:
    from xlacc.commands.doctor import analysis, command  # lazy: only for doctor -- COMMAND
    from xlacc.commands.doctor.rules import library  # lazy: as above

    """The script the command runs and what it loads, read before the run is ranked."""
    cwd = Path(os.getcwd())
    script = command.script_of(argv, cwd)
    if script is None:
        return None, []
    paths, libraries = command.program_files(script, cwd)
    files = [SourceFile(str(p), inputs.kind_of(p), inputs.read_text(p), str(p)) for p in paths]
    report = analysis.analyze(files)
    findings = [f for group in report.by_group.values() for f in group] + report.cross + report.crashes
    looked_up = sorted({s for f in report.program.facts for s in f.symbol_refs} | {s for f in report.program.facts for r in f.registrations for s in r.symbols})
    for path in libraries:
        for section in run_rule(library.check_library, path, looked_up, None, "looked up by the script", empty=[], crashes=findings):
            findings += section.findings
    detail = f"{len(files)} source{'s' if len(files) != 1 else ''}" + (f", {len(libraries)} librar{'ies' if len(libraries) != 1 else 'y'}" if libraries else "")
    return Section(f"program {script}", detail + " read before the run"), findings
