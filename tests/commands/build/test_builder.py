"""``xlacc build``: real compiles with g++ and nvcc of tiny sources written here.

nvcc runs are few (each costs seconds on a small machine): one module-scoped library serves
the arch, symbol and flag tests.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from locations import REPO_DIR
from needs import GXX, NVCC, needs_ffi_headers, needs_gxx, needs_nvcc
from process_support import alive
from typer.testing import CliRunner

from xlacc import cli, spec
from xlacc.commands.build import builder, compiling, plan
from xlacc.commands.build import cache as build_cache
from xlacc.ground import process, toolchain
from xlacc.ground.errors import ToolchainMissing, UsageError
from xlacc.readers.elf_tables import is_shared_library

REPO = REPO_DIR

CPU_SOURCE = """\
extern "C" int xk_add(int a, int b) { return a + b; }
"""

CUDA_SOURCE = """\
__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
extern "C" int xk_launch(const float* a, const float* b, float* out, int n, cudaStream_t stream) {
  add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, b, out, n);
  return (int)cudaGetLastError();
}
int cpp_launch(int n) { return n; }
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def request(*paths: Path, **overrides) -> builder.BuildRequest:
    fields = dict(
        paths=list(paths),
        output=None,
        symbols=[],
        archs=None,
        platform=None,
        nvcc=None,
        ffi_include=None,
        force=False,
        verbose=False,
        show_progress=False,
    )
    fields.update(overrides)
    return builder.BuildRequest(**fields)


def checks_by_name(report) -> dict:
    return {c.name: c for c in report.checks}


def codes(report) -> list[str]:
    return [f.code for f in report.findings]


@pytest.fixture(autouse=True)
def no_shared_cache(monkeypatch):
    """These tests are about compiling: the suite's shared $XLACC_CACHE_DIR (conftest.py) stays out."""
    monkeypatch.delenv(build_cache.SHARED_CACHE_ENV, raising=False)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def no_compiler(monkeypatch) -> None:
    """Any program run from here on fails the test."""
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a[0]}"))
    monkeypatch.setattr(process, "run_in_session", lambda *a, **k: pytest.fail(f"ran {a[0]}"))


# -- CPU files: build, verify, cache --------------------------------------------------------------


def test_cpu_file_builds_and_its_symbol_verifies(in_tmp, capsys):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    report = builder.run(request(source, symbols=["xk_add"], show_progress=True))
    assert report.code() == 0, report.to_json()
    library = in_tmp / "build" / "libk.so"
    assert report.data["library"] == str(library) and report.data["cached"] is False
    checks = checks_by_name(report)
    assert checks["toolchain"].ok and "found via" in checks["toolchain"].detail
    assert checks["compile"].ok and checks["compile"].detail.startswith("compiled in")
    assert checks["symbol xk_add"].ok and "C linkage" in checks["symbol xk_add"].detail
    command = report.data["command"]
    assert command[1:5] == ["-O3", "-std=c++17", "-shared", "-fPIC"]
    assert "-fvisibility=hidden" not in command  # a user's own file did not opt in
    assert command[-4:] == ["k.cc", "build/.xlacc-record/libk.so.cc", "-o", "build/libk.so"]  # and the build record
    assert ctypes.CDLL(str(library)).xk_add(2, 3) == 5
    assert capsys.readouterr().err == ""  # no spinner when stderr is not a terminal


def test_second_build_is_cached_and_runs_no_compiler(in_tmp, monkeypatch):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source, symbols=["xk_add"])).code() == 0
    library = in_tmp / "build" / "libk.so"
    stamp = library.stat().st_mtime_ns
    no_compiler(monkeypatch)
    started = time.process_time()
    report = builder.run(request(source, symbols=["xk_add"]))
    cpu = time.process_time() - started  # CPU time: a busy machine does not slow it
    assert report.code() == 0 and report.data["cached"] is True
    assert "up to date (cached" in checks_by_name(report)["compile"].detail
    assert checks_by_name(report)["symbol xk_add"].ok  # a cached library is still verified
    assert library.stat().st_mtime_ns == stamp
    assert cpu < 0.3


def test_a_source_touched_but_unchanged_is_cached_and_the_library_becomes_newer(in_tmp, monkeypatch):
    """Doctor and the generated package call a library older than a source stale: a cached build
    gives it the time of now, and the cache still knows it (the next build verifies nothing again)."""
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source, symbols=["xk_add"])).code() == 0
    library = in_tmp / "build" / "libk.so"
    later = library.stat().st_mtime + 0.001
    os.utime(source, (later, later))
    time.sleep(0.01)
    no_compiler(monkeypatch)
    assert builder.run(request(source, symbols=["xk_add"])).data["cached"] is True
    assert library.stat().st_mtime > later
    monkeypatch.setattr(builder, "verify_library", lambda *a, **k: pytest.fail("verified again"))
    assert builder.run(request(source, symbols=["xk_add"])).data["cached"] is True


def test_cached_cli_build_is_fast_and_imports_no_framework(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source)).code() == 0
    script = (
        "import sys, time; t = time.process_time(); from xlacc.commands.build import builder;"
        "r = builder.run(builder.BuildRequest([sys.argv[1]], None, [], None, None, None, None, False, False, False));"
        "assert r.data['cached'], r.to_json(); print(time.process_time() - t);"
        "assert not {'jax', 'jaxlib', 'torch'} & set(sys.modules), 'imported a framework'"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script, "k.cc"], cwd=in_tmp, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 0.3


