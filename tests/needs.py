"""Skip markers for what a machine may lack, each with the reason a reader of the skip needs (no
tests here). CI installs less where its disk is small (`.ci/run`), so every test that builds a
project or runs jax says which of these it needs."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from xlacc.ground import toolchain
from xlacc.ground.errors import ToolchainMissing

GXX = shutil.which("g++")


def _nvcc() -> str | None:
    try:
        return str(toolchain.find_nvcc().path)
    except ToolchainMissing:
        return None


def _ffi_headers_installed() -> bool:
    try:
        toolchain.ffi_include_dir()
    except ToolchainMissing:
        return False
    return True


NVCC = _nvcc()

needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed: pip install -e '.[jax]'")
needs_ffi_headers = pytest.mark.skipif(
    not _ffi_headers_installed(), reason="XLA's FFI headers are not installed: pip install -e '.[jax]' (jaxlib ships them)"
)
