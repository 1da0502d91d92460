"""Derive the reserved names xlacc refuses for the user's names, from what xlacc generates:
``python tools/reserved_names.py`` rewrites the three files next to ``xlacc/spec/names.py``.

A maintenance tool, outside xlacc's import graph: it renders every template through
``xlacc new``'s code and preprocesses the headers with g++ and nvcc, which loading a spec must
never do. The tests run it and compare (tests/spec/test_names.py).

- :func:`derive` renders the templates whose code carries the user's names (the blank template,
  every platform and api) with placeholder names and collects every other identifier that code
  uses (in Python, those of each function that takes a user's name).
- :func:`derive_op_names` renders every template, platform, api and set of frameworks and collects
  the module-level names of each Python file, and the op names that would rebuild one of them.
- :func:`derive_macros` preprocesses xlacc's headers and every header a template includes with g++
  (``-dM -E``) and, for CUDA, nvcc.
"""

from __future__ import annotations

import ast
import itertools
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from xlacc import spec as specmod
from xlacc.commands.new import project as scaffold
from xlacc.ground import resources, toolchain
from xlacc.ground.errors import ToolchainMissing, UsageError
from xlacc.readers.cxx_tokens import CXX_IDENTIFIER, CXX_NOISE, cxx_code
from xlacc.spec.names import (
    MACROS_FILE,
    OP_NAMES_FILE,
    RESERVED_FILE,
    TORCH_NAMESPACE_ATTRIBUTES,
)

INCLUDE_DIR = resources.INCLUDE_DIR
PLACEHOLDER = "xlaccprobe"
PROBE_OP = f"{PLACEHOLDER}_op"
ANGLE_INCLUDE = re.compile(r"#\s*include\s*<([^>]+)>")
DEFINE = re.compile(r"^#define\s+([A-Za-z_]\w*)", re.MULTILINE)
# A kernel to wrap, so that the `--from` template is probed too.
WRAPPED_KERNEL = {
    "cuda": "__global__ void {p}_kernel(const float* {p}_in0, float* {p}_out0, int n) {{}}\n",
    "cpu": "void {p}_kernel(const float* {p}_in0, float* {p}_out0, int n) {{}}\n",
}


