"""How an entry point reads its buffers against how its callers pass them: results written into
operand slots or operands read from result slots, and operands the entry point names in another
order than the caller passes them. A target named at run time (``f"op_{dtype}"``) is checked
against every entry point it can name, and blamed only where every such call agrees."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlacc.commands.doctor.program import EntryPoint, Program
from xlacc.commands.doctor.rules.python import where
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx
from xlacc.readers.python import PyCall, PyFacts

BUFFER_CAST = re.compile(
    r"(?:(?P<decl_const>const\s+)?(?P<decl_type>[\w:]+)\s*(?:const\s*)?\*\s*(?:const\s+)?(?:__restrict__\s+)?)?"
    r"(?P<var>\w+)\s*=\s*(?:(?:reinterpret_cast|static_cast)\s*<\s*(?P<cast_const>const\s+)?(?P<cast_type>[\w:]+)\s*(?:const\s*)?\*\s*>\s*\(\s*"
    r"|\(\s*(?P<c_const>const\s+)?(?P<c_type>[\w:]+)\s*(?:const\s*)?\*\s*\)\s*)?{buffers}\s*\[\s*(?P<index>\d+)\s*\]"
)



@dataclass(frozen=True)
class BufferUse:
    index: int
    var: str
    element: str | None  # the C type it is read as
    written: bool
    read: bool



def buffer_uses(entry: EntryPoint, program: Program) -> list[BufferUse]:
    """How a legacy GPU entry point reads ``buffers[i]``: as what type, written or read by the
    kernels it launches (or by its own copies)."""
    if entry.function is None or entry.signature.kind not in ("gpu-original", "gpu-status"):
        return []
    function, buffers = _buffers_reader(entry.function, entry.function.params[1].name, program)
    if not buffers:
        return []
    pattern = _buffer_cast(buffers)
    uses = {}
    for match in pattern.finditer(function.body):
        index = int(match.group("index"))
        var = match.group("var")
        element = match.group("cast_type") or match.group("c_type") or match.group("decl_type")
        const = bool(match.group("cast_const") or match.group("c_const") or match.group("decl_const"))
        written, read = _access(var, function, program)
        if index not in uses:
            uses[index] = BufferUse(index, var, element, written, read or const)
    return [uses[i] for i in sorted(uses)]


def _buffer_cast(buffers: str) -> re.Pattern:
    return re.compile(BUFFER_CAST.pattern.replace("{buffers}", re.escape(buffers)))


def _buffers_reader(function: cxx.Function, buffers: str, program: Program, depth: int = 2) -> tuple[cxx.Function, str]:
    """The function that reads ``buffers[i]`` and its name for the array there: the entry point, or
    the helper it hands its ``buffers`` to (``apply<float>(stream, buffers, opaque, len)``)."""
    if not buffers or depth == 0 or _buffer_cast(buffers).search(function.body):
        return function, buffers
    for call in function.calls:
        args = [a.strip() for a in call.args]
        callee = program.functions.get(call.name) if buffers in args else None
        if callee is not None and callee is not function and args.index(buffers) < len(callee.params):
            name = callee.params[args.index(buffers)].name
            if name:
                return _buffers_reader(callee, name, program, depth - 1)
    return function, buffers


def _access(var: str, function: cxx.Function, program: Program) -> tuple[bool, bool]:
    """(written, read) for a host pointer: by the kernels it is passed to, or host copies into it."""
    written = read = False
    for launch in function.launches:
        kernel = program.kernels.get(launch.short_kernel)
        for position, arg in enumerate(launch.args):
            if not re.fullmatch(rf"\s*(?:\(\s*[\w:\s*]+\)\s*)?{re.escape(var)}\s*", arg):
                continue
            if kernel is None or position >= len(kernel.params):
                return written, True
            param = kernel.params[position]
            if param.const_pointee:
                read = True
            elif _kernel_writes(kernel, param.name):
                written = True
            else:
                read = True
    for call in function.calls:
        if call.name in ("cudaMemcpyAsync", "cudaMemcpy", "cudaMemsetAsync", "cudaMemset", "memcpy", "memset") and call.args:
            if call.args[0].strip() == var:
                written = True
            elif len(call.args) > 1 and call.args[1].strip() == var:
                read = True
    return written, read


def _kernel_writes(kernel: cxx.Function, name: str) -> bool:
    if not name:
        return False
    n = re.escape(name)
    return re.search(
        rf"\b{n}\s*\[[^\]]*\]\s*(?:[-+*/|&^]|<<|>>)?=(?!=)|\*\s*\(?\s*{n}\b[^;=]*=(?!=)|atomic\w*\s*\(\s*&?\s*{n}\b|\b{n}\s*\+[^;]*\)\s*=(?!=)",
        kernel.body,
    ) is not None


def buffer_order(entry: EntryPoint, program: Program, operands: int | None, call_where: str | None) -> Finding | None:
    uses = buffer_uses(entry, program)
    written = [u for u in uses if u.written]
    only_read = [u for u in uses if u.read and not u.written]
    if not written or not only_read:
        return None
    if operands is not None:
        overwritten = [u for u in written if u.index < operands]
        results_read = [u for u in only_read if u.index >= operands]
        if not overwritten and not results_read:
            return None
        problems = [f"writes `{u.var}` = buffers[{u.index}], operand {u.index}" for u in overwritten]
        problems += [f"reads `{u.var}` = buffers[{u.index}], a result slot, as an input" for u in results_read]
        return make(
            "buffer-order",
            f"{entry.symbol} ({entry.where}) {'; '.join(problems)}; {call_where} passes {operands} operand(s), so "
            f"buffers[0..{operands - 1}] are inputs and buffers[{operands}..] are results",
            likelihood=0.85,
        )
    if max(u.index for u in written) < min(u.index for u in only_read):
        return make(
            "buffer-order",
            f"{entry.symbol} ({entry.where}) writes {', '.join(f'buffers[{u.index}] (`{u.var}`)' for u in written)} and only "
            f"reads {', '.join(f'buffers[{u.index}] (`{u.var}`)' for u in only_read)}: XLA puts the operands first and the "
            "results after them",
            severity="warning",
            likelihood=0.6,
        )
    return None


def operand_order(entry: EntryPoint, program: Program, operands: tuple[str, ...], call_where: str) -> Finding | None:
    """The entry point reads by name what the caller passes in another place: `key = buffers[0]`
    where the call passes `[key_cache, value_cache, key, ...]`. Two names in common at least, so that
    a lone coincidence of names is not taken for a mix-up."""
    uses = {_bare(u.var): u for u in buffer_uses(entry, program) or _typed_operands(entry)}
    passed = {name: i for i, o in enumerate(operands) if (name := _bare(o))}
    shared = [name for name in passed if name in uses]
    moved = [name for name in shared if passed[name] != uses[name].index]
    if len(shared) < 2 or not moved:
        return None
    count = len(operands)
    slot = "operand {} of " + entry.body.short_name if entry.typed and entry.body is not None else "buffers[{}]"
    shown = ", ".join(
        f"`{uses[n].var}` is {slot.format(uses[n].index)}{' (a result)' if uses[n].index >= count else ''} there "
        f"but operand {passed[n]} here"
        for n in moved[:3]
    )
    more = f" (and {len(moved) - 3} more)" if len(moved) > 3 else ""
    return make(
        "buffer-order",
        f"{entry.symbol} ({entry.where}) takes its buffers in another order than {call_where} passes them "
        f"([{', '.join(operands)}]): {shown}{more}",
        likelihood=0.8,
    )


def _typed_operands(entry: EntryPoint) -> list[BufferUse]:
    """A typed handler's operands, named by its implementation's parameters, in binding order (the
    index counts operands only)."""
    if not entry.typed or entry.body is None or "RemainingArgs" in entry.binding:
        return []
    operands = [p for p in entry.body.params if TYPED_OPERAND.search(p.type) and "Result" not in p.type]
    return [BufferUse(i, p.name, None, False, True) for i, p in enumerate(operands) if p.name]


TYPED_OPERAND = re.compile(r"\b(?:Buffer|AnyBuffer|BufferR\d)\b")
BARE_AFFIXES = re.compile(r"^(?:d_|h_|p_|dev_|host_)|(?:_ptr|_p|_d|_dev|_data|_buf|_buffer|_in)$")


def _bare(expression: str) -> str | None:
    """The name an operand or a buffer goes by: `self.key_cache` -> key_cache, `d_key` -> key."""
    match = re.fullmatch(r"\s*(?:[\w.]*\.)?(\w+)\s*", expression) or re.fullmatch(r"\s*(\w+)\s*\..*", expression)
    if match is None:
        return None
    return BARE_AFFIXES.sub("", match.group(1).lower()) or None


def buffer_order_of_calls(entry: EntryPoint, program: Program, calls: list[tuple[PyFacts, PyCall]]) -> Finding | None:
    """buffer-order as a call by the entry's own name shows it; a call whose name is built at run time
    (it may call another entry of the same pattern) shows it only when every such call agrees."""
    exact = [(facts, call) for facts, call in calls if call.target is not None]
    built = [(facts, call) for facts, call in calls if call.target is None]
    found = next((f for facts, call in exact if (f := _order_of_call(entry, program, facts, call))), None)
    if found is not None or not built:
        return found
    shown = [_order_of_call(entry, program, facts, call) for facts, call in built]
    return shown[0] if all(shown) else None


def _order_of_call(entry: EntryPoint, program: Program, facts: PyFacts, call: PyCall) -> Finding | None:
    at = where(facts, call.line)
    return buffer_order(entry, program, len(call.operands), at) or operand_order(entry, program, call.operands, at)
