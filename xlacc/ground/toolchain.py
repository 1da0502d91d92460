"""Locate what a build needs: nvcc or a host C++ compiler, cuobjdump, XLA's FFI headers, GPU archs.

Nothing here imports jax: the FFI headers are found through jaxlib's installed files, and the
GPUs through ``nvidia-smi``, so a no-op build stays fast. The tools asked a question
(``--version``, ``nvidia-smi``; :func:`probe`) run in a session of their own for at most
:data:`PROBE_TIMEOUT_S`: one that hangs is stopped with everything it started, and said to hang.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from xlacc.ground.errors import ToolchainMissing
from xlacc.ground.process import run_in_session

# Used on a machine without a visible GPU; the highest also gets PTX, so newer GPUs can JIT it.
DEFAULT_ARCHS = ("sm_80", "sm_90")
ARCH_SPECIFIC_FROM = 90  # the first arch with an arch-specific variant (sm_90a)
# Toolkit roots tried after $CUDA_HOME / $CUDA_PATH (label, root).
DEFAULT_CUDA_HOMES: tuple[tuple[str, Path], ...] = (("/usr/local/cuda", Path("/usr/local/cuda")),)
HOST_CXX_NAMES = ("g++", "c++", "clang++")
HOST_CXX_KINDS = (("clang", "clang++"), ("g++", "g++"))  # (in the file name, kind); else "c++"
FFI_HEADER = Path("xla/ffi/api/ffi.h")
FFI_HEADERS = ("xla/ffi/api/c_api.h", "xla/ffi/api/api.h", "xla/ffi/api/ffi.h")
PROBE_TIMEOUT_S = 5.0  # a tool asked for its version, its GPUs or its cache answers at once, or hangs
NVIDIA_SMI_TIMEOUT_S = PROBE_TIMEOUT_S
PROBE_EXIT_GRACE_S = 0.5  # after it exits, how long a process it left behind may hold its output
PROBE_OUTPUT_BYTES = 1_000_000  # what is kept of a probe's output (ldconfig -p asks for more)

NO_NVCC = (
    "no nvcc found: install a CUDA toolkit, or `pip install -e '.[cuda]'` in a checkout of xlacc for "
    "CUDA 13 from PyPI; or pass --nvcc PATH"
)
NO_HOST_CXX = "no C++ compiler found: install g++ (e.g. `apt-get install g++`), or set $CXX"
NO_FFI_HEADERS = (
    "XLA's FFI headers (xla/ffi/api/ffi.h) not found: `pip install -e '.[jax]'` in a checkout of xlacc "
    "(jaxlib ships them), "
    "or pass --ffi-include DIR"
)

# A memo of compiler versions: its command (a path, or "ccache g++") -> {"stamp": [mtime_ns, size, ...],
# "version": str}. The build cache stores it, so a fresh build never runs `nvcc --version`.
VersionMemo = dict[str, dict]


@dataclass(frozen=True)
class Compiler:
    path: Path
    version: str
    kind: str  # "nvcc", "g++", "c++" or "clang++"
    source: str  # where it was found: "--nvcc", "$CUDACXX", "PATH", "$CUDA_HOME", "pip", ...
    args: tuple[str, ...] = ()  # the words after a launcher in $CXX: "ccache g++" is ccache with ("g++",)
    notes: tuple[str, ...] = ()  # what the search passed over, and why ("$CUDA_HOME=/x not used: ...")

    @property
    def argv(self) -> list[str]:
        """The compiler as a command line starts."""
        return [str(self.path), *self.args]

    def describe(self) -> str:
        at = shlex.join(self.argv) if self.args else str(self.path)
        return "; ".join([f"{self.kind} {self.version} at {at} (found via {self.source})", *self.notes])


# -- asking a tool --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """What a tool asked a question answered, or why it did not answer."""

    output: str  # stdout and stderr, decoded with errors="replace"
    problem: str | None  # "nvidia-smi ... failed (exit 9)", "nvcc --version did not answer in 5 s"
    hung: bool = False  # it did not answer in time, and was stopped
    returncode: int | None = None  # None: it could not run, or did not answer


def probe(argv: list[str], *, limit: int = PROBE_OUTPUT_BYTES, timeout: float | None = None, shown: str | None = None) -> Probe:
    """Run a tool that answers at once, in a session of its own, keeping the first ``limit`` bytes
    of its output; once it has exited (and what it left behind had :data:`PROBE_EXIT_GRACE_S` to
    let go of its output), or at the timeout (:data:`PROBE_TIMEOUT_S`), its whole group is killed.
    ``shown``: the tool as a problem names it (default: its name and arguments). Without the sweep
    for descendants that left the group: nvidia-smi runs on every no-op build of a cuda project."""
    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    shown = shown or shlex.join([Path(argv[0]).name, *argv[1:]])
    head = _Head(limit)
    try:
        ended = run_in_session(argv, timeout, head, exit_grace=PROBE_EXIT_GRACE_S, sweep_escaped=False)
    except OSError as exc:
        return Probe("", f"{shown} could not run ({exc.strerror or exc})")
    text = bytes(head.data).decode("utf-8", errors="replace")
    if ended.returncode is None:
        return Probe(text, f"{shown} did not answer in {timeout:g} s", hung=True)
    if ended.returncode != 0:
        return Probe(text, f"{shown} failed ({_exit_status(ended.returncode)})", returncode=ended.returncode)
    return Probe(text, None, returncode=0)


class _Head:
    """The first ``limit`` bytes of a tool's output."""

    def __init__(self, limit: int):
        self.limit = limit
        self.data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk[: max(0, self.limit - len(self.data))]


