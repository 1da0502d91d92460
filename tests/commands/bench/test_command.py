"""`xlacc bench` end to end on XLA:CPU (what CI can run): a table with spread, JSON, CSV and a
chart from a run of an add project with a peer it declares; GPU peers said not run; bad flags
refused in one line."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from xlacc import cli
from xlacc.ground.report import EXIT_OK, EXIT_USAGE

pytest.importorskip("jax", reason="xlacc bench's child process needs jax (pip install -e '.[jax]')")
if shutil.which("g++") is None:
    pytest.skip("cpu projects build with g++, which is not on PATH", allow_module_level=True)

from smoke_support import REPO, new_project  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
QUICK = ("--rounds", "2", "--samples", "2")


def bench(project: Path, *flags: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), COLUMNS="400")
    return subprocess.run([sys.executable, "-m", "xlacc", "bench", str(project), *flags], capture_output=True, text=True, timeout=240,
                          env=env, cwd=project.parent)  # fmt: skip


@pytest.fixture(scope="module")
def add_project(tmp_path_factory) -> Path:
    """An add project on the CPU declaring its own peer in xlacc.toml: plain jnp, as a user writes one."""
    project = new_project(tmp_path_factory.mktemp("bench"), "add_ffi")
    (project / "my_peers.py").write_text("def plain_add(x, y):\n    return x + y\n")
    toml = project / "xlacc.toml"
    toml.write_text(toml.read_text() + '\n[bench]\npeers = ["my_peers:plain_add"]\n')
    return project


@pytest.mark.slow
def test_a_cpu_run_writes_the_table_json_csv_and_chart(add_project, tmp_path):
    files = {"json": tmp_path / "b.json", "csv": tmp_path / "b.csv", "chart": tmp_path / "b.svg"}
    done = bench(add_project, "--sizes", "4096,65536", *QUICK, *(x for k, v in files.items() for x in (f"--{k}", str(v))))
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    for text in ("median us", "IQR us", "95% CI us", "% of copy", "GPU peers not run (no GPU), numbers are XLA:CPU's", "reproduce: cd "):
        assert text in done.stdout, text
    payload = json.loads(files["json"].read_text())
    assert payload["environment"]["platform"] == "cpu" and payload["card"] == "unknown" and payload["copy_gbps"] > 0
    assert payload["header"][-1].endswith(f"xlacc bench {add_project} --sizes 4096,65536 --rounds 2 --samples 2 " + " ".join(
        f"--{k} {v}" for k, v in files.items()))
    problems = payload["problems"]
    assert [p["label"] for p in problems] == ["n=4096 f32", "n=65536 f32"]
    for problem in problems:
        assert problem["bytes"] == 3 * 4 * int(problem["label"].split()[0][2:])  # the reference's bytes_moved
        rows = {r["name"]: r for r in problem["rows"]}
        assert set(rows) == {"add_ffi", "xla", "plain_add"}
        assert all(r["time_us"]["n"] == 4 and r["time_us"]["q1"] <= r["time_us"]["median"] <= r["time_us"]["q3"] for r in rows.values())
        assert all(0.0 <= r["queued_share"] <= 1.0 for r in rows.values())
        assert rows["xla"]["versus_op"]["ratio"] == pytest.approx(rows["xla"]["time_us"]["median"] / rows["add_ffi"]["time_us"]["median"])
        assert rows["plain_add"]["max_abs_diff"] == 0.0
    table = [r for r in csv.reader(files["csv"].open()) if r and not r[0].startswith("#")]
    assert table[0][:3] == ["problem", "contender", "role"] and len(table) == 1 + 6
    root = ET.fromstring(files["chart"].read_text())
    curves = {p.get("data-series") for p in root.iter(f"{SVG}polyline")}
    assert curves == {"add_ffi", "xla", "plain_add", "roofline (copy rate)"}


@pytest.mark.slow
def test_a_reference_that_does_not_fit_leaves_the_op_timed(tmp_path):
    """On a GPU the jnp reference of a large attention problem can run out of memory while XLA
    compiles it: the op and its peers are still timed, XLA's row is said not run, with why."""
    project = new_project(tmp_path, "add_ffi")
    reference = project / "add_ffi" / "reference.py"
    reference.write_text(reference.read_text().replace(
        "def reference(x, y, *, xp=np):\n", "def reference(x, y, *, xp=np):\n    if xp is not np:\n        raise MemoryError('RESOURCE_EXHAUSTED: no room')\n"))
    [problem], printed = problems(project, tmp_path / "a.json", "--sizes", "4096", dtype="f32")
    assert {r["name"] for r in problem["rows"]} == {"add_ffi"}
    assert problem["unavailable"] == [{"name": "xla", "reason": "does not compile here: MemoryError: RESOURCE_EXHAUSTED: no room"}]
    assert "Traceback" not in printed


