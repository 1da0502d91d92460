"""A generated project: its spec moved on from its code, a merge left conflicts in it, or its
reference gives run-smoke one problem whatever size it asks for."""

from __future__ import annotations

from xlacc.commands.new import record as generated
from xlacc.ground import paths
from xlacc.ground.catalogue import make
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Finding
from xlacc.readers.python import module_functions, parse
from xlacc.spec import drift

EXAMPLE_INPUTS = "example_inputs"  # what run-smoke calls with each problem size
REFERENCE_BYTES = 2 * 1024 * 1024


def findings(spec) -> list[Finding]:
    return generated.drift_findings(spec, drift.signature_changes(spec), generated.conflict_markers(spec)) + _example_inputs_ignoring_size(spec)


def _example_inputs_ignoring_size(spec) -> list[Finding]:
    path = spec.root / spec.reference_file
    try:
        parsed = parse(paths.read_user_file(path, REFERENCE_BYTES).decode("utf-8", "replace"))
    except (OSError, UsageError):
        return []
    function = next((f for f in module_functions(parsed) if f.name == EXAMPLE_INPUTS), None)
    if function is None or not function.params:
        return []
    size = function.params[0]
    if size in function.reads:
        return []
    evidence = f"{path}:{function.line}: `{EXAMPLE_INPUTS}({size}, ...)` never reads `{size}`"
    return [make("example-inputs-ignore-size", evidence)]
