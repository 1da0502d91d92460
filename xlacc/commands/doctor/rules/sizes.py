"""Sizes fixed in the code where the call should give them: an entry point's element count, a grid
that ignores the buffers, a constant in an xlacc launch function; and, as run-smoke's torch_xla
harness sees it, a backend_config that stays the same when the operands' sizes change. The one home
of hardcoded-size."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from xlacc.commands.doctor.program import EntryPoint, Program
from xlacc.commands.doctor.rules.reach import called_from, host_code, reachable
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx, hlo

SIZE_FROM_CALL = re.compile(r"\b(?:element_count|dimensions|size_bytes|numel|dims)\b|\.size\s*\(|\bsizes?\(\)")

INT_TYPES = r"(?:unsigned\s+|signed\s+)?(?:int|long\s+long|long|short|size_t|std::size_t|int64_t|int32_t|uint32_t|uint64_t|std::int64_t|auto|unsigned)"

CONSTANT_EXPRESSION = re.compile(r"^[\d\s+\-*/()uUlL]+$")

IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")




INT_DECLARATION = re.compile(
    rf"(?:\b(?:const|constexpr|static)\s+)*\b{INT_TYPES}\s+(?P<name>\w+)\s*(?:=\s*|\{{\s*|\(\s*)"
    rf"(?P<value>[\w\s+\-*/()]{{1,80}}?)\s*[;}})]"
)


MODIFIED = (
    r"(?<![\w.>])\b{name}\s*(?:\[[^\]]*\]\s*)?(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{name}\b|\b{name}\s*(?:\+\+|--)"
    r"|(?<![&\w)\]])&\s*{name}\b"
)


@functools.lru_cache(maxsize=256)
def _int_declarations(body: str) -> dict[str, re.Match]:
    """The first integer declaration with an initialiser of each name in a body."""
    found: dict[str, re.Match] = {}
    for match in INT_DECLARATION.finditer(body):
        found.setdefault(match.group("name"), match)
    return found


def _assigned_again(function: cxx.Function, name: str, declaration: re.Match) -> bool:
    """``int64_t n = 1;`` then ``n = std::max(n, splits);`` (or ``++n``, or ``&n`` handed on): a variable."""
    pattern = MODIFIED.format(name=re.escape(name))
    return any(not declaration.start() <= m.start() < declaration.end() for m in re.finditer(pattern, function.body))


def _constant_declaration(function: cxx.Function, name: str, depth: int = 0) -> str | None:
    """``const int size = 3;`` (or ``= 2048 / block_dim;`` where block_dim is a constant too), never
    assigned again."""
    if name not in function.body:
        return None
    match = _int_declarations(function.body).get(name)
    if match is None or _assigned_again(function, name, match):
        return None
    value = match.group("value")
    names = [n for n in IDENTIFIER.findall(value) if not re.fullmatch(r"\d+[uUlL]*", n)]
    if not re.fullmatch(r"[\w\s+\-*/()]+", value) or not re.search(r"\d", value):
        return None
    if names and (depth > 1 or any(_constant_declaration(function, n, depth + 1) is None for n in names)):
        return None
    return " ".join(match.group(0).split())


def _reads_call_sizes(entry: EntryPoint, functions: list[cxx.Function]) -> bool:
    """Does the entry point (or what it calls) read sizes from the call: buffer dimensions for a
    typed handler, backend_config (``opaque``) or a second operand for a legacy function. One that
    runs an xlacc launch function hands it the call's shapes in xlacc::Tensors: whether that one
    reads them is :func:`launch_function_sizes`'s to say."""
    if any(tensor_params(f) for f in functions):
        return True
    if entry.typed:
        return any(SIZE_FROM_CALL.search(f.body) for f in functions)
    if entry.function is None:
        return True
    params = entry.function.params
    kind = entry.signature.params
    if "opaque" in kind:
        opaque = params[kind.index("opaque")].name
        return bool(opaque) and any(re.search(rf"\b{re.escape(opaque)}\b", f.body) for f in functions)
    return False  # XLA:CPU passes sizes as operands: a constant bound below says it ignores them


