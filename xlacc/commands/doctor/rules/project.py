"""A generated project: its spec moved on from its code, a merge left conflicts in it, or its
reference gives run-smoke one problem whatever size it asks for. build and run-smoke call these
functions with what they saw (update-conflict itself is made by ``new.record``, which update uses)."""

from __future__ import annotations

from xlacc.commands.new import record as generated
from xlacc.ground import paths
from xlacc.ground.catalogue import make
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Finding
from xlacc.readers.python import module_functions, parse
from xlacc.spec import drift
from xlacc.spec.reading import SPEC_FILE

EXAMPLE_INPUTS = "example_inputs"  # what run-smoke calls with each problem size
REFERENCE_BYTES = 2 * 1024 * 1024


def findings(spec) -> list[Finding]:
    return drift_findings(spec, drift.signature_changes(spec), generated.conflict_markers(spec)) + _example_inputs_ignoring_size(spec)


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


def example_inputs_gave_one_problem(problems: dict[int, str]) -> Finding | None:
    """What run-smoke saw: example_inputs gave one problem (``{size: its operands}``) for every size
    asked, so each size's check ran the same case. (Small sizes that round to one problem, a cache
    of one block, are the op's granularity: they differ from a large one.)"""
    if len(problems) < 2 or len(set(problems.values())) > 1:
        return None
    asked = ", ".join(f"n={size}" for size in problems)
    return make("example-inputs-ignore-size", f"example_inputs gave the same operands for {asked}: {next(iter(problems.values()))}")


def drift_findings(spec, changes: list[str], markers: list[str]) -> list[Finding]:
    """What build, run-smoke and doctor say of a project whose spec moved on from its code
    (``drift.signature_changes(spec)``) or whose files hold an update's conflict markers."""
    found = [make("spec-changed", f"{spec.root / SPEC_FILE}: changed since xlacc generated the code ({'; '.join(changes)})")] if changes else []
    return found + generated.marker_findings(spec, markers)
