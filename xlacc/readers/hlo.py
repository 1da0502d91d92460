"""Find custom calls in HLO text (XLA, torch_xla) and StableHLO text (jax lowering, jax.export).

No parser for either format is published on PyPI, so these few regular expressions read only
what the checks need: target, api_version, backend_config, operands and shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

API_VERSION_NAMES = {
    1: "API_VERSION_ORIGINAL",
    2: "API_VERSION_STATUS_RETURNING",
    3: "API_VERSION_STATUS_RETURNING_UNIFIED",
    4: "API_VERSION_TYPED_FFI",
}
API_VERSION_NUMBERS = {name: number for number, name in API_VERSION_NAMES.items()}
# Both formats leave api_version out when it is the default, API_VERSION_ORIGINAL.
DEFAULT_API_VERSION = 1
TYPED_FFI = 4


@dataclass(frozen=True)
class CustomCall:
    target: str
    api_version: int
    backend_config: str
    operands: tuple[str, ...]  # instruction names (HLO) or SSA values (StableHLO), in order
    operand_shapes: tuple[str, ...]  # as printed; "" where the text does not say
    result_shape: str
    line: str
    aliases: tuple[tuple[int, int], ...] = ()  # (output index, operand index): results written into an operand's buffer


@dataclass(frozen=True)
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: tuple[str, ...]


def api_version_name(version: int) -> str:
    return API_VERSION_NAMES.get(version, f"API_VERSION_{version}")


# -- HLO ----------------------------------------------------------------------------------------

# Names as dumps and compiled text print them (`%add.3 = f32[8]{0} add(f32[8]{0} %a, ...)`) or as
# `compiler_ir("hlo").as_hlo_text()` does (`add.3 = f32[8]{0} add(a, b)`); a bare name counts only
# before an HLO shape (an element type and its dims, or a tuple), so `x = f(y)` in a log does not.
_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?(?:%(?P<name>[\w.\-]+)|(?P<bare>[\w.\-]+)(?=\s*=\s*\(?[a-z]\w*\[))\s*=\s*(?P<shape>.+?)\s+(?P<opcode>[a-z][\w\-]*)\(")
_HLO_TARGET = re.compile(r'custom_call_target="(?P<target>(?:[^"\\]|\\.)*)"')
_HLO_API = re.compile(r"\bapi_version=(?P<api>API_VERSION_\w+)")
_HLO_CONFIG_STRING = re.compile(r'\bbackend_config="(?P<config>(?:[^"\\]|\\.)*)"')
_HLO_CONFIG_DICT = re.compile(r"\bbackend_config=(?P<config>\{.*?\})(?:,|$)")
_OPERAND = re.compile(r"^(?:(?P<shape>.*?)\s*%(?P<name>[\w.\-]+)|(?P<bare>[\w.\-]+))$")
_COMMENT = re.compile(r"/\*.*?\*/")  # torch_xla numbers long operand lists: /*index=5*/
# output_to_operand_aliasing={{0}: (2, {}), {1}: (3, {})}; a single result's index is {}.
_HLO_ALIAS = re.compile(r"\{(?P<output>[\d,\s]*)\}:\s*\((?P<operand>\d+),")


def hlo_instructions(text: str) -> dict[str, Instruction]:
    instructions = {}
    for line in _COMMENT.sub("", text).splitlines():
        match = _HLO_INSTRUCTION.match(line)
        if not match:
            continue
        inner = _balanced(line, match.end() - 1)
        names = tuple(_name(m) for part in _split_top(inner) if (m := _OPERAND.match(part)))
        instructions[_name(match)] = Instruction(_name(match), match["shape"], match["opcode"], names)
    return instructions


def hlo_custom_calls(text: str) -> list[CustomCall]:
    calls = []
    for line in _COMMENT.sub("", text).splitlines():
        match = _HLO_INSTRUCTION.match(line)
        if not match or match["opcode"] != "custom-call":
            continue
        inner = _balanced(line, match.end() - 1)
        parts = [_OPERAND.match(part) for part in _split_top(inner)]
        attrs = line[match.end() + len(inner) :]
        target = _HLO_TARGET.search(attrs)
        api = _HLO_API.search(attrs)
        calls.append(
            CustomCall(
                target=_unescape(target["target"]) if target else "",
                api_version=API_VERSION_NUMBERS.get(api["api"], 0) if api else DEFAULT_API_VERSION,
                backend_config=_hlo_backend_config(attrs),
                operands=tuple(_name(p) for p in parts if p),
                operand_shapes=tuple(p["shape"] or "" for p in parts if p),
                result_shape=match["shape"],
                line=line.strip(),
                aliases=_hlo_aliases(attrs),
            )
        )
    return calls


def _name(match: re.Match) -> str:
    return match["name"] or match["bare"]


def _hlo_aliases(attrs: str) -> tuple[tuple[int, int], ...]:
    start = attrs.find("output_to_operand_aliasing=")
    if start < 0:
        return ()
    inner = _balanced(attrs, attrs.index("{", start))
    return tuple((int(m["output"].split(",")[0]) if m["output"].strip() else 0, int(m["operand"])) for m in _HLO_ALIAS.finditer(inner))


def _hlo_backend_config(attrs: str) -> str:
    string = _HLO_CONFIG_STRING.search(attrs)
    if string:
        return _unescape(string["config"])
    mapping = _HLO_CONFIG_DICT.search(attrs)
    return mapping["config"] if mapping else ""


# -- StableHLO ----------------------------------------------------------------------------------

_SHLO_CALL = re.compile(r'stablehlo\.custom_call\s+@(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<plain>[\w$.\-]+))\(')
_SHLO_API = re.compile(r"\bapi_version\s*=\s*(?P<api>\d+)\s*:\s*i32")
_SHLO_CONFIG_STRING = re.compile(r'(?<![\w.])backend_config\s*=\s*"(?P<config>(?:[^"\\]|\\.)*)"')
# jax writes a typed FFI call's attributes as `mhlo.backend_config = {...}` with the default
# api_version; converting to HLO turns that into API_VERSION_TYPED_FFI.
_SHLO_FFI_CONFIG = re.compile(r"\bmhlo\.backend_config\s*=\s*(?P<config>\{[^{}]*\})")
_SHLO_TYPE = re.compile(r"\)\s*->\s*(?P<result>.+?)(?:\s+loc\(.*\))?\s*$")
_SHLO_ALIAS = re.compile(r"output_operand_alias<output_tuple_indices = \[(?P<output>[\d,\s]*)\],\s*operand_index = (?P<operand>\d+)")


def stablehlo_custom_calls(text: str) -> list[CustomCall]:
    calls = []
    for line in text.splitlines():
        match = _SHLO_CALL.search(line)
        if not match:
            continue
        inner = _balanced(line, match.end() - 1)
        rest = line[match.end() + len(inner) :]
        api, string, ffi = _SHLO_API.search(rest), _SHLO_CONFIG_STRING.search(rest), _SHLO_FFI_CONFIG.search(rest)
        api_version = int(api["api"]) if api else DEFAULT_API_VERSION
        if ffi and api_version == DEFAULT_API_VERSION:
            api_version, config = TYPED_FFI, ffi["config"]
        else:
            config = _unescape(string["config"]) if string else ""
        result = _SHLO_TYPE.search(rest)
        operands = tuple(part.strip() for part in _split_top(inner) if part.strip())
        calls.append(
            CustomCall(
                target=_unescape(match["quoted"]) if match["quoted"] is not None else match["plain"],
                api_version=api_version,
                backend_config=config,
                operands=operands,
                operand_shapes=("",) * len(operands),
                result_shape=result["result"] if result else "",
                line=line.strip(),
                aliases=tuple((int(m["output"].split(",")[0]) if m["output"].strip() else 0, int(m["operand"])) for m in _SHLO_ALIAS.finditer(rest)),
            )
        )
    return calls


def calls_to(calls: list[CustomCall], target: str) -> list[CustomCall]:
    return [c for c in calls if c.target == target]


def parse_backend_config(config: str) -> dict[str, str] | None:
    """``"n=1024;eps=1e-06"`` -> ``{"n": "1024", "eps": "1e-06"}``; None when it is not that form."""
    pairs = {}
    for item in filter(None, (part.strip() for part in config.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not _CONFIG_KEY.match(key.strip()):
            return None
        pairs[key.strip()] = value.strip()
    return pairs


_CONFIG_KEY = re.compile(r"^[A-Za-z_][\w.]*$")  # `n`, `eps`, `x.shape`


# -- text helpers -------------------------------------------------------------------------------


def _balanced(line: str, open_index: int) -> str:
    """The text inside the parenthesis that opens at ``open_index`` (to the line's end if unclosed)."""
    depth = 0
    for i in range(open_index, len(line)):
        ch = line[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return line[open_index + 1 : i]
    return line[open_index + 1 :]


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: ``f32[4,5]{1,0} %a, f32[5] %b`` -> two parts."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)
