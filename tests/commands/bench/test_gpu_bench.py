"""`xlacc bench` on a GPU: the op's calls chained in one jit (as many custom calls in the compiled
chain as it is long), rates against the copy and the card's datasheet, and the attention
templates' GPU peers timed beside them. Figures: benchmarks/RESULTS.md (benchmarks/run_bench_on_gpu.sh)."""

from __future__ import annotations

import json

import pytest

from smoke_support import new_project

from .test_command import bench

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_add_is_chained_and_measured_against_the_copy_and_the_datasheet(tmp_path):
    project = new_project(tmp_path, "add_gpu", platform="cuda")
    done = bench(project, "--sizes", "16777216", "--rounds", "2", "--samples", "2", "--json", str(tmp_path / "a.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    payload = json.loads((tmp_path / "a.json").read_text())
    problem = payload["problems"][0]
    assert problem["chain"] > 1 and problem["launches_in_chain"] == problem["chain"]
    op = next(r for r in problem["rows"] if r["role"] == "op")
    assert payload["copy_gbps"] > 100 and 0.2 < op["copy_share"] < 1.5
    if payload["card"] != "unknown":
        assert 0 < op["peak_bandwidth_share"] < 1.2


def test_paged_attention_is_timed_beside_cudnn_and_pallas(tmp_path):
    project = new_project(tmp_path, "paged_gpu", template="paged-attention", platform="cuda", dtypes=("bf16",))
    done = bench(project, "--shape", "8x2048", "--rounds", "2", "--samples", "2", "--json", str(tmp_path / "p.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    problem = json.loads((tmp_path / "p.json").read_text())["problems"][0]
    names = {r["name"].split(" (")[0] for r in problem["rows"]}
    assert {"paged_gpu", "xla", "pallas paged", "cudnn paged"} <= names, problem["unavailable"]
    assert all(r["max_abs_diff"] is None or r["max_abs_diff"] < 0.05 for r in problem["rows"])
    assert all(r["tflops"] > 0 for r in problem["rows"])


def test_ragged_paged_attention_is_timed_beside_cudnn(tmp_path):
    project = new_project(tmp_path, "ragged_gpu", template="ragged-paged-attention", platform="cuda", dtypes=("bf16",))
    done = bench(project, "--shape", "8x2048", "--rounds", "2", "--samples", "2", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    problem = json.loads((tmp_path / "r.json").read_text())["problems"][0]
    rows = {r["name"]: r for r in problem["rows"]}
    assert {"ragged_gpu", "xla", "cudnn paged"} <= set(rows), problem["unavailable"]
    assert rows["cudnn paged"]["max_abs_diff"] < 0.05  # a decode step: the same attention, token for token