def _constant_of(name: str, function: cxx.Function, source: cxx.CxxSource) -> str | None:
    declaration = _constant_declaration(function, name)
    if declaration is None and name in source.int_macros:
        declaration = f"#define {name} {source.int_macros[name]}"
    return declaration


def hardcoded_size(entry: EntryPoint, program: Program) -> Finding | None:
    functions = reachable(entry, program)
    if not functions or _reads_call_sizes(entry, functions):
        return None
    if "opaque" in entry.signature.params:
        what = "its backend_config (`opaque`) is never read"
    elif entry.typed:
        what = "the buffers' sizes are never read"
    else:
        what = "XLA:CPU passes this signature no size: pass it as an operand, or use api_version 3 and backend_config"
    for function in functions:
        source = _source_of(function, program, entry.origin)
        for bound, line in _loop_bounds(function):
            declaration = _constant_of(bound, function, source) if _looks_like_size(bound) else None
            if declaration:
                return make(
                    "hardcoded-size",
                    f"{entry.symbol} ({entry.where}): `{declaration}` bounds the loop at {function.at(line)}; {what}",
                    likelihood=0.8,
                )
        for launch in function.launches:
            for arg in launch.args:
                for name in IDENTIFIER.findall(arg):
                    declaration = _constant_of(name, function, source)
                    if declaration:
                        return make(
                            "hardcoded-size",
                            f"{entry.symbol} ({entry.where}): `{declaration}` is passed to `{launch.text}` "
                            f"({function.at(launch.line)}); {what}",
                            likelihood=0.8,
                        )
            grid = _fixed_grid(launch, function, source)
            if grid and not any(_looks_like_size(a) for a in launch.args):
                return make(
                    "hardcoded-size",
                    f"{entry.symbol} ({entry.where}) launches `{launch.text}` ({function.at(launch.line)}) on a fixed grid "
                    f"({grid}) and passes the kernel no size; {what}",
                    likelihood=0.7,
                )
    return None


LOOP_BOUND = re.compile(r"\bfor\s*\([^;()]*;\s*[\w.]+\s*<=?\s*([A-Za-z_]\w*)\s*;")


def _loop_bounds(function: cxx.Function) -> list[tuple[str, int]]:
    """``for (...; i < size; ...)``: the bound's name and the loop's line (host code only)."""
    if not host_code(function):
        return []
    return [(m.group(1), function.line_at(m.start())) for m in LOOP_BOUND.finditer(function.body)]


def _fixed_grid(launch: cxx.Launch, function: cxx.Function, source: cxx.CxxSource) -> str | None:
    """The grid and block when both are constants (literals, or names declared as constants)."""
    if len(launch.config) < 2:
        return None
    shown = []
    for expression in launch.config[:2]:
        names = IDENTIFIER.findall(expression)
        declarations = [_constant_of(n, function, source) for n in names if n not in ("dim3",)]
        if any(d is None for d in declarations):
            return None
        if not names and not CONSTANT_EXPRESSION.match(expression):
            return None
        shown.append("; ".join(d for d in declarations if d) or expression)
    return ", ".join(f"`{s}`" for s in shown)


def _looks_like_size(argument: str) -> bool:
    return re.search(r"\b(?:n|size|count|len|length|num\w*|\w*_size|\w*_len|\w*elements?)\b", argument, re.I) is not None


# -- sizes in an xlacc launch function --------------------------------------------------------------
# `xlacc::Status NAME_launch(xlacc::Stream stream, const xlacc::Tensor& x, ...)`: xlacc's entry points
# read the call's shapes into the tensors (xlacc/kernel.h: numel(), dim(i), rank), so a constant
# size in it is one the call never changes.

