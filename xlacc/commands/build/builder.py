"""``xlacc build``: compile a project (or kernel files) into a verified shared object.

One path for both: a :class:`Target` says what to compile; :func:`_prepare` finds the toolchain,
the archs and the command and hashes the inputs; a fresh cache skips the compiler; otherwise the
compiler writes a temporary file that replaces the library only on success; then the library's
entry points and GPU code are checked.

The compiler runs in a session of its own (:mod:`xlacc.ground.process`): at the timeout, on Ctrl-C, or
once it has exited (a wrapper may leave a server holding its output), it is stopped with
everything it started, and only a bounded head and tail of its output is kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from xlacc.commands.doctor.rules import compiler as compiler_output
from xlacc.commands.build.output import library_output
from xlacc.commands.build import record as build_record
from xlacc.commands.new import record as generated
from xlacc.ground import locks, paths, process, resources, toolchain
from xlacc import spec as spec_mod
from xlacc.ground.catalogue import make as make_finding
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Check, Finding, Report, console
from xlacc.spec import Spec
from xlacc.readers.elf_tables import is_shared_library
from xlacc.spec import drift

CACHE_FILE = ".xlacc-cache.json"
CACHE_FORMAT = 1
# A folder that builds share (CI, several checkouts, tests): a library is stored there under its
# cache key, which covers the sources, their headers, the command and the compiler, but not where
# the project is; a build with the same key copies it instead of compiling.
SHARED_CACHE_ENV = "XLACC_CACHE_DIR"
SOURCE_PLATFORMS = spec_mod.PLATFORM_OF_SUFFIX
NO_LIBRARY_WRITTEN = "it exited 0 but wrote no shared library (the library there, if any, is kept)"
MAX_SOURCE_BYTES = 64_000_000  # a source or header read for the cache key
MAX_CACHE_FILE_BYTES = 16_000_000  # .xlacc-cache.json, a KEY.log: larger is no cache, not an error

DEFAULT_TIMEOUT_S = 600.0  # --timeout: a paged-attention build for two archs takes 20-30 s on 16 cores
COMPILER_EXIT_GRACE_S = 1.0  # after the compiler exits, how long what it left behind may hold its output
COMPILER_TERM_GRACE_S = 2.0  # between SIGTERM and SIGKILL when it is stopped: nvcc removes its temporaries
COMPILER_HEAD_BYTES = 256 * 1024  # of its output: the first errors...
COMPILER_TAIL_BYTES = 256 * 1024  # ...and the last (the link, the count of errors)
# The compiler could not write (a folder it may not write to, a full disk): not the sources' fault.
# nvcc's words when it cannot run the host compiler it needs (none on PATH, or -ccbin wrong).
NO_HOST_COMPILER = re.compile(r"Failed to preprocess host compiler properties|cannot find compiler '(?:cl|g\+\+|c\+\+)' in PATH", re.IGNORECASE)
WRITE_FAILURE = re.compile(
    r"^\S.*(?:cannot open output file|could not open output file|error writing to|"
    r"No space left on device|Disk quota exceeded|Read-only file system|File too large).*$",
    re.MULTILINE | re.IGNORECASE,
)

NVCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC")
NVCC_HIDE_SYMBOLS = ("-Xcompiler", "-fvisibility=hidden")
NVCC_TRAILING_FLAGS = ("-lineinfo",)
# Each gencode target's cicc and ptxas in a thread of its own (nvcc >= 11.2): on a 16-core host a
# default two-arch paged-attention build took 17.4-20.9 s instead of 24.5-32.0 s (benchmarks/RESULTS.md).
NVCC_PARALLEL_ARCHS = ("--threads", "0")
NVCC_THREADS_SINCE = (11, 2)
HOST_FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC")
HOST_HIDE_SYMBOLS = ("-fvisibility=hidden",)
FFI_MARKERS = (b"xla/ffi", b"xlacc/ffi.h")  # a source that mentions one needs the FFI headers on the include path
# #include "x.h" or <x.h>: followed into the include folders xlacc knows (for the cache key).
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
XLACC_INCLUDE = resources.INCLUDE_DIR
TORCH_COMPAT = "_torch_compat"  # the templates' folder of PyTorch stand-ins (xlacc_torch_compat.h)

# -- what to build ------------------------------------------------------------------------------


@dataclass
class BuildRequest:
    paths: list[Path]
    output: Path | None = None
    symbols: list[str] = field(default_factory=list)
    archs: str | None = None
    platform: str | None = None
    nvcc: Path | None = None
    ffi_include: Path | None = None
    force: bool = False
    verbose: bool = False
    show_progress: bool = False
    no_ptx: bool = False  # SASS only: a GPU without SASS in the library cannot run it
    include_dirs: list[Path] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT_S  # seconds the compiler may run


@dataclass
class BuildResult:
    library: Path
    cached: bool
    command: list[str]
    archs: list[str]
    seconds: float
    checks: list[Check]
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(c.ok is False for c in self.checks) and not any(f.severity == "error" for f in self.findings)


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


# -- entry points -------------------------------------------------------------------------------


def run(request: BuildRequest) -> Report:
    """The CLI entry: a project directory builds from its spec; kernel files with the same flags."""
    timeout = process.check_timeout(request.timeout)
    target = _request_target(request)
    options = Options(request.force, request.nvcc, request.ffi_include, request.verbose, request.show_progress, timeout)
    result = _build(target, options)
    heading = str(request.paths[0]) if target.project is not None and request.paths else target.title  # the folder given
    return Report(
        title=f"xlacc build {heading}",
        checks=result.checks,
        findings=result.findings,
        notes=result.notes,
        data={
            "library": str(result.library),
            "cached": result.cached,
            "command": result.command,
            "archs": result.archs,
        },
    )


def build_spec(
    spec: Spec,
    *,
    force: bool = False,
    archs: tuple[str, ...] | None = None,
    nvcc: Path | None = None,
    ffi_include: Path | None = None,
    verbose: bool = False,
    show_progress: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> BuildResult:
    """Build a project's library (unless the cache is fresh) and verify it."""
    options = Options(force, nvcc, ffi_include, verbose, show_progress, process.check_timeout(timeout))
    return _build(_spec_target(spec, archs=archs), options)


