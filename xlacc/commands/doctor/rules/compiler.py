"""What a compiler printed, read as diagnostics: its error and warning lines with their context
(gcc, clang, nvcc and the CUDA tools, the linker), and the findings a build reports from them."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

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


# A header the compiler could not find: gcc, clang, and nvcc's front end.
MISSING_INCLUDE = re.compile(
    r"^(?P<where>[^\s:(][^:(]*?(?::\d+(?::\d+)?|\(\d+\))): (?:fatal error|catastrophic error|error): "
    r"(?:(?P<gcc>[^\s:'\"]+): No such file or directory|'(?P<clang>[^']+)' file not found|cannot open source file \"(?P<edg>[^\"]+)\")",
    re.MULTILINE,
)
TORCH_HEADER = re.compile(r"^(?:torch|ATen|c10|caffe2|pybind11)/")


def missing_includes(output: str) -> list[tuple[str, str]]:
    """(header, where it is included) for each include the compiler could not find, once each."""
    found: dict[str, str] = {}
    for match in MISSING_INCLUDE.finditer(output):
        header = match.group("gcc") or match.group("clang") or match.group("edg")
        found.setdefault(header, match.group("where"))
    return list(found.items())


def include_findings(output: str, search_path: tuple[Path, ...], stand_ins: Path | None = None) -> list[Finding]:
    """An include-missing finding per header not found: the folders searched, and the fix (a folder
    for [build] include_dirs, or xlacc's PyTorch stand-ins, where ``stand_ins`` says which it has)."""
    findings = []
    for header, where in missing_includes(output):
        includer = re.sub(r"(?::\d+)+$|\(\d+\)$", "", where)
        folders = [str(Path(includer).parent)] + [str(d) for d in search_path]
        evidence = f"{where}: `{header}` is in none of: " + ", ".join(dict.fromkeys(folders))
        fix = None
        if TORCH_HEADER.match(header):
            fix = _torch_header_fix(header, stand_ins)
        findings.append(make_finding("include-missing", evidence, title=f"`{header}` is on no include path", fix=fix, likelihood=0.95))
    return findings


def _torch_header_fix(header: str, stand_ins: Path | None) -> str:
    if stand_ins is None:
        return (f"`{header}` is PyTorch's: wrap the launcher with `xlacc new NAME --from FILE`, whose build puts xlacc's "
                "PyTorch stand-ins (xlacc_torch_compat.h: tensors over XLA's buffers, TORCH_CHECK, AT_DISPATCH, the stream) "
                "on the include path in front of the real torch headers.")
    return (f"`{header}` is PyTorch's and xlacc's stand-ins ({stand_ins}) have no file of that name: include one they "
            "have (torch/all.h, ATen/ATen.h, ATen/cuda/CUDAContext.h, c10/cuda/CUDAGuard.h...) instead, or give the "
            "launcher only what xlacc_torch_compat.h provides.")


# A program of the compiler killed by a signal, as its driver says it: gcc's "Killed signal
# terminated program cc1plus", nvcc's "'cicc' died due to signal 9", clang's "unable to execute
# command: Killed" and "frontend command failed due to signal".
GCC_SIGNAL = re.compile(r"(?P<what>[A-Z][\w -]*?) signal terminated program (?P<program>\S+)")
NVCC_SIGNAL = re.compile(r"'(?P<program>[\w+.-]+)' died due to signal (?P<number>\d+)")
CLANG_SIGNAL = re.compile(r"(?P<program>clang\S*): error: (?:unable to execute command: (?P<what>[A-Z][\w -]*)|[\w ]+? command failed due to signal)")
SIGNAL_HINTS = {
    "SIGXFSZ": "it reached the limit on file size (`ulimit -f`): raise the limit",
    "SIGKILL": "out of memory (the kernel's OOM killer), or killed by someone: compile with less in parallel or more memory",
    "SIGSEGV": "the compiler crashed",
    "SIGABRT": "the compiler aborted",
    "SIGTERM": "something asked it to stop",
}


def killed_by_signal(kind: str, returncode: int | None, output: str) -> str | None:
    """One line naming the signal that killed the compiler or one of its programs (not a compile
    error: the sources were not the cause); None when none did."""
    program, name = _signalled(kind, returncode, output)
    if name is None:
        return None
    described = f"{name} ({signal.strsignal(signal.Signals[name])})" if name in signal.Signals.__members__ else name
    hint = SIGNAL_HINTS.get(name, "not a compile error in the sources")
    return f"{kind} failed: {program} was killed by {described}: {hint}"


def _signalled(kind: str, returncode: int | None, output: str) -> tuple[str, str | None]:
    """(the program, the signal's name) of a compile that a signal ended."""
    if returncode is not None and returncode < 0:
        return kind, _signal_name(-returncode)
    for pattern in (GCC_SIGNAL, NVCC_SIGNAL, CLANG_SIGNAL):
        match = pattern.search(output)
        if match is None:
            continue
        found = match.groupdict()
        if found.get("number"):
            return found["program"], _signal_name(int(found["number"]))
        return found["program"], _signal_by_description(found.get("what") or "") or "a signal"
    return kind, None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _signal_by_description(text: str) -> str | None:
    """``SIGXFSZ`` for "File size limit exceeded", as strsignal words it."""
    wanted = text.strip().lower()
    return next((s.name for s in signal.Signals if (signal.strsignal(s) or "").lower() == wanted), None)