TENSOR_TYPE = "xlacc::Tensor"
TENSOR_SIZE_READ = r"\b{name}\s*(?:\[[^\]]*\]\s*)?(?:\.|->)\s*(?:numel|dims?|rank)\b"
# Constants named like these tune the kernel (threads, tiles, vector widths), whatever the shapes.
TUNING_NAME = re.compile(r"block|thread|warp|lane|tile|vec|pack|chunk|unroll|smem|shared|stage|split|align", re.I)
# Calls a size goes through without becoming one the kernel takes: casts, and clamps (`std::min`).
NOT_PASSED_TO = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dim3", "sizeof", "min", "max", "clamp"})
STATEMENT_END = re.compile(r"[;{}]")
ASSIGNED_NAME = re.compile(r"^[^=]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?=(?!=)")
SHAPE_DERIVATION_DEPTH = 2  # `n = x.numel()`, then `rows = n / cols`
TENSOR_SIZE_TITLE = "size fixed in the launch function"
TENSOR_SIZE_EVIDENCE = (
    "{where}: `{declaration}` {use}; {function} ({function_where}) receives the call's shapes in {tensors} "
    "and never reads this size from them"
)
TENSOR_SIZE_MORE = "; also `{declaration}` ({where})"
MAX_SIZES_NAMED = 4  # a finding names this many constants of one launch function
TENSOR_SIZE_FIX = (
    "Read the size from the tensors {function} receives: `{tensor}.numel()` (the element count), `{tensor}.dim(i)` "
    "(dimension i, -1 the last) or `{tensor}.rank`; where the kernel handles one shape only, compare it with "
    "them and return `xlacc::Status::Invalid(...)` for any other."
)
SHOWN_CALL_CHARS = 100


@dataclass(frozen=True)
class Statement:
    first: int  # lines
    last: int
    text: str


def tensor_params(function: cxx.Function) -> list[str]:
    """The names of a function's xlacc::Tensor parameters (by reference, value or pointer)."""
    return [p.name for p in function.params if p.name and p.base_type.lstrip(":") == TENSOR_TYPE]


def _statements(function: cxx.Function) -> list[Statement]:
    """The body cut at `;`, `{` and `}`: statements, and the heads of blocks (`if (...)`)."""
    found, start = [], 0
    for end in [m.start() for m in STATEMENT_END.finditer(function.body)]:
        text = function.body[start:end]
        if text.strip():
            first = start + len(text) - len(text.lstrip())
            found.append(Statement(function.line_at(first), function.line_at(end), text))
        start = end + 1
    return found


def _shape_reads(function: cxx.Function, statements: list[Statement]) -> re.Pattern | None:
    """What stands for a call's shape in a function: its tensors' numel()/dim()/rank, its scalar
    parameters (a helper's sizes, a launch function's attributes), and the names computed from them."""
    reads = [TENSOR_SIZE_READ.format(name=re.escape(t)) for t in tensor_params(function)]
    names = {p.name for p in function.params if p.name and p.is_scalar and p.base_type.lstrip(":") != TENSOR_TYPE}
    for _ in range(SHAPE_DERIVATION_DEPTH):
        pattern = "|".join(reads + [rf"\b{re.escape(n)}\b" for n in sorted(names)])
        if not pattern:
            return None
        found = re.compile(pattern)
        names |= {m.group(1) for s in statements if found.search(s.text) and (m := ASSIGNED_NAME.match(s.text.strip()))}
    return re.compile("|".join(reads + [rf"\b{re.escape(n)}\b" for n in sorted(names)]))


def _tied_to_shapes(name: str, use_line: int, statements: list[Statement], shapes: re.Pattern | None) -> bool:
    """Is the constant compared with a shape, or combined into one, in a statement other than the
    one that passes it on (``if (x.dim(-1) != hidden_size) return xlacc::Status::Invalid(...);``)?"""
    if shapes is None:
        return False
    word = re.compile(rf"\b{re.escape(name)}\b")
    for statement in statements:
        if statement.first <= use_line <= statement.last or not word.search(statement.text):
            continue
        if shapes.search(word.sub(" ", statement.text)):
            return True
    return False


def _helper(function: cxx.Function) -> bool:
    """A host function a launch function runs; one that takes tensors is checked on its own (the
    generated dispatch calls the launch function)."""
    return host_code(function) and not tensor_params(function)


def _size_named(name: str) -> bool:
    return _looks_like_size(name) and not TUNING_NAME.search(name)


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CALL_CHARS else text[: SHOWN_CALL_CHARS - 3] + "..."


