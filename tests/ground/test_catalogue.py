"""The catalogue of finding codes: complete, well-formed, documented, and each code exercised."""

from __future__ import annotations

import json
import re

import pytest
from locations import ARTIFACTS_DIR, REPO_DIR

from tools import doctor_docs as docs
from xlacc.commands.doctor.rules import error_text as text
from xlacc.ground.catalogue import BY_CODE, CATALOGUE, CODES, GROUPS, entry, make

ROOT = REPO_DIR
ARTIFACTS = ARTIFACTS_DIR / "doctor"

# Every code xlacc gives, by group: stable, exactly these.
ISSUE_CODES = {
    "environment": {
        "nvcc-missing", "no-gpu", "torch-xla-no-cuda", "torch-xla-version-mismatch", "jax-legacy-api-removed", "ffi-api-skew",
        "jax-preallocation", "torchax-shadowed", "xla-flags-invalid",
    },
    "build": {"compile-error", "compiler-warning", "library-unreadable"},
    "registration": {
        "platform-name", "api-version-mismatch", "api-version-invalid", "legacy-api-deprecated", "target-not-registered",
        "capsule-required", "fixed-target-api", "operand-mismatch", "result-mismatch", "backend-config-invalid", "output-dtype-type",
        "opaque-size-mismatch",
    },
    "library": {"library-invalid", "library-not-found", "dependency-missing", "symbol-missing", "symbol-mangled", "symbol-hidden", "arch-mismatch"},
    "source": {"hardcoded-size", "stream-ignored", "unchecked-launch", "host-sync-in-handler", "ld-preload", "op-optimized-away",
               "buffer-order", "opaque-unchecked", "exception-escapes"},
    "runtime": {"kernel-crash", "cuda-init-before-fork", "torchax-no-lowering", "torchax-mixed-tensors"},
    "project": {"spec-changed", "update-conflict", "template-stub-link", "example-inputs-ignore-size", "rule-crashed", "include-missing"},
    "transforms": {"custom-call-replicated", "sharding-rule-missing", "vmap-method-missing", "grad-undefined"},
}
# Codes only `xlacc build` gives: its own tests show them (tests/commands/build/test_builder.py); and
# rule-crashed, which only a rule with a bug gives (tests/commands/doctor/test_guard.py injects one).
BUILD_CODES = ISSUE_CODES["build"] | {"rule-crashed"}
# A literal code where a finding is made: make("code"), make_finding("code"), Cause("code"), a wording's key.
EMITTED = re.compile(
    r"""(?:\bmake(?:_finding)?\(\s*|\bCause\(\s*|_CODES = \{[^}]*?:\s*)"([a-z][a-z0-9]*(?:-[a-z0-9]+)+)"|"([a-z][a-z0-9]*(?:-[a-z0-9]+)+)":\s*Wording\(""",
    re.S,
)


def test_catalogue_holds_exactly_the_issue_codes_once_each():
    assert len(CODES) == len(CATALOGUE)
    assert set(CODES) == set().union(*ISSUE_CODES.values())
    for group, codes in ISSUE_CODES.items():
        assert {e.code for e in CATALOGUE if e.group == group} == codes


def test_severities_the_issue_fixes():
    assert BY_CODE["no-gpu"].severity == "info"
    assert BY_CODE["legacy-api-deprecated"].severity == "warning"
    assert all(e.severity in ("error", "warning", "info") for e in CATALOGUE)


@pytest.mark.parametrize("code", CODES)
def test_each_entry_explains_fixes_and_gives_one_line_example(code):
    item = entry(code)
    assert item.group in GROUPS
    for field in (item.title, item.explanation, item.fix, item.example):
        assert field.strip() and field == field.strip()
    assert "\n" not in item.example


def test_make_uses_catalogue_text_unless_overridden():
    plain = make("hardcoded-size", "kernel.cu:12: const int size = 3;")
    assert (plain.title, plain.fix, plain.severity) == (BY_CODE["hardcoded-size"].title, BY_CODE["hardcoded-size"].fix, "error")
    assert plain.evidence == "kernel.cu:12: const int size = 3;"
    special = make("no-gpu", "e", title="jax does not see the GPU", fix="install the plugin", likelihood=0.9, severity="warning")
    assert (special.title, special.fix, special.likelihood, special.severity) == ("jax does not see the GPU", "install the plugin", 0.9, "warning")


def test_make_refuses_an_unknown_code():
    with pytest.raises(ValueError, match="unknown finding code"):
        make("no-such-code", "x")


def test_text_rules_only_produce_catalogue_codes():
    assert text.rule_codes() <= set(CODES)


def test_docs_are_generated_from_the_catalogue():
    written = (ROOT / "docs" / "doctor.md").read_text(encoding="utf-8")
    assert docs.generated_part(written) == docs.render_catalogue(), "run: python tools/doctor_docs.py"
    for item in CATALOGUE:
        assert f"`{item.code}`" in written
        assert item.example in written and item.fix in written


def test_readme_table_names_every_code_with_its_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = docs.generated_part(readme, docs.TABLE_START, docs.TABLE_END)
    assert table == docs.render_table(), "run: python tools/doctor_docs.py"
    for item in CATALOGUE:
        assert f"| `{item.code}` | {item.severity} |" in table


def test_docs_update_rewrites_a_stale_catalogue(tmp_path):
    stale = tmp_path / "doctor.md"
    stale.write_text(f"intro\n{docs.START}\nold\n{docs.END}\noutro\n", encoding="utf-8")
    assert docs.update(stale) is True
    assert docs.generated_part(stale.read_text()) == docs.render_catalogue()
    assert stale.read_text().startswith("intro\n") and stale.read_text().endswith("outro\n")
    assert docs.update(stale) is False


def test_every_code_is_named_on_an_artifact_that_has_a_clean_twin():
    expected = {k: v for k, v in json.loads((ARTIFACTS / "expected.json").read_text()).items() if not k.startswith("_")}
    covered = {code for spec in expected.values() for code in spec["codes"]}
    assert covered == set(CODES) - BUILD_CODES
    for name, spec in expected.items():
        assert (ARTIFACTS / name).exists(), name
        if spec["codes"]:
            twin = spec["twin"]
            assert expected[twin]["codes"] == [], f"{name}: twin {twin} must be clean"


def test_every_code_anyone_emits_is_in_the_catalogue():
    """build, run-smoke's harnesses, verify and every doctor rule: no code outside the catalogue,
    and no finding made without it (a literal Finding(...) would bypass its texts)."""
    seen = set()
    for path in sorted((ROOT / "xlacc").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        seen |= {a or b for a, b in EMITTED.findall(source)}
        if path.name != "report.py":
            assert not re.search(r"\bFinding\(\s*(?:code=)?\"", source), f"{path}: a Finding made without the catalogue"
    assert seen - set(CODES) == set(), "codes outside the catalogue"
    assert {"compile-error", "compiler-warning", "library-unreadable", "torch-xla-no-cuda", "arch-mismatch"} <= seen


def test_harnesses_take_their_words_from_the_catalogue():
    from xlacc.ground.catalogue import WORDINGS, wordings

    for context, table in WORDINGS.items():
        for code, (severity, title, fix) in wordings(context).items():
            assert code in BY_CODE and title and fix
            assert severity == (table[code].severity or BY_CODE[code].severity)
    assert wordings("run-smoke torch-xla")["torch-xla-no-cuda"][0] == BY_CODE["torch-xla-no-cuda"].severity
