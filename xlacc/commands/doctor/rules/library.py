"""Checks over a shared library: is it loadable here, are its entry points exported under their
plain names, can the loader find what it needs, does it hold code for the GPU it will run on."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from xlacc.commands.doctor.rules import arch_features, build_record, verify
from xlacc.commands.doctor.section import Section
from xlacc.ground import toolchain
from xlacc.ground.catalogue import make
from xlacc.ground.errors import UsageError
from xlacc.readers import elf, fatbin

ELF_KIND_CODES = {
    "not-found": "library-not-found",
    "invalid": "library-invalid",
    "truncated": "library-invalid",
    "wrong-machine": "library-invalid",
}


def check_library(
    path: Path, symbols: list[str], arch: str | None, symbols_from: str = "--symbol", sources: Mapping[Path, bytes] | None = None
) -> list[Section]:
    """``sources``: the C/C++/CUDA files of the project the library was built from, read against
    the archs it holds (arch_features)."""
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
    sections.append(_gpu_code(path, arch, sources or {}))
    sections.append(build_record.section(path))
    return sections


def _dependencies(so) -> Section:
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
    if not symbols:
        return [Section("entry points", "none named: pass --symbol NAME (or a project with xlacc.toml)", skipped=True)]
    return [
        Section(f"symbol {result.name}", f"{result.status} ({symbols_from})", [result.finding] if result.finding else [])
        for result in verify.symbols(so, symbols)
    ]


def _target_archs(arch: str | None) -> tuple[list[str], str]:
    if arch:
        return [arch], "--arch"

    return toolchain.visible_gpu_archs(), "the visible GPU"


def _gpu_code(path: Path, arch: str | None, sources: Mapping[Path, bytes]) -> Section:
    try:
        entries = fatbin.read_fatbin(path)
        if not entries:
            return Section("GPU code", f"{fatbin.describe(entries)}: a host-only library", skipped=True)
        archs, source = _target_archs(arch)
        described, results = verify.gpu_code(path, archs, source, entries)
    except elf.ElfError as exc:
        return Section("GPU code", findings=[make("library-invalid", str(exc), likelihood=0.8)])
    left_out = arch_features.left_out(sources, [e.label for e in entries if e.kind == "sass"], in_project=True)
    if not archs:
        return Section("GPU code", f"{described}; no --arch and no visible GPU: arch check skipped", left_out, skipped=not left_out)
    section = Section("GPU code", described, [r.finding for r in results if r.finding] + left_out)
    fitting = [r.reason for r in results if r.ok]
    if fitting and not section.findings:
        section.detail = f"{described}; {fitting[0]}"
    return section
