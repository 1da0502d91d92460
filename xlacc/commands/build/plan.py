"""What a build is asked for and what it will do: the target (sources, flags, where the library goes),
the options of the run, and the plan (command, inputs, cache key)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlacc.commands.build import record as build_record
from xlacc.ground import resources, toolchain
from xlacc.ground.report import Check, Finding
from xlacc.spec import Spec
from xlacc.commands.build.cache import BuildCache

DEFAULT_TIMEOUT_S = 600.0  # --timeout: a paged-attention build for two archs takes 20-30 s on 16 cores
XLACC_INCLUDE = resources.INCLUDE_DIR



@dataclass(frozen=True)
class Target:
    """What to compile, however it was asked for (a project's spec or kernel files)."""

    title: str
    root: Path  # the compiler runs here: paths in its messages are relative to it
    sources: tuple[Path, ...]  # absolute
    output: Path  # absolute
    cache_file: Path
    platform: str
    entry_points: tuple[str, ...] | None  # None: what doctor recognises in the sources, when verifying
    hide_symbols: bool  # -fvisibility=hidden: generated kernels mark their entry points visible
    always_ffi: bool  # add the FFI headers even if no source mentions them
    archs: tuple[str, ...]  # () = auto
    archs_origin: str
    arch_specific: bool = False  # auto archs: each GPU's arch-specific variant (sm_90a)
    ptx: bool = True  # embed PTX of the highest arch next to the SASS
    include_dirs: tuple[Path, ...] = ()  # absolute; the compiler also gets xlacc's own headers
    defines: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    signature_changes: tuple[str, ...] = ()  # what changed in the spec after its code was generated
    conflicts: tuple[str, ...] = ()  # path:line of each conflict `xlacc update` left unresolved
    project: Spec | None = None  # the spec, for a project's build

    @property
    def search_path(self) -> tuple[Path, ...]:
        return (XLACC_INCLUDE, *self.include_dirs)


@dataclass(frozen=True)
class Options:
    force: bool = False
    nvcc: Path | None = None
    ffi_include: Path | None = None
    verbose: bool = False
    show_progress: bool = False
    timeout: float = DEFAULT_TIMEOUT_S


@dataclass
class Plan:
    target: Target
    compiler: toolchain.Compiler
    command: list[str]
    archs: list[str]
    key: str
    cache: BuildCache
    checks: list[Check]
    inputs: tuple[Path, ...]  # the sources and the headers of theirs the key covers
    input_digests: dict[Path, str]  # their text as the key covers it, and when each was written
    record: build_record.Planned | None = None  # what the library was built against, compiled in
    findings: list[Finding] = field(default_factory=list)  # what the sources and the archs say before compiling
