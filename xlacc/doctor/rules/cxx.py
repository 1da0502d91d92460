"""The shape of C, C++ and CUDA source: functions, parameters, kernel launches, FFI macros.

Regexes over comment-stripped text, not a real parser: libclang is a large native dependency that
needs the CUDA headers to read a .cu file at all, and what doctor looks for (entry points, launches
and the calls around them) has a few fixed shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KEYWORDS = frozenset(
    "if for while switch catch return sizeof do else alignof decltype static_assert defined "
    "__attribute__ __declspec noexcept throw new delete operator typeid alignas".split()
)
STREAM_TYPES = frozenset({"cudaStream_t", "CUstream", "hipStream_t"})
# Calls inside a function that read the launch status.
LAUNCH_CHECKS = re.compile(r"\b(?:cudaGetLastError|cudaPeekAtLastError|C10_CUDA_KERNEL_LAUNCH_CHECK|\w*LAUNCH_CHECK\w*)\b")

TOKENS = re.compile(
    r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
    re.DOTALL,
)
FUNCTION = re.compile(
    r"(?P<name>~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*"
    r"\((?P<params>[^(){};]*(?:\([^(){};]*\)[^(){};]*)*)\)\s*"
    r"(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:->\s*[\w:<>*&\s]+?)?\{"
)
LAUNCH = re.compile(
    r"(?P<kernel>[A-Za-z_][\w:]*)\s*(?:<(?P<targs>[^;<>]*(?:<[^;<>]*>[^;<>]*)*)>)?\s*<<<(?P<config>.*?)>>>\s*\(",
    re.DOTALL,
)
STREAM_ALIAS = re.compile(
    r"\busing\s+(?P<alias>\w+)\s*=\s*(?:const\s+)?(?P<type>cudaStream_t|CUstream)\s*;"
    r"|\btypedef\s+(?P<type2>cudaStream_t|CUstream)\s+(?P<alias2>\w+)\s*;"
)
INT_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)[ \t]+\(?(?P<value>\d+)[uUlL]*\)?[ \t]*$", re.M)
VISIBLE_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)[ \t]+.*visibility\s*\(\s*\"default\"\s*\)", re.M)
PREPROCESSOR_LINE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
HANDLER_MACRO = re.compile(r"\bXLA_FFI_DEFINE_HANDLER(?P<symbol>_SYMBOL)?\s*\(")
FFI_REGISTER = re.compile(r"\bXLA_FFI_REGISTER_HANDLER\s*\(")
LEGACY_REGISTER = re.compile(r"\bXLA_REGISTER_CUSTOM_CALL_TARGET(?P<with_sym>_WITH_SYM)?\s*\(")
EXTERN_C_BLOCK = re.compile(r"\bextern\s+\"C\"\s*\{")
ANONYMOUS_NAMESPACE = re.compile(r"\bnamespace\s*\{")
CLASS_BODY = re.compile(r"\b(?:class|struct|union)\s+(?:alignas\s*\([^)]*\)\s*)?\w+(?:\s*final)?\s*(?::[^;{()]*)?\{")
TYPE_NOISE = re.compile(r"\b(?:const|volatile|struct|class|enum|__restrict__|__restrict|restrict|register)\b")
PARAM = re.compile(r"^(?P<type>.*?[\s*&>])(?P<name>[A-Za-z_]\w*)(?:\s*\[[^\]]*\])*$")


@dataclass(frozen=True)
class Param:
    type: str  # normalised: no const/struct/restrict, no spaces around * and &
    name: str
    text: str

    @property
    def base_type(self) -> str:
        """``std::size_t`` -> ``size_t``; ``xlacc::Stream&`` -> ``Stream``."""
        return self.type.rstrip("&").rsplit("::", 1)[-1]


@dataclass(frozen=True)
class Launch:
    kernel: str
    config: tuple[str, ...]  # grid, block[, shared bytes[, stream]]
    args: tuple[str, ...]
    start: int  # offset in the function body
    end: int
    line: int
    text: str


@dataclass
class Function:
    name: str
    params: tuple[Param, ...]
    head: str  # what precedes the name in the declaration (return type, attributes)
    body: str  # comments removed, strings kept
    skeleton: str  # the body with string contents blanked (for structure)
    line: int  # of the name
    body_line: int  # of the opening brace
    extern_c: bool
    internal: bool  # static, or in an anonymous namespace
    member: bool  # defined inside a class or struct
    launches: list[Launch] = field(default_factory=list)

    def line_in_body(self, offset: int) -> int:
        return self.body_line + self.body.count("\n", 0, offset)

    @property
    def short_name(self) -> str:
        return self.name.replace(" ", "").rsplit("::", 1)[-1]

    def calls(self, name: str) -> list[int]:
        """Offsets in the body where ``name(`` is called."""
        return [m.start() for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\(", self.skeleton)]


@dataclass(frozen=True)
class HandlerMacro:
    name: str  # the symbol (or the handler variable)
    impl: str
    binding: str
    traits: str
    exported: bool  # XLA_FFI_DEFINE_HANDLER_SYMBOL: an extern "C" symbol
    line: int


@dataclass(frozen=True)
class Registration:
    macro: str
    target: str
    platform: str
    handler: str
    line: int
    text: str


@dataclass
class CxxSource:
    name: str
    text: str
    code: str  # comments blanked
    skeleton: str  # comments, strings and preprocessor lines blanked
    line_offset: int = 0
    functions: list[Function] = field(default_factory=list)
    handlers: list[HandlerMacro] = field(default_factory=list)
    registrations: list[Registration] = field(default_factory=list)
    stream_types: set[str] = field(default_factory=set)
    int_macros: dict[str, str] = field(default_factory=dict)
    visibility_macros: set[str] = field(default_factory=set)

    def line_at(self, offset: int) -> int:
        return self.line_offset + self.text.count("\n", 0, offset) + 1

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.short_name == name), None)


# -- text preparation ---------------------------------------------------------------------------


def _blank(text: str) -> str:
    """Spaces for every character but newlines, so offsets and line numbers survive."""
    return re.sub(r"[^\n]", " ", text)


def strip_comments(text: str) -> tuple[str, str]:
    """(code, skeleton): comments blanked in both; string and char contents blanked in skeleton."""
    code_parts, skeleton_parts, last = [], [], 0
    for match in TOKENS.finditer(text):
        token = match.group(0)
        code_parts.append(text[last : match.start()])
        skeleton_parts.append(text[last : match.start()])
        if token.startswith(("//", "/*")):
            code_parts.append(_blank(token))
            skeleton_parts.append(_blank(token))
        else:
            code_parts.append(token)
            skeleton_parts.append(token[0] + _blank(token[1:-1]) + token[-1])
        last = match.end()
    code_parts.append(text[last:])
    skeleton_parts.append(text[last:])
    return "".join(code_parts), "".join(skeleton_parts)


def matching(text: str, open_at: int, opening: str = "{", closing: str = "}") -> int:
    """Offset of the bracket closing the one at ``open_at`` (len(text) - 1 if unbalanced)."""
    depth = 0
    for index in range(open_at, len(text)):
        char = text[index]
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return index
    return len(text) - 1


def split_top_level(text: str) -> list[str]:
    """Split at commas outside (), [], {} and <> (template arguments)."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current))
    return [p.strip() for p in parts]


def normalize_type(text: str) -> str:
    text = TYPE_NOISE.sub(" ", text)
    text = re.sub(r"\s*([*&])\s*", r"\1", text)
    text = re.sub(r"\s*::\s*", "::", text)
    return re.sub(r"\s+", " ", text).strip()


def parse_params(text: str) -> tuple[Param, ...]:
    params = []
    for raw in split_top_level(text):
        raw = raw.split("=", 1)[0].strip()
        if not raw or raw == "void" or raw == "...":
            continue
        match = PARAM.match(raw)
        # A single word (``size_t``) is a type without a name.
        if match and normalize_type(match.group("type")):
            params.append(Param(normalize_type(match.group("type")), match.group("name"), raw))
        else:
            params.append(Param(normalize_type(raw), "", raw))
    return tuple(params)


# -- scanning -------------------------------------------------------------------------------


def _ranges(pattern: re.Pattern, source: CxxSource) -> list[tuple[int, int]]:
    """Brace-delimited blocks opened by ``pattern`` (searched in the code: it may name a string, "C")."""
    return [(m.end() - 1, matching(source.skeleton, m.end() - 1)) for m in pattern.finditer(source.code)]


def _inside(offset: int, ranges: list[tuple[int, int]]) -> bool:
    return any(start < offset < end for start, end in ranges)


def _head(skeleton: str, start: int) -> tuple[int, str]:
    """The declaration text before a function name: back to the previous ';', '{' or '}'."""
    boundary = max(skeleton.rfind(c, 0, start) for c in ";{}")
    return boundary + 1, skeleton[boundary + 1 : start]


def _functions(source: CxxSource) -> list[Function]:
    skeleton = source.skeleton
    extern_blocks = _ranges(EXTERN_C_BLOCK, source)
    anonymous = _ranges(ANONYMOUS_NAMESPACE, source)
    classes = _ranges(CLASS_BODY, source)
    functions, position = [], 0
    while True:
        match = FUNCTION.search(skeleton, position)
        if match is None:
            return functions
        name = re.sub(r"\s+", "", match.group("name"))
        if name.rsplit("::", 1)[-1] in KEYWORDS:
            position = match.end()
            continue
        open_at = match.end() - 1
        close_at = matching(skeleton, open_at)
        head_start, head = _head(skeleton, match.start())
        declaration = source.code[head_start : match.start()]
        functions.append(
            Function(
                name=name,
                params=parse_params(match.group("params")),
                head=" ".join(declaration.split()),
                body=source.code[open_at + 1 : close_at],
                skeleton=skeleton[open_at + 1 : close_at],
                line=source.line_at(match.start()),
                body_line=source.line_at(open_at),
                extern_c='extern "C"' in declaration or _inside(match.start(), extern_blocks),
                internal=bool(re.search(r"\bstatic\b", head)) or _inside(match.start(), anonymous),
                member=_inside(match.start(), classes),
            )
        )
        functions[-1].launches = _launches(functions[-1])
        position = close_at + 1


def _launches(function: Function) -> list[Launch]:
    launches = []
    for match in LAUNCH.finditer(function.skeleton):
        open_at = match.end() - 1
        close_at = matching(function.skeleton, open_at, "(", ")")
        launches.append(
            Launch(
                kernel=match.group("kernel"),
                config=tuple(split_top_level(function.body[match.start("config") : match.end("config")])),
                args=tuple(split_top_level(function.body[open_at + 1 : close_at])),
                start=match.start(),
                end=close_at + 1,
                line=function.line_in_body(match.start()),
                text=" ".join(function.body[match.start() : close_at + 1].split()),
            )
        )
    return launches


def _macro_arguments(source: CxxSource, match: re.Match) -> tuple[list[str], int]:
    open_at = match.end() - 1
    close_at = matching(source.skeleton, open_at, "(", ")")
    return split_top_level(source.code[open_at + 1 : close_at]), close_at


def _handlers(source: CxxSource) -> list[HandlerMacro]:
    handlers = []
    for match in HANDLER_MACRO.finditer(source.skeleton):
        args, _ = _macro_arguments(source, match)
        if len(args) < 3:
            continue
        handlers.append(
            HandlerMacro(
                name=args[0],
                impl=args[1],
                binding=" ".join(args[2].split()),
                traits=" ".join(" ".join(args[3:]).split()),
                exported=bool(match.group("symbol")),
                line=source.line_at(match.start()),
            )
        )
    return handlers


def _string_literals(args: list[str]) -> list[str]:
    return [a.strip()[1:-1] for a in args if re.fullmatch(r'\s*"[^"]*"\s*', a)]


def _registrations(source: CxxSource) -> list[Registration]:
    found = []
    for pattern in (FFI_REGISTER, LEGACY_REGISTER):
        for match in pattern.finditer(source.skeleton):
            args, close_at = _macro_arguments(source, match)
            strings = _string_literals(args)
            names = [a for a in args if re.fullmatch(r"[\w:]+", a)]
            if pattern is LEGACY_REGISTER and not match.group("with_sym"):
                target, platform = (names[0] if names else ""), (strings[0] if strings else "")
            else:
                target, platform = (strings + ["", ""])[:2]
            found.append(
                Registration(
                    macro=match.group(0).rstrip("( \t"),
                    target=target,
                    platform=platform,
                    handler=names[-1] if names else "",
                    line=source.line_at(match.start()),
                    text=" ".join(source.code[match.start() : close_at + 1].split()),
                )
            )
    return found


def parse(name: str, text: str, line_offset: int = 0) -> CxxSource:
    code, skeleton = strip_comments(text)
    skeleton = PREPROCESSOR_LINE.sub(lambda m: _blank(m.group(0)), skeleton)
    source = CxxSource(name=name, text=text, code=code, skeleton=skeleton, line_offset=line_offset)
    source.stream_types = set(STREAM_TYPES) | {
        m.group("alias") or m.group("alias2") for m in STREAM_ALIAS.finditer(source.skeleton)
    }
    source.int_macros = {m.group("name"): m.group("value") for m in INT_MACRO.finditer(code)}
    source.visibility_macros = {m.group("name") for m in VISIBLE_MACRO.finditer(code)}
    source.functions = _functions(source)
    source.handlers = _handlers(source)
    source.registrations = _registrations(source)
    return source


def launch_checked(function: Function, launch: Launch, checkers: set[str]) -> bool:
    """Does the function read the launch status after ``launch`` (directly or via a checker)?"""
    after = function.skeleton[launch.end :]
    if LAUNCH_CHECKS.search(after):
        return True
    return any(re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", after) for name in checkers)


def checker_functions(sources: list[CxxSource]) -> set[str]:
    """Functions whose body reads the launch status: calling one after a launch checks it."""
    return {f.short_name for s in sources for f in s.functions if LAUNCH_CHECKS.search(f.skeleton) and not f.launches}
