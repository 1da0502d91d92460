"""From the bench child's raw samples to the figures, the table, the CSV and the chart, on
synthetic samples (no jax): GB/s, TFLOP/s, shares of the copy and of the card's peaks, the verdict
against the op, host-bound cases, and a chart holding one curve per contender and the roofline."""

from __future__ import annotations

import csv
import html.parser
import xml.etree.ElementTree as ET

import pytest

from xlacc.commands.bench import output, results

MIB = 1 << 20
SVG = "{http://www.w3.org/2000/svg}"


def spread(center: float, n: int = 15, step: float = 0.001) -> list[float]:
    """Samples (seconds) tightly around ``center``."""
    return [center * (1 + step * (i - n // 2)) for i in range(n)]


def case(label: str, nbytes: int, op_s: float, xla_s: float, pallas_s: float, config: str) -> dict:
    return {
        "label": label, "shapes": [["bf16", [64, 32, 128]]], "bytes": nbytes, "flops": 4 * nbytes, "dtype": "bf16",
        "chain": 8, "sets": 1, "launches_in_chain": 8,
        "contenders": [
            {"name": "pa", "role": "op", "samples": spread(op_s), "queued": [0.1] * 15, "note": ""},
            {"name": "xla", "role": "xla", "samples": spread(xla_s), "queued": [0.1] * 15, "note": "the reference", "max_abs_diff": 0.002},
            {"name": f"pallas paged ({config})", "role": "peer", "samples": spread(pallas_s), "queued": [0.1] * 15, "note": ""},
        ],
        "unavailable": [{"name": "cudnn paged", "reason": "cuDNN takes bf16 or f16"}],
    }  # fmt: skip


RECORDS = {
    "bench_env": {"device": "NVIDIA H100 80GB HBM3", "platform": "gpu", "jax": "0.11.2", "jaxlib": "0.11.2", "driver": "580.1",
                  "cuda_runtime": "13.0", "cudnn": "9.19.0", "clocks": "SM 1980 MHz (max 1980 MHz)", "date": "2026-11-27 00:00:00 UTC"},
    "bench_limits": {"dispatch_s": 10e-6, "copy_bytes_per_s": 3.0e12, "l2_bytes": 50 * MIB, "l2_from": "the cards table"},
    "bench_case": [
        case("seqs=8 tokens=8192 bf16", 300 * MIB, 120e-6, 600e-6, 150e-6, "k_splits 16, block 8"),
        case("seqs=64 tokens=2048 bf16", 600 * MIB, 230e-6, 1200e-6, 230.1e-6, "k_splits 4, block 8"),
    ],
}  # fmt: skip


@pytest.fixture
def result() -> results.BenchResult:
    return results.build("pa", RECORDS, "xlacc bench pa --dtype bf16", "/work", "8 calls per jit")


def test_rates_shares_and_verdicts(result):
    first = result.problems[0]
    op, xla, pallas = first.rows
    assert op.gbps == pytest.approx(300 * MIB / op.time_us.median / 1e3)
    assert op.copy_share == pytest.approx(op.gbps / 3000.0)
    assert op.peak_bandwidth_share == pytest.approx(op.gbps / 3350.0)
    assert op.tflops == pytest.approx(4 * 300 * MIB / (op.time_us.median * 1e-6) / 1e12)
    assert op.peak_flops_share == pytest.approx(op.tflops / 989.4)  # bf16: the tensor-core peak
    assert op.versus_op is None
    assert xla.versus_op.significant and xla.versus_op.ratio == pytest.approx(5.0, rel=0.01)
    assert first.unavailable == [{"name": "cudnn paged", "reason": "cuDNN takes bf16 or f16"}]
    same = result.problems[1].rows[2]  # Pallas 230.1 us against the op's 230 us
    assert not same.versus_op.significant and same.versus_op.words.endswith("within noise")
    assert result.roofline_us(first) == pytest.approx(300 * MIB / 3.0e12 * 1e6)


def test_host_bound_cases_are_named():
    """Measured on an H100 host whose jit dispatch took 50 us: a 1M-element add (about 6 us on the
    GPU) in chains of 2 gave 28 us per call, the dispatch's time, not the kernel's."""
    assert results.host_bound(28.0, 50.0, 2) == "host-bound: a chain of 2 calls took 56.0 us, about an empty jit's dispatch (50.0 us)"
    assert results.host_bound(60.0, 50.0, 1).startswith("host-bound: 60.0 us per call is about an empty jit's dispatch")
    assert results.host_bound(6.0, 50.0, 64).startswith("one call per jit would be host-bound: dispatching a jit takes 50.0 us, the call 6.0 us")
    assert results.host_bound(100.0, 50.0, 8) == ""
    assert results.host_bound(5.0, 0.0, 1) == ""  # XLA:CPU: no dispatch figure to compare with
    # A chain far longer than an empty jit's dispatch, but the host queued for the whole sample: an
    # executable with command buffers takes the host 0.3-0.5 ms to queue (H200).
    assert results.host_bound(100.0, 50.0, 4, queued_share=0.99) == "host-bound: queueing the chains took the host 99% of each sample, so the device waited on it"
    assert results.host_bound(100.0, 50.0, 4, queued_share=0.5) == ""


def test_the_table_marks_noise_and_lists_what_did_not_run(result):
    lines = output.table(result)
    assert [line[1] for line in lines[:4]] == ["pa", "xla", "pallas paged (k_splits 16, block 8)", "cudnn paged"]
    assert lines[0][11] == "(the op)" and "(slower)" in lines[1][11]
    assert lines[3][12] == "not run: cuDNN takes bf16 or f16"
    assert "max abs diff from the op 0.002" in lines[1][12]


def test_every_output_starts_with_the_environment_and_the_command(result, tmp_path):
    head = output.header(result)
    assert any("H100 SXM: HBM3 3350 GB/s" in line for line in head)
    assert any("driver 580.1" in line and "cudnn 9.19.0" in line and "clocks SM 1980" in line for line in head)
    assert head[-1] == "reproduce: cd /work && xlacc bench pa --dtype bf16"
    output.write_csv(tmp_path / "t.csv", result)
    rows = list(csv.reader((tmp_path / "t.csv").open()))
    assert [r[0] for r in rows[: len(head)]] == [f"# {line}" for line in head]
    table = rows[len(head) + 1 :]
    assert len(table) == 6 and {r[1] for r in table} >= {"pa", "xla"}
    assert float(table[1][3]) == pytest.approx(result.problems[0].rows[1].time_us.median)


def curves(svg_text: str) -> dict[str, int]:
    root = ET.fromstring(svg_text)
    return {p.get("data-series"): len(p.get("points").split()) for p in root.iter(f"{SVG}polyline")}


def test_the_svg_chart_holds_a_curve_per_contender_and_the_roofline(result, tmp_path):
    path = tmp_path / "chart.svg"
    output.write_chart(path, result, "bench pa")
    found = curves(path.read_text())
    # A peer's configuration may change from problem to problem: its curve is the peer's.
    assert found == {"pa": 2, "xla": 2, "pallas paged": 2, "roofline (copy rate)": 2}
    assert "reproduce: cd /work" in path.read_text()


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_cell = tag == "td"

    def handle_data(self, data):
        if self._in_cell:
            self.cells.append(data)
            self._in_cell = False


def test_the_html_chart_opens_as_one_page_with_the_svg_and_the_table(result, tmp_path):
    path = tmp_path / "chart.html"
    output.write_chart(path, result, "bench pa")
    text = path.read_text()
    parsed = _Collect()
    parsed.feed(text)
    assert parsed.tags.count("svg") == 1 and "table" in parsed.tags
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    svg = text[text.index("<svg") : text.index("</svg>") + len("</svg>")]
    assert set(curves(svg)) == {"pa", "xla", "pallas paged", "roofline (copy rate)"}
    assert "cudnn paged" in parsed.cells
