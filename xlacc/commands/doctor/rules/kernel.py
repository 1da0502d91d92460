"""Checks over kernels and the entry points XLA calls: what one C/C++/CUDA file says on its own
(with the functions of the other sources it calls). The checks live by subject in sizes, launches,
entry_points, registration and host_sync; this gathers them per source.

Each check takes the parsed :class:`~xlacc.commands.doctor.program.Program` and returns findings; none
compiles or runs anything.
"""

from __future__ import annotations

from xlacc.commands.doctor.program import TYPED_FFI, Program
from xlacc.commands.doctor.rules.entry_points import exception_escapes, opaque_unchecked, process_ends, symbol_exposure
from xlacc.commands.doctor.rules.host_sync import captured_host_sources, host_syncs
from xlacc.commands.doctor.rules.launches import (
    checker_functions,
    stream_ignored,
    unchecked_launch,
)
from xlacc.commands.doctor.rules.reach import host_code, reached_by_entries
from xlacc.commands.doctor.rules.registration import deprecated_signatures, static_registrations
from xlacc.commands.doctor.rules.sizes import hardcoded_size, launch_function_sizes
from xlacc.ground.report import Finding


def kernel_findings(program: Program, looked_up: set[str], hidden_build: str | None) -> dict[str, list[Finding]]:
    """Findings per source name (a file, or the document a block came from)."""
    checkers = checker_functions(program)
    typed_impls = {e.body.short_name for e in program.entries if e.signature is TYPED_FFI and e.body is not None}
    reached = reached_by_entries(program)
    by_source: dict[str, list[Finding]] = {s.name: [] for s in program.sources}
    sizes_reported: set[str] = set()
    for source in program.sources:
        findings = by_source[source.name]
        for function in source.functions:
            fixed = launch_function_sizes(function, source, program, sizes_reported)
            if fixed is not None:
                findings.append(fixed)
            if function.launches and host_code(function):
                findings.extend(stream_ignored(function, source, typed_impls))
                if reached is None or function.short_name in reached:
                    unchecked = unchecked_launch(function, source, program, checkers)
                    if unchecked:
                        findings.append(unchecked)
        findings.extend(static_registrations(source))
    for entry in program.entries:
        findings = by_source[entry.source]
        for check in (hardcoded_size(entry, program), opaque_unchecked(entry, program),
                      symbol_exposure(entry, program, looked_up, hidden_build)):
            if check is not None:
                findings.append(check)
    for grouped in (deprecated_signatures(program), exception_escapes(program), process_ends(program), host_syncs(program),
                    captured_host_sources(program)):
        for source, findings in grouped.items():
            by_source[source].extend(findings)
    return by_source
