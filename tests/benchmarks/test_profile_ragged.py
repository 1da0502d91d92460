"""benchmarks/profile_ragged.py's refusals: a point it cannot profile, or a build it cannot find,
is one line on stderr and exit 2, before jax starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
profile_ragged = pytest.importorskip("profile_ragged")


@pytest.mark.parametrize(("args", "says"), [
    ([], "name one or more grid points"),
    (["decode 3 x 3"], "no grid point 'decode 3 x 3'"),
    (["--decode-template", "prefill 8 x 2048"], "no decode grid point 'prefill 8 x 2048'"),
])
def test_a_point_it_cannot_profile_is_refused_in_one_line(args, says, capsys):
    assert profile_ragged.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_the_decode_template_is_offered_only_the_decode_points(capsys):
    profile_ragged.main(["--decode-template", "mixed 60 x 1 + 4 x 512 at 2048"])
    listed = capsys.readouterr().err.split("the points: ")[1].strip().split(", ")
    assert listed and all(label.startswith("decode ") for label in listed)


@pytest.mark.parametrize(("args", "missing"), [(["decode 8 x 8192"], "ragged"), (["--decode-template", "decode 8 x 8192"], "decode")])
def test_a_build_without_the_project_is_refused(args, missing, tmp_path, monkeypatch, capsys):
    (tmp_path / {"ragged": "decode", "decode": "ragged"}[missing]).mkdir()  # the build holds the other project alone
    monkeypatch.setenv("PRE", str(tmp_path))
    assert profile_ragged.main(args) == 2
    assert f"holds no built {missing} project" in capsys.readouterr().err