def _pointed_at_the_kernel(findings: list[Finding], why: list[Check]) -> list[Finding]:
    """A compile that failed because the user's launch function no longer takes what the entry
    points pass: the compiler's errors are in xlacc's file, the change is due in the kernel's line."""
    launches = [check.detail for check in why if check.name == "launch function"]
    if not launches:
        return findings
    fix = "Change the launch function at the line named to take the parameters shown (the spec changed what xlacc's entry points pass it), then `xlacc build`."
    return [
        dataclasses.replace(f, evidence="\n".join([*launches, f.evidence]), fix=fix) if f.code == "compile-error" else f
        for f in findings
    ]


def _why_it_failed(spec: Spec | None) -> list[Check]:
    """What a failed compile of a project most likely comes from, when the code says so: a wrapped
    kernel (``[from]``) whose parameters left xlacc.toml behind, or a launch function that does not
    take what a new signature passes it."""
    if spec is None:
        return []
    if spec.origin is not None:
        from xlacc.commands.new import wrap  # lazy: only a wrapped kernel's build reads the kernel's signature

        try:
            wrap.check_spec(spec)
        except UsageError as exc:
            return [Check("wrapped kernel", False, str(exc))]
        return []
    return [Check("launch function", False, mismatch) for mismatch in drift.kernel_launch_mismatches(spec)]


def is_stale(
    spec: Spec, *, archs: tuple[str, ...] | None = None, nvcc: Path | None = None, ffi_include: Path | None = None
) -> bool:
    """Would :func:`build_spec` run the compiler? Cheap: hashes, no compile."""
    plan = _prepare(_spec_target(spec, archs=archs), Options(nvcc=nvcc, ffi_include=ffi_include))
    plan.cache.save()  # keeps a newly learnt compiler version
    return not plan.cache.fresh(plan.target.output, plan.key)


# -- targets ------------------------------------------------------------------------------------


def _spec_target(
    spec: Spec, *, archs: tuple[str, ...] | None, output: Path | None = None, symbols: tuple[str, ...] = (), ptx: bool = True
) -> Target:
    root = spec.root.resolve()
    sources = tuple(s.resolve() for s in spec.source_paths)
    if not sources:
        raise UsageError(f"{root / spec_mod.SPEC_FILE}: [build] names no kernel and no sources: nothing to compile")
    kernel = root / spec.kernel_file
    for source in ((kernel,) if spec.build.kernel else ()) + sources:
        if not source.exists():
            raise UsageError(f"{source}: no such file (a source of {root / spec_mod.SPEC_FILE}{_regenerate_hint(spec, source)})")
    if output is not None:  # -o: inside the project or where the user is
        library = library_output(output, roots=(root, Path.cwd()), sources=sources + (kernel,), origin=f"-o {str(output)!r}")
    elif spec.build.output:
        origin = f"{spec.root / spec_mod.SPEC_FILE}: [build.output] {spec.build.output!r}"
        library = library_output(spec.library, roots=(root,), sources=sources + (kernel,), origin=origin)
    else:
        library = _default_output(spec.library, roots=(root,), sources=sources + (kernel,))
    paths.check_directory(root / "build", f"{root / 'build'} (xlacc's build cache)")
    explicit = archs is not None and len(archs) > 0
    changes = drift.signature_changes(spec)
    return Target(
        title=spec.name,
        root=root,
        sources=sources,
        output=library,
        cache_file=(root / "build" / CACHE_FILE) if output is None else library.parent / CACHE_FILE,
        platform=spec.platform,
        entry_points=tuple(dict.fromkeys(spec.entry_points + tuple(symbols))),
        hide_symbols=True,
        always_ffi=spec.needs_ffi,
        archs=tuple(archs) if explicit else spec.build.archs,
        archs_origin="--arch" if explicit else f"[build] archs in {spec_mod.SPEC_FILE}",
        ptx=spec.build.ptx and ptx,
        # The project root holds the kernel file the generated entry points include; a wrapped
        # kernel also gets xlacc's PyTorch stand-ins, in front of the user's folders.
        include_dirs=(root, *_torch_compat(spec), *(root / d for d in spec.build.include_dirs)),
        defines=spec.build.defines,
        flags=spec.build.flags,
        signature_changes=tuple(changes),
        conflicts=tuple(generated.conflict_markers(spec)),
        project=spec,
    )


def _torch_compat(spec: Spec) -> tuple[Path, ...]:
    """templates/_torch_compat (torch/all.h, ATen/ATen.h... over XLA's buffers) for a project that
    wraps a kernel (`xlacc new --from`), which may be a PyTorch extension's launcher."""
    if spec.origin is None:
        return ()
    return (resources.templates_root() / TORCH_COMPAT,)


def _regenerate_hint(spec: Spec, source: Path) -> str:
    root = spec.root.resolve()
    if source == root / spec.entry_file:
        return "; `xlacc update` writes it again"
    if source == root / spec.kernel_file:
        from xlacc.commands.new import update  # lazy: only a deleted kernel needs update's hint

        return f"; {update.restore_hint(root, spec.kernel_file)}"
    return ""


