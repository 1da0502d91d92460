"""xlacc.readers.fatbin against libraries built here with nvcc, cross-checked with cuobjdump."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from xlacc.readers.elf import ElfError
from xlacc.readers.fatbin import (
    Coverage,
    FatbinEntry,
    FatbinError,
    describe,
    parse_arch,
    parse_fatbin,
    read_fatbin,
    runs_on,
)

KERNEL_SOURCE = r"""
#include <cuda_runtime.h>
__global__ void add_kernel(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] += a[i];
}
extern "C" int launch_add(cudaStream_t stream, const float* a, float* b, int n) {
  add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, b, n);
  return (int)cudaGetLastError();
}
"""

# name -> (extra nvcc arguments, output file name)
NVCC_BUILDS = {
    "multi": (["-shared", "-Xcompiler", "-fPIC",
               "-gencode", "arch=compute_80,code=sm_80",
               "-gencode", "arch=compute_90,code=[sm_90,compute_90]"], "libmulti.so"),
    "arch_specific": (["-shared", "-Xcompiler", "-fPIC",
                       "-gencode", "arch=compute_90a,code=[sm_90a,compute_90a]"], "libsm90a.so"),
    "rdc_object": (["-c", "-rdc=true", "-Xcompiler", "-fPIC",
                    "-gencode", "arch=compute_80,code=sm_80"], "kernel_rdc.o"),
}


def _find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    return find_nvidia_binary_utility("nvcc")


def _find_cuobjdump() -> str | None:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility("cuobjdump")
    except ImportError:
        found = None
    candidates = [found, shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"]
    return next((c for c in candidates if c and Path(c).is_file()), None)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    nvcc = _find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc is not installed (pip install -e '.[cuda]')")
    root = tmp_path_factory.mktemp("fatbin")
    source = root / "kernel.cu"
    source.write_text(KERNEL_SOURCE)
    paths = {}
    for name, (arguments, output) in NVCC_BUILDS.items():
        paths[name] = root / output
        result = subprocess.run([nvcc, *arguments, str(source), "-o", str(paths[name])],
                                capture_output=True, text=True)
        assert result.returncode == 0, f"nvcc {name}: {result.stderr}"
    return paths


@pytest.fixture(scope="module")
def host_only(tmp_path_factory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    root = tmp_path_factory.mktemp("host")
    (root / "host.cpp").write_text('extern "C" int host_only() { return 1; }\n')
    subprocess.run([gxx, "-shared", "-fPIC", str(root / "host.cpp"), "-o",
                    str(root / "libhost.so")], check=True)
    return root / "libhost.so"


def _section_bytes(path: Path) -> tuple[str, bytes]:
    with path.open("rb") as stream:
        elf = ELFFile(stream)
        for name in (".nv_fatbin", "__nv_relfatbin"):
            section = elf.get_section_by_name(name)
            if section is not None:
                return name, section.data()
    raise AssertionError(f"{path} has no fatbin section")


def sass(arch: int, arch_specific=False, family_specific=False) -> FatbinEntry:
    return FatbinEntry("sass", arch, arch_specific, family_specific)


def ptx(arch: int, arch_specific=False, family_specific=False) -> FatbinEntry:
    return FatbinEntry("ptx", arch, arch_specific, family_specific)


# --- real binaries -------------------------------------------------------------------------


def test_multi_arch_library(built):
    entries = read_fatbin(built["multi"])
    assert {e.label for e in entries} == {"sm_80", "sm_90", "compute_90"}
    assert not any(e.arch_specific for e in entries)
    assert describe(entries) == "sm_80, sm_90 (SASS); compute_90 (PTX)"


def test_arch_specific_build_is_marked(built):
    entries = read_fatbin(built["arch_specific"])
    assert {e.label for e in entries} == {"sm_90a", "compute_90a"}
    assert all(e.arch_specific and e.arch == 90 for e in entries)


def test_rdc_object_uses_relocatable_section(built):
    assert _section_bytes(built["rdc_object"])[0] == "__nv_relfatbin"
    assert {e.label for e in read_fatbin(built["rdc_object"])} == {"sm_80"}


def _cuobjdump_listing(cuobjdump: str, path: Path) -> list[tuple[str, int, str]]:
    """(kind, arch, suffix) per entry, in cuobjdump's order: all ELF files, then all PTX."""
    listing = []
    for flag, kind in (("--list-elf", "sass"), ("--list-ptx", "ptx")):
        result = subprocess.run([cuobjdump, flag, str(path)], capture_output=True, text=True)
        for line in result.stdout.splitlines():
            match = re.search(r"\.sm_(\d+)([af]?)\.(?:cubin|ptx)\s*$", line)
            if match:
                listing.append((kind, int(match.group(1)), match.group(2)))
    return listing


