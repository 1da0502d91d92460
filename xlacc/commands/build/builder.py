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

import dataclasses
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from xlacc.commands.doctor.rules import arch_features
from xlacc.commands.doctor.rules import compiler as compiler_output
from xlacc.commands.build.output import library_output
from xlacc.commands.build import record as build_record
from xlacc.commands.new import record as generated
from xlacc.ground import locks, paths, process, resources, toolchain
from xlacc import spec as spec_mod
from xlacc.ground.catalogue import make as make_finding
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Check, Finding, Report
from xlacc.spec import Spec
from xlacc.readers.elf_tables import is_shared_library
from xlacc.spec import drift
from xlacc.commands.build.cache import CACHE_FILE, SHARED_CACHE_ENV, BuildCache, SharedCache, cache_key, digests, read_inputs
from xlacc.commands.build.compiling import (
    FFI_MARKERS,
    clear_leftovers,
    compile_command,
    compile_failure_check,
    compile_library,
    describe_archs,
    not_the_sources,
)
from xlacc.commands.build.plan import DEFAULT_TIMEOUT_S, Options, Plan, Target


SOURCE_PLATFORMS = spec_mod.PLATFORM_OF_SUFFIX






TORCH_COMPAT = "_torch_compat"  # the templates' folder of PyTorch stand-ins (xlacc_torch_compat.h)


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
        arch_specific=spec.build.arch_specific,
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
    clear_leftovers(target.output)
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
    return _result(plan, cached, started, checks + [library] + verify_checks, findings + verify_findings + plan.findings, notes)


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
    outcome = compile_library(plan, options)
    messages = compiler_output.compiler_messages(outcome.output)
    shown = options.verbose and outcome.output.strip()
    notes = [f"{plan.compiler.kind} output:\n{outcome.output.rstrip()}"] if shown else []
    if not outcome.ok:
        not_rejected = not_the_sources(plan, outcome, options.timeout)
        if not_rejected is not None:
            return StepResult([Check("compile", False, not_rejected)], [], notes)
        failure = compile_failure_check(plan, outcome, messages)
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
        archs, why = toolchain.resolve_archs(target.archs or None, arch_specific=target.arch_specific)
        if target.archs:
            why = f"as requested by {target.archs_origin}"
        checks.append(Check("archs", True, f"{describe_archs(archs, target.ptx)}: {why}"))
    record = build_record.plan(target.output, target.cache_file.parent, target.platform, compiler, ffi_dir)
    command = build_record.with_source(compile_command(compiler, target, archs, ffi_dir), record, target.root)
    key = cache_key(inputs, [*command, record.text], compiler, toolchain.ffi_headers_digest(ffi_dir) if ffi_dir else "")
    findings = arch_features.left_out(inputs, archs, in_project=target.project is not None)
    return Plan(target, compiler, command, archs, key, cache, checks, tuple(inputs), digests(inputs), record, findings)


def changed_since_read(plan: Plan) -> list[str]:
    """The inputs whose text is no longer what the cache key covers (saved while the compiler ran:
    the library may hold either text)."""
    try:
        now = digests(read_inputs(plan.target.sources, plan.target.search_path))
    except UsageError:
        now = {}
    return [path.name for path in dict.fromkeys([*plan.input_digests, *now]) if now.get(path) != plan.input_digests.get(path)]


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
