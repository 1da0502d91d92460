"""The checks on what a user may write: names that become C++ and Python code, compiler flags,
GPU archs, numbers. This is the guard against code injection: every user-given name passes here."""

from __future__ import annotations

import keyword
import math
import re
import sys
from typing import Any

from xlacc.ground.errors import UsageError
from xlacc.spec import names

# Reserved words of C and C++: a name that is one of them cannot become a symbol. Listed by hand
# because no standard library module knows them (Python's come from `keyword`).
C_CPP_KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
    nullptr operator or or_eq private protected public register reinterpret_cast requires restrict
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local main
    """.split()
)
# The op's name becomes a Python package: it must not hide a module the project imports.
IMPORTED_PACKAGES = frozenset(
    "jax jaxlib torch torch_xla torchax numpy ml_dtypes xlacc pytest hatchling typing_extensions".split()
)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
TARGET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,126}$")
ARCH = re.compile(r"^sm_(\d{2,3})a?$")
MAX_SPEC_BYTES = 1_000_000
MAX_KERNEL_BYTES = 64_000_000  # a kernel file read for its launch functions
DISABLED_CODE = re.compile(r"^[ \t]*#[ \t]*if[ \t]+0\b.*?^[ \t]*#[ \t]*endif\b", re.MULTILINE | re.DOTALL)
MAX_DIM = 2**31 - 1  # a dim the kernels index with int
FLAG = re.compile(r"^[^\s\x00-\x1f\x7f]+$")  # one compiler argument; the command runs without a shell
# Flags that change what the compiler writes, or where: xlacc names the output and verifies a library.
OUTPUT_FLAGS = frozenset({"-E", "-S", "-c", "-M", "-MM", "-fsyntax-only", "--preprocess", "--compile", "-ptx", "-cubin", "-fatbin"})
OUTPUT_FLAG_PREFIXES = ("-o", "--output", "-Wl,-o", "-Wl,--output", "-odir")
# A file named in the spec: generated C++ includes it (#include "PATH") and xlacc.toml is rewritten
# with it, so no quotes, backslashes or control characters.
PATH_TEXT = re.compile(r'^[^"\\\x00-\x1f\x7f]+$')
SAVED_SHAPE = re.compile(r"^(?P<like>[A-Za-z_]\w*)(?:\[:(?P<stop>-[1-9]\d*)\])?$")  # x, or x[:-1]


def check_identifier(name: Any, what: str = "name") -> str:
    """Return ``name`` if it can be a C/C++ symbol and a Python identifier; raise otherwise.

    Names go into generated C++ and Python source, so this is the guard against injection.
    """
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise UsageError(
            f"invalid {what} {name!r}: use a C identifier (letters, digits, '_', not starting with a digit, at most 63 characters)"
        )
    if name.startswith("__") or re.match(r"^_[A-Z]", name):
        raise UsageError(f"invalid {what} {name!r}: names starting with '__' or '_' and a capital are reserved in C and C++")
    if name.endswith("_t"):
        raise UsageError(f"invalid {what} {name!r}: names ending in '_t' are reserved for C types (int64_t, size_t, ...)")
    if name in C_CPP_KEYWORDS or keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise UsageError(f"invalid {what} {name!r}: it is a C, C++ or Python keyword")
    return name


def check_op_name(name: Any) -> str:
    """The op's name: an identifier that can also name a Python package next to jax and torch, and
    that put into the generated modules' names (``NAME``, ``_NAME``...) overwrites none of theirs."""
    check_identifier(name, "name")
    if name in IMPORTED_PACKAGES or name in sys.stdlib_module_names:
        raise UsageError(f"invalid name {name!r}: the op's Python package would hide the module {name!r}; pick another name")
    if name in names.op_names():
        raise UsageError(f"invalid name {name!r}: the generated package uses that name itself; pick another")
    return name


def check_member_name(name: Any, what: str) -> str:
    """An operand, result or attribute name: an identifier the generated code does not use itself."""
    check_identifier(name, what)
    if name in names.generated_identifiers():
        raise UsageError(f"invalid {what} {name!r}: the generated code uses that name itself; pick another")
    if name in names.macros():
        raise UsageError(f"invalid {what} {name!r}: it is a macro of the C/C++ headers the generated code includes; pick another")
    return name


def flag_problem(flag: str) -> str | None:
    """Why ``flag`` cannot be one of the compiler arguments xlacc passes on; None if it can."""
    if not FLAG.match(flag):
        return "one argument per item, without spaces or control characters"
    if flag in OUTPUT_FLAGS or flag.startswith(OUTPUT_FLAG_PREFIXES):
        return "it changes what the compiler writes or where; xlacc names the library and verifies it"
    return None


def _python_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def check_target(target: Any) -> str:
    if not isinstance(target, str) or not TARGET_NAME.match(target):
        raise UsageError(f"invalid target {target!r}: use letters, digits, '_' and '.', starting with a letter or '_'")
    return target


def parse_archs(value: Any) -> tuple[str, ...]:
    """``"auto"`` -> ``()``; ``"sm_80,sm_90"`` or a list -> validated ``("sm_80", "sm_90")``."""
    if value == "auto" or value == ["auto"]:
        return ()
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UsageError(f"invalid GPU archs {value!r}: use \"auto\" or a list such as [\"sm_80\", \"sm_90\"]")
    archs = []
    for item in items:
        arch = str(item).strip()
        if arch.startswith("compute_"):
            arch = "sm_" + arch[len("compute_"):]
        if not ARCH.match(arch):
            raise UsageError(f"invalid GPU arch {item!r}: use sm_XY such as sm_80 or sm_90a, or 'auto'")
        archs.append(arch)
    if not archs:
        raise UsageError("no GPU arch given: use sm_XY such as sm_80 or sm_90a, or 'auto'")
    return tuple(archs)


def finite_number(value: Any, what: str, integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"invalid {what} {value!r}: must be a number")
    if integer and not isinstance(value, int):
        raise UsageError(f"invalid {what} {value!r}: must be a whole number")
    if not math.isfinite(value):
        raise UsageError(f"invalid {what} {value!r}: must be a finite number")
    return value
