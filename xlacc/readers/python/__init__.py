"""What a Python file registers, calls, loads and forks, read from tree-sitter's Python grammar
(never imported or run, and the same whatever Python runs xlacc).

    facts = read("ops.py", text)
    facts.registrations   # jax.ffi.register_ffi_target / torch_xla's _xla_register_custom_call_target ...
    facts.calls           # jax.ffi.ffi_call, mlir.custom_call, hlo_helpers.custom_call, _xla_custom_call ...
    facts.libraries       # ctypes.CDLL("./build/libop.so") and the like
    facts.callbacks       # Python functions made into C callbacks by ctypes.CFUNCTYPE

Names are followed through assignments, imports and ``for`` loops in their own scope (a function's
local ``lib`` is not the module's ``lib``), so ``API_VERSION = STATUS_RETURNING``, ``new_capsule =
ctypes.pythonapi.PyCapsule_New`` and ``for platform in ["GPU", "cuda"]`` resolve to what they
stand for. A name the file computes (``platform + "_kepler_f32"``, ``f"op_{dtype}"``,
``"op_{}".format(t)``) becomes a pattern that matches the targets it can name. A file that does
not parse gives the line of its first error (``PyFacts.syntax_error``), never an exception.

Modules: :mod:`.tree` (the grammar, parsing, node helpers), :mod:`.scopes` (names and scopes),
:mod:`.values` (constants and patterns), :mod:`.calls`, :mod:`.registrations`, :mod:`.libraries`
(ctypes), :mod:`.processes`, :mod:`.guards` (fallbacks around legacy code), :mod:`.functions`,
:mod:`.structs`, :mod:`.reader` (the walk) and :mod:`.facts` (what it gives).
"""

from xlacc.readers.python.facts import (
    LibraryLoad,
    PyCall,
    PyCallback,
    PyFacts,
    PyRegistration,
    pattern_sample,
)
from xlacc.readers.python.functions import PyFunction, module_functions
from xlacc.readers.python.reader import RELEVANT, read, relevant
from xlacc.readers.python.structs import struct_layout, struct_size
from xlacc.readers.python.tree import Parsed, parse

__all__ = [
    "RELEVANT",
    "LibraryLoad",
    "Parsed",
    "PyCall",
    "PyCallback",
    "PyFacts",
    "PyFunction",
    "PyRegistration",
    "module_functions",
    "parse",
    "pattern_sample",
    "read",
    "relevant",
    "struct_layout",
    "struct_size",
]