def _size_uses(function: cxx.Function, program: Program) -> list[tuple[str, str, int]]:
    """(expression, what is done with it, line) for each size a function passes to a launch or a
    call (named like a size, or where the callee takes one) or bounds a host loop with."""
    uses = []
    for launch in function.launches:
        uses += _sized(launch.args, program.functions.get(launch.short_kernel), launch.text, launch.line)
    for call in function.calls:
        if not call.name.startswith(".") and call.name not in NOT_PASSED_TO and not call.qualified.startswith("std::"):
            uses += _sized(call.args, program.functions.get(call.name), call.text, call.line)
    uses += [(bound, f"bounds the loop at {function.at(line)}", line) for bound, line in _loop_bounds(function) if _size_named(bound)]
    return uses


def _sized(args: tuple[str, ...], callee: cxx.Function | None, text: str, line: int) -> list[tuple[str, str, int]]:
    found = []
    for position, arg in enumerate(args):
        param = callee.params[position].name if callee is not None and position < len(callee.params) else ""
        if _size_named(arg) or _size_named(param):
            found.append((arg, f"is passed to `{_shown(text)}` (line {line})", line))
    return found


def _declared_at(name: str, function: cxx.Function, source: cxx.CxxSource) -> str:
    match = _int_declarations(function.body).get(name)
    if match is not None:
        return function.at(function.line_at(match.start()))
    macro = source.macros.get(name)
    own = macro is not None and re.search(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}\b", source.text, re.M)
    return f"{source.name}:{macro.line}" if own else f"`#define {name}`"


def _fixed_sizes(function: cxx.Function, source: cxx.CxxSource, program: Program) -> list[tuple[str, str, str]]:
    """(where it is declared, the declaration, its use) for each constant size a function uses as
    one, unless it is compared with or combined into the call's shapes."""
    statements = None
    shapes = None
    found = []
    for expression, use, line in _size_uses(function, program):
        for name in IDENTIFIER.findall(expression):
            declaration = _constant_of(name, function, source)
            if declaration is None:
                continue
            if statements is None:
                statements = _statements(function)
                shapes = _shape_reads(function, statements)
            if not _tied_to_shapes(name, line, statements, shapes):
                found.append((_declared_at(name, function, source), declaration, use))
    return found


def launch_function_sizes(function: cxx.Function, source: cxx.CxxSource, program: Program, reported: set[str]) -> Finding | None:
    """An xlacc launch function (or a helper it runs) that uses a constant as a size, where the
    call's shapes are at hand in its tensors; ``reported``: declarations already named."""
    tensors = tensor_params(function)
    if not tensors or not host_code(function):
        return None
    fixed = []
    for helper in called_from(function, program, enters=_helper):
        for where, declaration, use in _fixed_sizes(helper, _source_of(helper, program, source), program):
            if where not in reported:
                reported.add(where)
                fixed.append((where, declaration, use))
    if not fixed:
        return None
    where, declaration, use = fixed[0]
    evidence = TENSOR_SIZE_EVIDENCE.format(
        where=where, declaration=declaration, use=use, function=function.short_name,
        function_where=function.at(function.line), tensors=", ".join(f"`{t}`" for t in tensors),
    )
    evidence += "".join(TENSOR_SIZE_MORE.format(where=w, declaration=d) for w, d, _ in fixed[1:MAX_SIZES_NAMED])
    return make(
        "hardcoded-size",
        evidence,
        title=TENSOR_SIZE_TITLE,
        fix=TENSOR_SIZE_FIX.format(function=function.short_name, tensor=tensors[0]),
        likelihood=0.8,
    )


def _source_of(function: cxx.Function, program: Program, default: cxx.CxxSource | None) -> cxx.CxxSource | None:
    return next((s for s in program.sources if any(f is function for f in s.functions)), default)


def backend_config_fixed(small: int, large: int, first: hlo.CustomCall, second: hlo.CustomCall, context: str) -> Finding | None:
    """Two lowerings at sizes ``small`` and ``large`` whose operands differ in shape but whose
    backend_config is the same: the sizes the kernel reads from it are fixed."""
    if first.operand_shapes == second.operand_shapes or first.backend_config != second.backend_config:
        return None
    return make("hardcoded-size", f"backend_config is {first.backend_config!r} for n={small} and for n={large}", context=context)