def _cuobjdump_marks_arch_specific(cuobjdump: str) -> bool:
    # cuobjdump before CUDA 13 lists an sm_90a cubin as sm_90.
    version = subprocess.run([cuobjdump, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"release (\d+)\.", version)
    return bool(match) and int(match.group(1)) >= 13


@pytest.mark.parametrize("artifact", list(NVCC_BUILDS))
def test_matches_cuobjdump(built, artifact):
    cuobjdump = _find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    theirs = _cuobjdump_listing(cuobjdump, built[artifact])
    entries = read_fatbin(built[artifact])
    ours = [(e.kind, e.arch, e.suffix) for e in entries if e.kind == "sass"]
    ours += [(e.kind, e.arch, e.suffix) for e in entries if e.kind == "ptx"]
    assert theirs, "cuobjdump listed nothing"
    if not _cuobjdump_marks_arch_specific(cuobjdump):
        ours = [(kind, arch, "") if kind == "sass" else (kind, arch, suffix)
                for kind, arch, suffix in ours]
    assert ours == theirs


def test_raw_fatbin_file_is_read(built, tmp_path):
    _, data = _section_bytes(built["multi"])
    raw = tmp_path / "kernel.fatbin"
    raw.write_bytes(data)
    assert read_fatbin(raw) == read_fatbin(built["multi"])


def test_host_only_library_has_no_gpu_code(host_only):
    assert read_fatbin(host_only) == []
    assert describe([]) == "no GPU code"
    coverage = runs_on([], 90)
    assert not coverage.ok and coverage.how is None


def test_missing_and_non_elf_files(tmp_path):
    with pytest.raises(ElfError) as missing:
        read_fatbin(tmp_path / "nothere.so")
    assert missing.value.kind == "not-found"
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    with pytest.raises(ElfError) as invalid:
        read_fatbin(text)
    assert invalid.value.kind == "invalid"


def test_corrupt_section_in_library(built, tmp_path):
    damaged = tmp_path / "libdamaged.so"
    shutil.copy(built["multi"], damaged)
    with damaged.open("r+b") as stream:
        offset = ELFFile(stream).get_section_by_name(".nv_fatbin")["sh_offset"]
        stream.seek(offset)
        stream.write(b"\xff" * 16)
    with pytest.raises(FatbinError) as caught:
        read_fatbin(damaged)
    assert isinstance(caught.value, ElfError) and isinstance(caught.value, ValueError)
    assert ".nv_fatbin" in str(caught.value) and "\n" not in str(caught.value)


# --- parse_fatbin on bytes -----------------------------------------------------------------


def test_containers_separated_by_padding(built):
    _, data = _section_bytes(built["multi"])
    once = parse_fatbin(data)
    assert parse_fatbin(data + b"\0" * 8 + data + b"\0" * 3) == once + once
    assert parse_fatbin(b"") == []


def test_cut_short_section_raises(built):
    _, data = _section_bytes(built["multi"])
    with pytest.raises(ValueError, match="claims"):
        parse_fatbin(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut short"):
        parse_fatbin(data[:10])


def test_bad_magic_raises():
    with pytest.raises(ValueError, match="no fatbin magic"):
        parse_fatbin(b"\x01" * 64)


def test_bad_entry_header_size_raises(built):
    _, data = _section_bytes(built["multi"])
    corrupt = bytearray(data)
    corrupt[16 + 4 : 16 + 8] = (8).to_bytes(4, "little")  # first entry: header size 8
    with pytest.raises(ValueError, match="header size 8"):
        parse_fatbin(bytes(corrupt))


def test_entry_running_past_its_container_raises(built):
    _, data = _section_bytes(built["multi"])
    corrupt = bytearray(data)
    corrupt[16 + 8 : 16 + 16] = (1 << 40).to_bytes(8, "little")  # first entry: huge payload
    with pytest.raises(ValueError, match="beyond its container"):
        parse_fatbin(bytes(corrupt))


# --- compatibility rules -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "arch"), [
    ("sm_90", 90), ("sm_90a", 90), ("compute_90", 90), ("90", 90), (90, 90), ("9.0", 90),
    ("8.6", 86), ("10.0", 100), ("sm_100f", 100), ("SM_120", 120), (" 12.1 ", 121),
])
def test_parse_arch(text, arch):
    assert parse_arch(text) == arch


