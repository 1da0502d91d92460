"""A rule that raises is reported as rule-crashed and the other rules still run; doctor exits 1."""

from __future__ import annotations

import json

from locations import ARTIFACTS_DIR
from typer.testing import CliRunner

from xlacc.cli import app
from xlacc.commands.doctor import guard
from xlacc.commands.doctor.rules import environment, kernel

SEED = ARTIFACTS_DIR / "seeds" / "004_f157b4041f9dd39a.txt"  # a note with two Python errors and a kernel


def doctor_json(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["doctor", "--json", *args], obj={"command": []})
    return result.exit_code, json.loads(result.stdout)


def broken_rule(*args, **kwargs):
    return [][0]  # a rule with a bug: IndexError


def test_an_injected_failing_rule_is_a_finding_and_the_other_rules_still_run(monkeypatch):
    healthy_code, healthy = doctor_json(str(SEED))
    monkeypatch.setattr(kernel, "kernel_findings", broken_rule)
    code, report = doctor_json(str(SEED))
    codes = [f["code"] for f in report["findings"]]
    assert code == 1 and healthy_code == 1
    (crashed,) = [f for f in report["findings"] if f["code"] == "rule-crashed"]
    assert "broken_rule raised IndexError: list index out of range" in crashed["evidence"] and crashed["severity"] == "error"
    assert "rule-crashed" not in {f["code"] for f in healthy["findings"]}
    assert {"api-version-invalid", "output-dtype-type"} <= set(codes)  # the Python rules' findings, as without the crash


def test_an_environment_check_that_raises_leaves_the_others(monkeypatch):
    monkeypatch.setattr(environment, "nvcc_section", lambda: 1 / 0)
    sections = environment.check_environment()
    names = [s.name for s in sections]
    (failed,) = [s for s in sections if any(f.code == "rule-crashed" for f in s.findings)]
    assert failed.name == "nvcc" and "ZeroDivisionError: division by zero" in failed.findings[0].evidence
    assert len(sections) == 10 and names.index("nvcc") == 6


def test_the_finding_names_the_rule_the_error_and_where_it_was_raised():
    try:
        broken_rule()
    except IndexError as error:
        finding = guard.rule_crashed(broken_rule, error)
    assert finding.code == "rule-crashed"
    assert finding.evidence.startswith("doctor's rule test_guard.broken_rule raised IndexError: list index out of range at ")
    assert "test_guard.py:" in finding.evidence
