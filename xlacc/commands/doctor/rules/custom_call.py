"""The custom call as lowered: is it in the program at all, and do its operands, results and
backend_config follow the op (the spec's inputs in order, the reference's shapes)?

The one home of op-optimized-away, operand-mismatch, result-mismatch and backend-config-invalid
(a size fixed where the call should give it is ``rules.sizes``'s): doctor's source rules hand these functions what they read in the code that makes
the call, the HLO rule and run-smoke's harnesses what they read in a lowered program (the
harnesses with their own wording: ``context``, a key of the catalogue's WORDINGS).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import hlo

if TYPE_CHECKING:  # what doctor read in the sources; a harness that imports this module reads none
    from xlacc.commands.doctor.program import EntryPoint
    from xlacc.readers.python import PyCall


def optimized_away(evidence: str, calls: list | tuple = (), context: str | None = None, likelihood: float | None = None) -> Finding | None:
    """A lowered program whose ``calls`` (every custom call in it) are none: the op was folded
    away. A call to another target is another problem, not this one."""
    if calls:
        return None
    return make("op-optimized-away", evidence, context=context, likelihood=likelihood)


def backend_config(got: str, expected: str, context: str) -> Finding | None:
    """A lowered backend_config against what the spec gives for these operands, and against the
    ``key=value;...`` form the generated entry points parse."""
    if got != expected:
        return make("backend-config-invalid", f"the HLO has backend_config={got!r}; the spec gives {expected!r}", context=context)
    if not got or hlo.parse_backend_config(got) is None:
        return make("backend-config-invalid", f"backend_config={got!r} is not `key=value` pairs joined by ';'", context=context)
    return None


def operand_count(call: hlo.CustomCall, passed: int, inputs: list[str], context: str) -> Finding | None:
    """A lowered call with another number of operands than the op was given (``passed``), one per
    spec input (``inputs``)."""
    if len(call.operands) == passed:
        return None
    return make(
        "operand-mismatch",
        f"{len(call.operands)} operands in the HLO for {len(inputs)} inputs ({', '.join(inputs)}): {call.line[:400]}",
        context=context,
    )


def operand_order(position: int, source: int | None, inputs: list[str], label: str, context: str) -> Finding | None:
    """Operand ``position`` of a lowered call comes from input ``source`` (None: from none the
    harness could trace) where the spec puts input ``position``."""
    if source == position:
        return None
    got = operand_name(source, inputs)
    return make("operand-mismatch", f"operand {position} of the custom-call is {got}, the spec's input {position} is {inputs[position]} ({label})", context=context)


def operand_name(source: int | None, inputs: list[str]) -> str:
    return inputs[source] if source is not None and source < len(inputs) else "an unknown tensor"


def results(label: str, result_shape: str, got: list[str], want: list[str], context: str) -> Finding | None:
    """A lowered call's result shapes (``got``) against the reference's and the spec's (``want``)."""
    if got == want:
        return None
    return make("result-mismatch", f"{label}: the custom-call returns {result_shape}; the reference and the spec give {', '.join(want)}", context=context)


# -- the call as the Python source makes it ------------------------------------------------------


def constant_implementation(at: str, function: str, returned: str) -> Finding:
    """An op's XLA implementation (at ``file:line``) that returns a constant: XLA folds it away."""
    return make(
        "op-optimized-away",
        f"{at}: the XLA implementation `{function}` returns `{returned}`: a constant that XLA "
        "folds away, so the HLO holds no custom-call",
        likelihood=0.8,
    )


def python_call_config(at: str, call: PyCall) -> list[Finding]:
    """A call made in Python (at ``file:line``) whose attributes or backend_config its api_version cannot take."""
    problems = []
    if call.function == "ffi_call" and call.api is not None and call.api < 4 and call.attrs:
        problems.append(f"attributes {', '.join(call.attrs)} are passed with custom_call_api_version={call.api}; "
                        "attributes need api 4 (legacy calls take legacy_backend_config)")
    if call.function == "ffi_call" and call.api == 4 and call.legacy_config:
        problems.append("legacy_backend_config is passed to a typed FFI call (api 4); pass attributes as keyword arguments")
    if call.framework == "torch_xla" and call.api == 4:
        text = (call.backend_config or "").strip()
        not_dictionary = call.backend_config_kind == "constant" and text and not (text.startswith("{") and text.endswith("}"))
        if not_dictionary or call.backend_config_kind in ("json", "str-call"):
            shown = f'"{text}"' if call.backend_config_kind == "constant" else f"a {call.backend_config_kind} value"
            problems.append(f"backend_config {shown} with api_version 4 is not an MLIR dictionary (`{{n = 3 : i64}}`)")
    return [make("backend-config-invalid", f"{at}: `{call.text}`: {p}", likelihood=0.8) for p in problems]


def operand_dtypes(at: str, call: PyCall, entry: EntryPoint, expected: dict[int, str | None]) -> Finding | None:
    """A call (at ``file:line``) whose operand's element type, where the Python says it, differs from
    the one the entry point reads (``expected``: by operand index, as numpy names)."""
    for index, given in enumerate(call.operand_dtypes):
        wanted = expected.get(index)
        if given and wanted and given != wanted:
            operand = call.operands[index] if call.operands and index < len(call.operands) else f"operand {index}"
            reads = f"binds it as {wanted}" if entry.typed else f"reads buffers[{index}] as {wanted}"
            return make(
                "operand-mismatch",
                f"{at}: operand {index} `{operand}` is {given}, but `{entry.symbol}` ({entry.where}) {reads}",
                title=f"operand {index} is {given}, the kernel reads {wanted}",
                likelihood=0.8,
            )
    return None