def derive() -> frozenset[str]:
    """Every identifier of the generated files that carry operand and attribute names."""
    found: set[str] = set()
    for platform in specmod.PLATFORMS:
        for api in specmod.APIS:
            request = scaffold.NewRequest(
                name=PROBE_OP,
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
        build=specmod.Build(kernel=f"kernel{specmod.SOURCE_SUFFIX[request.platform]}"),
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
    return set(CXX_IDENTIFIER.findall(cxx_code(text)))


# -- module-level names of the generated Python, which the op's name becomes one of ---------------


def derive_op_names() -> frozenset[str]:
    """The op names that would take a module-level name of a generated Python file: each such
    name, and each name that put into a file's ``_NAME``-like name rebuilds one of the others;
    and the attributes of torch's op namespace."""
    found: set[str] = set(TORCH_NAMESPACE_ATTRIBUTES)
    for path, text in _every_project_file():
        if path.endswith((".cc", ".cu")) and PROBE_OP in CXX_IDENTIFIER.findall(CXX_NOISE.sub(" ", text)):
            raise AssertionError(f"{path} uses the op's name alone as a C++ identifier: refuse macros for it too")
        if not path.endswith(".py"):
            continue
        defined = module_level_names(text)
        fixed = {name for name in defined if PLACEHOLDER not in name}
        for name in defined - fixed:
            prefix, _, suffix = name.partition(PROBE_OP)
            shape = re.compile(re.escape(prefix) + r"(\w+)" + re.escape(suffix))
            found |= {match[1] for match in map(shape.fullmatch, fixed) if match}
    return frozenset(name for name in found if _can_be_given(name))


def module_level_names(text: str) -> set[str]:
    """The names a Python file binds at module level: defs, classes, assignments, imports."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            names.update(name for inner in ast.walk(node) if isinstance(inner, ast.Global) for name in inner.names)
            return  # what else they bind inside is theirs
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.partition(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(text))
    return names


def _every_project_file():
    """(path, text) of every file of every template, platform, api and set of frameworks, the op
    named PROBE_OP; the blank template also with the placeholder signature of :func:`derive`."""

    # Each framework alone and all together: every set of two gave no name these do not (checked
    # when this was written); all seven sets take twice as long.
    framework_sets = [[f] for f in specmod.FRAMEWORKS] + [list(specmod.FRAMEWORKS)]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for template in [*scaffold.available_templates(), scaffold.WRAP_TEMPLATE]:
            platforms = scaffold.template_meta(template).get("platforms", specmod.PLATFORMS)
            for platform, api, frameworks in itertools.product(platforms, specmod.APIS, framework_sets):
                request = scaffold.NewRequest(PROBE_OP, template, platform, api, frameworks, directory=root / PLACEHOLDER)
                if template == scaffold.WRAP_TEMPLATE:
                    request.from_file = root / f"{PLACEHOLDER}{specmod.SOURCE_SUFFIX[platform]}"
                    request.from_file.write_text(WRAPPED_KERNEL[platform].format(p=PLACEHOLDER), encoding="utf-8")
                yield from scaffold.render(*scaffold.spec_for(request)).items()
        for platform, api, special_outputs in itertools.product(specmod.PLATFORMS, specmod.APIS, (False, True)):
            request = scaffold.NewRequest(PROBE_OP, "blank", platform, api, list(specmod.FRAMEWORKS), directory=root / PLACEHOLDER)
            yield from scaffold.render(*_probe_spec(request, special_outputs)).items()


# -- macros of the generated C++'s headers --------------------------------------------------------


def derive_macros(platform: str) -> frozenset[str]:
    """The macros that code generated for ``platform`` ("cpu" or "cuda") sees once it includes
    xlacc's headers and those the templates include, by the compiler ``xlacc build`` would use.
    Raises ToolchainMissing where that compiler or the XLA FFI headers are missing, and for CUDA
    where nvcc cannot preprocess the CUDA headers."""

    ffi_dir = toolchain.ffi_include_dir()
    unit = "".join(f"#include <{header}>\n" for header in _template_headers())
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / f"headers{specmod.SOURCE_SUFFIX[platform]}"
        source.write_text(unit, encoding="utf-8")
        if platform == "cuda":
            compiler = toolchain.find_nvcc()
            command = [*compiler.argv, "-std=c++17", "-E", "-Xcompiler", "-dM", "-x", "cu"]
        else:
            compiler = toolchain.find_host_cxx()
            command = [*compiler.argv, "-std=c++17", "-E", "-dM", "-x", "c++"]
        # A wrapped PyTorch launcher's build also has xlacc's PyTorch stand-ins on its include path.
        command += ["-I", INCLUDE_DIR, "-I", resources.templates_root() / "_torch_compat", "-I", ffi_dir, source]
        done = subprocess.run([str(arg) for arg in command], check=False, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        error = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip()[-300:])
        message = f"{compiler.path} could not preprocess xlacc's headers: {error}"
        raise ToolchainMissing(message) if platform == "cuda" else RuntimeError(message)
    return frozenset(name for name in DEFINE.findall(done.stdout) if _can_be_given(name))


def _template_headers() -> list[str]:
    """Every header a template includes with <...>, xlacc's own among them."""

    return sorted({h for path in resources.templates_root().rglob("*.j2") for h in ANGLE_INCLUDE.findall(path.read_text(encoding="utf-8"))})


def _can_be_given(name: str) -> bool:
    """Whether a user could otherwise give this name (the checks of check_identifier)."""

    try:
        specmod.check_identifier(name)
    except UsageError:
        return False
    return True


def write() -> int:

    _write(RESERVED_FILE, derive())
    _write(OP_NAMES_FILE, derive_op_names())
    try:
        _write(MACROS_FILE, derive_macros("cpu") | derive_macros("cuda"))
    except ToolchainMissing as exc:
        print(f"kept {MACROS_FILE}: {exc} (run this where g++, nvcc, the CUDA headers and jaxlib are installed)", file=sys.stderr)
        return 1
    return 0


def _write(path: Path, names: frozenset[str]) -> None:
    path.write_text("\n".join(sorted(names)) + "\n", encoding="utf-8")
    print(f"wrote {len(names)} names to {path}")


if __name__ == "__main__":
    sys.exit(write())