def test_force_rebuilds(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    builder.run(request(source))
    report = builder.run(request(source, force=True))
    assert report.data["cached"] is False
    assert checks_by_name(report)["compile"].detail.startswith("compiled in")


def test_changing_a_source_or_a_local_header_rebuilds(in_tmp):
    header = write(in_tmp / "k.h", "#define OFFSET 0\n")
    source = write(in_tmp / "k.cc", '#include "k.h"\nextern "C" int xk_add(int a, int b) { return a + b + OFFSET; }\n')
    assert builder.run(request(source, symbols=["xk_add"])).data["cached"] is False
    assert builder.run(request(source, symbols=["xk_add"])).data["cached"] is True
    header.write_text("#define OFFSET 10\n")
    assert builder.run(request(source, symbols=["xk_add"])).data["cached"] is False
    assert ctypes.CDLL(str(in_tmp / "build" / "libk.so")).xk_add(1, 1) == 12
    source.write_text(source.read_text() + 'extern "C" int xk_sub(int a, int b) { return a - b; }\n')
    report = builder.run(request(source, symbols=["xk_add", "xk_sub"]))
    assert report.data["cached"] is False and report.code() == 0


def test_a_new_compiler_version_or_a_missing_library_rebuilds(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    builder.run(request(source))
    cache_file = in_tmp / "build" / build_cache.CACHE_FILE
    cache = json.loads(cache_file.read_text())
    for entry in cache["compilers"].values():
        entry["version"] = "0.0.1"  # as if the compiler had been upgraded in place
    cache_file.write_text(json.dumps(cache))
    assert builder.run(request(source)).data["cached"] is False
    assert builder.run(request(source)).data["cached"] is True
    (in_tmp / "build" / "libk.so").unlink()
    report = builder.run(request(source))
    assert report.data["cached"] is False and (in_tmp / "build" / "libk.so").is_file()


def test_output_option(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    report = builder.run(request(source, output=in_tmp / "out" / "libmine.so", symbols=["xk_add"]))
    assert report.code() == 0
    assert (in_tmp / "out" / "libmine.so").is_file() and (in_tmp / "out" / build_cache.CACHE_FILE).is_file()


# -- atomic output --------------------------------------------------------------------------------


def leftovers(directory: Path) -> list[Path]:
    return sorted(directory.glob(".*.tmp"))


def test_failed_compile_keeps_the_previous_library(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source)).code() == 0
    library = in_tmp / "build" / "libk.so"
    good = library.read_bytes()
    source.write_text('extern "C" int xk_add(int a, int b) { return a + ; }\n')
    report = builder.run(request(source))
    assert report.code() == 1
    assert library.read_bytes() == good
    assert leftovers(library.parent) == []
    source.write_text(CPU_SOURCE)  # back to what the library was built from: nothing to do
    assert builder.run(request(source)).data["cached"] is True


STALLING_COMPILER = """\
#!/bin/sh
if [ "$1" = "--version" ]; then echo "stalling c++ 1.0.0"; exit 0; fi
prev=""
for arg in "$@"; do
  if [ "$prev" = "-o" ]; then out="$arg"; fi
  prev="$arg"
done
printf 'half a library' > "$out"
exec sleep 60
"""


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_interrupted_build_never_leaves_a_broken_library(in_tmp, how):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source)).code() == 0
    library = in_tmp / "build" / "libk.so"
    good = library.read_bytes()
    stalling = write(in_tmp / "tools" / "stallcc", STALLING_COMPILER)
    stalling.chmod(0o755)
    env = {**os.environ, "CXX": str(stalling), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "xlacc", "build", "k.cc"],
        cwd=in_tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not leftovers(library.parent) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert leftovers(library.parent), "the compiler never started writing"
        if how == "SIGINT":
            os.kill(process.pid, signal.SIGINT)
        else:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the stalled compiler, if still there
        except ProcessLookupError:
            pass
        process.communicate()
    assert library.read_bytes() == good
    if how == "SIGINT":
        assert leftovers(library.parent) == []
    else:
        assert len(leftovers(library.parent)) == 1  # nothing could clean up after SIGKILL...
        assert builder.run(request(source)).code() == 0
        assert leftovers(library.parent) == []  # ...so the next build does


# -- hostile compilers: hangs, floods, servers, launchers, write failures ----------------------------


def fake_cxx(directory: Path, body: str) -> Path:
    """A compiler (given through $CXX) that says it is g++ 12.2.0 and then runs ``body``."""
    path = write(directory / "g++", f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "g++ (fake) 12.2.0"; exit 0; fi\n{body}\n')
    path.chmod(0o755)
    return path


def test_a_compiler_that_leaves_a_server_holding_its_output_does_not_hang_the_build(in_tmp, monkeypatch):
    """A ccache/sccache-like wrapper: the compile is done, a process it started keeps the output open."""
    pid_file = in_tmp / "server.pid"
    monkeypatch.setenv("CXX", str(fake_cxx(in_tmp / "tools", f'{shutil.which("g++")} "$@"; rc=$?\nsleep 30 &\necho $! > {pid_file}\nexit $rc')))
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    started = time.monotonic()
    report = builder.run(request(source, symbols=["xk_add"]))
    assert report.code() == 0, report.to_json()
    assert time.monotonic() - started < 20  # not the server's 30 s
    assert not alive(pid_file)  # stopped with the compiler's group


def test_a_compiler_that_never_ends_is_stopped_at_the_timeout(in_tmp, monkeypatch):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source)).code() == 0
    library = in_tmp / "build" / "libk.so"
    good = library.read_bytes()
    pid_file = in_tmp / "child.pid"
    compiler = fake_cxx(in_tmp / "tools", f"sleep 30 &\necho $! > {pid_file}\nwait")
    monkeypatch.setenv("CXX", str(compiler))
    started = time.monotonic()
    report = builder.run(request(source, force=True, timeout=1))
    assert time.monotonic() - started < 20  # not the compiler's 30 s
    detail = checks_by_name(report)["compile"].detail
    assert report.code() == 1 and detail.startswith(f"g++ ({compiler}) did not finish in 1 s") and "--timeout" in detail, detail
    assert codes(report) == []  # the compiler rejected nothing
    assert not alive(pid_file)
    assert library.read_bytes() == good and leftovers(library.parent) == []


def test_a_source_saved_while_it_compiles_is_neither_recorded_nor_shared(in_tmp, monkeypatch):
    """The key is the text read before the compiler ran: a save in between once recorded (and
    shared) the new text's library under the old text's key, and an undo then found it "up to date"."""
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    saves = f"echo '// saved while compiling' >> {source}"
    monkeypatch.setenv("CXX", str(fake_cxx(in_tmp / "tools", f'{saves}\n{shutil.which("g++")} "$@"')))
    monkeypatch.setenv("XLACC_CACHE_DIR", str(in_tmp / "shared"))

    report = builder.run(request(source))

    compile_check = checks_by_name(report)["compile"]
    assert report.code() == 0 and compile_check.ok is None
    assert "k.cc changed while it compiled: `xlacc build` again builds what is saved now" in compile_check.detail
    assert not any((in_tmp / "shared").glob("**/*.so"))
    monkeypatch.setenv("CXX", str(fake_cxx(in_tmp / "tools", f'{shutil.which("g++")} "$@"')))
    again = builder.run(request(source))
    assert checks_by_name(again)["compile"].ok is True and checks_by_name(again)["compile"].detail.startswith("compiled in")


def test_a_source_saved_and_put_back_while_it_compiles_is_not_recorded(in_tmp, monkeypatch):
    """The same bytes after the compile, but the compiler may have read the other text."""
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    saved_back = f"cp {source} {source}.orig; echo '// edited' >> {source}; cp {source}.orig {source}"
    monkeypatch.setenv("CXX", str(fake_cxx(in_tmp / "tools", f'{saved_back}\n{shutil.which("g++")} "$@"')))
    report = builder.run(request(source))
    assert report.code() == 0 and checks_by_name(report)["compile"].ok is None


def test_a_flood_of_compiler_output_is_kept_bounded_with_its_first_and_last_errors(in_tmp, monkeypatch):
    flood = "i=0; while [ $i -lt 200000 ]; do echo 'note: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; i=$((i+1)); done"
    body = f"echo 'k.cc:1:1: error: the first'\n{flood}\necho 'k.cc:9:1: error: the last'\nexit 1"
    monkeypatch.setenv("CXX", str(fake_cxx(in_tmp / "tools", body)))
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    report = builder.run(request(source, verbose=True))
    assert report.code() == 1
    assert checks_by_name(report)["compile"].detail == "g++ failed: k.cc:1:1: error: the first (and 1 more)"
    (finding,) = [f for f in report.findings if f.code == "compile-error"]
    assert "k.cc:9:1: error: the last" in finding.evidence
    output = "\n".join(report.notes)
    assert len(output) < 1_000_000 and "bytes of output left out" in output  # of about 12 MB


@pytest.mark.parametrize("failure", ["cannot open output file build/libk.so: Permission denied", "final link failed: No space left on device"])
def test_a_library_the_linker_cannot_write_is_not_a_compile_error(in_tmp, monkeypatch, failure):
    body = f"echo '/usr/bin/ld: {failure}' >&2\necho 'collect2: error: ld returned 1 exit status' >&2\nexit 1"
    monkeypatch.setenv("CXX", str(fake_cxx(in_tmp / "tools", body)))
    report = builder.run(request(write(in_tmp / "k.cc", CPU_SOURCE)))
    detail = checks_by_name(report)["compile"].detail
    assert report.code() == 1 and detail == f"g++ could not write the library, not a compile error: /usr/bin/ld: {failure}"
    assert codes(report) == []


