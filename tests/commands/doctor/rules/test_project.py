"""A generated project: its spec moved on from its code, an update's conflict markers left in it,
and example_inputs that ignore the size run-smoke asks for."""

from __future__ import annotations

import pytest
from smoke_support import append, new_project

from xlacc import spec as specmod
from xlacc.commands.doctor.rules import project


@pytest.fixture
def add(tmp_path):
    return new_project(tmp_path, "add")


def test_a_fresh_project_has_no_finding(add):
    assert project.findings(specmod.load(add)) == []


def test_a_changed_spec_and_a_left_marker(add):
    spec = specmod.load(add)
    [changed, marker] = project.drift_findings(spec, ["attrs: added alpha"], ["add/jax.py:3"])
    assert changed.code == "spec-changed" and changed.evidence.endswith("changed since xlacc generated the code (attrs: added alpha)")
    assert marker.code == "update-conflict" and marker.evidence == f"{add / 'add/jax.py:3'}: `<<<<<<< yours` left by `xlacc update`"


def test_example_inputs_that_never_read_the_size(add):
    reference = add / specmod.load(add).reference_file
    text = reference.read_text().replace("def example_inputs(", "def example_inputs_sized(")
    reference.write_text(text)
    append(reference, "\n\ndef example_inputs(n, rng):\n    return example_inputs_sized(8, rng)\n")
    [found] = project.findings(specmod.load(add))
    assert found.code == "example-inputs-ignore-size" and "never reads `n`" in found.evidence


def test_run_smoke_gave_one_problem_for_every_size():
    assert project.example_inputs_gave_one_problem({1: "x f32[8]", 1000: "x f32[1000]"}) is None
    assert project.example_inputs_gave_one_problem({1: "x f32[8]"}) is None  # one size: nothing to compare
    found = project.example_inputs_gave_one_problem({1: "x f32[8]", 1000: "x f32[8]"})
    assert found.code == "example-inputs-ignore-size"
    assert found.evidence == "example_inputs gave the same operands for n=1, n=1000: x f32[8]"
