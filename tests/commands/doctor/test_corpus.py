"""doctor on a corpus of real projects that define XLA custom calls (tests/corpus/*/SOURCE.md):
right when it says error, nothing real missed, and quiet where a project does something unusual
but right. `python tests/corpus/accuracy.py` prints the numbers."""

from __future__ import annotations

import importlib.util
import json
import sys
import time

import pytest
from locations import TESTS_DIR

CORPUS = (TESTS_DIR / "corpus")
_spec = importlib.util.spec_from_file_location("corpus_accuracy", CORPUS / "accuracy.py")
accuracy = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = accuracy  # its dataclasses look their module up
_spec.loader.exec_module(accuracy)
PROJECTS = sorted(p.parent.name for p in CORPUS.glob("*/expected.json"))


@pytest.fixture(scope="module")
def results():
    return {r.name: r for r in accuracy.measure(CORPUS)}


def test_the_corpus_holds_at_least_eight_projects_each_with_its_source_and_licence():
    assert len(PROJECTS) >= 8
    for name in PROJECTS:
        source = (CORPUS / name / "SOURCE.md").read_text(encoding="utf-8")
        assert "## Licence of the original" in source and "| commit |" in source
        assert any(licence in source for licence in ("MIT License", "Apache License 2.0", "BSD 3-Clause"))


def test_the_first_corpus_is_read_exactly(results):
    first = [r for name, r in results.items() if name not in accuracy.SECOND_CORPUS]
    assert accuracy.totals(first) == (1.0, 1.0)


def test_the_second_corpus_is_read_as_the_issue_asks(results):
    second = [r for name, r in results.items() if name in accuracy.SECOND_CORPUS]
    assert len(second) >= 6
    precision, recall = accuracy.totals(second)
    print(f"\nsecond corpus: error findings right {precision:.1%}, real defects found {recall:.1%}")
    assert precision >= 0.95 and recall >= 0.85


@pytest.mark.parametrize("name", PROJECTS)
def test_each_project_reads_in_well_under_half_a_second_of_cpu(name):
    accuracy.check_project(CORPUS / name)  # parsers and caches warm
    start = time.process_time()
    accuracy.check_project(CORPUS / name)
    assert time.process_time() - start < 0.5


@pytest.mark.parametrize("name", PROJECTS)
def test_each_project(results, name):
    result = results[name]
    assert result.unwanted == [], "misreadings"
    assert result.wrong_errors == [], "errors that are not defects"
    assert result.missed == [], "defects not found"


def test_the_originals_measurement_lists_projects_and_commits():
    originals = json.loads((CORPUS / "originals.json").read_text(encoding="utf-8"))["projects"]
    assert len(originals) >= 6 and all(len(p["commit"]) == 40 and p["paths"] for p in originals.values())
