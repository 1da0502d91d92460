"""``xlacc bench``: build when stale, run the bench child (:mod:`xlacc.commands.bench.harness`) under a
timeout, and turn its raw samples into the table, JSON, CSV and chart. ``run-smoke --bench`` comes
here too (:func:`extend_smoke`), so both commands give one number for one call.

Exit codes: 0 timed; 1 the build or the child failed; 2 usage; 3 a cuda project where no GPU is visible.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlacc import spec as spec_mod
from xlacc.commands.bench import output, peers as peers_mod, results as results_mod
from xlacc.commands.new import project as new_project, transform_plan
from xlacc.commands.smoke import run_smoke as smoke
from xlacc.commands.smoke.harness import DEFAULT_SIZES
from xlacc.commands.smoke.runner import run_harness
from xlacc.ground.errors import UsageError
from xlacc.ground.report import EXIT_NEEDS_GPU, EXIT_OK, EXIT_PROBLEM, Check, Report, emit

HARNESS = "xlacc.commands.bench.harness"
MAX_SIZE = smoke.MAX_SIZE
MAX_ROUNDS = MAX_SAMPLES = 1000
MAX_VMAP = 1024
SHAPE = re.compile(r"^[1-9]\d{0,9}(?:x[1-9]\d{0,9}){0,7}$")
CHART_SUFFIXES = (".svg", ".html", ".htm")
NO_COMMAND_BUFFERS = "--xla_gpu_enable_command_buffer="
SMOKE_VMAP = 8


@dataclass
class BenchRequest:
    project: Path
    sizes: list[int] | None = None
    shapes: list[str] | None = None
    dtypes: list[str] | None = None
    rounds: int = 5
    samples: int = 3
    cold_l2: bool = False
    vmap: int = 0
    trace: Path | None = None
    command_buffers: bool = True
    json_file: Path | None = None
    csv_file: Path | None = None
    chart_file: Path | None = None
    seed: int = 0
    timeout: float = 600.0
    argv: list[str] = field(default_factory=list)  # the command line, for the line that reproduces it


@dataclass
class BenchRun:
    report: Report
    result: results_mod.BenchResult | None


def validate(request: BenchRequest) -> None:
    if request.sizes is not None and request.shapes is not None:
        raise UsageError("give --sizes (element counts for example_inputs) or --shape (shapes for bench_inputs), not both")
    if request.sizes is not None:
        bad = next((s for s in request.sizes if not 1 <= s <= MAX_SIZE), None) if request.sizes else 0
        if bad is not None:
            raise UsageError(f"--sizes takes element counts from 1 to {MAX_SIZE}, such as 1024,1048576; got {bad}")
    for shape in request.shapes or []:
        if not SHAPE.match(shape):
            raise UsageError(f"--shape takes dims joined by x, such as 64x2048 or 8192x8192; got {shape!r}")
    for flag, value, top in (("--rounds", request.rounds, MAX_ROUNDS), ("--samples", request.samples, MAX_SAMPLES)):
        if not 1 <= value <= top:
            raise UsageError(f"{flag} takes a whole number from 1 to {top}; got {value}")
    if request.vmap and not 2 <= request.vmap <= MAX_VMAP:
        raise UsageError(f"--vmap takes a batch of 2 to {MAX_VMAP} examples; got {request.vmap}")
    if not (math.isfinite(request.timeout) and request.timeout > 0):
        raise UsageError(f"--timeout takes a finite number of seconds above 0; got {request.timeout}")
    if request.seed < 0:
        raise UsageError(f"--seed takes a whole number >= 0; got {request.seed}")
    if request.chart_file is not None and request.chart_file.suffix.lower() not in CHART_SUFFIXES:
        raise UsageError(f"--chart writes .svg or .html; got {str(request.chart_file)!r}")
    for flag, path in (("--json", request.json_file), ("--csv", request.csv_file), ("--chart", request.chart_file)):
        if path is not None and not path.parent.is_dir():
            raise UsageError(f"{flag} {path}: no folder {path.parent} to write it in")
    if request.dtypes is not None:
        bad_dtype = next((d for d in request.dtypes if d not in spec_mod.DTYPES), None)
        if bad_dtype or not request.dtypes:
            raise UsageError(f"--dtype takes {', '.join(spec_mod.DTYPES)} (comma-separated); got {bad_dtype!r}")


def declared_peers(spec: spec_mod.Spec) -> list[str]:
    """The template's ``[bench] peers`` (template.toml), then the project's (xlacc.toml)."""
    found: list[str] = []
    try:
        template = new_project.template_meta(spec.template).get("bench", {})
    except UsageError:  # a project whose template this xlacc does not ship
        template = {}
    raw = spec_mod.read_toml(spec_mod.find_spec(spec.root)).get("bench", {})
    for where, table in (("template.toml of " + spec.template, template), (str(spec.root / spec_mod.SPEC_FILE), raw)):
        if not isinstance(table, dict) or not isinstance(table.get("peers", []), list):
            raise UsageError(f"{where}: [bench] peers is a list of \"module:function\" strings")
        for index, text in enumerate(table.get("peers", [])):
            try:
                found.append(peers_mod.check_reference(text, f"{where}: [bench] peers[{index}]"))
            except ValueError as exc:
                raise UsageError(str(exc)) from None
    return list(dict.fromkeys(found))


def harness_args(spec: spec_mod.Spec, request: BenchRequest, peers: list[str]) -> list[str]:
    args = ["--project", str(spec.root.resolve()), "--seed", str(request.seed), "--rounds", str(request.rounds), "--samples", str(request.samples)]
    if request.sizes:
        args += ["--sizes", ",".join(map(str, request.sizes))]
    if request.shapes:
        args += ["--shapes", ",".join(request.shapes)]
    if request.dtypes:
        args += ["--dtypes", ",".join(request.dtypes)]
    for peer in peers:
        args += ["--peer", peer]
    if request.cold_l2:
        args.append("--cold-l2")
    if request.vmap:
        args += ["--vmap", str(request.vmap)]
    if request.trace:
        args += ["--trace", str(request.trace.resolve())]
    return args


def child_env(request: BenchRequest) -> dict[str, str]:
    env = dict(smoke.CHILD_ENV)
    if not request.command_buffers:
        env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {NO_COMMAND_BUFFERS}".strip()
    return env


def method_text(request: BenchRequest, chain_lengths: set[int], on_gpu: bool) -> str:
    calls = "/".join(map(str, sorted(chain_lengths))) or "?"
    how = (f"{calls} calls per jit, each after the previous (optimization_barrier), timed from the end of a chain queued first"
           if on_gpu else "one call per jit, queued back to back (XLA:CPU drops optimization barriers before fusing, so calls cannot be chained)")
    cache = "cold L2 (each call reads one of K operand copies, K copies >= twice the L2)" if request.cold_l2 else "warm L2 (the same operands every call)"
    buffers = "" if request.command_buffers else "; command buffers off"
    return f"{how}; {cache}; contenders in turns, {request.rounds} rounds x {request.samples} samples each{buffers}; spread: IQR and a 95% interval of the median"


def run(request: BenchRequest) -> BenchRun:
    validate(request)
    spec = spec_mod.load(request.project)
    smoke.check_reference(spec)
    if not spec.uses_jax_module:
        raise UsageError(f"xlacc bench times the op through jax: add \"jax\" to op.frameworks in {spec.root / spec_mod.SPEC_FILE}, then run `xlacc update`")
    peers = declared_peers(spec)
    report = Report(title=f"bench {spec.name} ({spec.platform})")
    if not smoke.build_if_stale(spec, report, request.timeout):
        return BenchRun(report, None)
    child = run_harness(HARNESS, harness_args(spec, request, peers), request.timeout, cwd=spec.root, env=child_env(request))
    data = absorb(child, report)
    if "usage_error" in data:
        raise UsageError(str(data["usage_error"]))
    result = None
    if data.get("bench_case"):
        lengths = {int(c["chain"]) for c in data["bench_case"]}
        method = method_text(request, lengths, data.get("bench_env", {}).get("platform") == "gpu")
        result = results_mod.build(spec.name, data, reproduce_command(request.argv), os.getcwd(), method)
        report.data["bench"] = result.to_json()
        write_files(request, result, report)
    if child.returncode == EXIT_NEEDS_GPU and not report.failed:
        report.exit_code = EXIT_NEEDS_GPU
    return BenchRun(report, result)


def absorb(child: Any, report: Report) -> dict[str, Any]:
    """The child's checks into the report, its data by key (bench_case as a list); a crash, hang
    or failure gets the doctor's reading of its output, as in run-smoke."""
    data: dict[str, Any] = {}
    for record in child.records:
        if record.get("type") == "check":
            report.add(Check(str(record["name"]), record.get("ok"), str(record.get("detail", ""))))
        elif record.get("type") == "data" and record.get("key") == "bench_case":
            data.setdefault("bench_case", []).append(record.get("value"))
        elif record.get("type") == "data":
            data[str(record.get("key"))] = record.get("value")
    ended = child.finished and child.returncode in smoke.HARNESS_EXITS
    how = smoke.unexpected_end(child, "bench")
    if not ended:
        report.add(Check("child process", False, how))
        if child.output.strip():
            report.notes.append(f"last lines of the bench harness's output:\n{smoke.tail(child.output)}")
    if not ended or child.returncode == EXIT_PROBLEM:
        report.findings += smoke.diagnosis(child, how, already=set())
    return data


