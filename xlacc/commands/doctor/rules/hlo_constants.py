"""Arrays compiled into a program as constants: a jitted function that closes over an array (a KV
cache, weights) instead of taking it as an argument.

jax turns a concrete array a traced function uses into a constant of the program, frozen at its
contents when traced; XLA copies it into the executable at compile time (1.3 s for 128 MiB on a
CPU, against 0.03 s passed as an argument) and the device holds it twice. Large ones are read from
HLO text, where dumps print them elided (``bf16[4096,16,8,128]{3,2,1,0} constant({...})``), and
from StableHLO (``stablehlo.constant dense<"0x..."> : tensor<4096x16x8x128xbf16>``). Worse, of any
size: a constant that a custom call writes in place (``output_to_operand_aliasing``, through the
copy XLA makes for it), as a KV-cache write into a closed-over cache: every call starts again from
the traced contents.
"""

from __future__ import annotations

import re

from xlacc.commands.doctor.rules.hlo_sharding import INTERNAL_TARGET, PASS_THROUGH
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import hlo

# Below this a constant is a table or a mask; caches and weight matrices are far above it.
LARGE_CONSTANT_BYTES = 16 << 20
SHOWN = 3
HLO_CONSTANT = re.compile(r"^\s*(?:ROOT\s+)?(?P<name>%?[\w.\-]{1,200})\s*=\s*(?P<type>[a-z]\w{0,15})\[(?P<dims>[\d,]{0,200})\](?:\{[^}]{0,200}\})?\s+constant\(")
STABLEHLO_TENSOR = re.compile(r":\s*tensor<(?P<dims>(?:\d+x){1,16})(?P<type>\w{1,16})>")
STABLEHLO_NAME = re.compile(r"^\s*(?P<name>%[\w.\-]{1,200})\s*=\s*stablehlo\.constant\s+dense(?P<resource>_resource)?<(?P<head>.)")
BITS = {"pred": 8, "i1": 8, "s8": 8, "u8": 8, "i8": 8, "ui8": 8, "s16": 16, "u16": 16, "i16": 16, "ui16": 16, "f16": 16, "bf16": 16,
        "s32": 32, "u32": 32, "i32": 32, "ui32": 32, "f32": 32, "s64": 64, "u64": 64, "i64": 64, "ui64": 64, "f64": 64,
        "c64": 64, "c128": 128}  # fmt: skip


def diagnose(text: str, where: str | None = None) -> list[Finding]:
    """closed-over-array: an error naming the constants custom calls write in place, else a warning
    naming the largest constants of LARGE_CONSTANT_BYTES or more."""
    prefix = f"{where}: " if where else ""
    written = _written_constants(text)
    if written:
        target = written[0][0]
        shown = "; ".join(f'custom_call_target="{t}" writes its result {out} into operand {i}, `{name}` {shape}, a constant' for t, out, i, name, shape in written[:SHOWN])
        return [make("closed-over-array", prefix + shown, title=f"`{target}` writes in place into a constant: every call starts from the traced contents",
                     severity="error", likelihood=0.9)]  # fmt: skip
    found = sorted((c for line in text.splitlines() if (c := _constant(line))), key=lambda c: -c[2])
    if not found:
        return []
    shown = "; ".join(f"`{name}` {shape} ({_mib(size)})" for name, shape, size in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    total = sum(size for _, _, size in found)
    evidence = f"{prefix}{len(found)} constant{'s' if len(found) > 1 else ''} of {_mib(total)} in all compiled into the program: {shown}{more}"
    return [make("closed-over-array", evidence, likelihood=0.8)]


def _written_constants(text: str) -> list[tuple[str, int, int, str, str]]:
    """(target, output, operand, constant, shape) for each custom-call result XLA writes into an
    operand that is a constant, through the copies and reshapes between them."""
    if "output_to_operand_aliasing" not in text:
        return []
    instructions = hlo.hlo_instructions(text)
    written = []
    for call in hlo.hlo_custom_calls(text):
        if INTERNAL_TARGET.match(call.target):
            continue  # XLA's own calls (cuBLAS adding a bias in place) consume their constants by design
        for output, operand in call.aliases:
            source = _source(call.operands[operand], instructions) if operand < len(call.operands) else None
            if source is not None and source.opcode == "constant":
                name = f"%{source.name}" if f"%{source.name}" in text else source.name  # as the text spells it
                written.append((call.target, output, operand, name, source.shape.split("{")[0]))
    return written


def _source(name: str, instructions: dict[str, hlo.Instruction]) -> hlo.Instruction | None:
    """The instruction whose buffer ``name`` passes on unchanged (itself if it is none of those)."""
    instruction = instructions.get(name)
    for _ in range(8):
        if instruction is None or instruction.opcode not in PASS_THROUGH or not instruction.operands:
            return instruction
        instruction = instructions.get(instruction.operands[0])
    return instruction


def _constant(line: str) -> tuple[str, str, int] | None:
    """(name, shape, bytes) of a large constant defined on ``line``, else None."""
    if "constant" not in line:
        return None
    if (match := HLO_CONSTANT.match(line)) is not None:
        dims = [int(d) for d in match["dims"].split(",") if d]
        return _sized(match["name"], match["type"], dims, f"{match['type']}[{match['dims']}]")
    if (match := STABLEHLO_NAME.match(line)) is None or (match["resource"] is None and match["head"] not in '"['):
        return None  # not a constant, or a splat (dense<0.0>): XLA makes that a broadcast of one value
    tail = line[line.rfind(": tensor<") :]  # the type closes the line, after a value that may be megabytes of hex
    if (typed := STABLEHLO_TENSOR.match(tail)) is None:
        return None
    dims = [int(d) for d in typed["dims"].split("x") if d]
    return _sized(match["name"], typed["type"], dims, f"tensor<{typed['dims']}{typed['type']}>")


def _sized(name: str, element: str, dims: list[int], shape: str) -> tuple[str, str, int] | None:
    element = element.lower()
    bits = BITS.get(element, 8 if element.startswith("f8") else 0)
    size = bits // 8
    for d in dims:
        size *= d
    return (name, shape, size) if size >= LARGE_CONSTANT_BYTES else None


def _mib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"