@pytest.mark.parametrize("text", ["", "sm_", "sm_9", "hopper", "9.10", "9.0.1", "00", -90, True,
                                  None, "sm_90x", 9.0])
def test_parse_arch_rejects(text):
    with pytest.raises(ValueError):
        parse_arch(text)


def test_labels():
    assert [e.label for e in (sass(90), sass(90, True), sass(100, family_specific=True),
                              ptx(90), ptx(100, True))] == [
        "sm_90", "sm_90a", "sm_100f", "compute_90", "compute_100a"]


def test_sass_runs_on_newer_minor_of_same_major():
    on_86 = runs_on([sass(80)], 86)
    assert on_86 == Coverage(True, "sass", "SASS sm_80 runs on sm_86 (binary compatible)")
    on_90 = runs_on([sass(80)], "sm_90")
    assert on_90 == Coverage(
        False, None, "no SASS for sm_90 and no PTX <= compute_90 (has: sm_80)")
    assert not runs_on([sass(86)], 80).ok


def test_ptx_is_jit_compiled_for_newer_arch():
    coverage = runs_on([ptx(80)], 90)
    assert coverage == Coverage(
        True, "ptx-jit", "PTX compute_80 is JIT-compiled for sm_90 (slow first call)")
    assert not runs_on([ptx(90)], 80).ok


def test_sass_preferred_over_ptx_and_exact_over_compatible():
    assert runs_on([ptx(90), sass(90)], 90).how == "sass"
    assert runs_on([sass(80), sass(86)], 86).reason == "SASS for sm_86"
    assert runs_on([ptx(80), ptx(90)], 100).reason.startswith("PTX compute_90 ")


def test_arch_specific_runs_only_on_that_arch():
    entries = [sass(90, True), ptx(90, True)]
    assert runs_on(entries, 90) == Coverage(True, "sass", "SASS for sm_90 (sm_90a)")
    assert runs_on([ptx(90, True)], 90).how == "ptx-jit"
    beyond = runs_on(entries, 100)
    assert not beyond.ok
    assert "sm_90a, compute_90a" in beyond.reason and "exact arch" in beyond.reason


def test_family_specific_stays_in_its_family():
    assert runs_on([sass(100, family_specific=True)], 103).ok
    assert not runs_on([sass(100, family_specific=True)], 120).ok
    assert runs_on([ptx(100, family_specific=True)], 103).how == "ptx-jit"
    assert not runs_on([ptx(100, family_specific=True)], 120).ok


def test_real_library_coverage(built):
    multi = read_fatbin(built["multi"])
    assert runs_on(multi, 86).how == "sass"
    assert runs_on(multi, 90) == Coverage(True, "sass", "SASS for sm_90")
    assert runs_on(multi, 100).how == "ptx-jit"
    specific = read_fatbin(built["arch_specific"])
    assert runs_on(specific, 90).ok
    assert not runs_on(specific, 100).ok and not runs_on(specific, 80).ok


def test_describe_merges_duplicates():
    entries = [sass(90), sass(80), sass(90), ptx(90), sass(90, True)]
    assert describe(entries) == "sm_80, sm_90, sm_90a (SASS); compute_90 (PTX)"
    assert describe([ptx(80)]) == "compute_80 (PTX)"
