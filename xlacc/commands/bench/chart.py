"""The chart: time per call against the problem for each contender, with the roofline (the time
the problem's bytes take at the copy rate measured in the same process), as a self-contained SVG
or an HTML page holding that SVG and the table.

Written by hand: a line chart with log time, error bars and a legend is a few dozen SVG elements,
and no plotting library is a dependency of xlacc (matplotlib would be a large one for this).
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from xlacc.commands.bench.results import BenchResult, Row

WIDTH, HEIGHT = 860, 480
LEFT, RIGHT, TOP, BOTTOM = 80, 230, 50, 110
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
ROOFLINE = "roofline (copy rate)"


def series_name(row: Row) -> str:
    """A contender's curve across problems: a peer's configuration (in parentheses) may change."""
    return row.name.split(" (")[0]


def series(result: BenchResult) -> dict[str, list[tuple[int, Row]]]:
    curves: dict[str, list[tuple[int, Row]]] = {}
    for index, problem in enumerate(result.problems):
        for row in problem.rows:
            curves.setdefault(series_name(row), []).append((index, row))
    return curves


def svg(result: BenchResult, title: str, header: list[str]) -> str:
    """The chart, headed by the environment and the command that reproduces it."""
    curves = series(result)
    roofline = [(i, result.roofline_us(p)) for i, p in enumerate(result.problems) if result.roofline_us(p)]
    values = [r.time_us.q1 for c in curves.values() for _, r in c] + [r.time_us.q3 for c in curves.values() for _, r in c] + [v for _, v in roofline]
    values = [v for v in values if v > 0] or [1.0]
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    high = max(high, low + 1)
    count = max(1, len(result.problems))
    top = TOP + 14 * len(header)
    height = HEIGHT + 14 * len(header)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - top - BOTTOM

    def x(index: int) -> float:
        return LEFT + (plot_w * (index + 0.5) / count)

    def y(us: float) -> float:
        return top + plot_h * (high - math.log10(max(us, 10.0**low))) / (high - low)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
             f"<title>{html.escape(title)}</title>",
             f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{html.escape(title)}</text>',
             *[f'<text x="{LEFT}" y="{44 + 14 * n}" font-size="11" fill="#333">{html.escape(line)}</text>' for n, line in enumerate(header)],
             f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>']  # fmt: skip
    for decade in range(low, high + 1):
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(10.0**decade):.1f}" y2="{y(10.0**decade):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y(10.0**decade) + 4:.1f}" text-anchor="end">{_us(10.0**decade)}</text>')
    parts.append(f'<text transform="translate(18 {top + plot_h / 2:.0f}) rotate(-90)" text-anchor="middle">time per call (log scale)</text>')
    for index, problem in enumerate(result.problems):
        parts.append(f'<text transform="translate({x(index):.1f} {top + plot_h + 14}) rotate(25)" font-size="11">{html.escape(problem.label)}</text>')
    legend_y = top
    for number, (name, points) in enumerate(curves.items()):
        color = COLORS[number % len(COLORS)]
        parts.append(_curve(name, [(x(i), y(r.time_us.median)) for i, r in points], color, ""))
        for i, r in points:
            parts.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(r.time_us.q1):.1f}" y2="{y(r.time_us.q3):.1f}" stroke="{color}" stroke-width="3" opacity="0.5"/>')
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(r.time_us.median):.1f}" r="3.5" fill="{color}"><title>{html.escape(f"{r.name}, {r.problem}: {r.time_us.median:.2f} us (IQR {r.time_us.q1:.2f}-{r.time_us.q3:.2f}, n={r.time_us.n})")}</title></circle>')
        legend_y = _legend(parts, name, color, "", legend_y)
    if roofline:
        parts.append(_curve(ROOFLINE, [(x(i), y(v)) for i, v in roofline], "#000", "6 4"))
        legend_y = _legend(parts, ROOFLINE, "#000", "6 4", legend_y)
    parts.append(f'<text x="{LEFT}" y="{height - 8}" font-size="11" fill="#555">bars: interquartile range; roofline: the problem\'s bytes at {result.copy_gbps:.0f} GB/s (a device-to-device copy in the same process)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _curve(name: str, points: list[tuple[float, float]], color: str, dash: str) -> str:
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    coordinates = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    return f'<polyline class="series" data-series="{html.escape(name)}" points="{coordinates}" fill="none" stroke="{color}" stroke-width="2"{dashes}/>'


def _legend(parts: list[str], name: str, color: str, dash: str, at: float) -> float:
    left = WIDTH - RIGHT + 16
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    parts.append(f'<line x1="{left}" x2="{left + 24}" y1="{at:.1f}" y2="{at:.1f}" stroke="{color}" stroke-width="2"{dashes}/>')
    parts.append(f'<text x="{left + 30}" y="{at + 4:.1f}">{html.escape(name)}</text>')
    return at + 18


def _us(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g} s"
    if value >= 1e3:
        return f"{value / 1e3:g} ms"
    return f"{value:g} us"


def page(result: BenchResult, title: str, header: list[str], table: list[list[str]], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in line) + "</tr>" for line in table)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "td:first-child,td:nth-child(2),th{text-align:left}pre{background:#f6f6f6;padding:1em}</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n<pre>{html.escape(chr(10).join(header))}</pre>\n{svg(result, title, [])}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n</body></html>\n"
    )


def write(path: Path, result: BenchResult, title: str, header: list[str], table: list[list[str]], columns: list[str]) -> None:
    text = svg(result, title, header) if path.suffix.lower() == ".svg" else page(result, title, header, table, columns)
    path.write_text(text, encoding="utf-8")