def problems(project: Path, json_path: Path, *flags: str, dtype: str = "bf16") -> tuple[list[dict], str]:
    """A quick bf16 bench of the project: its problems from the JSON, and what it printed."""
    done = bench(project, *flags, "--dtype", dtype, "--rounds", "1", "--samples", "1", "--json", str(json_path))
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    return json.loads(json_path.read_text())["problems"], done.stdout


@pytest.mark.slow
def test_gpu_peers_are_marked_not_run_on_the_cpu(tmp_path):
    project = new_project(tmp_path, "paged_attention_ffi", template="paged-attention")
    [problem], printed = problems(project, tmp_path / "p.json", "--shape", "2x256")
    assert problem["label"] == "seqs=2 tokens=256 bf16" and problem["flops"] == 4 * 2 * 256 * 32 * 128
    assert {r["name"] for r in problem["rows"]} == {"paged_attention_ffi", "xla"}
    reasons = {u["name"]: u["reason"] for u in problem["unavailable"]}
    assert set(reasons) == {"cudnn paged", "pallas paged", "cudnn sdpa (dense cache)"}
    assert all("NVIDIA GPUs only (this run is on XLA:CPU)" in reason for reason in reasons.values())
    assert "not run: cuDNN runs on NVIDIA GPUs only" in printed


@pytest.mark.slow
def test_a_ragged_project_takes_a_shape_and_names_its_gpu_peer(tmp_path):
    project = new_project(tmp_path, "ragged_ffi", template="ragged-paged-attention")
    [problem], _ = problems(project, tmp_path / "r.json", "--shape", "2x64x16")
    # Two sequences of 64 tokens, the last 16 new: positions 48..63 see 49..64 of them.
    assert problem["label"] == "seqs=2 context=64 new=16 bf16" and problem["flops"] == 4 * 2 * sum(range(49, 65)) * 32 * 128
    assert {r["name"] for r in problem["rows"]} == {"ragged_ffi", "xla"}
    assert {u["name"]: u["reason"] for u in problem["unavailable"]} == {"cudnn paged": "cuDNN runs on NVIDIA GPUs only (this run is on XLA:CPU)"}
    defaults, _ = problems(project, tmp_path / "d.json")  # its BENCH_SHAPES
    assert [p["label"] for p in defaults] == ["seqs=2 context=64 new=1 bf16", "seqs=2 context=64 new=64 bf16"]


@pytest.mark.parametrize("flags, says", [
    (["--shape", "64x"], "--shape takes dims joined by x"),
    (["--shape", "0x5"], "--shape takes dims joined by x"),
    (["--sizes", "0"], "--sizes takes element counts from 1"),
    (["--sizes", "10", "--shape", "4x4"], "give --sizes (element counts for example_inputs) or --shape"),
    (["--rounds", "0"], "--rounds takes a whole number from 1"),
    (["--vmap", "1"], "--vmap takes a batch of 2"),
    (["--chart", "out.png"], "--chart writes .svg or .html"),
    (["--json", "/no/such/folder/b.json"], "no folder /no/such/folder"),
    (["--dtype", "f8"], "--dtype takes"),
    (["--timeout", "nan"], "--timeout takes a finite number"),
])  # fmt: skip
def test_bad_flags_are_one_line_errors(add_project, capsys, flags, says):
    code = cli.run(["bench", str(add_project), *flags])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_USAGE and says in err and len(err.splitlines()) == 1, err


def test_a_peer_that_is_not_module_function_is_refused_naming_the_file(tmp_path, capsys):
    project = new_project(tmp_path, "add_ffi")
    (project / "xlacc.toml").write_text((project / "xlacc.toml").read_text() + '\n[bench]\npeers = ["flash attention"]\n')
    code = cli.run(["bench", str(project)])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_USAGE and "xlacc.toml: [bench] peers[0]: 'flash attention' is not module:function" in err
    (project / "xlacc.toml").write_text((project / "xlacc.toml").read_text().replace("peers =", "peer ="))
    assert cli.run(["bench", str(project)]) == EXIT_USAGE
    assert "xlacc.toml: [bench.peer] unknown key; did you mean 'peers'?" in capsys.readouterr().err


@pytest.mark.slow
def test_shape_needs_the_references_bench_inputs(tmp_path):
    project = new_project(tmp_path, "blank_ffi", template="blank")
    done = bench(project, "--shape", "16", *QUICK)
    assert done.returncode == EXIT_USAGE and "Traceback" not in done.stderr
    assert done.stderr.strip() == "error: --shape needs bench_inputs(shape, rng, dtype) in blank_ffi/reference.py; it has none: use --sizes"
