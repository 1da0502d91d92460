"""xlacc.readers.elf against shared libraries, objects and executables built here with g++."""

from __future__ import annotations

import platform
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from needs import GXX

from xlacc.ground.errors import XlaccError
from xlacc.readers import elf
from xlacc.readers.elf import (
    ElfError,
    demangle,
    find_symbol,
    function_name,
    missing_dependencies,
    normalize_machine,
    read_shared_object,
)
from xlacc.readers.elf_tables import PT_DYNAMIC, ElfTables

CXXFILT = shutil.which("c++filt")
needs_cxxfilt = pytest.mark.skipif(CXXFILT is None, reason="c++filt (binutils) is not installed")

SYMBOLS_SOURCE = r"""
#include <cstddef>
#include <cstdio>
struct CUstream_st;

extern "C" int XlaGpuSimpleAddFfi(void* call_frame) { return call_frame == nullptr; }
extern "C" const int xlacc_abi_version = 4;

// No extern "C": exported only under its mangled name.
void XlaGpuSimpleAdd(CUstream_st* stream, void** buffers, const char* opaque, size_t len) {
  std::puts(opaque);
}
namespace kernels {
void ScaledAdd(float* x, int n) { for (int i = 0; i < n; ++i) x[i] *= 2; }
}

// Not visible to the dynamic linker, still in .symtab.
extern "C" __attribute__((visibility("hidden"))) int XlaGpuHiddenKernel(int x) { return x + 1; }
__attribute__((visibility("hidden"))) int HiddenCpp(int x) { return x * 3; }
"""

DEPENDENCY_SOURCE = 'extern "C" int xlacc_dep_value() { return 7; }\n'
USER_SOURCE = (
    'extern "C" int xlacc_dep_value();\n'
    'extern "C" int user() { return xlacc_dep_value(); }\n'
)
MAIN_SOURCE = "int main() { return 0; }\n"


def _compile(*args: str | Path) -> None:
    result = subprocess.run([GXX, *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    if GXX is None:
        pytest.skip("g++ is not installed")
    root = tmp_path_factory.mktemp("elf")
    (root / "symbols.cpp").write_text(SYMBOLS_SOURCE)
    (root / "dep.cpp").write_text(DEPENDENCY_SOURCE)
    (root / "user.cpp").write_text(USER_SOURCE)
    (root / "main.cpp").write_text(MAIN_SOURCE)
    (root / "deps").mkdir()
    paths = {
        "symbols": root / "libsymbols.so",
        "object": root / "symbols.o",
        "dep": root / "deps" / "libxlaccdep.so",
        "user": root / "libuser.so",
        "pie": root / "prog-pie",
        "exec": root / "prog-nopie",
    }
    _compile("-shared", "-fPIC", "-O1", "-Wl,-soname,libsymbols.so.1", root / "symbols.cpp",
             "-o", paths["symbols"])
    _compile("-c", "-fPIC", root / "symbols.cpp", "-o", paths["object"])
    _compile("-shared", "-fPIC", root / "dep.cpp", "-o", paths["dep"])
    _compile("-shared", "-fPIC", root / "user.cpp", "-L", root / "deps", "-lxlaccdep",
             "-Wl,-rpath,$ORIGIN/deps", "-o", paths["user"])
    _compile("-pie", "-fPIE", root / "main.cpp", "-o", paths["pie"])
    _compile("-no-pie", root / "main.cpp", "-o", paths["exec"])
    return paths


@pytest.fixture(scope="module")
def symbols(built):
    return read_shared_object(built["symbols"])


def _other_machine() -> str:
    return "x86-64" if normalize_machine(platform.machine()) == "AArch64" else "AArch64"


# --- reading -------------------------------------------------------------------------------


def test_reads_dynamic_section(symbols):
    assert symbols.machine == normalize_machine(platform.machine())
    assert symbols.elf_type == "DYN"
    assert symbols.soname == "libsymbols.so.1"
    assert "libc.so.6" in symbols.needed
    assert "puts" in symbols.undefined
    assert "puts" not in symbols.exported


def test_exported_symbols_carry_kind_and_binding(symbols):
    function = symbols.exported["XlaGpuSimpleAddFfi"]
    assert (function.bind, function.visibility, function.kind, function.defined) == (
        "GLOBAL", "DEFAULT", "FUNC", True)
    assert symbols.exported["xlacc_abi_version"].kind == "OBJECT"
    assert "XlaGpuHiddenKernel" not in symbols.exported


def test_runpath_is_read_and_not_expanded(built):
    user = read_shared_object(built["user"])
    assert user.runpath + user.rpath == ["$ORIGIN/deps"]
    assert "libxlaccdep.so" in user.needed


def test_host_machine_spelling_is_accepted(built):
    so = read_shared_object(built["symbols"], expected_machine=platform.machine())
    assert so.machine == normalize_machine(platform.machine())


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [("x86_64", "x86-64"), ("AMD64", "x86-64"), ("x86-64", "x86-64"), ("aarch64", "AArch64"),
     ("arm64", "AArch64"), ("AArch64", "AArch64")],
)
def test_normalize_machine(spelling, canonical):
    assert normalize_machine(spelling) == canonical


# --- errors --------------------------------------------------------------------------------


def _elf_error(path, **kwargs) -> ElfError:
    with pytest.raises(ElfError) as caught:
        read_shared_object(path, **kwargs)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, XlaccError)
    return caught.value