def _exit_status(returncode: int) -> str:
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit {returncode}"


# -- compilers ------------------------------------------------------------------------------------


def _executable(path: Path | str | None) -> Path | None:
    if not path:
        return None
    candidate = Path(path).expanduser()
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate.absolute()
    return None


def _insist(source: str, value: str) -> Path:
    """A compiler the user named (flag or environment variable) must exist: no silent fallback."""
    found = _executable(value) or _executable(shutil.which(value))
    if found is None:
        raise ToolchainMissing(f"{source}={value} is not an executable file")
    return found


def _insist_command(source: str, value: str) -> tuple[Path, tuple[str, ...]]:
    """A compiler command the user named, as make reads $CXX: one executable (a path with spaces
    too), or words split like a shell's, the first an executable ("ccache g++", "g++ -m64")."""
    whole = _executable(value) or _executable(shutil.which(value))
    if whole is not None:
        return whole, ()
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ToolchainMissing(f"{source}={value} cannot be split into words ({exc})") from None
    if len(words) < 2:
        return _insist(source, words[0] if words else value), ()
    program = _executable(words[0]) or _executable(shutil.which(words[0]))
    if program is None:
        raise ToolchainMissing(f"{source}={value}: {words[0]} is not an executable file")
    return program, tuple(words[1:])


