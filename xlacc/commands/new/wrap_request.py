"""`xlacc new --from`'s flags checked and its questions put as one command: the parts of wrapping a
kernel that are about the request, not about reading the source (xlacc/wrap.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from xlacc import spec as specmod
from xlacc.commands.new.questions import QuestionsError
from xlacc.ground.errors import UsageError

HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hh", ".hxx")
CUDA_CODE = re.compile(r"__global__|<<<|\bcuda[A-Z]\w*\(|#\s*include\s*[<\"](?:cuda_runtime|ATen/cuda|c10/cuda)")


def check_source(source: Path) -> str:
    """The platform a --from file builds for; a one-line error for a file xlacc cannot take."""
    if not source.exists():
        raise UsageError(f"--from {source}: no such file")
    suffixes = (*specmod.PLATFORM_OF_SUFFIX, *HEADER_SUFFIXES)
    if source.suffix not in suffixes or not re.match(r"^[\w.+-]+$", source.name):
        raise UsageError(f"--from {source}: give a .cu file (or .cc/.cpp for XLA:CPU, or a header: .cuh, .h, .hpp) whose name has no spaces or quotes")
    if not specmod.PATH_TEXT.match(str(source.resolve().parent)):
        raise UsageError(f"--from {source}: its folder's path holds quotes, backslashes or control characters, which xlacc.toml and C++ #include lines cannot carry: move it")
    if source.suffix in specmod.PLATFORM_OF_SUFFIX:
        return specmod.PLATFORM_OF_SUFFIX[source.suffix]
    if source.suffix == ".cuh":
        return "cuda"
    try:
        text = source.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"--from {source}: cannot read it ({exc.strerror})") from None
    return "cuda" if CUDA_CODE.search(text) else "cpu"


def include_dirs(values: list[Path]) -> tuple[Path, ...]:
    """--include folders, absolute; each must exist and be writable into xlacc.toml."""
    found = []
    for value in values:
        folder = Path(value)
        if not folder.is_dir():
            raise UsageError(f"--include {value}: no such folder")
        if not specmod.PATH_TEXT.match(str(folder.resolve())):
            raise UsageError(f"--include {value}: its path holds quotes, backslashes or control characters, which xlacc.toml cannot carry")
        found.append(folder.resolve())
    return tuple(dict.fromkeys(found))


def questions_error(request, wrapped) -> UsageError:
    """Every guess at once, and the one command that gives them all as answers."""
    return QuestionsError(wrapped.function, wrapped.questions, command_line(request, wrapped))


def command_line(request, wrapped) -> str:
    """`xlacc new` as the user ran it, with an answer for each question."""
    words = ["xlacc", "new", request.name, "--from", str(request.from_file)]
    if request.kernel:
        words += ["--kernel", request.kernel]
    if request.directory:
        words += ["--dir", str(request.directory)]
    for flag, values in (("--include", request.include_dirs), ("--size", request.sizes), ("--output", request.outputs), ("--attr", request.attrs)):
        for value in values:
            words += [flag, str(value)]
    if request.dtypes:
        words += ["--dtype", ",".join(request.dtypes)]
    if request.target:
        words += ["--target", request.target]
    if request.api != "ffi":
        words += ["--api", request.api]
    if list(request.frameworks) != list(specmod.DEFAULT_FRAMEWORKS):
        words += ["--framework", ",".join(request.frameworks)]
    for question in wrapped.questions:
        words += question.flag.split(" ", 1)
    return " ".join(shlex.quote(w) for w in words)
