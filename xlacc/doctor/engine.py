"""``xlacc doctor``: decide what to examine, run the rules over it, and gather one Report.

With no PATH, --so, --log or command, the environment is examined; otherwise only what was named.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from xlacc.doctor.findings import BY_CODE, CATALOGUE, GROUPS
from xlacc.doctor.rules import hlo_sharding
from xlacc.doctor.section import Section
from xlacc.errors import UsageError
from xlacc.report import Check, Report

SKIPPED_DIRECTORIES = frozenset(
    {".git", ".hg", "build", "dist", "__pycache__", ".venv", "venv", "node_modules", ".pytest_cache", ".mypy_cache", ".tox"}
)
SCANNED_KINDS = frozenset({"c", "py", "sh"})
MAX_FILES = 400
ELF_MAGIC = b"\x7fELF"


@dataclass
class DoctorRequest:
    paths: list[Path]
    so: Path | None
    symbols: list[str]
    arch: str | None
    log: str | None  # a file path, or "-" for stdin
    list_checks: bool
    only: list[str]
    command: list[str]


@dataclass
class _Inputs:
    sources: list = field(default_factory=list)  # SourceFile
    documents: list[tuple[str, str]] = field(default_factory=list)  # (name, text)
    libraries: list[Path] = field(default_factory=list)
    specs: list = field(default_factory=list)  # Spec
    unbuilt: list[Path] = field(default_factory=list)
    empty: list[Path] = field(default_factory=list)  # directories with nothing doctor reads
    dumps: list[Path] = field(default_factory=list)  # --xla_dump_to folders


def run(request: DoctorRequest) -> Report:
    only = _codes(request.only)
    if request.arch:
        _check_arch(request.arch)
    if request.list_checks:
        return _catalogue(only)
    if request.symbols and not (request.so or request.paths):
        raise UsageError("--symbol names entry points of a shared object: add --so FILE (or a project PATH)")
    asked = request.paths or request.so or request.log or request.command
    if not asked:
        from xlacc.doctor.rules import environment

        return _report("xlacc doctor: the environment", environment.check_environment(), only)
    inputs = _gather(request)
    sections: list[Section] = [_empty_directory_section(d) for d in inputs.empty]
    sections += _source_sections(inputs)
    sections += [_project_section(spec) for spec in inputs.specs]
    sections += _library_sections(request, inputs)
    sections += [_dump_section(directory) for directory in inputs.dumps]
    data: dict = {}
    notes: list[str] = []
    if request.log is not None:
        sections.append(_log_section(request.log))
    if request.command:
        section, command_data, tail = _command_section(request.command)
        sections.append(section)
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
        findings=[finding for section in sections for finding in section.filtered(only)],
    )


def _codes(only: list[str]) -> set[str]:
    unknown = [code for code in only if code not in BY_CODE]
    if unknown:
        raise UsageError(f"unknown finding code {unknown[0]!r}: `xlacc doctor --list-checks` lists them")
    return set(only)


def _check_arch(arch: str) -> None:
    from xlacc import fatbin

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


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace").replace("\0", "")
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; --log and --so take a file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return stream.read(4) == ELF_MAGIC
    except OSError:
        return False


def _gather(request: DoctorRequest) -> _Inputs:
    from xlacc.doctor.rules import source

    inputs = _Inputs()
    for path in request.paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        if path.is_dir():
            _gather_directory(path, inputs)
        elif path.name == "xlacc.toml":
            _gather_directory(path.parent, inputs)
        elif path.suffix == ".so" or ".so." in path.name or _is_elf(path):
            inputs.libraries.append(path)
        else:
            kind = source.kind_of(path)
            if kind is None:
                raise UsageError(
                    f"{path}: not a kernel, script, log or library (expected .cu .cc .cpp .h .py .sh .md .txt .log or .so)"
                )
            _add_file(path, kind, _read(path), inputs)
    return inputs


def _add_file(path: Path, kind: str, text: str, inputs: _Inputs) -> None:
    from xlacc.doctor.rules import source

    name = str(path)
    if kind == "text":
        inputs.documents.append((name, text))
        inputs.sources.extend(b for b in source.code_blocks(name, text) if b.kind in SCANNED_KINDS)
    else:
        inputs.sources.append(source.SourceFile(name, kind, text, name))


def _gather_directory(directory: Path, inputs: _Inputs) -> None:
    from xlacc import spec as spec_module
    from xlacc.doctor.rules import source

    if hlo_sharding.is_dump(directory):
        inputs.dumps.append(directory)
    if (directory / spec_module.SPEC_FILE).is_file():
        spec = spec_module.load(directory)
        inputs.specs.append(spec)
        (inputs.libraries if spec.library.is_file() else inputs.unbuilt).append(spec.library)
    found = 0
    for path in sorted(_walk(directory)):
        kind = source.kind_of(path)
        if kind in SCANNED_KINDS:
            _add_file(path, kind, _read(path), inputs)
            found += 1
            if found >= MAX_FILES:
                break
    if not found and not inputs.specs and directory not in inputs.dumps:
        inputs.empty.append(directory)


def _walk(directory: Path):
    for path in directory.iterdir():
        if path.is_dir():
            if path.name not in SKIPPED_DIRECTORIES and not path.name.startswith("."):
                yield from _walk(path)
        elif path.is_file():
            yield path


# -- sections -----------------------------------------------------------------------------------


def _empty_directory_section(directory: Path) -> Section:
    return Section(
        f"directory {directory}",
        "no kernels, scripts, libraries or xlacc.toml in it; notes and logs are read when named (xlacc doctor FILE.md, --log FILE)",
        skipped=True,
    )


def _source_sections(inputs: _Inputs) -> list[Section]:
    from xlacc.doctor.rules import source

    if not inputs.sources and not inputs.documents:
        return []
    analysis = source.analyze(inputs.sources)
    sections = []
    documents = dict(inputs.documents)
    groups = list(dict.fromkeys([name for name, _ in inputs.documents] + [f.group for f in inputs.sources]))
    for group in groups:
        findings = list(analysis.by_group.get(group, []))
        if group in documents:
            findings += _document_findings(group, documents[group])
        detail = analysis.summaries.get(group, "") or ("no code blocks" if group in documents else "")
        sections.append(Section(f"{'file' if group in documents else 'source'} {group}", detail, findings))
    if inputs.sources:
        sections.append(Section("entry points vs registrations and calls", "", analysis.cross))
    return sections


CONFLICT_MARKER = re.compile(r"^<<<<<<< yours$", re.MULTILINE)


def _project_section(spec) -> Section:
    """A project whose spec moved on from its generated code, or holds unresolved merge conflicts."""
    from xlacc.doctor.findings import make

    findings = []
    for change in spec.signature_changes():
        findings.append(make("spec-changed", f"{spec.root / 'xlacc.toml'}: {change} changed since xlacc generated the code"))
    for path in sorted(spec.generated.files) if spec.generated else []:
        try:
            text = (spec.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if CONFLICT_MARKER.search(text):
            line = text.count("\n", 0, CONFLICT_MARKER.search(text).start()) + 1
            findings.append(make("update-conflict", f"{spec.root / path}:{line}: `<<<<<<< yours` left by `xlacc update`"))
    return Section(f"project {spec.name}", "the spec matches its generated code" if not findings else "", findings)


def _document_findings(name: str, content: str) -> list:
    """A note or log: the text rules over all of it; the HLO check per block when it has blocks."""
    from xlacc.doctor.rules import source, text

    blocks = source.code_blocks(name, content)
    findings = text.diagnose_text(content, hlo=not blocks)
    for block in blocks:
        if block.kind == "text":
            findings += text.diagnose_hlo(block.text, where=block.name)
    return findings


def _library_sections(request: DoctorRequest, inputs: _Inputs) -> list[Section]:
    from xlacc.doctor.rules import library

    paths = list(inputs.libraries) + ([request.so] if request.so else [])
    if request.so is not None and not request.so.exists():
        raise UsageError(f"--so {request.so}: no such file")
    symbols, symbols_from = request.symbols, "--symbol"
    specs = inputs.specs or ([owner] if request.so and (owner := _owning_spec(request.so)) else [])
    if not symbols and specs:
        symbols, symbols_from = list(specs[0].entry_points), "xlacc.toml"
    sections = [Section(f"shared object {p}", "not built yet: run `xlacc build`", skipped=True) for p in inputs.unbuilt if p not in paths]
    for path in dict.fromkeys(paths):
        sections += library.check_library(path, symbols, request.arch, symbols_from)
    return sections


def _owning_spec(library: Path):
    """The project whose build this library is (``PROJECT/build/libNAME.so``), if any."""
    from xlacc import spec as spec_module

    for directory in (library.resolve().parent, library.resolve().parent.parent):
        if (directory / spec_module.SPEC_FILE).is_file():
            try:
                spec = spec_module.load(directory)
            except UsageError:
                return None
            return spec if spec.library.resolve() == library.resolve() else None
    return None


def _dump_section(directory: Path) -> Section:
    """The compiled modules of an --xla_dump_to folder: custom calls fed by all-gathers."""
    modules = hlo_sharding.dump_modules(directory)
    return Section(f"xla dump {directory}", f"{len(modules)} compiled modules", hlo_sharding.diagnose_dump(directory))


def _log_section(log: str) -> Section:
    from xlacc.doctor.rules import text

    if log == "-":
        content, name = sys.stdin.read(), "stdin"
    else:
        content, name = _read(Path(log)), log
    findings = text.diagnose_text(content)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    return Section(f"log {name}", f"{lines} lines" + ("" if findings else "; no known error text"), findings)


def _command_section(argv: list[str]) -> tuple[Section, dict, str]:
    from xlacc.doctor.rules import runtime

    env, dump, cleanup = hlo_sharding.dump_environment()  # the command's compiled HLO, for custom-call-replicated
    with cleanup:
        result = runtime.run(argv, env=env)
        findings = runtime.diagnose_output(result.output, result.returncode) + hlo_sharding.diagnose_dump(dump)
    if result.returncode is None:
        ended = f"timed out after {result.seconds:.0f} s"
    elif result.signal_name:
        ended = f"killed by {result.signal_name} after {result.seconds:.1f} s"
    else:
        ended = f"exit {result.returncode} in {result.seconds:.1f} s"
    failed = result.returncode != 0
    section = Section(f"command {shlex.join(argv)}", ended, findings, failed=failed)
    data = {
        "argv": argv,
        "returncode": result.returncode,
        "signal": result.signal_name,
        "seconds": round(result.seconds, 3),
        "output_tail": result.tail(),
    }
    tail = f"last lines of its output:\n{result.tail()}" if failed and result.output.strip() else ""
    return section, data, tail
