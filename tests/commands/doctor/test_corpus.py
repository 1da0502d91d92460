"""doctor on a corpus of real projects that define XLA custom calls (tests/corpus/*/SOURCE.md):
right when it says error, nothing real missed, and quiet where a project does something unusual
but right. `python tests/corpus/accuracy.py` prints the numbers."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from locations import TESTS_DIR

CORPUS = (TESTS_DIR / "corpus")
_spec = importlib.util.spec_from_file_location("corpus_accuracy", CORPUS / "accuracy.py")
accuracy = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = accuracy  # its dataclasses look their module up
_spec.loader.exec_module(accuracy)
PROJECTS = sorted(p.parent.name for p in CORPUS.glob("*/expected.json"))
# Projects of the second corpus doctor does not read right yet (tests/corpus/ACCURACY.md).
NOT_YET = {"exla": "ld-preload on a library that links XLA", "jaxdecomp": "throws inside project macros",
           "primus-turbo": "throws inside project macros"}


@pytest.fixture(scope="module")
def results():
    return {r.name: r for r in accuracy.measure(CORPUS)}


def test_the_corpus_holds_at_least_eight_projects_each_with_its_source_and_licence():
    assert len(PROJECTS) >= 8
    for name in PROJECTS:
        source = (CORPUS / name / "SOURCE.md").read_text(encoding="utf-8")
        assert "## Licence of the original" in source and "| commit |" in source
        assert any(licence in source for licence in ("MIT License", "Apache License 2.0", "BSD 3-Clause"))


@pytest.mark.xfail(strict=True, reason="the second corpus is not read right yet: tests/corpus/ACCURACY.md")
def test_error_findings_are_right_and_real_defects_are_found(results):
    precision, recall = accuracy.totals(list(results.values()))
    print(f"\ncorpus: error findings right {precision:.1%}, real defects found {recall:.1%}")
    assert precision >= 0.95 and recall >= 0.90


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[n])) if n in NOT_YET else n for n in PROJECTS]
)
def test_each_project(results, name):
    result = results[name]
    assert result.unwanted == [], "misreadings"
    assert result.wrong_errors == [], "errors that are not defects"
    assert result.missed == [], "defects not found"


def test_the_originals_measurement_lists_projects_and_commits():
    originals = json.loads((CORPUS / "originals.json").read_text(encoding="utf-8"))["projects"]
    assert len(originals) >= 6 and all(len(p["commit"]) == 40 and p["paths"] for p in originals.values())
