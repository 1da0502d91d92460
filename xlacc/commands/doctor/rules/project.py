"""A generated project: its spec moved on from its code, a merge left conflicts in it, or its
reference gives run-smoke one problem whatever size it asks for."""

from __future__ import annotations

import ast

from xlacc.commands.new import record as generated
from xlacc.ground import paths
from xlacc.ground.catalogue import make
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Finding
from xlacc.readers.python import parse
from xlacc.spec import drift

EXAMPLE_INPUTS = "example_inputs"  # what run-smoke calls with each problem size
REFERENCE_BYTES = 2 * 1024 * 1024


def findings(spec) -> list[Finding]:
    return generated.drift_findings(spec, drift.signature_changes(spec), generated.conflict_markers(spec)) + _example_inputs_ignoring_size(spec)


def _example_inputs_ignoring_size(spec) -> list[Finding]:
    path = spec.root / spec.reference_file
    try:
        tree, _, _ = parse(paths.read_user_file(path, REFERENCE_BYTES).decode("utf-8", "replace"))
    except (OSError, UsageError):
        return []
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == EXAMPLE_INPUTS), None) if tree else None
    if function is None or not function.args.args:
        return []
    size = function.args.args[0].arg
    if any(isinstance(node, ast.Name) and node.id == size and isinstance(node.ctx, ast.Load) for node in ast.walk(function)):
        return []
    evidence = f"{path}:{function.lineno}: `{EXAMPLE_INPUTS}({size}, ...)` never reads `{size}`"
    return [make("example-inputs-ignore-size", evidence)]