def test_missing_file_is_not_found(tmp_path):
    error = _elf_error(tmp_path / "libnothere.so")
    assert error.kind == "not-found"
    assert "libnothere.so" in str(error)


def test_text_file_is_invalid(tmp_path):
    text = tmp_path / "libfake.so"
    text.write_text("INPUT(-lfoo)\n")
    error = _elf_error(text)
    assert error.kind == "invalid"
    assert "not an ELF file" in str(error)


def test_empty_file_is_invalid(tmp_path):
    empty = tmp_path / "libempty.so"
    empty.write_bytes(b"")
    assert _elf_error(empty).kind == "invalid"


def test_directory_is_invalid(tmp_path):
    assert _elf_error(tmp_path).kind == "invalid"


@pytest.mark.parametrize(("artifact", "said"), [
    ("object", "object file"),
    ("pie", "position-independent executable"),
    ("exec", "executable"),
])
def test_non_shared_elf_is_invalid(built, artifact, said):
    error = _elf_error(built[artifact])
    assert error.kind == "invalid"
    assert said in str(error)


@pytest.mark.parametrize("keep", [0.5, 0.9, 30 / 100_000])
def test_cut_short_library_is_truncated(built, tmp_path, keep):
    data = built["symbols"].read_bytes()
    cut = tmp_path / "libcut.so"
    cut.write_bytes(data[: max(5, int(len(data) * keep))])
    error = _elf_error(cut)
    assert error.kind == "truncated"
    assert "cut short" in str(error) or "unreadable ELF header" in str(error)


def test_a_library_with_more_dynamic_symbols_than_xlacc_reads_is_invalid(built, tmp_path, monkeypatch):
    monkeypatch.setattr(elf, "MAX_DYNAMIC_SYMBOLS", 3)
    assert "dynamic symbols, more than the 3 xlacc reads" in str(_elf_error(built["symbols"]))
    headerless = tmp_path / "libheaderless.so"
    headerless.write_bytes(_without_section_headers(built["symbols"]))
    assert "dynamic symbols, more than the 3 xlacc reads" in str(_elf_error(headerless))


def test_foreign_machine_is_wrong_machine(built):
    other = _other_machine()
    error = _elf_error(built["symbols"], expected_machine=other)
    assert error.kind == "wrong-machine"
    assert other in str(error)
    assert normalize_machine(platform.machine()) in str(error)


def test_elf_error_rejects_unknown_kind():
    with pytest.raises(ValueError):
        ElfError("bogus", "message")


# --- symbols -------------------------------------------------------------------------------


def test_exported(symbols):
    status = find_symbol(symbols, "XlaGpuSimpleAddFfi")
    assert status.status == "exported"
    assert status.symbol == symbols.exported["XlaGpuSimpleAddFfi"]


@needs_cxxfilt
def test_mangled_shows_signature(symbols):
    status = find_symbol(symbols, "XlaGpuSimpleAdd")
    assert status.status == "mangled"
    assert status.symbol.name.startswith("_Z15XlaGpuSimpleAdd")
    assert status.demangled == "XlaGpuSimpleAdd(CUstream_st*, void**, char const*, unsigned long)"


@needs_cxxfilt
def test_mangled_in_namespace(symbols):
    status = find_symbol(symbols, "ScaledAdd")
    assert status.status == "mangled"
    assert status.demangled == "kernels::ScaledAdd(float*, int)"


def test_mangled_found_without_demangler(symbols, monkeypatch):
    monkeypatch.setattr(elf, "_cxxfilt", lambda: None)
    status = find_symbol(symbols, "XlaGpuSimpleAdd")
    assert status.status == "mangled"
    assert status.demangled is None
    assert status.symbol.name.startswith("_Z")


def test_hidden_extern_c(symbols):
    status = find_symbol(symbols, "XlaGpuHiddenKernel")
    assert status.status == "hidden"
    assert status.symbol.bind == "LOCAL" or status.symbol.visibility == "HIDDEN"


