"""The catalogue of finding codes: complete, well-formed, documented, and each code exercised."""

from __future__ import annotations

import ast
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
    "build": {"compile-error", "compiler-warning", "arch-specific-code-left-out", "library-unreadable"},
    "registration": {
        "platform-name", "api-version-mismatch", "api-version-invalid", "legacy-api-deprecated", "target-not-registered",
        "capsule-required", "fixed-target-api", "operand-mismatch", "result-mismatch", "backend-config-invalid", "output-dtype-type",
        "opaque-size-mismatch",
    },
    "library": {"library-invalid", "library-not-found", "dependency-missing", "symbol-missing", "symbol-mangled", "symbol-hidden", "arch-mismatch"},
    "source": {"hardcoded-size", "stream-ignored", "unchecked-launch", "host-sync-in-handler", "ld-preload", "op-optimized-away",
               "buffer-order", "opaque-unchecked", "exception-escapes", "closed-over-array", "host-source-in-graph", "handler-exits"},
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


# -- one home per code: the module that makes it ------------------------------------------------

PACKAGE = ROOT / "xlacc"
ERROR_TEXT = "xlacc.commands.doctor.rules.error_text"  # the printed texts and their causes, as data: any code
MAKERS = {"make", "make_finding"}  # the catalogue's constructor, as rules import it
RECORDERS = {"report", "finding"}  # a harness recording a code it names itself
def _module_name(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _called(node) -> str | None:
    function = node.func
    return function.id if isinstance(function, ast.Name) else function.attr if isinstance(function, ast.Attribute) else None


def _string_constants(scope) -> dict[str, set[str]]:
    """Names bound in ``scope`` (not in functions nested in it) to a string, or to a dict of strings."""
    bound: dict[str, set[str]] = {}
    for node in ast.iter_child_nodes(scope) if isinstance(scope, ast.Module) else ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                bound[node.targets[0].id] = {value.value}
            elif isinstance(value, ast.Dict) and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in value.values):
                bound[node.targets[0].id] = {v.value for v in value.values}
    return bound


def _codes_of(argument, names: dict[str, set[str]]) -> set[str] | None:
    """The codes a finding's first argument can be: a literal, a name bound to one, or a table's values."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return {argument.value}
    if isinstance(argument, ast.Name) and argument.id in names:
        return names[argument.id]
    if isinstance(argument, ast.Subscript) and isinstance(argument.value, ast.Name) and argument.value.id in names:
        return names[argument.value.id]
    return None


def _findings_made(path) -> tuple[set[str], list[str]]:
    """(codes a module makes, calls of make whose code the scan cannot tell)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_names = _string_constants(tree)
    made, unknown = set(), []
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:
        names = {**module_names, **_string_constants(function)}
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and node.args and _called(node) in MAKERS | RECORDERS):
                continue
            codes = _codes_of(node.args[0], names)
            if codes is not None:
                made |= codes
            elif _called(node) in MAKERS:
                unknown.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return made & set(CODES), unknown


def _makers() -> dict[str, set[str]]:
    """{code: the modules outside the catalogue and the error-text table that make it}."""
    makers: dict[str, set[str]] = {code: set() for code in CODES}
    unknown = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module.startswith("xlacc.ground.catalogue") or module == ERROR_TEXT:
            continue
        made, unresolved = _findings_made(path)
        unknown += unresolved
        for code in made:
            makers[code].add(module)
    assert not unknown, "make() with a code the scan cannot read (pass a literal):\n" + "\n".join(unknown)
    return makers


def test_every_code_is_made_in_its_home_module_only():
    makers = _makers()
    strays = {
        item.code: f"made in {sorted(makers[item.code])}, home {item.home}"
        for item in CATALOGUE
        if makers[item.code] != {item.home} - {ERROR_TEXT}
    }
    assert not strays, "a code made outside its home (call the home's function):\n" + "\n".join(f"{c}: {w}" for c, w in strays.items())


def test_every_home_is_a_module_of_xlacc():
    for item in CATALOGUE:
        path = ROOT.joinpath(*item.home.split(".")).with_suffix(".py")
        assert path.is_file(), f"{item.code}: home {item.home} is not a module"
    text_only = {item.code for item in CATALOGUE if item.home == ERROR_TEXT}
    assert text_only <= text.rule_codes(), "a code whose home is error_text must be one of its causes"