def _pathfinder_binary(name: str) -> Path | None:
    """cuda-pathfinder's search: NVIDIA wheels in site-packages, conda, the toolkit of libcudart."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility  # lazy: cuda-pathfinder takes 56 ms to import; needed only when nvcc is not on PATH
    except ImportError:
        return None
    try:
        found = find_nvidia_binary_utility(name)
    except (RuntimeError, OSError):
        return None
    return Path(found) if found else None


def _pathfinder_source(path: Path) -> str:
    parts = path.parts
    if "site-packages" in parts or "dist-packages" in parts:
        return "pip"
    conda = os.environ.get("CONDA_PREFIX")
    if conda and path.is_relative_to(conda):
        return "conda"
    return "cuda-pathfinder"


CUDA_HOME_VARIABLES = ("CUDA_HOME", "CUDA_PATH")


def _cuda_homes() -> Iterator[tuple[str, Path]]:
    for var in CUDA_HOME_VARIABLES:
        if os.environ.get(var):
            yield f"${var}", Path(os.environ[var])
    yield from DEFAULT_CUDA_HOMES


def _unusable_cuda_homes() -> tuple[str, ...]:
    """$CUDA_HOME / $CUDA_PATH set to what holds no nvcc: named, not silently passed over."""
    problems = []
    for var in CUDA_HOME_VARIABLES:
        value = os.environ.get(var)
        if not value:
            continue
        home = Path(value).expanduser()
        if not home.exists():
            why = "no such folder"
        elif not home.is_dir():
            why = "a file, not a folder"
        elif _executable(home / "bin" / "nvcc") is None:
            why = "no bin/nvcc in it"
        else:
            continue
        problems.append(f"${var}={value} not used: {why}")
    return tuple(problems)


def _cuda_tool_candidates(tool: str) -> Iterator[tuple[str, Path | None]]:
    """Where a CUDA tool is looked for after any explicit choice, in order."""
    yield "PATH", _executable(shutil.which(tool))
    for label, home in _cuda_homes():
        yield label, _executable(home / "bin" / tool)
    pip_found = _executable(_pathfinder_binary(tool))
    yield (_pathfinder_source(pip_found) if pip_found else "pip"), pip_found


def find_nvcc(explicit: Path | None = None, *, versions: VersionMemo | None = None) -> Compiler:
    """``--nvcc``, ``$CUDACXX``, ``PATH``, ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``, then pip."""
    if explicit is not None:
        return _nvcc(_insist("--nvcc", str(explicit)), "--nvcc", versions)
    if os.environ.get("CUDACXX"):
        return _nvcc(_insist("$CUDACXX", os.environ["CUDACXX"]), "$CUDACXX", versions)
    passed_over = _unusable_cuda_homes()
    for source, path in _cuda_tool_candidates("nvcc"):
        if path is not None:
            return _nvcc(path, source, versions, passed_over)
    raise ToolchainMissing("; ".join([NO_NVCC, *passed_over]))


def _nvcc(path: Path, source: str, versions: VersionMemo | None, notes: tuple[str, ...] = ()) -> Compiler:
    version = compiler_version(path, _parse_nvcc_version, versions)
    return Compiler(path=path, version=version, kind="nvcc", source=source, notes=notes)


def find_host_cxx(explicit: Path | None = None, *, versions: VersionMemo | None = None) -> Compiler:
    """An explicit path, ``$CXX``, then ``g++``, ``c++``, ``clang++`` on PATH."""
    if explicit is not None:
        return _host_cxx(_insist("--cxx", str(explicit)), "--cxx", versions)
    if os.environ.get("CXX"):
        return _host_cxx(*_insist_command("$CXX", os.environ["CXX"]), "$CXX", versions)
    for name in HOST_CXX_NAMES:
        path = _executable(shutil.which(name))
        if path is not None:
            return _host_cxx(path, (), "PATH", versions)
    raise ToolchainMissing(NO_HOST_CXX)


def _host_cxx(path: Path, args: tuple[str, ...], source: str, versions: VersionMemo | None) -> Compiler:
    names = [Path(word).name for word in (path, *args) if not str(word).startswith("-")]
    kind = next((kind for name in reversed(names) for marker, kind in HOST_CXX_KINDS if marker in name), "c++")
    version = compiler_version(path, _parse_host_version, versions, args)
    return Compiler(path=path, version=version, kind=kind, source=source, args=args)


def find_cuobjdump(nvcc: Compiler | None = None) -> Path | None:
    """cuobjdump next to nvcc (its link or its target), else where nvcc would be looked for."""
    if nvcc is not None:
        for directory in (nvcc.path.parent, nvcc.path.resolve().parent):
            found = _executable(directory / "cuobjdump")
            if found:
                return found
    return next((path for _, path in _cuda_tool_candidates("cuobjdump") if path is not None), None)


def _parse_nvcc_version(text: str) -> str | None:
    match = re.search(r"release \d+\.\d+, V(\d+\.\d+\.\d+)", text) or re.search(r"release (\d+\.\d+)", text)
    return match.group(1) if match else None


def _parse_host_version(text: str) -> str | None:
    first = text.strip().splitlines()[0] if text.strip() else ""
    numbers = re.findall(r"\b\d+\.\d+(?:\.\d+)?\b", first)
    return numbers[-1] if numbers else None


def _stamp(path: Path, args: tuple[str, ...] = ()) -> list[int]:
    """The program's [mtime_ns, size], and those of the programs among ``args`` (a launcher's compiler)."""
    stamp = []
    for program in (path, *filter(None, (_executable(shutil.which(a)) for a in args if not a.startswith("-")))):
        stat = program.resolve().stat()
        stamp += [stat.st_mtime_ns, stat.st_size]
    return stamp


def compiler_version(
    path: Path, parse: Callable[[str], str | None], versions: VersionMemo | None = None, args: tuple[str, ...] = ()
) -> str:
    """``path [args] --version``, parsed; remembered in ``versions`` for as long as the files are unchanged."""
    key = shlex.join([str(path), *args]) if args else str(path)
    stamp = _stamp(path, args)
    known = (versions or {}).get(key)
    if known and known.get("stamp") == stamp and known.get("version"):
        return known["version"]
    answer = probe([str(path), *args, "--version"])
    if answer.hung:
        raise ToolchainMissing(f"{answer.problem}: xlacc stopped it; is {path} a working compiler?")
    if answer.problem is not None:
        raise ToolchainMissing(f"{answer.problem}: is {path} a compiler?")
    version = parse(answer.output)
    if version is None:
        raise ToolchainMissing(f"{shlex.join([str(path), *args])} --version did not print a version: is it a compiler?")
    if versions is not None:
        versions[key] = {"stamp": stamp, "version": version}
    return version


def cuda_version(nvcc: Compiler) -> str:
    """The CUDA release of an nvcc, major.minor: ``"13.0"``."""
    return ".".join(nvcc.version.split(".")[:2])


# -- XLA FFI headers ------------------------------------------------------------------------------


def _has_ffi_header(directory: Path) -> bool:
    return (directory / FFI_HEADER).is_file()


def ffi_include_dir(explicit: Path | None = None) -> Path:
    """The directory holding ``xla/ffi/api/ffi.h``: ``--ffi-include``, jaxlib's own, or jax's answer."""
    if explicit is not None:
        directory = Path(explicit).expanduser().absolute()
        if not _has_ffi_header(directory):
            raise ToolchainMissing(f"--ffi-include {explicit}: no {FFI_HEADER} there")
        return directory
    found = _installed_ffi_include()
    if found is None:
        raise ToolchainMissing(NO_FFI_HEADERS)
    return found


@functools.lru_cache(maxsize=1)
def _installed_ffi_include() -> Path | None:
    return jaxlib_include() or _jax_reported_include()


def jaxlib_include() -> Path | None:
    """jaxlib's installed ``include`` folder, found without importing jaxlib (that costs seconds)."""
    try:
        spec = importlib.util.find_spec("jaxlib")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "include"
        if _has_ffi_header(candidate):
            return candidate
    return None


