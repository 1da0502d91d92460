"""The names xlacc's generated code uses itself, which the user's names may not take.

Three sets, each stored next to this module (derived from what xlacc generates by
``python tools/reserved_names.py``, and kept current by the tests):

- ``reserved_names.txt``, refused for operands and attributes: they become C++ parameters and
  Python arguments next to the generated code's own names, so a tensor named `ins` or
  `backend_config` would shadow one of them.
- ``reserved_op_names.txt``, refused for the op's name: it becomes module-level names of the
  generated Python (``NAME``, ``_NAME``...), so an op named `library` or `TARGET` would overwrite
  one of the module's own; and the attributes of torch's op namespace.
- ``reserved_macros.txt``, refused for operands and attributes: the macros the headers of the
  generated C++ define (`EOF`, `NULL`, `errno`...), which the preprocessor would put in place of
  a parameter of that name.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

RESERVED_FILE = Path(__file__).with_name("reserved_names.txt")
OP_NAMES_FILE = Path(__file__).with_name("reserved_op_names.txt")
MACROS_FILE = Path(__file__).with_name("reserved_macros.txt")
# torch.ops.xlacc.NAME finds the op only where torch's namespace object has no attribute of that
# name itself (torch 2.9: these); a test compares them with the installed torch's.
TORCH_NAMESPACE_ATTRIBUTES = frozenset({"name", "_dir"})


@cache
def _stored(path: Path) -> frozenset[str]:
    try:
        return frozenset(path.read_text(encoding="utf-8").split())
    except FileNotFoundError:  # only while `python tools/reserved_names.py` derives it the first time
        return frozenset()


def generated_identifiers() -> frozenset[str]:
    """Names an operand or attribute may not take: identifiers of the code that carries them."""
    return _stored(RESERVED_FILE)


def op_names() -> frozenset[str]:
    """Names the op may not take: module-level names of the generated Python."""
    return _stored(OP_NAMES_FILE)


def macros() -> frozenset[str]:
    """Names an operand or attribute may not take: macros of the generated C++'s headers."""
    return _stored(MACROS_FILE)


# -- identifiers of the code that carries operand and attribute names ----------------------------
