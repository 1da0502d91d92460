"""``xlacc run-smoke``: prove a project's custom call works, each framework in its own child process.

Builds first when the cache is stale, then runs ``xlacc.commands.smoke.harness_jax``,
``harness_torchax`` and/or ``harness_torch_xla`` under a timeout. Their checks (registration, lowering,
numerics, bench) become the report's lines; a crash, a hang or an unexpected exit becomes a failed
check whose output goes through the doctor's rules, so the user reads a diagnosis, not a signal.

Exit codes: 0 every check that could run passed (skipped ones say why: a framework not installed);
1 a check failed, the build failed or a child crashed or hung; 2 usage error; 3 (``EXIT_NEEDS_GPU``)
only for hardware this machine lacks: a cuda project where no GPU is visible (registration and
lowering ran, execution could not).
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from xlacc import spec as spec_mod
from xlacc.commands.build import builder
from xlacc.commands.doctor.rules import build_record, verify
from xlacc.commands.doctor.rules.crash import child_crash
from xlacc.commands.doctor.rules.run import diagnose_output
from xlacc.commands.new import update
from xlacc.commands.smoke.live import LiveChecks
from xlacc.commands.smoke.runner import ChildResult, run_harness
from xlacc.ground import paths, resources, toolchain
from xlacc.ground.errors import ToolchainMissing, UsageError
from xlacc.ground.report import (
    EXIT_NEEDS_GPU,
    EXIT_OK,
    EXIT_PROBLEM,
    Check,
    Finding,
    Report,
    rank,
)

HARNESSES = {
    "jax": "xlacc.commands.smoke.harness_jax",
    "torchax": "xlacc.commands.smoke.harness_torchax",
    "torch-xla": "xlacc.commands.smoke.harness_torch_xla",
}
# Exit codes a harness uses when it ends on its own; anything else is an unexpected end.
HARNESS_EXITS = frozenset({EXIT_OK, EXIT_PROBLEM, EXIT_NEEDS_GPU})
OUTPUT_TAIL_LINES = 20
# A crash prints the Python stack of the call that crashed (faulthandler), for the diagnosis.
CHILD_ENV = {"PYTHONFAULTHANDLER": "1"}
# A finding the harness made from what it saw beats the same code guessed from output text.
CHILD_FINDING_LIKELIHOOD = 0.9
# What PYTHONFAULTHANDLER prints first when a signal ends the child: the innermost frame.
FAULT_HANDLER_FRAME = re.compile(
    r'^(?:Current thread|Thread) 0x[0-9a-f]+ (?:\[[^\]]*\] )?\(most recent call first\):\n  File "(?P<path>[^"\n]+)", line (?P<line>\d+) in (?P<function>\S+)',
    re.MULTILINE,
)
XLACC_PACKAGE = resources.PACKAGE_DIR
# The harnesses check jax's registries themselves: where one found what is wrong with the
# registration, the text rules' guesses at it from the same run's output are noise.
REGISTRATION_MEASURED = frozenset({"platform-name", "api-version-mismatch", "api-version-invalid", "target-not-registered"})
REGISTRATION_GUESSES = REGISTRATION_MEASURED | {"ffi-api-skew", "ld-preload"}
MAX_SIZE = 2**31 - 1  # element counts a kernel indexes with int
HEADER_PATTERNS = ("*.h", "*.hpp", "*.cuh", "*.inc")
MAX_DEVICES = 64  # 64 host devices shard in 3 s; 100,000 took minutes and gigabytes
# What each framework's harness imports, and the install that brings it (torch-xla's numerics run
# the program torch_xla emits through jaxlib, so it needs jax too).
FRAMEWORK_PACKAGES = {
    "jax": (("jax", "jaxlib"), "pip install -e '.[jax]'"),
    "torchax": (("torchax", "torch", "jax"), "pip install -e '.[torchax]'"),
    "torch-xla": (("torch", "torch_xla", "jax"), "pip install -e '.[jax,torch-xla]'"),
}


@dataclass
class SmokeRequest:
    project: Path
    framework: str | None
    sizes: list[int] | None
    seed: int
    rtol: float | None
    atol: float | None
    timeout: float
    bench: bool
    devices: int | None = None  # shard over N devices; None: every GPU when there are several
    live: LiveChecks | None = None  # prints each check as it finishes (the CLI's text output)


def run(request: SmokeRequest) -> Report:
    validate(request)
    spec = spec_mod.load(request.project)
    check_reference(spec)
    frameworks = select_frameworks(spec, request.framework)
    report = Report(title=f"run-smoke {spec.name} ({', '.join(frameworks)}, {spec.platform})")
    if request.live is not None:
        request.live.watch(report)
    report.data.update(seed=request.seed, sizes=request.sizes, bench={})
    if build_if_stale(spec, report, request.timeout):
        outcomes = [run_framework(spec, framework, request, report, prefixed=len(frameworks) > 1) for framework in frameworks]
        if not report.failed and EXIT_NEEDS_GPU in outcomes:
            report.exit_code = EXIT_NEEDS_GPU
    report.notes.append(f"inputs from seed {request.seed} (repeat with --seed {request.seed})")
    report.data["diagnosis"] = [f.to_json() for f in rank(report.findings)]
    return report


def check_reference(spec: spec_mod.Spec) -> None:
    """run-smoke measures the op against the reference: without its file, nothing can be compared."""
    if not (spec.root / spec.reference_file).is_file():
        raise UsageError(f"{spec.reference_file}: no such file (run-smoke checks the op against it); {update.restore_hint(spec.root, spec.reference_file)}")


def select_frameworks(spec: spec_mod.Spec, requested: str | None) -> list[str]:
    if requested is None:
        return list(spec.frameworks)
    if requested not in spec_mod.FRAMEWORKS:
        raise UsageError(f"unknown framework {requested!r}: use one of {', '.join(spec_mod.FRAMEWORKS)}")
    if requested not in spec.frameworks:
        raise UsageError(
            f"{spec.name} is not generated for {requested} (op.frameworks = {list(spec.frameworks)} in {spec.root / spec_mod.SPEC_FILE})"
        )
    return [requested]


def validate(request: SmokeRequest) -> None:
    """Numbers a run can trust: finite tolerances and timeout, sizes a kernel can take."""
    if request.sizes is not None:
        if not request.sizes:
            raise UsageError("--sizes needs at least one element count, such as 1,1000")
        bad = next((size for size in request.sizes if not 1 <= size <= MAX_SIZE), None)
        if bad is not None:
            raise UsageError(f"--sizes takes element counts from 1 to {MAX_SIZE}; got {bad}")
    if not (math.isfinite(request.timeout) and request.timeout > 0):
        raise UsageError(f"--timeout takes a finite number of seconds above 0; got {request.timeout}")
    if request.devices is not None and not 1 <= request.devices <= MAX_DEVICES:
        raise UsageError(f"--devices takes 1 to {MAX_DEVICES} (the GPUs of one host, or host devices of a cpu project), got {request.devices}")
    for flag, value in (("--rtol", request.rtol), ("--atol", request.atol)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise UsageError(f"{flag} takes a finite number >= 0; got {value}")
    if request.seed < 0:
        raise UsageError(f"--seed takes a whole number >= 0; got {request.seed}")


def missing_framework(spec: spec_mod.Spec, framework: str, request: SmokeRequest) -> Check | None:
    """A check naming the install command when ``framework``'s packages are not installed, found
    without importing them. Skipped while another framework of the run can run; failed otherwise."""
    packages, install = FRAMEWORK_PACKAGES[framework]
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    others = [f for f in select_frameworks(spec, request.framework) if f != framework]
    runnable = any(all(importlib.util.find_spec(name) for name in FRAMEWORK_PACKAGES[f][0]) for f in others)
    detail = f"not run: {' and '.join(missing)} not installed here ({install} in a checkout of xlacc)"
    return Check(framework, None if runnable else False, detail)


# -- build ----------------------------------------------------------------------------------------


def build_if_stale(spec: spec_mod.Spec, report: Report, timeout: float) -> bool:
    """Build when sources changed since the last build (a cached build is still verified), the
    compiler under run-smoke's --timeout; report why not when it fails, or when the library holds
    no code for the visible GPU."""
    library = paths.shown(spec.library, spec.root)
    try:
        result = builder.build_spec(spec, timeout=timeout)
    except ToolchainMissing as exc:  # a runtime image without a compiler can still run a library built before
        if not spec.library.is_file() or spec.sources_newer_than_library() or _headers_or_spec_newer(spec):
            raise
        report.add(Check("build", None, f"{library} is taken as built: no source is newer than it, and it cannot be checked further here ({exc})"))
        return matches_runtime(spec, report) and runs_on_visible_gpus(spec, report)
    if not result.ok:
        report.checks += result.checks
        report.findings += result.findings
        report.notes += result.notes
        report.add(Check("build", False, f"{library} was not built; nothing ran"))
        return False
    report.add(Check("build", True, f"{library} is up to date" if result.cached else f"built {library} in {result.seconds:.1f} s"))
    report.checks += [c for c in result.checks if c.ok is None and c.name == "compile"]  # built, with a caveat (a source saved meanwhile)
    return matches_runtime(spec, report) and runs_on_visible_gpus(spec, report)


def matches_runtime(spec: spec_mod.Spec, report: Report) -> bool:
    """The library's build record against the jaxlib the harnesses will import (this interpreter's):
    a library the runtime refuses is reported before any harness runs into `No FFI handler registered`."""
    record, findings = build_record.library_skew(spec.library)
    report.findings += findings
    errors = [f for f in findings if f.severity == "error"]
    if record is not None and errors:
        report.add(Check("built against", False, f"{build_record.describe(record)}: {errors[0].title}; nothing ran"))
    return not errors


def _headers_or_spec_newer(spec: spec_mod.Spec) -> bool:
    """xlacc.toml (its defines and flags) or a header in the project edited after the library was built."""
    built = spec.library.stat().st_mtime
    candidates = [spec.root / spec_mod.SPEC_FILE]
    for folder in (spec.root, spec.root / spec.package, *(spec.root / d for d in spec.build.include_dirs)):
        candidates += [p for pattern in HEADER_PATTERNS for p in folder.glob(pattern)]
    return any(p.is_file() and p.stat().st_mtime > built for p in candidates)


def runs_on_visible_gpus(spec: spec_mod.Spec, report: Report) -> bool:
    """A library without SASS or PTX for this GPU fails every launch, or silently writes nothing."""
    if spec.platform != "cuda":
        return True
    _, results = verify.gpu_code(spec.library, toolchain.visible_gpu_archs(), "the visible GPU")
    for result in results:
        report.add(Check(f"GPU code for {result.arch}", result.ok, result.reason))
        report.findings += [result.finding] if result.finding else []
    return all(result.ok for result in results)


# -- one framework --------------------------------------------------------------------------------


def harness_args(spec: spec_mod.Spec, request: SmokeRequest) -> list[str]:
    args = ["--project", str(spec.root.resolve()), "--seed", str(request.seed)]
    if request.sizes:
        args += ["--sizes", ",".join(str(size) for size in request.sizes)]
    for flag, value in (("--rtol", request.rtol), ("--atol", request.atol)):
        if value is not None:
            args += [flag, repr(value)]
    if request.bench:
        args.append("--bench")
    if request.devices:
        args += ["--devices", str(request.devices)]
    return args


def child_env(spec: spec_mod.Spec, request: SmokeRequest) -> dict[str, str]:
    """A cpu project sharded over N devices gets N host devices (XLA's flag, as CI uses)."""
    env = dict(CHILD_ENV)
    if spec.platform == "cpu" and request.devices and request.devices > 1:
        flags = os.environ.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={request.devices}".strip()
    return env


def run_framework(spec: spec_mod.Spec, framework: str, request: SmokeRequest, report: Report, prefixed: bool) -> int | None:
    """Run one harness and fold its records into ``report``; returns the harness's exit code."""
    not_installed = missing_framework(spec, framework, request)
    if not_installed is not None:
        report.add(not_installed)
        return None
    prefix = f"{framework}: " if prefixed else ""
    shown = request.live.from_records(prefix) if request.live is not None else None
    result = run_harness(HARNESSES[framework], harness_args(spec, request), request.timeout, cwd=spec.root, env=child_env(spec, request), on_record=shown)
    found = absorb_records(result, framework, report, prefix)
    ended_normally = result.finished and result.returncode in HARNESS_EXITS
    how = unexpected_end(result, framework)
    if not ended_normally:
        report.add(Check(f"{prefix}child process", False, how))
        if result.output.strip():
            report.notes.append(f"last lines of the {framework} harness's output:\n{tail(result.output)}")
    if not ended_normally or result.returncode == EXIT_PROBLEM:
        report.findings += diagnosis(result, how, already=found)
    return result.returncode if ended_normally else None


def diagnosis(result: ChildResult, how: str, already: set[str]) -> list[Finding]:
    """The doctor's reading of the child's output, minus codes the harness already reported, and
    minus its guesses at registration when the harness measured what went wrong there; a crash is
    always named, with the step it happened in."""
    settled = REGISTRATION_GUESSES if already & REGISTRATION_MEASURED else frozenset()
    findings = [f for f in output_findings(result) if f.code not in already and f.code not in settled]
    if not result.crashed:
        return findings
    crashes = [f for f in findings if f.code == "kernel-crash"]
    others = [f for f in findings if f.code != "kernel-crash"]
    where = None if result.signal_name == "SIGKILL" else python_at_the_crash(result.output)
    if result.signal_name == "SIGKILL" or where is not None or not crashes:
        return others + [child_crash(how, result.signal_name, where, likelihood=CHILD_FINDING_LIKELIHOOD)]
    crash = max(crashes, key=lambda f: f.likelihood)  # the signal and the crash text: one finding
    return others + [replace(crash, evidence=f"{how}: {crash.evidence}")]


def python_at_the_crash(output: str) -> str | None:
    """``reference.py:14 (in reference)``: the innermost Python frame Python's fault handler printed
    when the signal came, when that frame is the user's code (not an installed package's or xlacc's)."""
    frame = FAULT_HANDLER_FRAME.search(output)
    if frame is None:
        return None
    path = frame["path"]
    if path.startswith("<") or any(part in Path(path).parts for part in ("site-packages", "dist-packages")) or paths.is_inside(Path(path), XLACC_PACKAGE):
        return None
    return f"{path}:{frame['line']} (in {frame['function']})"


def absorb_records(result: ChildResult, framework: str, report: Report, prefix: str) -> set[str]:
    """Checks, findings and data from the harness's records; returns the finding codes seen."""
    codes: set[str] = set()
    for record in result.records:
        kind = record.get("type")
        if kind == "check":
            report.add(Check(prefix + str(record["name"]), record.get("ok"), str(record.get("detail", ""))))
        elif kind == "finding":
            report.findings.append(child_finding(record))
            codes.add(record["code"])
        elif kind == "data":
            store_data(report.data, framework, record["key"], record.get("value"))
    return codes


def child_finding(record: dict[str, Any]) -> Finding:
    severity = record.get("severity") if record.get("severity") in ("error", "warning", "info") else "error"
    return Finding(
        code=str(record["code"]),
        severity=severity,
        title=str(record.get("title", "")),
        evidence=str(record.get("evidence", "")),
        fix=str(record.get("fix", "")),
        likelihood=CHILD_FINDING_LIKELIHOOD,
    )


def store_data(data: dict[str, Any], framework: str, key: str, value: Any) -> None:
    if key == "device":
        data.setdefault("devices", {})[framework] = value
    elif key != "seed":  # the request's seed is already there
        data[key] = value


def unexpected_end(result: ChildResult, framework: str) -> str:
    during = f" during {result.last_step}" if result.last_step else " before its first step"
    if result.finished:  # it said it was done, then exited with a code of its own
        return f"the {framework} harness {result.describe()}"
    return f"the {framework} harness {result.describe()}{during}"


def output_findings(result: ChildResult) -> list[Finding]:
    """The doctor's reading of the child's output and exit status; the steps that passed rank a crash's causes."""
    passed = [str(r["name"]) for r in result.records if r.get("type") == "check" and r.get("ok")]
    return list(diagnose_output(result.output, None if result.timed_out else result.returncode, passed=passed, during=result.last_step))


def tail(text: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    return "\n".join([line for line in text.splitlines() if line.strip()][-lines:])
