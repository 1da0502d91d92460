"""Checks over a shared library: is it loadable here, are its entry points exported under their
plain names, can the loader find what it needs, does it hold code for the GPU it will run on."""

from __future__ import annotations

from pathlib import Path

from xlacc.doctor.findings import make
from xlacc.doctor.section import Section
from xlacc.errors import UsageError
from xlacc.report import Finding

ELF_KIND_CODES = {
    "not-found": "library-not-found",
    "invalid": "library-invalid",
    "truncated": "library-invalid",
    "wrong-machine": "library-invalid",
}


def check_library(path: Path, symbols: list[str], arch: str | None, symbols_from: str = "--symbol") -> list[Section]:
    from xlacc import elf

    try:
        so = elf.read_shared_object(path)
    except elf.ElfError as exc:
        return [Section(f"shared object {path}", findings=[make(ELF_KIND_CODES[exc.kind], str(exc), likelihood=0.95)])]
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    sections = [
        Section(
            f"shared object {path}",
            f"{so.machine}, {len(so.exported)} exported symbols" + (f", needs {', '.join(so.needed)}" if so.needed else ""),
        ),
        _dependencies(so),
    ]
    sections.extend(_symbols(so, symbols, symbols_from))
    sections.append(_gpu_code(path, arch))
    return sections


def _dependencies(so) -> Section:
    from xlacc import elf

    missing = elf.missing_dependencies(so)
    section = Section("dependencies", f"{len(so.needed)} needed" if so.needed else "none needed")
    if missing:
        where = []
        if so.runpath or so.rpath:
            where.append(f"RUNPATH/RPATH {':'.join(so.runpath or so.rpath)}")
        where.append("LD_LIBRARY_PATH, the ld.so cache and the standard directories")
        section.findings.append(
            make(
                "dependency-missing",
                f"{so.path} needs {', '.join(missing)}, not found on {'; '.join(where)}",
                likelihood=0.9,
            )
        )
    return section


def _symbols(so, symbols: list[str], symbols_from: str) -> list[Section]:
    from xlacc import elf

    if not symbols:
        return [Section("entry points", "none named: pass --symbol NAME (or a project with xlacc.toml)", skipped=True)]
    sections = []
    for name in symbols:
        status = elf.find_symbol(so, name)
        section = Section(f"symbol {name}", f"{status.status} ({symbols_from})")
        finding = _symbol_finding(so, status)
        if finding:
            section.findings.append(finding)
        sections.append(section)
    return sections


def _symbol_finding(so, status) -> Finding | None:
    if status.status == "exported":
        return None
    if status.status == "mangled":
        signature = status.demangled or status.symbol.name
        parameters = signature[signature.find("(") :] if "(" in signature else "(...)"
        return make(
            "symbol-mangled",
            f"{so.path} exports `{status.name}` only as `{status.symbol.name}`, which demangles to `{signature}`",
            fix=f"Declare it `extern \"C\"` so it is exported as `{status.name}`: "
            f"`extern \"C\" void {status.name}{parameters} {{ ... }}` (keep your return type).",
            likelihood=0.9,
        )
    if status.status == "hidden":
        symbol = status.symbol
        shown = f" (as `{status.demangled}`)" if status.demangled else ""
        return make(
            "symbol-hidden",
            f"{so.path} defines `{status.name}`{shown} but not in its dynamic symbol table: "
            f"{symbol.bind.lower()} binding, {symbol.visibility.lower()} visibility",
            likelihood=0.9,
        )
    closest = f"; closest exported: {', '.join(status.closest)}" if status.closest else "; no similar exported name"
    return make("symbol-missing", f"{so.path} has no symbol `{status.name}`{closest}", likelihood=0.9)


def _target_archs(arch: str | None) -> tuple[list[str], str]:
    if arch:
        return [arch], "--arch"
    from xlacc import toolchain

    visible = toolchain.visible_gpu_archs()
    return visible, "the visible GPU"


def _gpu_code(path: Path, arch: str | None) -> Section:
    from xlacc import elf, fatbin

    try:
        entries = fatbin.read_fatbin(path)
    except elf.ElfError as exc:
        return Section("GPU code", findings=[make("library-invalid", str(exc), likelihood=0.8)])
    if arch:
        try:
            fatbin.parse_arch(arch)
        except ValueError as exc:
            raise UsageError(f"--arch {arch}: {exc}") from None
    described = fatbin.describe(entries)
    if not entries:
        return Section("GPU code", f"{described}: a host-only library", skipped=True)
    archs, source = _target_archs(arch)
    if not archs:
        return Section("GPU code", f"{described}; no --arch and no visible GPU: arch check skipped", skipped=True)
    section = Section("GPU code", described)
    for target in archs:
        coverage = fatbin.runs_on(entries, target)
        if coverage.ok:
            section.detail = f"{described}; {coverage.reason}"
            continue
        section.findings.append(
            make(
                "arch-mismatch",
                f"{path} holds {described}; {target} ({source}) can run none of it: {coverage.reason}",
                fix=f"Rebuild for it: `xlacc build --arch {target}`, or nvcc "
                f"`-gencode arch=compute_{fatbin.parse_arch(target)},code=[sm_{fatbin.parse_arch(target)},compute_{fatbin.parse_arch(target)}]`.",
                likelihood=0.9,
            )
        )
    return section
