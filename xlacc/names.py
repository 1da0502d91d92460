"""The identifiers xlacc's generated code uses itself, which an operand or attribute may not take.

Operand and attribute names become C++ parameters and Python arguments next to the generated
code's own names, so a tensor named `ins` or `backend_config` would shadow one of them and break
the project. The set is not written by hand: :func:`derive` renders the templates whose code
carries the user's names (the blank template, every platform and api) with placeholder names and
collects every other identifier that code uses. It is stored in ``reserved_names.txt`` so that
loading a spec stays fast; ``python -m xlacc.names`` rewrites it, and a test keeps it current.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import lru_cache
from pathlib import Path

RESERVED_FILE = Path(__file__).with_name("reserved_names.txt")
PLACEHOLDER = "xlaccprobe"
# C/C++ comments, string and character literals: their words are not identifiers.
CXX_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
# An identifier not reached through a member or scope operator (those cannot be shadowed).
CXX_IDENTIFIER = re.compile(r"(?<![\w.>:])(?<!->)(?<!::)([A-Za-z_]\w*)")


@lru_cache(maxsize=1)
def generated_identifiers() -> frozenset[str]:
    try:
        return frozenset(RESERVED_FILE.read_text(encoding="utf-8").split())
    except FileNotFoundError:  # only while `python -m xlacc.names` derives it the first time
        return frozenset()


def derive() -> frozenset[str]:
    """Every identifier of the generated files that carry operand and attribute names."""
    from xlacc import scaffold
    from xlacc import spec as specmod

    found: set[str] = set()
    for platform in specmod.PLATFORMS:
        for api in specmod.APIS:
            request = scaffold.NewRequest(
                name=f"{PLACEHOLDER}_op",
                template="blank",
                platform=platform,
                api=api,
                frameworks=list(specmod.FRAMEWORKS),
                directory=Path("/nonexistent") / PLACEHOLDER,
            )
            for special_outputs in (False, True):
                spec, meta = _probe_spec(request, special_outputs)
                for path, text in scaffold.render(spec, meta).items():
                    if path.endswith(".py"):
                        found |= python_identifiers(text)
                    elif path.endswith((".cu", ".cc")):
                        found |= cxx_identifiers(text)
    return frozenset(name for name in found if PLACEHOLDER not in name)


def _probe_spec(request, special_outputs: bool):
    """A blank op with two generic inputs, a fixed-dtype input, two outputs (and with
    special_outputs one written in place and a scratch one), an attribute of each type and a
    backward kernel, all named with the placeholder (built without the name check this module
    serves)."""
    from xlacc import scaffold
    from xlacc import spec as specmod

    meta = scaffold.template_meta("blank")
    generic = ("f32", "bf16")
    spec = specmod.Spec(
        name=request.name,
        target=request.name,
        template="blank",
        platform=request.platform,
        api=request.api,
        frameworks=tuple(request.frameworks),
        inputs=(
            specmod.Tensor(f"{PLACEHOLDER}_in0", generic),
            specmod.Tensor(f"{PLACEHOLDER}_in1", generic),
            specmod.Tensor(f"{PLACEHOLDER}_in2", ("i32",)),
        ),
        outputs=(
            specmod.Tensor(f"{PLACEHOLDER}_out0", generic, like=f"{PLACEHOLDER}_in0"),
            specmod.Tensor(f"{PLACEHOLDER}_out1", ("f32",), like=f"{PLACEHOLDER}_in0"),
        )
        + (
            (
                specmod.Tensor(f"{PLACEHOLDER}_out2", ("i32",), like=f"{PLACEHOLDER}_in2", alias=f"{PLACEHOLDER}_in2"),
                specmod.Tensor(f"{PLACEHOLDER}_out3", ("f32",), (16,), scratch=True),
            )
            if special_outputs
            else ()
        ),
        attrs=tuple(specmod.Attr(f"{PLACEHOLDER}_attr{i}", t, 1) for i, t in enumerate(specmod.ATTR_TYPES)),
        build=specmod.Build(kernel=f"kernel{'.cu' if request.platform == 'cuda' else '.cc'}"),
        # A backward kernel with a saved tensor, so that the backward's code is probed too.
        sharding=specmod.Sharding("... c, ... c, ... c -> " + ", ".join(["... c"] * (3 if special_outputs else 2))),
        backward=specmod.Backward(
            "kernel",
            (f"{PLACEHOLDER}_in0", f"{PLACEHOLDER}_in1"),
            (specmod.Tensor(f"{PLACEHOLDER}_saved0", ("f32",), like=f"{PLACEHOLDER}_in0", like_stop=-1),),
        ),
        root=Path(request.directory),
    )
    return spec, meta


def python_identifiers(text: str) -> set[str]:
    """The names used inside every function that takes a user's name as a parameter: a parameter
    of the same name would shadow them."""
    names: set[str] = set()
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.Lambda)):
            continue
        params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        if not any(p.startswith(PLACEHOLDER) for p in params):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def cxx_identifiers(text: str) -> set[str]:
    """Every identifier of a C++ file that carries the user's names (file-wide: C++ scopes are
    not parsed here, so a local anywhere in the file is reserved)."""
    if PLACEHOLDER + "_in" not in text:
        return set()
    code = CXX_NOISE.sub(" ", text)
    code = re.sub(r"^\s*#\s*include[^\n]*", " ", code, flags=re.MULTILINE)
    return set(CXX_IDENTIFIER.findall(code))


def write() -> None:
    names = sorted(derive())
    RESERVED_FILE.write_text("\n".join(names) + "\n", encoding="utf-8")
    print(f"wrote {len(names)} names to {RESERVED_FILE}")


if __name__ == "__main__":
    sys.exit(write())
