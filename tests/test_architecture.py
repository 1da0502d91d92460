"""The shape of the package (docs/architecture.md): layers that import only downwards, no import
loops, and imports inside functions only where start-up time or an optional dependency needs them."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest
from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

PACKAGE = Path(__file__).resolve().parents[1] / "xlacc"
# Modules whose function-level imports are the point: the CLI and the Python API import a command's
# code only when it runs (start-up budgets in benchmarks/bench_cli.py); the harnesses import jax and
# torch in the child process only (the parent imports them for their constants).
LAZY_BY_DESIGN = {
    "xlacc/__init__.py", "xlacc/api.py", "xlacc/cli.py", "xlacc/hatch_build.py",
    "xlacc/commands/smoke/harness_jax.py", "xlacc/commands/smoke/harness_torchax.py",
    "xlacc/commands/smoke/harness_torch_xla.py", "xlacc/commands/smoke/harness_transform_checks.py",
    "xlacc/commands/smoke/timing.py", "xlacc/commands/smoke/torch_arrays.py", "xlacc/commands/smoke/xla_program.py",
}  # fmt: skip
LAZY_REASON = "# lazy:"


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("xlacc", include_external_packages=False)


def test_the_layer_contracts_in_pyproject_are_kept(monkeypatch):
    monkeypatch.chdir(PACKAGE.parent)  # lint-imports reads [tool.importlinter] from ./pyproject.toml
    assert lint_imports(no_cache=True, no_logo=True) == EXIT_STATUS_SUCCESS, "run `lint-imports`: an import breaks a layer"


def test_no_module_imports_itself_through_others(graph):
    loops = [
        f"{importer} -> {imported} -> ... -> {importer}"
        for importer in sorted(graph.modules)
        for imported in sorted(graph.find_modules_directly_imported_by(importer))
        if imported != importer and graph.chain_exists(imported=importer, importer=imported)
    ]
    assert not loops, "import loops:\n" + "\n".join(loops)


def _function_level_imports(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for function in ast.walk(ast.parse(text)):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.append((node.lineno, lines[node.lineno - 1].strip()))
    return found


def test_an_import_inside_a_function_says_why():
    unexplained = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE.parent)) not in LAZY_BY_DESIGN
        for line, text in _function_level_imports(path)
        if LAZY_REASON not in text
    ]
    assert not unexplained, f"import at the top of the module, or say why late ({LAZY_REASON} ...):\n" + "\n".join(unexplained)


def test_docs_architecture_names_every_package_and_module():
    """docs/architecture.md says what each package and module is for: a new one must be added there."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [p for p in PACKAGE.rglob("*.py") if p.stem != "__init__" and p.parent != PACKAGE]
    packages = [p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE]
    missing = [str(m.relative_to(PACKAGE)) for m in modules if f"`{m.stem}`" not in text]
    missing += [f"{d.relative_to(PACKAGE)}/" for d in packages if f"{d.name}/" not in text]
    assert not missing, "docs/architecture.md does not name: " + ", ".join(sorted(missing))
