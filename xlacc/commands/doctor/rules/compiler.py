"""What a compiler printed, read as diagnostics: its error and warning lines with their context
(gcc, clang, nvcc and the CUDA tools, the linker), and the findings a build reports from them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xlacc.ground.catalogue import make as make_finding
from xlacc.ground.report import Finding

# Compiler diagnostics: (pattern, level when the pattern has none). `where` names the location.
DIAGNOSTICS: tuple[tuple[re.Pattern[str], str], ...] = (
    # gcc / clang: kernel.cc:3:11: error: ...
    (re.compile(r"^(?P<where>[^\s:(][^:(]*:\d+(?::\d+)?): (?P<level>fatal error|error|warning): "), ""),
    # nvcc's front end: kernel.cu(3): error: ... / kernel.cu(3): warning #177-D: ...
    (re.compile(r"^(?P<where>[^\s(][^(]*\(\d+\)): (?P<level>error|warning)\b"), ""),
    # CUDA tools: nvcc fatal   : Unsupported gpu architecture 'compute_70' / ptxas error   : ...
    (re.compile(r"^(?P<where>nvcc|ptxas|nvlink|fatbinary|cicc|cudafe\+\+)\s*(?P<level>fatal|error|warning)\s*:"), ""),
    # the linker: /usr/bin/ld: ... / collect2: error: ld returned 1 exit status
    (re.compile(r"^(?P<where>(?:\S*/)?(?:ld|collect2)(?:\.\w+)?): (?:(?P<level>error|warning): )?"), "error"),
    # the linker, per reference: kernel.cc:(.text+0x5): undefined reference to `f'
    (re.compile(r"^(?P<where>[^\s:]+:\([^)]*\)): (?=undefined reference)"), "error"),
)
HIDDEN_WARNING_SOURCES = ("xla/ffi",)  # warnings from these headers show only in --verbose output
CONTEXT_LINES = 4  # indented lines (source snippet, caret, instantiation) kept after a diagnostic
MAX_DIAGNOSTICS = 12
FALLBACK_LINES = 15  # output lines shown when no line matched a known diagnostic format


@dataclass
class CompilerMessages:
    errors: list[str] = field(default_factory=list)  # each: the diagnostic line and its context
    warnings: list[str] = field(default_factory=list)


def _classify(line: str) -> tuple[str, str] | None:
    """(level, where) of a diagnostic line; None for any other line."""
    for pattern, default_level in DIAGNOSTICS:
        match = pattern.match(line)
        if match:
            level = match.groupdict().get("level") or default_level
            return ("warning" if level == "warning" else "error"), match.group("where")
    return None


def compiler_messages(output: str) -> CompilerMessages:
    """The compiler's error and warning lines, each with its indented context lines.

    Warnings located in XLA's FFI headers are dropped (``--verbose`` shows the whole output).
    """
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in output.splitlines():
        if current is not None and line[:1].isspace() and line.strip() and len(current) <= CONTEXT_LINES:
            current.append(line)
            continue
        current = None
        found = _classify(line)
        if found is None:
            continue
        level, where = found
        if level == "warning" and any(s in where for s in HIDDEN_WARNING_SOURCES):
            continue
        current = [line]
        blocks.append((level, current))
    return CompilerMessages(
        errors=["\n".join(lines) for level, lines in blocks if level == "error"],
        warnings=["\n".join(lines) for level, lines in blocks if level == "warning"],
    )


def compile_error_finding(compiler: str, title: str, messages: CompilerMessages, output: str) -> Finding:
    """The compile's errors, or the end of its output where none matched a known format."""
    if messages.errors:
        shown = messages.errors[:MAX_DIAGNOSTICS]
        hidden = len(messages.errors) - len(shown)
        evidence = "\n".join(shown) + (f"\n... and {hidden} more" if hidden else "")
    else:
        evidence = "\n".join([line for line in output.splitlines() if line.strip()][-FALLBACK_LINES:])
    return make_finding(
        "compile-error", evidence or "(the compiler printed nothing)", title=f"{compiler} rejected {title}", likelihood=1.0
    )


# nvcc's own warning, and the link error it leads to: an undefined `void kernel<float>(...)`.
TEMPLATE_STUB_WARNING = re.compile(r"^.*static-global-template-stub=true.*$", re.MULTILINE)
UNDEFINED_TEMPLATE = re.compile(r"^.*undefined reference to `(?:void )?[\w:]+<[^`\n]{1,200}>\([^`\n]{0,300}\)'.*$", re.MULTILINE)


def link_diagnoses(compiler: str, command: list[str], output: str) -> list[Finding]:
    """A failed link that CUDA 13's default -static-global-template-stub=true explains."""
    if compiler != "nvcc" or "-static-global-template-stub=false" in command:
        return []
    warned = [m.group(0).strip() for m in TEMPLATE_STUB_WARNING.finditer(output)]
    undefined = [m.group(0).strip() for m in UNDEFINED_TEMPLATE.finditer(output)]
    if not undefined:
        return []
    # Without nvcc's warning (suppressed, say) an undefined template may have other causes.
    return [make_finding("template-stub-link", "\n".join((warned + undefined)[:4]), likelihood=0.95 if warned else 0.6)]


def warnings_finding(compiler: str, title: str, warnings: list[str]) -> Finding:
    shown = warnings[:MAX_DIAGNOSTICS]
    hidden = len(warnings) - len(shown)
    return make_finding(
        "compiler-warning", "\n".join(shown) + (f"\n... and {hidden} more" if hidden else ""), title=f"{compiler} warned about {title}"
    )