def _jax_reported_include() -> Path | None:
    """Ask ``jax.ffi.include_dir()`` in a child process, for layouts the direct look-up misses."""
    code = "import jax.ffi; print(jax.ffi.include_dir())"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    candidate = Path(lines[-1])
    return candidate if _has_ffi_header(candidate) else None


def ffi_headers_digest(include_dir: Path) -> str:
    """sha256 over the FFI headers, so a jaxlib upgrade invalidates the build cache."""
    digest = hashlib.sha256()
    for name in FFI_HEADERS:
        header = include_dir / name
        digest.update(name.encode() + b"\0")
        digest.update(header.read_bytes() if header.is_file() else b"<absent>")
    return digest.hexdigest()


# -- GPU archs ------------------------------------------------------------------------------------


def arch_number(arch: str) -> int:
    """``"sm_90a"`` -> 90."""
    return int(re.sub(r"\D", "", arch.split("_", 1)[-1]) or 0)


def visible_gpu_archs() -> list[str]:
    """Compute capabilities of the visible GPUs as ``["sm_90"]``; ``[]`` without GPU or driver."""
    return query_gpu_archs()[0]


def query_gpu_archs() -> tuple[list[str], str | None]:
    """The visible GPUs' archs, and when there are none because nvidia-smi failed or hung, what it did."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [], None
    answer = probe([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=NVIDIA_SMI_TIMEOUT_S, shown="nvidia-smi")
    if answer.problem is not None:
        return [], answer.problem
    caps = {f"sm_{m.group(1)}{m.group(2)}" for m in re.finditer(r"^\s*(\d+)\.(\d+)\s*$", answer.output, re.M)}
    return sorted(caps, key=arch_number), None


def arch_specific_variant(arch: str) -> str | None:
    """``"sm_90"`` -> ``"sm_90a"``: the SASS that may use instructions only that arch has (sm_90a's
    wgmma and setmaxnreg); None before sm_90, which has none."""
    if arch.endswith("a") or arch_number(arch) < ARCH_SPECIFIC_FROM:
        return None
    return arch + "a"


def resolve_archs(requested: tuple[str, ...] | None, *, arch_specific: bool = False) -> tuple[list[str], str]:
    """The archs to build and why: as requested, the visible GPUs', or :data:`DEFAULT_ARCHS`.
    ``arch_specific`` (a project's ``[build] arch_specific``) makes auto archs arch-specific: a
    visible sm_90 GPU gets sm_90a in its place; without a GPU the default archs gain their variants
    beside them (the portable PTX stays the highest plain arch's)."""
    if requested:
        return sorted(dict.fromkeys(requested), key=arch_number), "as requested"
    visible, problem = query_gpu_archs()
    if visible:
        why = "the visible GPU" if len(visible) == 1 else "the visible GPUs"
        if not arch_specific:
            return visible, why
        return [arch_specific_variant(a) or a for a in visible], f"{why}, arch-specific ([build] arch_specific)"
    archs = list(DEFAULT_ARCHS)
    if arch_specific:
        archs = sorted([*archs, *filter(None, map(arch_specific_variant, archs))], key=arch_number)
    highest = max(DEFAULT_ARCHS, key=arch_number)
    seen = f"no GPU visible ({problem})" if problem else "no GPU visible"
    why = f"{seen}: default {', '.join(archs)} + PTX compute_{arch_number(highest)}"
    return archs, why