def test_nvcc_without_a_host_compiler_is_not_a_compile_error(in_tmp):
    nvcc = write(in_tmp / "tools" / "nvcc", (
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi\n'
        "echo 'nvcc fatal   : Failed to preprocess host compiler properties.' >&2\nexit 1\n"
    ))
    nvcc.chmod(0o755)
    report = builder.run(request(write(in_tmp / "k.cu", "__global__ void k(float* x) {}\n"), nvcc=nvcc, archs="sm_90"))
    detail = checks_by_name(report)["compile"].detail
    assert report.code() == 1 and detail.startswith("nvcc found no host C++ compiler to run") and codes(report) == []


def test_a_launcher_in_cxx_runs_before_the_compiler(in_tmp, monkeypatch):
    """make's convention: CXX="ccache g++" is a launcher and the compiler it runs."""
    launcher = write(in_tmp / "tools" / "launch", '#!/bin/sh\necho "$@" >> "$(dirname "$0")/launched"\nexec "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{launcher.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CXX", "launch g++")
    report = builder.run(request(write(in_tmp / "k.cc", CPU_SOURCE), symbols=["xk_add"]))
    assert report.code() == 0, report.to_json()
    assert report.data["command"][:2] == [str(launcher), "g++"]
    detail = checks_by_name(report)["toolchain"].detail
    assert re.fullmatch(rf"g\+\+ [\d.]+ at {re.escape(str(launcher))} g\+\+ \(found via \$CXX\)", detail), detail
    assert "-shared" in (launcher.parent / "launched").read_text()


# -- the library at xlacc's own path, and the caches ------------------------------------------------


def test_garbage_at_the_default_library_path_is_replaced_but_not_at_a_chosen_one(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    library = write(in_tmp / "build" / "libk.so", "")  # left by a crash, say
    report = builder.run(request(source, symbols=["xk_add"]))
    assert report.code() == 0, report.to_json()
    assert ctypes.CDLL(str(library)).xk_add(2, 3) == 5
    mine = write(in_tmp / "out" / "libmine.so", "notes of mine\n")
    with pytest.raises(UsageError, match="exists and is not a shared library: xlacc does not overwrite it"):
        builder.run(request(source, output=mine))
    assert mine.read_text() == "notes of mine\n"


@needs_gxx
def test_a_position_independent_executable_is_no_library_to_replace(in_tmp):
    """A PIE is ET_DYN like a library: a build with -o naming the user's program replaced it."""
    program = in_tmp / "tool"
    subprocess.run([GXX, "-pie", "-fPIE", "-x", "c++", "-", "-o", str(program)], input="int main() { return 0; }\n", text=True, check=True)
    kept = program.read_bytes()
    with pytest.raises(UsageError, match="exists and is not a shared library: xlacc does not overwrite it"):
        builder.run(request(write(in_tmp / "k.cc", CPU_SOURCE), output=program))
    assert program.read_bytes() == kept
    older = in_tmp / "older-tool"  # as older linkers write one: no DF_1_PIE, only an interpreter
    older.write_bytes(_without_pie_flag(kept))
    with pytest.raises(UsageError, match="exists and is not a shared library"):
        builder.run(request(in_tmp / "k.cc", output=older))


def _without_pie_flag(data: bytes) -> bytes:
    import io

    from elftools.elf.elffile import ELFFile

    patched = bytearray(data)
    dynamic = ELFFile(io.BytesIO(data)).get_section_by_name(".dynamic")
    for offset in range(dynamic["sh_offset"], dynamic["sh_offset"] + dynamic["sh_size"], 16):
        tag, value = struct.unpack_from("<qQ", patched, offset)
        if tag == 0x6FFFFFFB:  # DT_FLAGS_1
            struct.pack_into("<qQ", patched, offset, tag, value & ~0x08000000)  # without DF_1_PIE
    return bytes(patched)


@needs_ffi_headers
def test_garbage_at_a_projects_own_library_path_is_replaced(tmp_path):
    from xlacc.commands.new import project as scaffold

    scaffold.create(scaffold.NewRequest(name="junk", template="add", platform="cpu", frameworks=["jax"], directory=tmp_path / "junk"))
    project = spec.load(tmp_path / "junk")
    assert not project.build.output  # xlacc's own path
    project.library.parent.mkdir(parents=True, exist_ok=True)
    project.library.write_bytes(b"garbage")
    result = builder.build_spec(project)
    assert result.ok, result.checks + result.findings
    assert is_shared_library(project.library)


@pytest.mark.timeout(30)
def test_a_named_pipe_at_the_library_path_is_refused_not_waited_on(tmp_path):
    from xlacc.commands.new import project as scaffold

    scaffold.create(scaffold.NewRequest(name="piped", template="add", platform="cpu", frameworks=["jax"], directory=tmp_path / "piped"))
    project = spec.load(tmp_path / "piped")
    project.library.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(project.library)
    with pytest.raises(UsageError, match="exists and is not a shared library"):
        builder.build_spec(project)


def test_a_shared_cache_folder_that_is_a_file_is_said_not_to_be_used(in_tmp, monkeypatch):
    not_a_folder = write(in_tmp / "cache", "a file")
    monkeypatch.setenv(build_cache.SHARED_CACHE_ENV, str(not_a_folder))
    report = builder.run(request(write(in_tmp / "k.cc", CPU_SOURCE), symbols=["xk_add"]))
    assert report.code() == 0
    line = checks_by_name(report)["shared cache"]
    assert line.ok is None and line.detail == f"${build_cache.SHARED_CACHE_ENV}={not_a_folder} is a file, not a folder: not used"


def test_a_read_only_shared_cache_gives_libraries_and_takes_none(in_tmp, monkeypatch):
    """A cache CI filled and mounted read-only was ignored, and every build compiled."""
    shared = in_tmp / "cache"
    monkeypatch.setenv(build_cache.SHARED_CACHE_ENV, str(shared))
    monkeypatch.chdir(write(in_tmp / "a" / "k.cc", CPU_SOURCE).parent)  # a checkout, then another
    assert builder.run(request(Path("k.cc"), symbols=["xk_add"])).code() == 0
    writable = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: writable(path, mode) and not (Path(path) == shared and mode & os.W_OK))
    monkeypatch.chdir(write(in_tmp / "b" / "k.cc", CPU_SOURCE).parent)
    report = builder.run(request(Path("k.cc"), symbols=["xk_add"]))
    assert report.code() == 0 and checks_by_name(report)["compile"].detail.startswith("copied from $XLACC_CACHE_DIR")
    assert checks_by_name(report)["shared cache"].detail == f"${build_cache.SHARED_CACHE_ENV}={shared} is read-only: libraries are copied from it, none stored"


def shared_entry(folder: Path) -> Path:
    (stored,) = folder.glob("*.so")
    return stored


@pytest.mark.parametrize("damage", ["garbage", "truncated", "named pipe", "oversized log", "log is a named pipe", "another library"])
@pytest.mark.timeout(60)
def test_a_damaged_shared_cache_entry_is_dropped_and_compiled_again(tmp_path, monkeypatch, damage):
    shared = tmp_path / "shared"
    monkeypatch.setenv(build_cache.SHARED_CACHE_ENV, str(shared))
    first = write(tmp_path / "one" / "k.cc", CPU_SOURCE)
    monkeypatch.chdir(first.parent)
    assert builder.run(request(first, symbols=["xk_add"])).code() == 0
    stored = shared_entry(shared)
    log = stored.with_suffix(".log")
    if damage == "garbage":
        stored.write_bytes(b"garbage\n")
    elif damage == "truncated":
        stored.write_bytes(stored.read_bytes()[: stored.stat().st_size // 2])
    elif damage == "named pipe":
        stored.unlink()
        os.mkfifo(stored)
    elif damage == "another library":  # a shared library, without the entry point
        import _ctypes

        shutil.copyfile(_ctypes.__file__, stored)
    elif damage == "oversized log":
        with open(log, "wb") as handle:
            handle.truncate(build_cache.MAX_CACHE_FILE_BYTES + 1)
    else:
        log.unlink()
        os.mkfifo(log)
    second = write(tmp_path / "two" / "k.cc", CPU_SOURCE)
    monkeypatch.chdir(second.parent)
    library = second.parent / "build" / "libk.so"
    report = builder.run(request(second, symbols=["xk_add"]))
    assert report.code() == 0, report.to_json()
    assert checks_by_name(report)["compile"].detail.startswith("compiled in")
    assert ctypes.CDLL(str(library)).xk_add(2, 3) == 5
    assert is_shared_library(shared_entry(shared))  # stored again, whole
    assert log.is_file() and log.stat().st_size < build_cache.MAX_CACHE_FILE_BYTES


@pytest.mark.parametrize("damage", ["named pipe", "oversized"])
@pytest.mark.timeout(60)
def test_a_build_cache_file_that_cannot_be_read_is_no_cache(in_tmp, damage):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source)).code() == 0
    cache_file = in_tmp / "build" / build_cache.CACHE_FILE
    cache_file.unlink()
    if damage == "named pipe":
        os.mkfifo(cache_file)
    else:
        cache_file.write_text(json.dumps({"format": build_cache.CACHE_FORMAT, "libraries": {}, "pad": "x" * build_cache.MAX_CACHE_FILE_BYTES}))
    report = builder.run(request(source))
    assert report.code() == 0 and report.data["cached"] is False
    assert builder.run(request(source)).data["cached"] is True  # written again, as a regular file


# -- compiler errors and warnings -----------------------------------------------------------------


def test_cpu_compile_error_shows_the_compiler_lines(in_tmp):
    write(in_tmp / "src" / "bad.cc", "int f() {\n  int x = ;\n  return x;\n}\n")
    result = CliRunner().invoke(cli.app, ["build", "src/bad.cc"])
    assert result.exit_code == 1, result.output
    assert "src/bad.cc:2:11: error:" in result.output
    assert str(in_tmp) not in result.output  # paths relative to where the user is
    report = builder.run(request(in_tmp / "src" / "bad.cc"))
    compile_check = checks_by_name(report)["compile"]
    assert compile_check.ok is False and "src/bad.cc:2:11: error" in compile_check.detail
    (finding,) = [f for f in report.findings if f.code == "compile-error"]
    assert finding.severity == "error" and "int x = ;" in finding.evidence
    assert not (in_tmp / "src" / "build" / "libbad.so").exists()


def test_user_warnings_are_reported_and_the_build_succeeds(in_tmp):
    source = write(in_tmp / "w.cc", '#warning "check me"\n' + CPU_SOURCE)
    report = builder.run(request(source, symbols=["xk_add"]))
    assert report.code() == 0
    (finding,) = [f for f in report.findings if f.code == "compiler-warning"]
    assert finding.severity == "warning" and 'w.cc:1:2: warning: #warning "check me"' in finding.evidence


def test_a_library_built_elsewhere_comes_from_the_shared_cache(tmp_path, monkeypatch):
    """$XLACC_CACHE_DIR: the same file in another folder is copied, not compiled, and reports the
    warning its compile printed; a changed source compiles, and so does --force."""
    monkeypatch.setenv(build_cache.SHARED_CACHE_ENV, str(tmp_path / "shared"))
    text = '#warning "check me"\n' + CPU_SOURCE
    first = write(tmp_path / "one" / "w.cc", text)
    monkeypatch.chdir(first.parent)
    assert checks_by_name(builder.run(request(first, symbols=["xk_add"])))["compile"].detail.startswith("compiled in")
    second = write(tmp_path / "two" / "w.cc", text)
    monkeypatch.chdir(second.parent)
    compiled = []
    real_run = process.run_in_session
    monkeypatch.setattr(process, "run_in_session", lambda command, *a, **k: compiled.append(command) or real_run(command, *a, **k))
    report = builder.run(request(second, symbols=["xk_add"]))
    assert report.code() == 0 and not [c for c in compiled if "-shared" in c], compiled
    assert "copied from $XLACC_CACHE_DIR" in checks_by_name(report)["compile"].detail
    assert checks_by_name(report)["symbol xk_add"].ok  # verified like a compiled one
    assert [f.code for f in report.findings] == ["compiler-warning"]
    assert ctypes.CDLL(str(second.parent / "build" / "libw.so")).xk_add(2, 3) == 5
    compiled.clear()
    assert builder.run(request(second, symbols=["xk_add"], force=True)).code() == 0 and [c for c in compiled if "-shared" in c]
    second.write_text(text + "int other() { return 0; }\n")
    assert "compiled in" in checks_by_name(builder.run(request(second, symbols=["xk_add"])))["compile"].detail


def test_an_unwritable_shared_cache_only_costs_the_copy(in_tmp, monkeypatch):
    blocker = write(in_tmp / "not-a-folder", "a file where the cache folder should be")
    monkeypatch.setenv(build_cache.SHARED_CACHE_ENV, str(blocker))
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    for _ in range(2):
        report = builder.run(request(source, symbols=["xk_add"]))
        assert report.code() == 0 and checks_by_name(report)["compile"].detail.startswith("compiled in")
        shutil.rmtree(in_tmp / "build")
    assert blocker.read_text() == "a file where the cache folder should be"


# -- usage errors and a missing toolchain, through the command line -------------------------------


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["xlacc", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    return exited.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("k.cu", CUDA_SOURCE, "no nvcc found: install a CUDA toolkit, or `pip install -e '.[cuda]'`"),
        ("k.cc", CPU_SOURCE, "no C++ compiler found"),
    ],
)
def test_missing_toolchain_exits_2_with_what_to_install(in_tmp, bare_env, monkeypatch, capsys, name, text, message):
    write(in_tmp / name, text)
    code, err = run_main(monkeypatch, capsys, "build", name)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (in_tmp / "build").exists() or not list((in_tmp / "build").glob("*.so"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.cu"], "missing.cu: no such file or directory"),
        (["notes.txt"], "unknown suffix '.txt'"),
        (["empty"], "no xlacc.toml in empty"),
        (["empty", "k.cc"], "give one project directory, or kernel files"),
        (["k.cu", "--platform", "cpu"], "--platform cpu cannot compile .cu files"),
        (["k.cc", "--platform", "tpu"], "--platform 'tpu' is not allowed"),
        (["k.cu", "--arch", "sm80"], "invalid GPU arch 'sm80'"),
        (["k.cu", "--arch", ""], "--arch takes GPU archs such as sm_80,sm_90; got an empty value"),
        (["k.cc", "--symbol", ""], "--symbol takes the name of an entry point to verify; got an empty value"),
        (["k.cc", "--library", "-"], "-o/--library -: xlacc writes the library to a file, not to stdout"),
        (["k.cc", "--timeout", "0"], "--timeout must be a positive number of seconds"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(in_tmp, monkeypatch, capsys, args, message):
    write(in_tmp / "k.cu", CUDA_SOURCE)
    write(in_tmp / "k.cc", CPU_SOURCE)
    write(in_tmp / "notes.txt", "hello\n")
    (in_tmp / "empty").mkdir()
    code, err = run_main(monkeypatch, capsys, "build", *args)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_usage_errors_raise_from_run(in_tmp):
    with pytest.raises(UsageError):
        builder.run(request(in_tmp / "nope.cc"))


# -- nvcc -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cuda_build(tmp_path_factory):
    """k.cu built once for sm_80 with nvcc."""
    if NVCC is None:
        pytest.skip("no nvcc on this machine")
    root = tmp_path_factory.mktemp("cuda")
    source = write(root / "k.cu", CUDA_SOURCE)
    report = builder.run(request(source, archs="sm_80", symbols=["xk_launch"]))
    return source, report


@needs_nvcc
def test_nvcc_build_for_sm_80_verifies_symbol_and_arch(cuda_build):
    source, report = cuda_build
    assert report.code() == 0, report.to_json()
    checks = checks_by_name(report)
    assert checks["archs"].detail == "sm_80 + PTX compute_80: as requested by --arch"
    assert checks["arch sm_80"].ok and checks["arch sm_80"].detail == "SASS for sm_80"
    assert checks["symbol xk_launch"].ok
    assert report.data["archs"] == ["sm_80"]
    command = report.data["command"]
    assert command[1:6] == ["-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC"]
    assert ["-gencode", "arch=compute_80,code=[sm_80,compute_80]"] == command[6:8]
    assert "-lineinfo" in command and "-fvisibility=hidden" not in command
    assert command[command.index("-I") + 1] == str(plan.XLACC_INCLUDE)  # xlacc/kernel.h, always
    assert not any("jaxlib" in part for part in command)  # the source does not use XLA's FFI


@needs_nvcc
def test_nvcc_library_cross_checked_with_cuobjdump(cuda_build):
    source, report = cuda_build
    cuobjdump = toolchain.find_cuobjdump(toolchain.find_nvcc())
    if cuobjdump is None:
        pytest.skip("no cuobjdump on this machine")
    listing = subprocess.run(
        [str(cuobjdump), "--list-elf", "--list-ptx", report.data["library"]], capture_output=True, text=True
    ).stdout
    assert "sm_80.cubin" in listing and "sm_80.ptx" in listing and "sm_90" not in listing


@needs_nvcc
def test_an_arch_that_was_not_built_is_an_arch_mismatch(cuda_build):
    source, report = cuda_build
    library = Path(report.data["library"])
    checks, findings = builder.verify_library(library, [], ["sm_75", "sm_90"])
    by_name = {c.name: c for c in checks}
    assert by_name["arch sm_75"].ok is False
    assert by_name["arch sm_90"].ok and "PTX compute_80" in by_name["arch sm_90"].detail
    (finding,) = findings
    assert finding.code == "arch-mismatch" and finding.severity == "error"
    assert "sm_75" in finding.title and "sm_80 (SASS); compute_80 (PTX)" in finding.evidence
    assert "--arch sm_75" in finding.fix


@needs_nvcc
def test_symbol_without_extern_c_is_mangled(cuda_build):
    source, _ = cuda_build
    report = builder.run(request(source, archs="sm_80", symbols=["xk_launch", "cpp_launch", "xk_lunch"]))
    assert report.data["cached"] is True
    assert report.code() == 1
    assert checks_by_name(report)["symbol cpp_launch"].detail == "mangled"
    mangled = next(f for f in report.findings if f.code == "symbol-mangled")
    assert "_Z10cpp_launchi" in mangled.evidence and 'extern "C"' in mangled.fix
    missing = next(f for f in report.findings if f.code == "symbol-missing")
    assert "closest exported: xk_launch" in missing.evidence


@needs_nvcc
def test_changing_the_archs_rebuilds(cuda_build):
    source, _ = cuda_build
    report = builder.run(request(source, archs="sm_90,sm_80", symbols=["xk_launch"]))
    assert report.data["cached"] is False and report.code() == 0
    assert report.data["archs"] == ["sm_80", "sm_90"]
    assert "arch=compute_80,code=sm_80" in report.data["command"]
    assert "arch=compute_90,code=[sm_90,compute_90]" in report.data["command"]
    assert " --threads 0 " in " ".join(report.data["command"])  # the two archs compile side by side
    assert checks_by_name(report)["arch sm_90"].detail == "SASS for sm_90"


@needs_nvcc
def test_nvcc_compile_error_shows_the_compiler_lines(in_tmp):
    write(in_tmp / "bad.cu", "__global__ void k(float* x) { x[0] = 1 }\n")
    report = builder.run(request(in_tmp / "bad.cu", archs="sm_80"))
    assert report.code() == 1
    assert 'bad.cu(1): error: expected a ";"' in checks_by_name(report)["compile"].detail
    assert any('bad.cu(1): error: expected a ";"' in f.evidence for f in report.findings)


def test_gencode_flags():
    assert compiling.gencode_flags(["sm_80", "sm_90"]) == [
        "-gencode", "arch=compute_80,code=sm_80",
        "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
    ]  # fmt: skip
    # PTX of an arch-specific target runs only there: the portable one gets the PTX.
    assert compiling.gencode_flags(["sm_90", "sm_90a"])[-3] == "arch=compute_90,code=[sm_90,compute_90]"


@pytest.mark.parametrize(
    "version,archs,flags,parallel",
    [
        ("13.0.88", ["sm_80", "sm_90"], (), True),
        ("11.2.67", ["sm_80", "sm_86"], (), True),
        ("13.0.88", ["sm_90"], (), False),  # one arch: nothing to run side by side
        ("11.1.105", ["sm_80", "sm_90"], (), False),  # before nvcc had --threads
        ("13.0.88", ["sm_80", "sm_90"], ("--threads", "2"), False),  # the user's own count
        ("13.0.88", ["sm_80", "sm_90"], ("-t", "4"), False),
        ("13.0.88", ["sm_80", "sm_90"], ("--threads=4",), False),
    ],
)
def test_several_archs_compile_in_parallel_where_nvcc_can(tmp_path, version, archs, flags, parallel):
    nvcc = toolchain.Compiler(path=Path("/cuda/bin/nvcc"), version=version, kind="nvcc", source="PATH")
    target = plan.Target(
        title="k", root=tmp_path, sources=(tmp_path / "k.cu",), output=tmp_path / "libk.so", cache_file=tmp_path / "c.json",
        platform="cuda", entry_points=None, hide_symbols=True, always_ffi=False, archs=tuple(archs), archs_origin="--arch", flags=flags,
    )
    command = compiling.compile_command(nvcc, target, archs, None)
    assert ("--threads 0" in " ".join(command)) is parallel
    assert command.count("--threads") + command.count("-t") <= 1


# -- projects -------------------------------------------------------------------------------------


SPEC_TOML = """\
[op]
name = "{name}"
platform = "{platform}"
api = "{api}"
frameworks = [{frameworks}]

[[inputs]]
name = "x"
dtype = "f32"

[[outputs]]
name = "y"
dtype = "f32"
shape = "x"

[build]
sources = ["{source}"]  # the project brings its own entry points
output = "build/lib{name}.so"
"""

CPU_FFI_KERNEL = """\
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;

static ffi::Error TwiceImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = 2.0f * x.typed_data()[i];
  return ffi::Error::Success();
}

extern "C" __attribute__((visibility("default"))) XLA_FFI_Error* xlacc_twice_ffi(XLA_FFI_CallFrame*);
XLA_FFI_DEFINE_HANDLER_SYMBOL(xlacc_twice_ffi, TwiceImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
"""

LEGACY_KERNEL = """\
#include <cstddef>
#define XLACC_EXPORT extern "C" __attribute__((visibility("default")))
struct XlaCustomCallStatus;
{device}
XLACC_EXPORT void xlacc_twice_legacy({params}, const char* opaque, size_t opaque_len, XlaCustomCallStatus* status) {{
  {body}
}}
{last_error_linkage} const char* xlacc_twice_last_error() {{ return ""; }}
"""

LEGACY_CPU = dict(device="", params="void* out, const void** in", body="(void)out;")
LEGACY_CUDA = dict(
    device="__global__ void twice(const float* x, float* y, size_t n) {\n"
    "  size_t i = blockIdx.x * 256 + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}",
    params="cudaStream_t stream, void** buffers",
    body="size_t n = 1024;\n  twice<<<4, 256, 0, stream>>>((const float*)buffers[0], (float*)buffers[1], n);",
)


def make_project(root: Path, platform: str, api: str, frameworks: str, kernel: str) -> spec.Spec:
    source = "kernel.cu" if platform == "cuda" else "kernel.cc"
    write(root / "xlacc.toml", SPEC_TOML.format(name="twice", platform=platform, api=api, frameworks=frameworks, source=source))
    write(root / source, kernel)
    return spec.load(root)


def test_cpu_ffi_project_builds_with_hidden_visibility_and_ffi_headers(tmp_path):
    try:
        ffi_dir = toolchain.ffi_include_dir()
    except ToolchainMissing:
        pytest.skip("XLA's FFI headers are not installed (the jax extra)")
    project = make_project(tmp_path / "twice", "cpu", "ffi", '"jax"', CPU_FFI_KERNEL)
    result = builder.build_spec(project)
    assert result.ok, result.checks + result.findings
    assert result.library == tmp_path / "twice" / "build" / "libtwice.so"
    assert ["-fvisibility=hidden", "-I", str(plan.XLACC_INCLUDE), "-I", ".", "-I", str(ffi_dir)] == result.command[5:12]
    assert result.command[-4:] == ["kernel.cc", "build/.xlacc-record/libtwice.so.cc", "-o", "build/libtwice.so"]
    assert [c.name for c in result.checks] == ["toolchain", "ffi headers", "compile", "library", "symbol xlacc_twice_ffi"]
    assert not any(f.code == "compiler-warning" for f in result.findings)  # XLA's header warnings stay hidden
    assert (tmp_path / "twice" / "build" / build_cache.CACHE_FILE).is_file()
    assert ctypes.CDLL(str(result.library)).xlacc_twice_ffi

    assert builder.is_stale(project) is False
    assert builder.build_spec(project).cached is True
    script = (
        "import sys; from xlacc import spec; from xlacc.commands.build import builder; r = builder.build_spec(spec.load(sys.argv[1]));"
        "assert r.cached and r.ok, r;"
        "assert not {'jax', 'jaxlib', 'torch'} & set(sys.modules), 'imported a framework'"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "twice")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    copied = tmp_path / "other-ffi"
    shutil.copytree(ffi_dir / "xla", copied / "xla")
    assert builder.is_stale(project, ffi_include=copied) is True  # another -I is another command
    kernel = tmp_path / "twice" / "kernel.cc"
    kernel.write_text(kernel.read_text() + "\n// edited\n")
    assert builder.is_stale(project) is True


def test_verbose_shows_the_command_and_every_compiler_line(in_tmp):
    source = write(in_tmp / "w.cc", '#warning "check me"\n' + CPU_SOURCE)
    report = builder.run(request(source, verbose=True))
    notes = "\n".join(report.notes)
    assert "command (in" in notes and "w.cc build/.xlacc-record/libw.so.cc -o build/libw.so" in notes
    assert " output:\n" in notes
    assert '#warning "check me"' in notes


def test_project_with_a_hidden_entry_point_fails_with_symbol_hidden(tmp_path):
    kernel = LEGACY_KERNEL.format(**LEGACY_CPU, last_error_linkage='extern "C"')
    project_dir = tmp_path / "twice"
    make_project(project_dir, "cpu", "legacy", '"torch-xla"', kernel)
    report = builder.run(request(project_dir))
    assert report.code() == 1
    checks = checks_by_name(report)
    assert checks["symbol xlacc_twice_legacy"].ok
    assert checks["symbol xlacc_twice_last_error"].ok is False
    (finding,) = [f for f in report.findings if f.code == "symbol-hidden"]
    assert "xlacc_twice_last_error" in finding.title and 'visibility("default")' in finding.fix
    assert "ffi headers" not in checks  # a legacy project that does not mention XLA's FFI


@needs_nvcc
def test_cuda_project_on_a_machine_without_gpu_builds_the_default_archs(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "query_gpu_archs", lambda: ([], None))
    kernel = LEGACY_KERNEL.format(**LEGACY_CUDA, last_error_linkage="XLACC_EXPORT")
    project = make_project(tmp_path / "twice", "cuda", "legacy", '"torch-xla"', kernel)
    result = builder.build_spec(project)
    assert result.ok, result.checks + result.findings
    assert result.archs == ["sm_80", "sm_90"]
    checks = {c.name: c for c in result.checks}
    assert checks["archs"].detail.startswith("sm_80, sm_90 + PTX compute_90: no GPU visible")
    assert checks["arch sm_80"].ok and checks["arch sm_90"].ok
    assert checks["symbol xlacc_twice_legacy"].ok and checks["symbol xlacc_twice_last_error"].ok
    assert result.command[6:8] == ["-Xcompiler", "-fvisibility=hidden"]


@needs_nvcc
def test_code_for_sm_90a_built_for_sm_90_alone_is_a_warning_that_names_the_flag(tmp_path):
    """nvcc compiles a `#if __CUDA_ARCH_FEAT_SM90_ALL` branch out of an sm_90 build without a word."""
    guarded = CUDA_SOURCE.replace("  if (i < n)", "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n  if (i < n)").replace("b[i];\n", "b[i];\n#endif\n", 1)
    source = write(tmp_path / "k.cu", guarded)
    report = builder.run(request(source, archs="sm_90", symbols=["xk_launch"]))
    assert report.code() == 0, report.to_json()
    [finding] = [f for f in report.findings if f.code == "arch-specific-code-left-out"]  # nvcc also warns of the unused `i`
    assert "k.cu guards code" in finding.evidence and finding.evidence.endswith("on an sm_90 GPU that code is left out")
    report = builder.run(request(source, archs="sm_90a", symbols=["xk_launch"]))
    assert report.code() == 0 and "arch-specific-code-left-out" not in {f.code for f in report.findings}, report.to_json()


@needs_nvcc
def test_an_arch_specific_project_builds_the_visible_gpus_variant(tmp_path, monkeypatch):
    """[build] arch_specific (the ragged-paged-attention template's wgmma body): sm_90a on an sm_90 GPU."""
    monkeypatch.setattr(toolchain, "query_gpu_archs", lambda: (["sm_90"], None))
    kernel = LEGACY_KERNEL.format(**LEGACY_CUDA, last_error_linkage="XLACC_EXPORT")
    project = make_project(tmp_path / "twice", "cuda", "legacy", '"torch-xla"', kernel)
    spec_file = tmp_path / "twice" / "xlacc.toml"
    spec_file.write_text(spec_file.read_text().replace("[build]\n", "[build]\narch_specific = true\n"))
    result = builder.build_spec(spec.load(project.root))
    assert result.ok, result.checks + result.findings
    assert result.archs == ["sm_90a"]
    checks = {c.name: c for c in result.checks}
    assert checks["archs"].detail == "sm_90a + PTX compute_90a: the visible GPU, arch-specific ([build] arch_specific)"
    assert checks["arch sm_90a"].ok


# -- the CUDA toolchain from PyPI -----------------------------------------------------------------


def pip_nvcc() -> Path | None:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    found = find_nvidia_binary_utility("nvcc")
    return Path(found) if found and "site-packages" in Path(found).parts else None


@pytest.mark.slow
@pytest.mark.skipif(pip_nvcc() is None, reason="the pip CUDA toolchain is not installed: pip install -e '.[cuda]'")
def test_pip_toolchain_is_found_and_compiles(in_tmp, monkeypatch):
    host_cxx = shutil.which("g++") or shutil.which("c++")
    if host_cxx is None:
        pytest.skip("nvcc needs a host C++ compiler")
    host_dir = Path(host_cxx).parent
    if (host_dir / "nvcc").exists():
        pytest.skip(f"{host_dir} holds both the host compiler and a system nvcc")
    monkeypatch.setenv("PATH", os.pathsep.join(dict.fromkeys([str(host_dir), "/usr/bin", "/bin"])))
    for var in ("CUDACXX", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOMES", ())
    nvcc = toolchain.find_nvcc()
    assert (nvcc.path, nvcc.source) == (pip_nvcc(), "pip")
    assert int(toolchain.cuda_version(nvcc).split(".")[0]) >= 13
    # cuda_fp16.h and libcu++ come from nvidia-cuda-runtime and nvidia-cuda-cccl: the pip nvcc finds them alone
    write(in_tmp / "k.cu", "#include <cuda_fp16.h>\n#include <cuda/std/limits>\n" + CUDA_SOURCE)
    report = builder.run(request(in_tmp / "k.cu", archs="sm_90", symbols=["xk_launch"]))
    assert report.code() == 0, report.to_json()
    assert "(found via pip)" in checks_by_name(report)["toolchain"].detail
    assert checks_by_name(report)["arch sm_90"].detail == "SASS for sm_90"
    cuobjdump = toolchain.find_cuobjdump(nvcc)
    if cuobjdump is not None:
        listing = subprocess.run([str(cuobjdump), "--list-elf", report.data["library"]], capture_output=True, text=True)
        assert "sm_90" in listing.stdout


def test_gencode_flags_without_ptx_embed_sass_only():
    assert compiling.gencode_flags(["sm_80"], ptx=False) == ["-gencode", "arch=compute_80,code=sm_80"]
    assert compiling.describe_archs(["sm_80"], ptx=False) == "sm_80 (SASS only, no PTX)"


# -- kernel files with include folders, macros and flags; what the library is -------------------


def test_include_folders_defines_and_flags_reach_the_compiler(in_tmp):
    write(in_tmp / "inc" / "scale.h", "#define SCALE_BY(x) ((x) * FACTOR)\n")
    source = write(in_tmp / "k.cc", '#include "scale.h"\nextern "C" int xk_scale(int a) { return SCALE_BY(a); }\n')
    report = builder.run(request(source, include_dirs=[in_tmp / "inc"], defines=["FACTOR=3"], flags=["-fno-exceptions"], symbols=["xk_scale"]))
    assert report.code() == 0, report.to_json()
    command = report.data["command"]
    assert command[command.index("inc") - 1] == "-I" and "-DFACTOR=3" in command and "-fno-exceptions" in command
    assert ctypes.CDLL(report.data["library"]).xk_scale(5) == 15
    assert checks_by_name(report)["library"].detail.endswith("build/libk.so")
    edited = builder.run(request(source, include_dirs=[in_tmp / "inc"], defines=["FACTOR=4"], flags=["-fno-exceptions"], symbols=["xk_scale"]))
    assert edited.data["cached"] is False  # another macro is another build


def test_a_flag_with_a_space_is_refused(in_tmp):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    with pytest.raises(UsageError, match="one argument per item, without spaces"):
        builder.run(request(source, flags=["-O2 -g"]))


@pytest.mark.parametrize("flag", ["-E", "-c", "-o", "-oelsewhere.so", "-Wl,-o,/tmp/elsewhere.so", "-fsyntax-only"])
def test_a_flag_that_moves_or_changes_the_output_is_refused(in_tmp, flag):
    """`--flag=-E` once replaced a working library with preprocessed text; `-Wl,-o,...` wrote outside."""
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    with pytest.raises(UsageError, match="changes what the compiler writes"):
        builder.run(request(source, flags=[flag]))


def test_a_compiler_that_writes_no_library_keeps_the_old_one(in_tmp, monkeypatch):
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    built = builder.run(request(source, symbols=["xk_scale"]))
    library = Path(built.data["library"])
    before = library.read_bytes()
    monkeypatch.setattr(builder.spec_mod, "flag_problem", lambda flag: None)  # as if a new flag slipped through
    monkeypatch.setattr(builder.build_record, "with_source", lambda command, planned, root: command)  # -E takes one source
    report = builder.run(request(source, flags=["-E"], symbols=["xk_scale"]))
    detail = checks_by_name(report)["compile"].detail
    assert report.code() == 1 and "the file it wrote is not a shared library: not an ELF file" in detail, detail
    assert codes(report) == []  # the compiler rejected nothing: no compile-error
    assert library.read_bytes() == before


def test_a_project_takes_its_flags_from_xlacc_toml_not_the_command_line(tmp_path):
    make_project(tmp_path / "twice", "cpu", "legacy", '"torch-xla"', "int x;\n")
    with pytest.raises(UsageError, match=r"\[build\] in its xlacc.toml"):
        builder.run(request(tmp_path / "twice", defines=["N=1"]))


@needs_ffi_headers
def test_a_header_in_the_kernel_folder_is_part_of_the_cache_key(tmp_path):
    from xlacc.commands.new import project as scaffold

    scaffold.create(scaffold.NewRequest(name="hdr", template="add", platform="cpu", frameworks=["jax"], directory=tmp_path / "hdr"))
    project = tmp_path / "hdr"
    write(project / "tuning.h", "constexpr int kUnroll = 4;\n")
    kernel = project / "kernel.cc"
    kernel.write_text(kernel.read_text().replace("#include <xlacc/kernel.h>\n", '#include <xlacc/kernel.h>\n#include "tuning.h"\n'))
    assert builder.build_spec(spec.load(project)).ok
    assert builder.is_stale(spec.load(project)) is False
    write(project / "tuning.h", "constexpr int kUnroll = 8;\n")
    assert builder.is_stale(spec.load(project)) is True  # kernel.cc reaches it through the entry points


def test_entry_points_of_a_plain_file_are_verified_without_symbol(in_tmp):
    source = write(
        in_tmp / "legacy.cc",
        """
        #include <cstddef>
        struct XlaCustomCallStatus_;
        extern "C" __attribute__((visibility("default")))
        void my_op(void* out, const void** in, const char* opaque, size_t opaque_len, XlaCustomCallStatus_* status) {}
        """,
    )
    report = builder.run(request(source))
    assert checks_by_name(report)["symbol my_op"].ok, report.to_json()


@needs_nvcc
def test_a_template_launched_from_another_file_is_diagnosed(in_tmp):
    write(in_tmp / "kern.cuh", "template <typename T> __global__ void scale(T* x, int n);\n")
    write(
        in_tmp / "kern.cu",
        """
        #include "kern.cuh"
        template <typename T> __global__ void scale(T* x, int n) { if (threadIdx.x < n) x[threadIdx.x] *= 2; }
        template __global__ void scale<float>(float*, int);
        """,
    )
    launch = write(in_tmp / "launch.cu", '#include "kern.cuh"\nextern "C" void run(float* x, int n) { scale<float><<<1, 32>>>(x, n); }\n')
    report = builder.run(request(in_tmp / "kern.cu", launch, archs="sm_90"))
    assert report.code() == 1
    stub = next(f for f in report.findings if f.code == "template-stub-link")
    assert "undefined reference to `void scale<float>(float*, int)'" in stub.evidence
    assert "-static-global-template-stub=false" in stub.fix
    fixed = builder.run(request(in_tmp / "kern.cu", launch, archs="sm_90", flags=["-static-global-template-stub=false"], symbols=["run"]))
    assert fixed.code() == 0, fixed.to_json()


@pytest.mark.parametrize(
    "damage",
    [
        lambda cache: cache.update(libraries=[]),
        lambda cache: cache.update(libraries="libk.so"),
        lambda cache: cache.update(compilers="g++"),
        lambda cache: cache.update(compilers=[["g++", "12"]]),
        lambda cache: cache["libraries"].update({name: [entry] for name, entry in cache["libraries"].items()}),
        lambda cache: cache["libraries"].update({name: {**entry, "stamp": "now"} for name, entry in cache["libraries"].items()}),
        lambda cache: cache["libraries"].update({name: {**entry, "key": 7} for name, entry in cache["libraries"].items()}),
        lambda cache: cache["libraries"].update({name: {**entry, "verified": {"question": entry["verified"]["question"], "checks": [["x"]]}} for name, entry in cache["libraries"].items()}),
        lambda cache: cache["libraries"].update({name: {**entry, "verified": []} for name, entry in cache["libraries"].items()}),
        lambda cache: cache["compilers"].update({name: {"stamp": entry["stamp"], "version": 13} for name, entry in cache["compilers"].items()}),
        lambda cache: cache["compilers"].update({name: "12.2" for name in cache["compilers"]}),
    ],
    ids=["libraries-list", "libraries-string", "compilers-string", "compilers-list", "entry-list", "stamp-string", "key-int", "checks-short", "verified-list", "version-int", "compiler-string"],
)
def test_a_damaged_cache_file_costs_only_a_compile(in_tmp, damage):
    """A `libraries` entry of the wrong type, a list, a string `compilers`... ended the build with
    an internal error (exit 70)."""
    source = write(in_tmp / "k.cc", CPU_SOURCE)
    assert builder.run(request(source, symbols=["xk_add"])).code() == 0
    cache_file = in_tmp / "build" / build_cache.CACHE_FILE
    cache = json.loads(cache_file.read_text())
    damage(cache)
    cache_file.write_text(json.dumps(cache))
    report = builder.run(request(source, symbols=["xk_add"]))
    assert report.code() == 0, report.to_json()
    assert builder.run(request(source, symbols=["xk_add"])).data["cached"] is True  # the cache is whole again


# -- a compiler that a signal ended ------------------------------------------------------------------


@needs_gxx
def test_a_compiler_stopped_by_a_file_size_limit_is_named_by_its_signal(in_tmp):
    """A compile killed by SIGXFSZ (a `ulimit -f`) was reported as a compile error: "Fix the lines shown"."""
    import resource

    write(in_tmp / "k.cc", CPU_SOURCE + "\nextern \"C\" const char xk_table[1 << 20] = {1};\n")  # an object file over the limit
    done = subprocess.run(
        [sys.executable, "-m", "xlacc", "build", "k.cc"], cwd=in_tmp, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_DIR), "NO_COLOR": "1", "CXX": GXX},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "was killed by SIGXFSZ (File size limit exceeded)" in done.stdout and "ulimit -f" in done.stdout, done.stdout
    assert "Fix the lines shown" not in done.stdout and "compile-error" not in done.stdout


@needs_gxx
def test_a_compiler_killed_outright_is_named_by_its_signal(in_tmp, monkeypatch):
    killed = write(in_tmp / "bin" / "g++", f'#!/bin/sh\n[ "$1" = --version ] && exec {GXX} --version\nkill -KILL $$\n')
    killed.chmod(0o755)
    monkeypatch.setenv("CXX", str(killed))
    report = builder.run(request(write(in_tmp / "k.cc", CPU_SOURCE)))
    detail = checks_by_name(report)["compile"].detail
    assert report.code() == 1 and "g++ was killed by SIGKILL (Killed): out of memory" in detail, detail
    assert "compile-error" not in codes(report)


@pytest.mark.parametrize(
    "kind, output, named",
    [
        ("nvcc", "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n", "cicc was killed by SIGKILL"),
        ("nvcc", "nvcc error   : 'ptxas' died due to signal 25\n", "ptxas was killed by SIGXFSZ"),
        ("g++", "g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n", "cc1plus was killed by SIGKILL"),
        ("c++", "clang++: error: unable to execute command: Killed\n", "clang++ was killed by SIGKILL"),
        ("c++", "clang++: error: clang frontend command failed due to signal (use -v to see invocation)\n", "clang++ was killed by a signal"),
    ],
)
def test_each_compilers_words_for_a_killed_program_are_read(kind, output, named):
    from xlacc.commands.doctor.rules import compiler

    assert named in compiler.killed_by_signal(kind, 1, output)
    assert compiler.killed_by_signal(kind, 1, "k.cc:3:1: error: expected ';'\n") is None


def test_the_spinner_says_how_long_the_compile_has_run(monkeypatch):
    from rich.console import Console

    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    text = compiling.Elapsed("compiling k.cc with g++")
    console = Console(force_terminal=False, width=80, record=True)
    console.print(text)
    now[0] += 12.4
    console.print(text)  # what each refresh of the spinner prints
    assert console.export_text().splitlines() == ["compiling k.cc with g++ (0 s)", "compiling k.cc with g++ (12 s)"]


# -- paths in what a build prints ---------------------------------------------------------------------


@needs_ffi_headers
@pytest.mark.parametrize("where", ["above", "inside", "elsewhere"])
def test_compiler_messages_name_files_as_every_other_line_does(tmp_path, monkeypatch, where):
    """Compiler errors were relative to the project (`./kernel.cc:17:3`) while other lines were
    relative to the current folder; `xlacc build demo_err` was headed with the op's name."""
    from xlacc.commands.new import project as scaffold

    root = tmp_path / "demo_err"
    scaffold.create(scaffold.NewRequest(name="demo", template="add", platform="cpu", frameworks=["jax"], directory=root))
    (root / "kernel.cc").write_text((root / "kernel.cc").read_text() + "\nthis is not C++;\n")
    cwd, given, kernel = {
        "above": (tmp_path, "demo_err", "demo_err/kernel.cc"),
        "inside": (root / "demo", "..", str(root / "kernel.cc")),  # the kernel is above the current folder: absolute
        "elsewhere": (tmp_path / "elsewhere", str(root), str(root / "kernel.cc")),
    }[where]
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    report = builder.run(request(Path(given)))
    said = "\n".join([report.title, *(c.detail for c in report.checks), *(f.evidence for f in report.findings)])
    assert report.title == f"xlacc build {given}"
    assert f"{kernel}:" in said and "./kernel.cc" not in said, said
    assert re.search(rf"(?m)^{re.escape(kernel)}:\d+:\d+: error: ", "\n".join(f.evidence for f in report.findings)), said
