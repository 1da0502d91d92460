"""What ``xlacc bench`` writes: the header (environment, method, the command that reproduces the
run), the table on the terminal (rich) and as CSV, the JSON, and the chart. Every file starts with
the same header."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from xlacc.commands.bench import cards, chart
from xlacc.commands.bench.results import BenchResult, Row
from xlacc.ground.report import use_color

NO_TERMINAL_WIDTH = 4000
COLUMNS = ["problem", "contender", "median us", "IQR us", "95% CI us", "n", "GB/s", "TFLOP/s", "% of copy", "% of peak BW", "% of peak FLOP/s", "vs the op", "notes"]


def header(result: BenchResult) -> list[str]:
    env = result.environment
    device = env.get("device", "?")
    lines = [f"device: {cards.describe(device, env.get('platform', 'cpu'))}"]
    if result.on_gpu:
        versions = ", ".join(f"{k} {env[k]}" for k in ("driver", "cuda_runtime", "cudnn", "jax", "jaxlib", "python") if k in env)
        lines.append(f"{device}: {versions}; clocks {env.get('clocks', 'unreadable')}")
    else:
        lines.append(f"XLA:CPU on {env.get('cpu', '?')}: jax {env.get('jax', '?')}, jaxlib {env.get('jaxlib', '?')}, python {env.get('python', '?')}; "
                     "GPU peers not run (no GPU), numbers are XLA:CPU's")  # fmt: skip
    lines.append(f"XLA_FLAGS={env.get('XLA_FLAGS', '')!r}; measured {env.get('date', '?')}")
    rates = ", ".join(f"{name} {rate:.1f}" for name, rate in result.copy_rates.items())
    lines.append(f"device-to-device copy in this process: {result.copy_gbps:.1f} GB/s read + written (the faster of {rates or 'copy'} GB/s); "
                 f"an empty jit's dispatch: {result.dispatch_us:.1f} us")  # fmt: skip
    lines.append(f"method: {result.method}")
    lines.append(f"reproduce: cd {result.cwd} && {result.command}")
    return lines


def _pct(value: float | None) -> str:
    return f"{100 * value:.1f}%" if value is not None else "-"


def _num(value: float | None, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if value is not None else "-"


def cells(row: Row) -> list[str]:
    t = row.time_us
    ci = f"{t.low:.2f}-{t.high:.2f}" + ("" if t.coverage >= 0.95 else f" ({100 * t.coverage:.0f}%)")
    notes = [n for n in (row.host_bound, row.note) if n]
    if row.max_abs_diff is not None and row.role != "op":
        notes.append(f"max abs diff from the op {row.max_abs_diff:.3g}")
    return [row.problem, row.name, f"{t.median:.2f}", f"{t.q1:.2f}-{t.q3:.2f}", ci, str(t.n), _num(row.gbps), _num(row.tflops, 2),
            _pct(row.copy_share), _pct(row.peak_bandwidth_share), _pct(row.peak_flops_share),
            row.versus_op.words if row.versus_op else "(the op)", "; ".join(notes)]  # fmt: skip


def table(result: BenchResult) -> list[list[str]]:
    lines = []
    for problem in result.problems:
        lines += [cells(row) for row in problem.rows]
        lines += [[problem.label, str(u["name"]), "-", "-", "-", "0", "-", "-", "-", "-", "-", "-", f"not run: {u['reason']}"] for u in problem.unavailable]
    return lines


def print_table(result: BenchResult, title: str) -> None:
    """The header and the table on stdout: rich's table on a terminal, plain columns otherwise."""
    from rich.console import Console  # lazy: rich only where a table is printed (start-up time)
    from rich.table import Table  # lazy: as above

    # Off a terminal (a pipe, a CI log) the table is not wrapped, so each row stays one line to grep.
    console = Console(no_color=not use_color(), highlight=False, width=None if sys.stdout.isatty() else NO_TERMINAL_WIDTH)
    console.print(title, style="bold")
    for line in header(result):
        console.print(line, style="dim", markup=False)
    grid = Table(show_lines=False, header_style="bold")
    for column in COLUMNS:
        grid.add_column(column, overflow="fold", justify="left" if column in ("problem", "contender", "vs the op", "notes") else "right")
    for line in table(result):
        grid.add_row(*line)
    console.print(grid)


def write_json(path: Path, result: BenchResult, extra: dict) -> None:
    payload = {"header": header(result), **result.to_json(), **extra}
    path.write_text(json.dumps(payload, indent=1, default=str) + "\n", encoding="utf-8")


def write_csv(path: Path, result: BenchResult) -> None:
    """The table, each header line first as a comment row (``# ...``), then one row per contender."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for line in header(result):
        writer.writerow([f"# {line}"])
    writer.writerow(["problem", "contender", "role", "median_us", "q1_us", "q3_us", "ci_low_us", "ci_high_us", "ci_coverage", "n", "bytes", "flops",
                     "gbps", "tflops", "copy_share", "peak_bandwidth_share", "peak_flops_share", "ratio_to_op", "significant", "host_bound", "note"])  # fmt: skip
    for problem in result.problems:
        for row in problem.rows:
            t = row.time_us
            versus = row.versus_op
            writer.writerow([row.problem, row.name, row.role, t.median, t.q1, t.q3, t.low, t.high, t.coverage, t.n, problem.bytes, problem.flops or "",
                             _blank(row.gbps), _blank(row.tflops), _blank(row.copy_share), _blank(row.peak_bandwidth_share), _blank(row.peak_flops_share),
                             versus.ratio if versus else "", versus.significant if versus and versus.decidable else "", row.host_bound, row.note])  # fmt: skip
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _blank(value: float | None):
    return "" if value is None else value


def write_chart(path: Path, result: BenchResult, title: str) -> None:
    chart.write(path, result, title, header(result), table(result), COLUMNS)
