"""Moving a project from an earlier layout of xlacc's files to this one, for `xlacc update`.

Two moves, each kept to what xlacc wrote, never the user's text:
- the record: the ``[generated]`` table at the end of xlacc.toml goes to ``.xlacc/record.toml``
  (:func:`xlacc.commands.new.record.without_record` cuts it out; every other line of xlacc.toml
  stays, comments included);
- the tests: the generic checks that ``test_NAME.py`` once held moved to ``NAME/checks.py``,
  which the new, short test file imports. The user's own statements of the old file (new tests,
  edited ones, added imports and helpers) are carried into the new file with what they use, and
  a generic check the user had deleted stays out of the new file's import.

A test file is read as Python (``ast``), a top-level statement at a time: a statement is the
user's when its text is not one of the statements xlacc wrote (``.xlacc/base``).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

CARRIED_HEADER = "# Carried over by `xlacc update` from your earlier {path} (its generic checks moved to {checks}):"


@dataclass(frozen=True)
class Statement:
    text: str  # its lines, with the decorators and the comment lines right above it
    binds: frozenset[str]  # the module-level names it defines ("__doc__": the module's docstring)
    uses: frozenset[str]  # the names it reads
    is_import: bool
    end: int  # the line it ends on (1-based)


@dataclass
class MovedTests:
    text: str  # the new test file, with the user's statements carried into it
    kept: list[str] = field(default_factory=list)  # the user's own statements carried, by name
    needed: list[str] = field(default_factory=list)  # statements of xlacc's that those use, carried too
    skipped: list[str] = field(default_factory=list)  # generic checks the user had deleted, left out


def moved_checks(base: str, new: str, checks_module: str) -> set[str]:
    """The names the old test file (``base``, as xlacc wrote it) defined and the new one imports
    from the checks module instead: empty when the test file did not move."""
    try:
        defined = set().union(*(s.binds for s in statements(base) if not s.is_import))
        return defined & imported_from(ast.parse(new), checks_module)
    except SyntaxError:
        return set()


def move_tests(base: str, current: str, new: str, checks_module: str, path: str) -> MovedTests:
    """``new`` with the user's own statements of ``current`` (those not in ``base``) carried into it,
    with what they use of ``current``. SyntaxError when ``current`` is not Python."""
    ours = {s.text.strip() for s in statements(base)}
    theirs = statements(current)
    new_statements = statements(new)
    bound_by_new = set().union(*(s.binds for s in new_statements))
    user = [s for s in theirs if s.text.strip() not in ours]
    carried = _with_what_they_use(user, theirs, bound_by_new | set(dir(builtins)))
    moved = moved_checks(base, new, checks_module)
    gone = {name for name in moved if not any(name in s.binds for s in theirs)}
    replaced = set().union(*(s.binds for s in carried)) if carried else set()
    checks_file = checks_module.replace(".", "/") + ".py"
    text = _assembled(new, new_statements, carried, gone | (replaced & moved), replaced, CARRIED_HEADER.format(path=path, checks=checks_file))
    needed = [_label(s) for s in carried if s not in user]
    return MovedTests(text, [_label(s) for s in user], needed, sorted(gone))


def _label(statement: Statement) -> str:
    if "__doc__" in statement.binds:
        return "the docstring"
    return ", ".join(sorted(statement.binds)) or repr(statement.text.strip().splitlines()[-1][:40])


def statements(text: str) -> list[Statement]:
    """The top-level statements of a Python file, each with its decorators and comments above it."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    found = []
    previous_end = 0
    for index, node in enumerate(tree.body):
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        while start > previous_end and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        binds = frozenset({"__doc__"}) if index == 0 and _is_docstring(node) else _binds(node)
        is_import = isinstance(node, (ast.Import, ast.ImportFrom))
        found.append(Statement("".join(lines[start : node.end_lineno]), binds, _uses(node), is_import, node.end_lineno))
        previous_end = node.end_lineno
    return found


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def imported_from(tree: ast.Module, module: str) -> set[str]:
    return {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == module for alias in node.names}


def _binds(node: ast.stmt) -> frozenset[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return frozenset({node.name})
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return frozenset((alias.asname or alias.name).split(".")[0] for alias in node.names)
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return frozenset(n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name))


def _uses(node: ast.stmt) -> frozenset[str]:
    """The names a statement reads, and a function's parameters: pytest passes fixtures by name."""
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        read |= {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    return frozenset(read)


def _with_what_they_use(user: list[Statement], theirs: list[Statement], known: set[str]) -> list[Statement]:
    """The user's statements and, of the rest of ``theirs``, each one that defines a name they use
    and the new file lacks (transitively), in the order of the user's file."""
    chosen = {id(s) for s in user}
    wanted = set().union(*(s.uses for s in user)) - known if user else set()
    while wanted:
        more = [s for s in theirs if id(s) not in chosen and s.binds & wanted]
        if not more:
            break
        chosen |= {id(s) for s in more}
        wanted = set().union(*(s.uses for s in more)) - known - set().union(*(s.binds for s in theirs if id(s) in chosen))
    return [s for s in theirs if id(s) in chosen]


def _assembled(new: str, new_statements: list[Statement], carried: list[Statement], unimported: set[str], replaced: set[str], header: str) -> str:
    """The new file: its docstring (or the user's) and imports (less ``unimported``) as written,
    the carried statements, then its own statements but those a carried one replaces."""
    last_import = max((s.end for s in new_statements if s.is_import), default=0)
    head = "".join(new.splitlines(keepends=True)[:last_import])
    user_docstring = next((s for s in carried if "__doc__" in s.binds), None)
    if user_docstring is not None:
        ours = next(s for s in new_statements if "__doc__" in s.binds)
        head = head.replace(ours.text.rstrip("\n"), user_docstring.text.rstrip("\n"), 1)
    tail = [s for s in new_statements if s.end > last_import and not s.binds & replaced]
    carried = [s for s in carried if "__doc__" not in s.binds]
    blocks = [header + "\n" + "\n\n".join(s.text.strip("\n") + "\n" for s in carried)] if carried else []
    blocks += [s.text.strip("\n") + "\n" for s in tail]
    return _without_names(head, unimported) + "".join("\n\n" + block for block in blocks)


def _without_names(import_text: str, names: set[str]) -> str:
    """Imports written one name a line, without the lines that import ``names``."""
    return "".join(line for line in import_text.splitlines(keepends=True) if line.strip().rstrip(",") not in names)