@needs_cxxfilt
def test_hidden_and_mangled(symbols):
    status = find_symbol(symbols, "HiddenCpp")
    assert status.status == "hidden"
    assert status.demangled == "HiddenCpp(int)"


def test_missing_lists_closest_exported_names(symbols):
    status = find_symbol(symbols, "XlaGpuSimpleAddFf")
    assert status.status == "missing"
    assert status.symbol is None
    assert status.closest[0] == "XlaGpuSimpleAddFfi"
    assert len(status.closest) <= 3
    assert find_symbol(symbols, "CompletelyUnrelatedName").closest == []


def test_symtab_is_read_only_when_a_symbol_is_not_exported(built, monkeypatch):
    reads = []
    original = elf._read_symtab
    monkeypatch.setattr(elf, "_read_symtab", lambda path, name: reads.append(name) or original(path, name))
    so = read_shared_object(built["symbols"])
    find_symbol(so, "XlaGpuSimpleAddFfi")
    assert reads == []
    find_symbol(so, "XlaGpuHiddenKernel")
    find_symbol(so, "NotThere")
    assert reads == ["XlaGpuHiddenKernel", "NotThere"]


def test_local_definitions_keep_only_the_names_that_hold_the_one_asked_for(symbols):
    assert set(symbols.local_definitions("XlaGpuHiddenKernel")) == {"XlaGpuHiddenKernel"}
    assert [n for n in symbols.local_definitions("HiddenCpp")] == ["_Z9HiddenCppi"]
    assert symbols.local_definitions("NotThere") == {}
    assert all(s.defined for s in symbols.local_definitions("Xla").values())


def test_a_short_name_in_a_large_library_demangles_a_bounded_number_likely_ones_first(monkeypatch):
    """`--symbol at` against libtorch: the name is inside 100,000s of mangled names (`N2at6TensorE`)."""
    info = elf.SymbolInfo("", "GLOBAL", "HIDDEN", "FUNC", True)
    scopes = {f"_ZN2at6Tensor{i}fooEv": info for i in range(3 * elf.MAX_DEMANGLED)}
    symbols = {**scopes, "_ZN3ska9flat_hash2atERKi": info}
    asked = []
    monkeypatch.setattr(elf, "demangle", lambda names: asked.append(list(names)) or {n: n for n in names})
    found = elf._find_mangled("at", symbols)
    assert len(asked[0]) == elf.MAX_DEMANGLED and asked[0][0] == "_ZN3ska9flat_hash2atERKi"
    assert found == (info, None)  # no demangler: the function-shaped name is trusted


def test_stripped_library_has_no_local_symbols(built, tmp_path):
    strip = shutil.which("strip")
    if strip is None:
        pytest.skip("strip (binutils) is not installed")
    stripped = tmp_path / "libstripped.so"
    shutil.copy(built["symbols"], stripped)
    subprocess.run([strip, "--strip-all", str(stripped)], check=True)
    so = read_shared_object(stripped)
    assert so.local_definitions("XlaGpuHiddenKernel") == {}
    assert find_symbol(so, "XlaGpuHiddenKernel").status == "missing"
    assert find_symbol(so, "XlaGpuSimpleAddFfi").status == "exported"


def _without_section_headers(library: Path | bytes) -> bytes:
    """An ELF64 library as sstrip leaves it: e_shoff, e_shnum and e_shstrndx zeroed."""
    data = bytearray(library if isinstance(library, bytes) else library.read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)
    struct.pack_into("<HH", data, 0x3C, 0, 0)
    return bytes(data)


def test_library_without_section_headers_is_read_from_its_dynamic_segment(built, tmp_path):
    """sstrip-style libraries keep only program headers: pyelftools finds the symbols through the
    dynamic segment's hash table."""
    headerless = tmp_path / "libheaderless.so"
    headerless.write_bytes(_without_section_headers(built["user"]))
    whole, cut = read_shared_object(built["user"]), read_shared_object(headerless)
    for read in ("needed", "runpath", "exported", "undefined"):
        assert getattr(cut, read) == getattr(whole, read), read
    assert "user" in cut.exported


def test_a_headerless_library_with_a_damaged_dynamic_segment_is_invalid(built, tmp_path):
    data = bytearray(built["user"].read_bytes())
    tables = ElfTables(bytes(data))
    dynamic = next(s for s in tables.segments if s.type == PT_DYNAMIC)
    for at in range(dynamic.offset, dynamic.offset + dynamic.size, 16):
        if struct.unpack_from("<q", data, at)[0] == 5:  # DT_STRTAB: now an address no segment maps
            struct.pack_into("<Q", data, at + 8, 0xDEAD_BEEF_0000)
    damaged = tmp_path / "libdamaged.so"
    damaged.write_bytes(_without_section_headers(bytes(data)))
    assert _elf_error(damaged).kind == "invalid"


