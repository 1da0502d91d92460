"""One verifier of a shared library's entry points and GPU code, for build, run-smoke and doctor.

Is each entry point exported under its plain name (not C++-mangled, not hidden)? Does the fatbin
hold SASS for each GPU arch, or PTX the driver can compile for it? Each answer is a result with,
when it fails, the one finding every command reports for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlacc.commands.doctor.rules import symbols as symbols_rules
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import elf, fatbin

SPEC_FILE = "xlacc.toml"


@dataclass(frozen=True)
class SymbolResult:
    name: str
    status: str  # exported | mangled | hidden | missing
    finding: Finding | None

    @property
    def ok(self) -> bool:
        return self.status == "exported"


@dataclass(frozen=True)
class ArchResult:
    arch: str
    ok: bool
    reason: str
    finding: Finding | None


def symbols(shared, names: list[str] | tuple[str, ...]) -> list[SymbolResult]:
    """Each name looked up in a library read by :func:`xlacc.readers.elf.read_shared_object`."""
    results = []
    for name in names:
        status = elf.find_symbol(shared, name)
        results.append(SymbolResult(name, status.status, symbols_rules.in_library(shared.path, status)))
    return results


def gpu_code(library: Path, archs: list[str], source: str, entries: list | None = None) -> tuple[str, list[ArchResult]]:
    """(what the fatbin holds, one result per arch). ``source`` says where the archs came from
    (``--arch``, ``the visible GPU``, ``[build] archs``); ``entries``: the fatbin, when already read.
    Raises ElfError for an unreadable library."""
    entries = fatbin.read_fatbin(library) if entries is None else entries
    described = fatbin.describe(entries)
    if not entries:
        return described, []
    results = []
    for arch in archs:
        coverage = fatbin.runs_on(entries, arch)
        finding = None if coverage.ok else _arch_finding(library, described, arch, source, coverage.reason)
        results.append(ArchResult(arch, coverage.ok, coverage.reason, finding))
    return described, results


def _arch_finding(library: Path, described: str, arch: str, source: str, reason: str) -> Finding:
    number = fatbin.parse_arch(arch)
    return make(
        "arch-mismatch",
        f"{library} holds {described}; {arch} ({source}) can run none of it: {reason}",
        title=f"no GPU code for {arch}",
        fix=f"Rebuild for it: `xlacc build --arch {arch}` (or add \"{arch}\" to [build] archs in {SPEC_FILE}), or nvcc "
        f"`-gencode arch=compute_{number},code=[sm_{number},compute_{number}]`.",
        likelihood=0.9,
    )