def _default_output(library: Path, *, roots: tuple[Path, ...], sources: tuple[Path, ...]) -> Path:
    """The library at the path xlacc chose (no ``-o``, no ``[build] output``): what stands there
    and is not a shared library (empty, cut short by a crash) is xlacc's own leftover, and the build
    replaces it. At a path the user chose, :func:`library_output` refuses such a file."""
    if library.is_symlink() or not library.is_file() or is_shared_library(library):
        return library_output(library, roots=roots, sources=sources, origin=str(library))
    leftover = paths.resolve_inside(library, roots, str(library))
    if any(paths.same_file(source, leftover) for source in sources):
        return library_output(library, roots=roots, sources=sources, origin=str(library))
    paths.check_directory(leftover.parent, str(library))
    return leftover


def _check_request(request: BuildRequest) -> None:
    """Flags given a value that names nothing are refused, not read as their default."""
    if request.output is not None and str(request.output) == "-":
        raise UsageError("-o/--library -: xlacc writes the library to a file, not to stdout; name one such as build/libNAME.so")
    if request.archs is not None and not request.archs.strip():
        raise UsageError("--arch takes GPU archs such as sm_80,sm_90; got an empty value")
    if any(not value.replace(",", "").strip() for value in request.symbols):
        raise UsageError("--symbol takes the name of an entry point to verify; got an empty value")


