"""benchmarks/compare_builds.py: the order builds take turns in, and the table it draws from the
records of bench_ragged.py processes (no GPU: the records are written here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
compare_builds = pytest.importorskip("compare_builds")


def record(points: dict[str, dict[str, float]]) -> dict:
    """A bench_ragged.py record from label -> {contender: us a call}, with its rows' `xlacc_vs`
    (each other contender's time over the op's) where the op ran."""
    rows = [{"label": label, "us": us} for label, us in points.items()]
    for row in rows:
        if "xlacc" in row["us"]:
            row["xlacc_vs"] = {name: us / row["us"]["xlacc"] for name, us in row["us"].items() if name != "xlacc"}
    return {"rows": rows}


def test_every_build_runs_first_as_often_as_last():
    order = compare_builds.turns(["a", "b", "c"], rounds=2)
    assert [name for name, _, _ in order] == ["a", "b", "c", "c", "b", "a"] * 2
    assert [(r, t) for _, r, t in order][:3] == [(1, 1), (1, 2), (1, 3)]
    positions = {name: sum(t for n, _, t in order if n == name) for name in "abc"}
    assert len(set(positions.values())) == 1


@pytest.mark.parametrize("text", ["a", "=dir", "a=", "../x=dir", "a b=dir"])
def test_a_build_is_a_plain_name_and_a_folder(text):
    with pytest.raises(Exception, match="NAME=FOLDER"):
        compare_builds.parse_build(text)


def test_means_ratios_and_peers_come_from_the_same_processes():
    records = [
        ("main", record({"decode 64 x 2048": {"xlacc": 100.0, "cudnn": 101.0, "decode": 98.0}, "mixed": {"xlacc": 300.0}})),
        ("new", record({"decode 64 x 2048": {"xlacc": 96.0, "cudnn": 100.8, "decode": 97.0}, "mixed": {"xlacc": 303.0}})),
        ("new", record({"decode 64 x 2048": {"xlacc": 98.0, "cudnn": 98.0, "decode": 96.0}, "mixed": {"xlacc": 297.0}})),
        ("main", record({"decode 64 x 2048": {"xlacc": 102.0, "cudnn": 102.0, "decode": 99.0}, "refused": {}})),
    ]
    rows = {(row["label"], row["build"]): row for row in compare_builds.summarize(records)}
    assert rows[("decode 64 x 2048", "main")]["us"] == pytest.approx(101.0)
    assert rows[("decode 64 x 2048", "new")]["vs_first"] == pytest.approx(97.0 / 101.0)
    assert rows[("decode 64 x 2048", "new")]["vs_peers"]["cudnn"] == pytest.approx((1.0, 1.05))
    assert rows[("mixed", "main")]["processes"] == 1  # a row without the op's time counts for nothing
    assert rows[("mixed", "new")]["vs_peers"] == {}
    table = compare_builds.table(compare_builds.summarize(records))
    assert "| decode 64 x 2048 | new | 97.0 (2) | 0.960 | 1.00-1.05x | 0.98-1.01x |" in table


def test_the_mixed_batch_against_its_parts_is_given_per_build():
    records = [("main", {"rows": [], "mixed_vs_parts": {"parts_over_mixed": 0.98}}), ("new", {"rows": []}),
               ("main", {"rows": [], "mixed_vs_parts": {"parts_over_mixed": 1.01}}), ("new", {"rows": [], "mixed_vs_parts": {"parts_over_mixed": 1.1}})]
    assert compare_builds.mixed_over_parts(records) == {"main": (0.98, 1.01), "new": (1.1, 1.1)}
    lines = compare_builds.report(records).splitlines()
    assert lines[-2:] == ["main: the mixed batch's parts as two calls took 0.98-1.01x its time in one call",
                          "new: the mixed batch's parts as two calls took 1.10x its time in one call"]


def test_records_are_read_in_running_order_and_strays_are_left_alone(tmp_path):
    (tmp_path / "new_r1_t2.json").write_text(json.dumps(record({"p": {"xlacc": 2.0}})))
    (tmp_path / "main_r1_t1.json").write_text(json.dumps(record({"p": {"xlacc": 1.0}})))
    (tmp_path / "main_r2_t1.json").write_text("{ cut off")
    (tmp_path / "notes.json").write_text("{}")
    assert [name for name, _ in compare_builds.load_records(tmp_path)] == ["main", "new"]


def test_summarize_prints_the_table_and_refuses_an_empty_folder(tmp_path, capsys):
    (tmp_path / "main_r1_t1.json").write_text(json.dumps(record({"p": {"xlacc": 2.0, "cudnn": 2.2}})))
    assert compare_builds.main(["--summarize", str(tmp_path)]) == 0
    assert "| p | main | 2.0 (1) | 1.000 | 1.10x | - |" in capsys.readouterr().out
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as stopped:
        compare_builds.main(["--summarize", str(empty)])
    assert stopped.value.code == 2
    assert "holds no NAME_rROUND_tTURN.json records" in capsys.readouterr().err


def test_builds_must_be_built_folders_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        compare_builds.main(["--build", f"a={tmp_path}", "--build", f"b={tmp_path}", "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2
    assert "no ragged/ inside" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_two_builds_of_the_same_kernel_are_refused_before_anything_runs(tmp_path, capsys):
    for name, kernel in (("a", "one"), ("b", "two"), ("c", "one")):
        (tmp_path / name / "ragged").mkdir(parents=True)
        (tmp_path / name / "ragged" / "kernel.cu").write_text(kernel)
    builds = [arg for name in "abc" for arg in ("--build", f"{name}={tmp_path / name}")]
    with pytest.raises(SystemExit) as stopped:
        compare_builds.main([*builds, "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2
    assert "a and c hold the same ragged/kernel.cu" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert compare_builds.same_kernels({"a": tmp_path / "a", "b": tmp_path / "b"}) is None


def test_a_build_that_fails_its_gpu_tests_is_not_timed(tmp_path, capsys):
    """Each build's tests run on its own library; the output of each lands beside the records."""
    seen = []

    def run(command, stdout, env, **_):
        seen.append((command, env["RAGGED_PREBUILT"]))
        failing = "broken" in env["RAGGED_PREBUILT"]
        stdout.write("1 failed, 6 passed\n" if failing else "7 passed\n")

        class Done:
            returncode = 1 if failing else 0

        return Done()

    folders = {"main": tmp_path / "main", "new": tmp_path / "broken"}
    assert compare_builds.passing_builds(folders, "cuda and bf16", tmp_path, run=run) == {"main": tmp_path / "main"}
    assert [prebuilt for _, prebuilt in seen] == [str(tmp_path / "main" / "ragged"), str(tmp_path / "broken" / "ragged")]
    assert seen[0][0][-2:] == ["-k", "cuda and bf16"] and "-m" in seen[0][0]
    assert (tmp_path / "new_tests.txt").read_text() == "1 failed, 6 passed\n"
    assert "tests of new: 1 failed, 6 passed (exit 1: not timed)" in capsys.readouterr().out