def test_a_32_bit_library_is_read_and_named(tmp_path):
    """The 32-bit layouts, where this machine can link one (gcc -m32, ld's elf_i386 emulation)."""
    (tmp_path / "lib.c").write_text("int exported_function(int x) { return x + 1; }\n")
    steps = (["gcc", "-m32", "-fPIC", "-c", "lib.c", "-o", "lib.o"],
             ["ld", "-m", "elf_i386", "-shared", "-soname", "lib32.so.1", "lib.o", "-o", "lib32.so"])
    tools = all(shutil.which(step[0]) for step in steps)
    if not tools or any(subprocess.run(step, cwd=tmp_path, capture_output=True).returncode for step in steps):
        pytest.skip("this machine cannot link a 32-bit x86 library")
    so = read_shared_object(tmp_path / "lib32.so", expected_machine="i686")
    assert so.machine == "x86" and so.soname == "lib32.so.1" and so.exported["exported_function"].kind == "FUNC"
    assert "built for x86, expected" in str(_elf_error(tmp_path / "lib32.so", expected_machine="x86-64"))


def test_an_unlisted_machine_is_named_by_pyelftools():
    assert elf.machine_name(8) == "MIPS R3000"
    assert elf.machine_name(0xFFF0) == "machine 65520"


def test_reading_a_library_does_not_import_pyelftools(built):
    """pyelftools' import alone is a fifth of doctor --so's start-up budget."""
    probe = (
        "import sys\nfrom xlacc.readers import elf, fatbin\n"
        f"so = elf.read_shared_object({str(built['symbols'])!r})\n"
        "elf.find_symbol(so, 'XlaGpuHiddenKernel'); fatbin.read_fatbin(so.path)\n"
        "print('elftools' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


@needs_cxxfilt
def test_demangle_in_one_call():
    assert demangle(["_Z3fooi", "_ZN2ns3barEPKc", "plain_c_name"]) == {
        "_Z3fooi": "foo(int)",
        "_ZN2ns3barEPKc": "ns::bar(char const*)",
        "plain_c_name": "plain_c_name",
    }
    assert demangle([]) == {}


def test_demangle_without_cxxfilt_returns_names(monkeypatch):
    monkeypatch.setattr(elf, "_cxxfilt", lambda: None)
    assert demangle(["_Z3fooi"]) == {"_Z3fooi": "_Z3fooi"}


@pytest.mark.parametrize(("text", "name"), [
    ("XlaGpuSimpleAdd(CUstream_st*, void**, char const*, unsigned long)", "XlaGpuSimpleAdd"),
    ("kernels::ScaledAdd(float*, int)", "ScaledAdd"),
    ("void ns::Launch<float, 4>(float*, std::pair<int, int>)", "Launch"),
    ("a::b::Outer<int>::Inner(int) const", "Inner"),
    ("plain", "plain"),
])
def test_function_name(text, name):
    assert function_name(text) == name


# --- dependencies --------------------------------------------------------------------------


def test_normal_library_has_no_missing_dependencies(symbols):
    assert missing_dependencies(symbols) == []


def test_deleted_dependency_is_reported(built, tmp_path):
    user = tmp_path / "libuser.so"
    shutil.copy(built["user"], user)
    shutil.copytree(built["dep"].parent, tmp_path / "deps")
    assert missing_dependencies(read_shared_object(user)) == []  # found through $ORIGIN/deps

    (tmp_path / "deps" / "libxlaccdep.so").unlink()
    assert missing_dependencies(read_shared_object(user)) == ["libxlaccdep.so"]


def test_ld_library_path_is_searched(built, tmp_path, monkeypatch):
    user = tmp_path / "libuser.so"
    shutil.copy(built["user"], user)  # no deps/ next to it
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    assert missing_dependencies(read_shared_object(user)) == ["libxlaccdep.so"]
    monkeypatch.setenv("LD_LIBRARY_PATH", str(built["dep"].parent))
    assert missing_dependencies(read_shared_object(user)) == []


def test_ldconfig_output_is_parsed():
    sample = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
        "\tlibcuda.so.1 (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libcuda.so.1\n"
        "\tlibold.so.2 (libc6) => /usr/lib/i386-linux-gnu/libold.so.2\n"
    )
    names = set(elf._parse_ldconfig(sample))
    assert "libcuda.so.1" in names
    if normalize_machine(platform.machine()) in ("x86-64", "AArch64"):
        assert "libold.so.2" not in names  # a 32-bit library does not satisfy a 64-bit one