def reproduce_command(argv: list[str]) -> str:
    return "xlacc " + shlex.join(argv) if argv else "xlacc bench"


def write_files(request: BenchRequest, result: results_mod.BenchResult, report: Report) -> None:
    title = report.title
    if request.json_file:
        output.write_json(request.json_file, result, {"checks": [c.to_json() for c in report.checks]})
        report.notes.append(f"JSON: {request.json_file}")
    if request.csv_file:
        output.write_csv(request.csv_file, result)
        report.notes.append(f"CSV: {request.csv_file}")
    if request.chart_file:
        output.write_chart(request.chart_file, result, title)
        report.notes.append(f"chart: {request.chart_file} (opens in a browser; no server)")
    if request.trace:
        report.notes.append(
            f"trace: {request.trace}, a folder per problem; open with `tensorboard --logdir {request.trace}` (its Profile tab: pip install "
            f"tensorboard-plugin-profile), or drop {request.trace}/PROBLEM/plugins/profile/*/perfetto_trace.json.gz on https://ui.perfetto.dev; "
            f"each contender's chain is the jit jit({result.op}) or jit({result.op}.NAME) there, its calls under jax.named_scope of that name"
        )


def show(run_result: BenchRun, as_json: bool) -> int:
    """Print the run (the table, then the checks) or its JSON; the exit code."""
    if run_result.result is not None and not as_json:
        output.print_table(run_result.result, run_result.report.title)
        sys.stdout.flush()
        run_result.report.title = ""
    return emit(run_result.report, as_json)