def _request_symbols(values: list[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _request_target(request: BuildRequest) -> Target:
    _check_request(request)
    given = [Path(p) for p in request.paths] or [Path(".")]
    for path in given:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    requested_archs = spec_mod.parse_archs(request.archs) if request.archs is not None else None
    directories = [p for p in given if p.is_dir()]
    if directories:
        if len(given) > 1:
            raise UsageError("give one project directory, or kernel files (.cu, .cc), not both")
        project = spec_mod.load(directories[0])
        if request.include_dirs or request.defines or request.flags:
            raise UsageError("-I, -D and --flag are for kernel files; a project takes them from [build] in its xlacc.toml")
        _check_project_platform(project, request.platform)
        return _spec_target(project, archs=requested_archs, output=request.output, symbols=_request_symbols(request.symbols), ptx=not request.no_ptx)
    return _files_target(given, request, requested_archs)


def _check_project_platform(project: Spec, requested: str | None) -> None:
    """A project's platform is its spec's; --platform may only repeat it."""
    if requested is None or requested == project.platform:
        return
    if requested not in spec_mod.PLATFORMS:
        raise UsageError(f"--platform {requested!r} is not allowed; use one of: {', '.join(spec_mod.PLATFORMS)}")
    spec_file = project.root / spec_mod.SPEC_FILE
    raise UsageError(f"--platform {requested} does not match the project: {spec_file} says platform = {project.platform!r}")


def _files_target(files: list[Path], request: BuildRequest, archs: tuple[str, ...] | None) -> Target:
    for path in files:
        if path.suffix not in SOURCE_PLATFORMS:
            allowed = ", ".join(SOURCE_PLATFORMS)
            raise UsageError(f"{path}: unknown suffix {path.suffix!r}: xlacc builds {allowed} files or a project directory")
    platform = _files_platform(files, request.platform)
    sources = tuple(p.resolve() for p in files)
    default = sources[0].parent / "build" / f"lib{sources[0].stem}.so"
    roots = (Path.cwd(), *dict.fromkeys(s.parent for s in sources))
    if request.output is not None:
        output = library_output(request.output, roots=roots, sources=sources, origin=f"-o {str(request.output)!r}")
    else:
        output = _default_output(default, roots=roots, sources=sources)
    for flag in request.flags:
        problem = spec_mod.flag_problem(flag)
        if problem is not None:
            raise UsageError(f"--flag {flag!r}: {problem}")
    return Target(
        title=", ".join(p.name for p in files),
        root=Path.cwd().resolve(),
        sources=sources,
        output=output,
        cache_file=output.parent / CACHE_FILE,
        platform=platform,
        entry_points=tuple(dict.fromkeys(_request_symbols(request.symbols))) or None,  # None: the ones found in the sources
        hide_symbols=False,  # the user's own files did not opt in to hidden visibility
        always_ffi=False,
        archs=archs or (),
        archs_origin="--arch",
        ptx=not request.no_ptx,
        include_dirs=tuple(Path(d).resolve() for d in request.include_dirs),
        defines=tuple(request.defines),
        flags=tuple(request.flags),
    )


def entry_points_in(sources: tuple[Path, ...]) -> tuple[str, ...]:
    """The entry points doctor recognises in the sources: what a plain build verifies without --symbol."""
    from xlacc.commands.doctor import program  # lazy: parsing C++ costs a project build nothing (its spec names them)
    from xlacc.readers import cxx  # lazy: as above

    parsed = []
    for path in sources:
        try:
            parsed.append(cxx.parse(path.name, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    entries = program.entry_points(parsed)
    return tuple(dict.fromkeys(e.symbol for e in entries if e.exported and not e.internal and not e.captured))


def _files_platform(files: list[Path], requested: str | None) -> str:
    by_suffix = "cuda" if any(SOURCE_PLATFORMS[p.suffix] == "cuda" for p in files) else "cpu"
    if requested is None:
        return by_suffix
    if requested not in spec_mod.PLATFORMS:
        raise UsageError(f"--platform {requested!r} is not allowed; use one of: {', '.join(spec_mod.PLATFORMS)}")
    if requested == "cpu" and by_suffix == "cuda":
        raise UsageError("--platform cpu cannot compile .cu files: use --platform cuda or .cc sources")
    return requested


# -- the build ----------------------------------------------------------------------------------


def _build(target: Target, options: Options) -> BuildResult:
    if target.project is None:  # kernel files built with flags: no project to guard
        return _build_unlocked(target, options)
    with locks.project_lock(target.root, "build"):
        return _build_unlocked(target, options)


def _build_unlocked(target: Target, options: Options) -> BuildResult:
    started = time.perf_counter()
    if target.signature_changes:
        return _stale_result(target, started)
    if target.conflicts:
        return _conflicts_result(target, started)
    plan = _prepare(target, options)
    _clear_leftovers(target.output)
    notes = [f"command (in {target.root}): {shlex.join(plan.command)}"] if options.verbose else []
    cached = not options.force and plan.cache.fresh(target.output, plan.key)
    if cached:
        plan.cache.mark_current(target.output, plan.inputs)
        step = StepResult([Check("compile", True, "up to date (cached; --force rebuilds)")])
    else:
        shared = None if options.force else SharedCache.from_environment()
        unusable = shared.unusable() if shared is not None else None
        if unusable:
            plan.checks.append(Check("shared cache", None, f"${SHARED_CACHE_ENV}={shared.folder} {unusable}: not used"))
            shared = None
        elif shared is not None and shared.read_only():
            plan.checks.append(Check("shared cache", None, f"${SHARED_CACHE_ENV}={shared.folder} is read-only: libraries are copied from it, none stored"))
        step = _copy_step(plan, shared) if shared is not None else None
        if step is None:
            step = _compile_step(plan, options)
            if step.ok and step.recorded and shared is not None:
                shared.store(plan.key, target.output, step.compiler_output)
    checks, findings, notes = plan.checks + step.checks, step.findings, notes + step.notes
    if not step.ok:
        plan.cache.save()
        why = _why_it_failed(target.project)
        return _result(plan, False, started, checks + why, _pointed_at_the_kernel(findings, why), notes)
    verify_checks, verify_findings = _verify(plan)
    plan.cache.save()
    library = Check("library", True, paths.shown(target.output, Path.cwd().resolve()))
    return _result(plan, cached, started, checks + [library] + verify_checks, findings + verify_findings, notes)


def _stale_result(target: Target, started: float) -> BuildResult:
    """The spec and the generated code disagree: compiling would build the old signature."""
    changes = "; ".join(target.signature_changes)
    check = Check("spec", False, f"{spec_mod.SPEC_FILE} changed since xlacc generated the code ({changes}): run `xlacc update`")
    from xlacc.commands.doctor.rules import project as project_rules  # lazy: it reads Python; only a stale spec needs it

    findings = project_rules.drift_findings(target.project, list(target.signature_changes), [])
    return BuildResult(target.output, False, [], [], time.perf_counter() - started, [check], findings)


def _conflicts_result(target: Target, started: float) -> BuildResult:
    """`xlacc update` left conflicts unresolved: the code would not compile, or not as either side meant."""
    findings = generated.marker_findings(target.project, list(target.conflicts))
    check = Check("conflicts", False, f"unresolved in {', '.join(target.conflicts)}: edit each marked region, then build")
    return BuildResult(target.output, False, [], [], time.perf_counter() - started, [check], findings)


def _verify(plan: Plan) -> tuple[list[Check], list[Finding]]:
    """:func:`verify_library`, or what it found last time while the library is the same file
    (a no-op build then reads no ELF at all). Only a clean verification is remembered."""
    target = plan.target
    archs = plan.archs if target.platform == "cuda" else None
    question = {"entry_points": "found" if target.entry_points is None else list(target.entry_points), "archs": archs}
    remembered = plan.cache.verification(target.output, question)
    if remembered is not None:
        return remembered, []
    entry_points = entry_points_in(target.sources) if target.entry_points is None else target.entry_points
    checks, findings = verify_library(target.output, entry_points, archs)
    if not entry_points:
        checks.insert(0, Check("symbols", None, "none found in the sources: pass --symbol NAME to verify an entry point"))
    if not findings and all(c.ok is not False for c in checks):
        plan.cache.remember_verification(target.output, question, checks)
    return checks, findings


@dataclass
class StepResult:
    checks: list[Check]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compiler_output: str = ""
    recorded: bool = True  # the library is the one the cache key names

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)


def _compile_step(plan: Plan, options: Options) -> StepResult:
    """Compile, record the new key on success, and turn the compiler's output into checks."""
    outcome = _compile(plan, options)
    messages = compiler_output.compiler_messages(outcome.output)
    shown = options.verbose and outcome.output.strip()
    notes = [f"{plan.compiler.kind} output:\n{outcome.output.rstrip()}"] if shown else []
    if not outcome.ok:
        not_rejected = _not_the_sources(plan, outcome, options.timeout)
        if not_rejected is not None:
            return StepResult([Check("compile", False, not_rejected)], [], notes)
        failure = _compile_failure_check(plan, outcome, messages)
        stand_ins = next((d for d in plan.target.include_dirs if d.name == TORCH_COMPAT), None)
        findings = compiler_output.include_findings(outcome.output, plan.target.search_path, stand_ins)
        findings += [compiler_output.compile_error_finding(plan.compiler.kind, plan.target.title, messages, outcome.output)]
        findings += compiler_output.link_diagnoses(plan.compiler.kind, plan.command, outcome.output)
        return StepResult([failure], findings, notes)
    changed = changed_since_read(plan)
    if changed:  # neither text's library: not recorded, not shared, built again next time
        detail = f"compiled in {outcome.seconds:.2f} s, but {', '.join(changed)} changed while it compiled: `xlacc build` again builds what is saved now"
        return StepResult([Check("compile", None, detail)], _warnings(plan, messages), notes, recorded=False)
    plan.cache.record(plan.target.output, plan.key, plan.command, plan.archs)
    return StepResult([Check("compile", True, f"compiled in {outcome.seconds:.2f} s")], _warnings(plan, messages), notes, outcome.output)


def _copy_step(plan: Plan, shared: SharedCache) -> StepResult | None:
    """The library from the shared cache, with the warnings its compiler printed then; None when
    the cache does not hold it."""
    output = shared.copy(plan.key, plan.target.output, plan.target.entry_points)
    if output is None:
        return None
    plan.cache.record(plan.target.output, plan.key, plan.command, plan.archs)
    detail = f"copied from ${SHARED_CACHE_ENV} ({shared.folder}): built before from the same sources, flags and compiler"
    return StepResult([Check("compile", True, detail)], _warnings(plan, compiler_output.compiler_messages(output)), [], output)


def _warnings(plan: Plan, messages: compiler_output.CompilerMessages) -> list[Finding]:
    return [compiler_output.warnings_finding(plan.compiler.kind, plan.target.title, messages.warnings)] if messages.warnings else []


def _result(plan: Plan, cached: bool, started: float, checks, findings, notes) -> BuildResult:
    return BuildResult(
        library=plan.target.output,
        cached=cached,
        command=plan.command,
        archs=plan.archs,
        seconds=time.perf_counter() - started,
        checks=checks,
        findings=findings,
        notes=notes,
    )


def _prepare(target: Target, options: Options) -> Plan:
    """Toolchain, archs, command line and cache key: everything short of compiling."""
    inputs = read_inputs(target.sources, target.search_path)
    cache = BuildCache.load(target.cache_file)
    checks: list[Check] = []
    if target.platform == "cuda":
        compiler = toolchain.find_nvcc(options.nvcc, versions=cache.compilers)
    else:
        compiler = toolchain.find_host_cxx(versions=cache.compilers)
    checks.append(Check("toolchain", True, compiler.describe()))
    ffi_dir = None
    if target.always_ffi or any(marker in data for data in inputs.values() for marker in FFI_MARKERS):
        ffi_dir = toolchain.ffi_include_dir(options.ffi_include)
        checks.append(Check("ffi headers", True, str(ffi_dir)))
    archs: list[str] = []
    if target.platform == "cuda":
        archs, why = toolchain.resolve_archs(target.archs or None)
        if target.archs:
            why = f"as requested by {target.archs_origin}"
        checks.append(Check("archs", True, f"{describe_archs(archs, target.ptx)}: {why}"))
    record = build_record.plan(target.output, target.cache_file.parent, target.platform, compiler, ffi_dir)
    command = build_record.with_source(compile_command(compiler, target, archs, ffi_dir), record, target.root)
    key = cache_key(inputs, [*command, record.text], compiler, toolchain.ffi_headers_digest(ffi_dir) if ffi_dir else "")
    return Plan(target, compiler, command, archs, key, cache, checks, tuple(inputs), digests(inputs), record)


def digests(inputs: dict[Path, bytes]) -> dict[Path, str]:
    """Each input's text and the time it was last written: a save undone while the compiler ran
    leaves the text as it was, not the time."""
    return {path: f"{hashlib.sha256(data).hexdigest()} {(_file_stamp(path) or [0])[0]}" for path, data in inputs.items()}


def changed_since_read(plan: Plan) -> list[str]:
    """The inputs whose text is no longer what the cache key covers (saved while the compiler ran:
    the library may hold either text)."""
    try:
        now = digests(read_inputs(plan.target.sources, plan.target.search_path))
    except UsageError:
        now = {}
    return [path.name for path in dict.fromkeys([*plan.input_digests, *now]) if now.get(path) != plan.input_digests.get(path)]


def gencode_flags(archs: list[str], ptx: bool = True) -> list[str]:
    """SASS for every arch, and (unless ``ptx`` is off) PTX of the highest so newer GPUs can JIT it."""
    ptx_arch = _ptx_arch(archs) if ptx else None
    flags = []
    for arch in archs:
        virtual = "compute_" + arch.split("_", 1)[1]
        code = f"[{arch},{virtual}]" if arch == ptx_arch else arch
        flags += ["-gencode", f"arch={virtual},code={code}"]
    return flags


def _ptx_arch(archs: list[str]) -> str:
    # An arch-specific PTX (compute_90a) runs only on that GPU: prefer the portable one.
    return max(archs, key=lambda a: (toolchain.arch_number(a), not a.endswith("a")))


def describe_archs(archs: list[str], ptx: bool = True) -> str:
    if not ptx:
        return f"{', '.join(archs)} (SASS only, no PTX)"
    return f"{', '.join(archs)} + PTX compute_{_ptx_arch(archs).split('_', 1)[1]}"


def compile_command(compiler: toolchain.Compiler, target: Target, archs: list[str], ffi_dir: Path | None) -> list[str]:
    folders = [str(XLACC_INCLUDE), *(paths.shown(d, target.root) for d in target.include_dirs), *([str(ffi_dir)] if ffi_dir else [])]
    include = [arg for folder in folders for arg in ("-I", folder)]
    defines = [f"-D{d}" for d in target.defines]
    sources = [paths.shown(s, target.root) for s in target.sources]
    output = ["-o", paths.shown(target.output, target.root)]
    if compiler.kind == "nvcc":
        hide = list(NVCC_HIDE_SYMBOLS) if target.hide_symbols else []
        parallel = list(NVCC_PARALLEL_ARCHS) if _archs_compile_in_parallel(compiler, archs, target.flags) else []
        flags = [*NVCC_FLAGS, *hide, *gencode_flags(archs, target.ptx), *parallel, *include, *defines, *NVCC_TRAILING_FLAGS, *target.flags]
    else:
        hide = list(HOST_HIDE_SYMBOLS) if target.hide_symbols else []
        flags = [*HOST_FLAGS, *hide, *include, *defines, *target.flags]
    return [*compiler.argv, *flags, *sources, *output]


def _archs_compile_in_parallel(compiler: toolchain.Compiler, archs: list[str], user_flags: tuple[str, ...]) -> bool:
    """Several archs, an nvcc that has --threads, and no thread count of the user's own."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", compiler.version)[:2])
    chosen = any(flag in ("-t", "--threads") or flag.startswith(("-t=", "--threads=")) for flag in user_flags)
    return len(archs) > 1 and numbers >= NVCC_THREADS_SINCE and not chosen


# -- inputs and the cache -----------------------------------------------------------------------


def read_inputs(sources: tuple[Path, ...], search_path: tuple[Path, ...] = ()) -> dict[Path, bytes]:
    """The sources and every header they include that sits next to its includer or in one of
    ``search_path`` (xlacc's headers, the project, its include_dirs): what the cache key covers."""
    inputs: dict[Path, bytes] = {}
    pending = list(sources)
    while pending:
        path = pending.pop(0)
        if path in inputs:
            continue
        try:
            inputs[path] = paths.read_user_file(path, MAX_SOURCE_BYTES)
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file") from None
        for quote, name in INCLUDE.findall(inputs[path].decode("utf-8", errors="replace")):
            folders = ((path.parent,) if quote == '"' else ()) + search_path
            header = next((d / name for d in folders if (d / name).exists() and not (d / name).is_dir()), None)
            if header is not None and header.resolve() not in inputs:
                pending.append(header.resolve())
    return inputs


def cache_key(inputs: dict[Path, bytes], command: list[str], compiler: toolchain.Compiler, ffi_digest: str) -> str:
    digest = hashlib.sha256()
    for part in (json.dumps(command), compiler.kind, compiler.version, ffi_digest):
        digest.update(part.encode() + b"\0")
    for path, data in inputs.items():
        digest.update(path.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def _file_stamp(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_mtime_ns, stat.st_size]


@dataclass
class BuildCache:
    """``.xlacc-cache.json``: per library the key it was built from; the compilers' versions."""

    path: Path
    libraries: dict[str, dict] = field(default_factory=dict)
    compilers: toolchain.VersionMemo = field(default_factory=dict)
    _loaded: str = field(default="", repr=False, compare=False)

    @classmethod
    def load(cls, path: Path) -> BuildCache:
        """The cache in ``path``; an empty one when it cannot be read (missing, damaged, not a
        regular file, oversized): that only costs a compile."""
        try:
            raw = json.loads(paths.read_user_file(path, MAX_CACHE_FILE_BYTES))
        except (OSError, ValueError, UsageError):
            return cls(path)
        if not isinstance(raw, dict) or raw.get("format") != CACHE_FORMAT:
            return cls(path)
        cache = cls(path, _well_formed(raw.get("libraries"), _library_entry), _well_formed(raw.get("compilers"), _compiler_entry))
        cache._loaded = cache._serialize()
        return cache

    def _name(self, library: Path) -> str:
        return os.path.relpath(library, self.path.parent)

    def fresh(self, library: Path, key: str) -> bool:
        entry = self.libraries.get(self._name(library))
        return bool(entry) and entry.get("key") == key and entry.get("stamp") == _file_stamp(library)

    def record(self, library: Path, key: str, command: list[str], archs: list[str]) -> None:
        self.libraries[self._name(library)] = {
            "key": key,
            "stamp": _file_stamp(library),
            "command": command,
            "archs": archs,
        }

    def mark_current(self, library: Path, inputs: tuple[Path, ...]) -> None:
        """A fresh library older than an input (touched, or edited and put back): given the time of
        now, so that a newer source means a stale library to whoever compares times (doctor, the
        generated package), and its entry the new stamp."""
        stamp = _file_stamp(library)
        if stamp is None or not any((_file_stamp(path) or [0])[0] > stamp[0] for path in inputs):
            return
        with contextlib.suppress(OSError):
            os.utime(library)
        entry = self.libraries.get(self._name(library))
        if entry is not None:
            entry["stamp"] = _file_stamp(library)

    def verification(self, library: Path, question: dict) -> list[Check] | None:
        entry = self.libraries.get(self._name(library)) or {}
        verified = entry.get("verified") or {}
        if verified.get("question") != question or entry.get("stamp") != _file_stamp(library):
            return None
        return [Check(name, ok, detail) for name, ok, detail in verified["checks"]]

    def remember_verification(self, library: Path, question: dict, checks: list[Check]) -> None:
        entry = self.libraries.get(self._name(library))
        if entry is not None and entry.get("stamp") == _file_stamp(library):
            entry["verified"] = {"question": question, "checks": [[c.name, c.ok, c.detail] for c in checks]}

    def _serialize(self) -> str:
        body = {"format": CACHE_FORMAT, "libraries": self.libraries, "compilers": self.compilers}
        return json.dumps(body, indent=1, sort_keys=True)

    def save(self) -> None:
        text = self._serialize()
        if text == self._loaded:
            return
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError:  # a cache that cannot be written only costs a rebuild
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            return
        self._loaded = text


def _well_formed(table: Any, valid: Callable[[dict], bool]) -> dict[str, dict]:
    """A cache table's entries of the shape xlacc writes; any other (a list, a string, a damaged
    entry: a file edited by hand or cut short) is left out, and costs only a compile."""
    if not isinstance(table, dict):
        return {}
    return {name: entry for name, entry in table.items() if isinstance(entry, dict) and valid(entry)}


def _is_stamp(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in value)


def _library_entry(entry: dict) -> bool:
    verified = entry.get("verified", {"question": None, "checks": []})
    checks = verified.get("checks") if isinstance(verified, dict) else None
    return (
        isinstance(entry.get("key"), str)
        and _is_stamp(entry.get("stamp"))
        and isinstance(checks, list)
        and all(isinstance(c, list) and len(c) == 3 and isinstance(c[0], str) and c[1] in (True, False, None) and isinstance(c[2], str) for c in checks)
    )


def _compiler_entry(entry: dict) -> bool:
    return _is_stamp(entry.get("stamp")) and isinstance(entry.get("version"), str)


@dataclass(frozen=True)
class SharedCache:
    """``$XLACC_CACHE_DIR``: ``KEY.so`` and the compiler's output ``KEY.log`` per library. Written
    through a temporary file and a rename, so that builds running at once never see half a file."""

    folder: Path

    @classmethod
    def from_environment(cls) -> SharedCache | None:
        folder = os.environ.get(SHARED_CACHE_ENV, "").strip()
        return cls(Path(folder).expanduser()) if folder else None

    def unusable(self) -> str | None:
        """Why the folder cannot give libraries (it is a file, or not readable); None when it can
        (a folder that does not exist yet is made by the first store)."""
        if not self.folder.exists():
            return None
        if not self.folder.is_dir():
            return "is a file, not a folder"
        if not os.access(self.folder, os.R_OK | os.X_OK):
            return "is a folder xlacc cannot read"
        return None

    def read_only(self) -> bool:
        """A cache CI filled and mounted read-only: libraries are copied from it, none stored."""
        return self.folder.is_dir() and not os.access(self.folder, os.W_OK)

    def copy(self, key: str, library: Path, entry_points: tuple[str, ...] = ()) -> str | None:
        """Put the stored library at ``library``; its compiler output, or None if none is stored.
        A damaged entry (a log that is no regular file or too large, a stored file that is no
        shared library or exports not every entry point) is dropped, and never replaces the
        library there."""
        output = self._stored_output(key)
        if output is None:
            return None
        paths.make_directory(library.parent)
        temporary = temporary_output(library)
        try:
            if not self._copy_library(key, temporary) or not _exports_all(temporary, entry_points):
                self._drop(key)
                return None
            os.replace(temporary, library)
        except OSError:
            return None
        finally:
            temporary.unlink(missing_ok=True)
        return output

    def _stored_output(self, key: str) -> str | None:
        """``KEY.log``, whose presence marks an entry whole; None when there is none, or when it
        cannot be read (then the entry is dropped)."""
        try:
            data = paths.read_user_file(self.folder / f"{key}.log", MAX_CACHE_FILE_BYTES)
        except FileNotFoundError:
            return None
        except (OSError, UsageError):
            self._drop(key)
            return None
        return data.decode("utf-8", errors="replace")

    def _copy_library(self, key: str, destination: Path) -> bool:
        """``KEY.so`` copied to ``destination``; False when it is no shared library (a pipe, garbage, cut short)."""
        stored = self.folder / f"{key}.so"
        if not stat.S_ISREG(os.stat(stored).st_mode):
            return False
        shutil.copyfile(stored, destination)
        return _not_a_library(destination) is None

    def _drop(self, key: str) -> None:
        for name in (f"{key}.log", f"{key}.so"):  # the log first: it marks the pair whole
            with contextlib.suppress(OSError):
                (self.folder / name).unlink()

    def store(self, key: str, library: Path, compiler_output: str) -> None:
        """Keep a copy; a cache that cannot be written only costs a later build its compile."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._write(f"{key}.so", lambda path: shutil.copyfile(library, path))
            self._write(f"{key}.log", lambda path: path.write_text(compiler_output, encoding="utf-8"))  # last: it marks the pair whole
        except OSError:
            return

    def _write(self, name: str, write) -> None:
        temporary = self.folder / f".{name}.{os.getpid()}.tmp"
        try:
            write(temporary)
            os.replace(temporary, self.folder / name)
        finally:
            temporary.unlink(missing_ok=True)


# -- compiling ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    returncode: int | None  # None: stopped at the timeout
    output: str
    seconds: float
    not_a_library: str = ""  # it exited 0, and this says what it wrote instead of a library

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def temporary_output(library: Path) -> Path:
    """Where the compiler writes before the rename; the pid lets a later build clear leftovers."""
    return library.with_name(f".{library.name}.{os.getpid()}.tmp")


def _clear_leftovers(library: Path) -> None:
    """Remove temporary outputs of builds that were killed (their process is gone)."""
    for leftover in library.parent.glob(f".{library.name}.*.tmp"):
        pid = leftover.name[len(library.name) + 2 : -len(".tmp")]
        if pid.isdigit() and not paths.process_alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _compile(plan: Plan, options: Options) -> CompileOutcome:
    """Run the compiler into a temporary file; replace the library only when it succeeded."""
    library = plan.target.output
    paths.make_directory(library.parent)
    temporary = temporary_output(library)
    command = plan.command[:-1] + [str(temporary)]
    output = process.BoundedOutput(COMPILER_HEAD_BYTES, COMPILER_TAIL_BYTES)
    started = time.perf_counter()
    try:
        if plan.record is not None:
            build_record.write_source(plan.record)
        with _progress(f"compiling {plan.target.title} with {plan.compiler.kind}", options.show_progress):
            ended = process.run_in_session(
                command, options.timeout, output, cwd=plan.target.root, exit_grace=COMPILER_EXIT_GRACE_S, term_grace=COMPILER_TERM_GRACE_S
            )
        text = paths.for_user_in(output.text().replace(str(temporary), str(library)), plan.target.root)
        problem = _not_a_library(temporary) if ended.returncode == 0 else None
        ok = ended.returncode == 0 and problem is None
        if ok:
            os.replace(temporary, library)
        wrote = _wrote_no_library(problem) if problem is not None else ""
        return CompileOutcome(ok, ended.returncode, text + (f"\n{wrote}" if wrote else ""), time.perf_counter() - started, wrote)
    except OSError as exc:
        return CompileOutcome(False, -1, f"{plan.compiler.path}: {exc.strerror or exc}", time.perf_counter() - started)
    finally:
        temporary.unlink(missing_ok=True)


def _exports_all(path: Path, entry_points: tuple[str, ...]) -> bool:
    """Whether the library at ``path`` exports every entry point (a stored copy that does not is
    not the one its key names)."""
    if not entry_points:
        return True
    from xlacc.readers import elf  # lazy: pyelftools' import; a no-op build reads no library

    try:
        exported = elf.read_shared_object(path).exported
    except elf.ElfError:
        return False
    return all(name in exported for name in entry_points)


def _not_a_library(path: Path) -> str | None:
    """Why the file a compiler (or the shared cache) wrote is not a shared library xlacc may put in
    place, "" when there is no file; None when it is one (one built for another machine too:
    verification says so)."""
    from xlacc.readers import elf  # lazy: pyelftools' import; a no-op build reads no library

    try:
        elf.read_shared_object(path)
    except elf.ElfError as exc:
        if exc.kind == "wrong-machine":
            return None
        return "" if exc.kind == "not-found" else str(exc).removeprefix(f"{path}: ")
    return None


def _wrote_no_library(problem: str) -> str:
    if not problem:
        return NO_LIBRARY_WRITTEN
    return f"it exited 0, but the file it wrote is not a shared library: {problem}; the library there, if any, is kept"


@contextmanager
def _progress(message: str, enabled: bool) -> Iterator[None]:
    if not enabled or not sys.stderr.isatty():
        yield
        return
    with console(stderr=True).status(Elapsed(message)):
        yield


class Elapsed:
    """A spinner's text with the seconds since it started: rich renders it again on every refresh."""

    def __init__(self, message: str):
        self.message = message
        self.started = time.monotonic()

    def __rich__(self) -> str:
        return f"{self.message} ({time.monotonic() - self.started:.0f} s)"


# -- compiler messages --------------------------------------------------------------------------


def _not_the_sources(plan: Plan, outcome: CompileOutcome, timeout: float) -> str | None:
    """Why a compile failed, in one line, when the sources are not the cause: the compiler ran past
    the timeout, exited 0 without writing a library, or could not write (permissions, a full disk)."""
    compiler = f"{plan.compiler.kind} ({shlex.join(plan.compiler.argv)})"
    if outcome.timed_out:
        return f"{compiler} did not finish in {timeout:g} s: xlacc stopped it and everything it started (--timeout SECONDS allows longer)"
    if outcome.not_a_library:
        return f"{plan.compiler.kind} failed: {outcome.not_a_library}"
    killed = compiler_output.killed_by_signal(plan.compiler.kind, outcome.returncode, outcome.output)
    if killed is not None:
        return killed
    unwritable = WRITE_FAILURE.search(outcome.output)
    if unwritable is not None:
        return f"{plan.compiler.kind} could not write the library, not a compile error: {unwritable.group(0).strip()}"
    if plan.compiler.kind == "nvcc" and NO_HOST_COMPILER.search(outcome.output):
        return "nvcc found no host C++ compiler to run (it compiles host code with g++, c++ or clang++ on PATH, or -ccbin): install g++, not a compile error"
    return None


def _compile_failure_check(plan: Plan, outcome: CompileOutcome, messages: compiler_output.CompilerMessages) -> Check:
    count = len(messages.errors)
    if messages.errors:
        first = messages.errors[0].splitlines()[0]
    else:
        first = f"exit status {outcome.returncode}"
    more = f" (and {count - 1} more)" if count > 1 else ""
    return Check("compile", False, f"{plan.compiler.kind} failed: {first}{more}")


# -- verification -------------------------------------------------------------------------------


def verify_library(
    library: Path, entry_points: tuple[str, ...] | list[str], archs: list[str] | None
) -> tuple[list[Check], list[Finding]]:
    """Are the entry points exported with C linkage, and is there GPU code for every arch?

    ``archs`` None skips the GPU check (a cpu library). The checks are :mod:`xlacc.commands.doctor.rules.verify`'s.
    """
    from xlacc.commands.doctor.rules import verify  # lazy: pyelftools' import; a no-op build verifies nothing
    from xlacc.readers import elf  # lazy: as above

    try:
        shared = elf.read_shared_object(library)
        symbols = verify.symbols(shared, entry_points)
        _, arch_results = verify.gpu_code(library, archs, "[build] archs") if archs is not None else ("", None)
    except elf.ElfError as exc:
        return [Check("library", False, str(exc))], [make_finding("library-unreadable", str(exc))]
    checks = [Check(f"symbol {r.name}", r.ok, "exported with C linkage" if r.ok else r.status) for r in symbols]
    findings = [r.finding for r in symbols if r.finding]
    if arch_results is not None:
        checks += [Check(f"arch {r.arch}", r.ok, r.reason) for r in arch_results] or [Check("gpu code", None, "none in the library (no kernels)")]
        findings += [r.finding for r in arch_results if r.finding]
    return checks, findings
