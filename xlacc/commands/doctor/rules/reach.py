"""Which functions an entry point runs: its body and the host functions it calls, a few levels deep."""

from __future__ import annotations

from xlacc.commands.doctor.program import EntryPoint, Program
from xlacc.readers import cxx

CALL_DEPTH = 4


def host_code(function: cxx.Function) -> bool:
    return not function.cuda or "__host__" in function.cuda


def reachable(entry: EntryPoint, program: Program, skip_guarded: bool = False) -> list[cxx.Function]:
    """The entry point's body and the host functions of the sources it calls, a few levels deep.

    With ``skip_guarded``, calls made inside a try block are not followed (what they throw is caught)."""
    if entry.body is None:
        return []
    return called_from(entry.body, program, skip_guarded)


def called_from(start: cxx.Function, program: Program, skip_guarded: bool = False, enters=host_code) -> list[cxx.Function]:
    """``start`` and the functions of the sources it calls, a few levels deep: those ``enters`` accepts."""
    seen = {start.short_name: start}
    frontier = [start]
    for _ in range(CALL_DEPTH):
        next_frontier = []
        for function in frontier:
            for call in function.calls:
                if (skip_guarded and call.in_try) or call.name.startswith("."):
                    continue
                callee = program.function_named(call.name, near=function.source)
                if callee is not None and callee.short_name not in seen and enters(callee):
                    seen[callee.short_name] = callee
                    next_frontier.append(callee)
        frontier = next_frontier
    return list(seen.values())


def reached_by_entries(program: Program) -> set[str] | None:
    """Names of the functions some entry point reaches; None when the program has no entry point."""
    if not program.entries:
        return None
    return {f.short_name for entry in program.entries for f in reachable(entry, program)}