# -- run-smoke --bench ------------------------------------------------------------------------------


def extend_smoke(report: Report, project: Path, sizes: list[int] | None, seed: int, timeout: float) -> None:
    """``run-smoke --bench``: the bench at run-smoke's largest size, with the op under vmap beside
    the unbatched call in the same turns, so the two lines quote one measurement of that call."""
    if report.code() == EXIT_NEEDS_GPU:
        report.add(Check("bench", None, "not run: timing the op needs the GPU this machine lacks"))
        return
    if report.failed or report.code() != EXIT_OK:
        report.add(Check("bench", None, "not run: run-smoke did not pass"))
        return
    spec = spec_mod.load(project)
    size = max(sizes or DEFAULT_SIZES["cpu" if spec.platform == "cpu" else "gpu"])
    vmap = SMOKE_VMAP if transform_plan.folding_inputs(spec) else 0
    argv = ["bench", str(project), "--sizes", str(size)] + (["--vmap", str(vmap)] if vmap else []) + (["--seed", str(seed)] if seed else [])
    bench = run(BenchRequest(project=project, sizes=[size], vmap=vmap, seed=seed, timeout=timeout, argv=argv))
    report.findings += bench.report.findings
    failed = [c for c in bench.report.checks if c.ok is False]
    if bench.result is None or failed:
        report.add(Check("bench", False, "; ".join(f"{c.name}: {c.detail}" for c in failed) or "the bench timed nothing"))
        return
    report.data["bench"] = bench.result.to_json()
    for problem in bench.result.problems:
        report.add(Check("bench", True, smoke_line(problem)))
    report.notes += output.header(bench.result)


def smoke_line(problem: results_mod.Problem) -> str:
    """One line for a problem: the op's time once, every other contender against that one number."""
    parts = []
    for row in problem.rows:
        t = row.time_us
        text = f"{row.name} {t.median:.1f} us (IQR {t.q1:.1f}-{t.q3:.1f}, n={t.n}"
        text += f", {row.gbps:.1f} GB/s)" if row.gbps else ")"
        if row.versus_op is not None:
            text += f": {row.versus_op.words}"
        if row.role == "vmap":
            text += f" [{row.note}]"
        if row.host_bound:
            text += f" [{row.host_bound}]"
        parts.append(text)
    return f"{problem.label}: " + "; ".join(parts) + "; all timed in turns in one process"
