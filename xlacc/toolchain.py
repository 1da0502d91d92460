"""Locate what a build needs: nvcc or a host C++ compiler, cuobjdump, XLA's FFI headers, GPU archs.

Nothing here imports jax: the FFI headers are found through jaxlib's installed files, and the
GPUs through ``nvidia-smi``, so a no-op build stays fast.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from xlacc.errors import ToolchainMissing

# Used on a machine without a visible GPU; the highest also gets PTX, so newer GPUs can JIT it.
DEFAULT_ARCHS = ("sm_80", "sm_90")
# Toolkit roots tried after $CUDA_HOME / $CUDA_PATH (label, root).
DEFAULT_CUDA_HOMES: tuple[tuple[str, Path], ...] = (("/usr/local/cuda", Path("/usr/local/cuda")),)
HOST_CXX_NAMES = ("g++", "c++", "clang++")
HOST_CXX_KINDS = (("clang", "clang++"), ("g++", "g++"))  # (in the file name, kind); else "c++"
FFI_HEADER = Path("xla/ffi/api/ffi.h")
FFI_HEADERS = ("xla/ffi/api/c_api.h", "xla/ffi/api/api.h", "xla/ffi/api/ffi.h")
NVIDIA_SMI_TIMEOUT_S = 5.0
VERSION_TIMEOUT_S = 30.0

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

# A memo of compiler versions: path -> {"stamp": [mtime_ns, size], "version": str}. The build cache
# stores it, so a fresh build never runs `nvcc --version`.
VersionMemo = dict[str, dict]


@dataclass(frozen=True)
class Compiler:
    path: Path
    version: str
    kind: str  # "nvcc", "g++", "c++" or "clang++"
    source: str  # where it was found: "--nvcc", "$CUDACXX", "PATH", "$CUDA_HOME", "pip", ...

    def describe(self) -> str:
        return f"{self.kind} {self.version} at {self.path} (found via {self.source})"


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


def _pathfinder_binary(name: str) -> Path | None:
    """cuda-pathfinder's search: NVIDIA wheels in site-packages, conda, the toolkit of libcudart."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
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


def _cuda_homes() -> Iterator[tuple[str, Path]]:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            yield f"${var}", Path(os.environ[var])
    yield from DEFAULT_CUDA_HOMES


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
    for source, path in _cuda_tool_candidates("nvcc"):
        if path is not None:
            return _nvcc(path, source, versions)
    raise ToolchainMissing(NO_NVCC)


def _nvcc(path: Path, source: str, versions: VersionMemo | None) -> Compiler:
    return Compiler(path=path, version=compiler_version(path, _parse_nvcc_version, versions), kind="nvcc", source=source)


def find_host_cxx(explicit: Path | None = None, *, versions: VersionMemo | None = None) -> Compiler:
    """An explicit path, ``$CXX``, then ``g++``, ``c++``, ``clang++`` on PATH."""
    if explicit is not None:
        return _host_cxx(_insist("--cxx", str(explicit)), "--cxx", versions)
    if os.environ.get("CXX"):
        return _host_cxx(_insist("$CXX", os.environ["CXX"]), "$CXX", versions)
    for name in HOST_CXX_NAMES:
        path = _executable(shutil.which(name))
        if path is not None:
            return _host_cxx(path, "PATH", versions)
    raise ToolchainMissing(NO_HOST_CXX)


def _host_cxx(path: Path, source: str, versions: VersionMemo | None) -> Compiler:
    kind = next((kind for marker, kind in HOST_CXX_KINDS if marker in path.name), "c++")
    return Compiler(path=path, version=compiler_version(path, _parse_host_version, versions), kind=kind, source=source)


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


def _stamp(path: Path) -> list[int]:
    stat = path.resolve().stat()
    return [stat.st_mtime_ns, stat.st_size]


def compiler_version(path: Path, parse: Callable[[str], str | None], versions: VersionMemo | None = None) -> str:
    """``path --version``, parsed; remembered in ``versions`` for as long as the file is unchanged."""
    key = str(path)
    stamp = _stamp(path)
    known = (versions or {}).get(key)
    if known and known.get("stamp") == stamp and known.get("version"):
        return known["version"]
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainMissing(f"{path} --version failed: {exc}") from None
    version = parse(done.stdout + done.stderr)
    if done.returncode != 0 or version is None:
        raise ToolchainMissing(f"{path} --version did not print a version (exit {done.returncode}): is it a compiler?")
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
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        done = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    caps = {f"sm_{m.group(1)}{m.group(2)}" for m in re.finditer(r"^\s*(\d+)\.(\d+)\s*$", done.stdout, re.M)}
    return sorted(caps, key=arch_number)


def resolve_archs(requested: tuple[str, ...] | None) -> tuple[list[str], str]:
    """The archs to build and why: as requested, the visible GPUs', or :data:`DEFAULT_ARCHS`."""
    if requested:
        return sorted(dict.fromkeys(requested), key=arch_number), "as requested"
    visible = visible_gpu_archs()
    if visible:
        return visible, "the visible GPU" if len(visible) == 1 else "the visible GPUs"
    highest = max(DEFAULT_ARCHS, key=arch_number)
    why = f"no GPU visible: default {', '.join(DEFAULT_ARCHS)} + PTX compute_{arch_number(highest)}"
    return list(DEFAULT_ARCHS), why
