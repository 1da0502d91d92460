"""Hostile input for doctor, class by class: long lines, huge logs and command output, folder
walks with links, commands that linger, sources no parser can take, damaged libraries.

Every case must end in time and memory, with an exit code of 0, 1 or 2 (never 70, an internal
error) and no traceback. Time bounds are generous for a loaded 2-core CI machine; the issue's
budgets are measured in benchmarks/bench_cli.py.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from locations import REPO_DIR

from xlacc.commands.doctor import inputs
from xlacc.commands.doctor.rules import error_text as text
from xlacc.ground.errors import UsageError
from xlacc.ground.wording import counted

ROOT = REPO_DIR
MAX_RSS_MB = 500
# Runs doctor in a child and prints its own peak memory last, on stderr. VmHWM, not ru_maxrss:
# Linux carries ru_maxrss over from the forked parent (a test process that imported torch).
MEASURED = (
    "import re, sys\n"
    "sys.argv = ['xlacc'] + sys.argv[1:]\n"
    "from xlacc.cli import main\n"
    "try:\n    main()\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
    "print(f'peak-rss-kb {peak}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def doctor(*args: str, seconds: float, cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess, float, float]:
    """(result, wall seconds, peak MB) of `xlacc doctor ARGS`, whose CPU time must stay within
    ``seconds``: CPU time, not wall time, so that a busy machine does not fail it (the wall time
    is bounded only as a hang: six times as long)."""
    start, cpu_before = time.monotonic(), _children_cpu()
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, "doctor", *args], cwd=cwd, capture_output=True, text=True, timeout=seconds * 6,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall, cpu = time.monotonic() - start, _children_cpu() - cpu_before
    peak = next((int(line.split()[1]) / 1024 for line in done.stderr.splitlines() if line.startswith("peak-rss-kb")), 0.0)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert cpu < seconds, f"{cpu:.1f} s of CPU"
    assert peak < MAX_RSS_MB, f"{peak:.0f} MB"
    return done, wall, peak


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture(scope="module")
def host_library(tmp_path_factory) -> Path:
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on this machine")
    folder = tmp_path_factory.mktemp("lib")
    (folder / "f.cc").write_text('extern "C" int f() { return 1; }\n')
    subprocess.run([compiler, "-shared", "-fPIC", str(folder / "f.cc"), "-o", str(folder / "libf.so")], check=True, capture_output=True)
    return folder / "libf.so"


# -- text rules: linear in their input -----------------------------------------------------------------

RANDOM = random.Random(0)
ADVERSARIAL = {
    "a 40 KB base64 line": base64.b64encode(RANDOM.randbytes(30_000)).decode(),
    "5000 hex lines glued": "\n".join(RANDOM.randbytes(32).hex() for _ in range(5000)),
    "a 1 MB line": "a" * 1_000_000,
    "a 1 MB path": "/x" * 500_000,
    "a prefix repeated": "No registered implementation for custom call to " * 2000,
    "a library name without its end": "AttributeError: " + "a" * 40_000 + " undefined",
    "a .so path without spaces": "lib" + "a" * 40_000 + ".so: cannot",
    "colons": ":" * 100_000,
    "decode indices": "Failed to decode all FFI handler operands (bad operands at: " + "1," * 20_000,
    "wrapped words": "Wrong\n" * 20_000,
}


def seconds_to_scan(spaced: re.Pattern, glued: re.Pattern, normalized) -> float:
    """CPU seconds of this thread: other processes on a busy machine do not count."""
    start = time.thread_time()
    for _ in spaced.finditer(normalized.spaced):
        pass
    for _ in glued.finditer(normalized.glued):
        pass
    return time.thread_time() - start


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_every_text_rule_is_linear_on_long_lines(name):
    """Every rule scans each line within half a second of CPU time (other processes on a busy
    machine do not count), and four times the line costs it about four times the time, never the
    sixteen of a quadratic pattern (the best of three runs each, where the whole line takes over
    50 ms). The quarter runs first: a quadratic rule fails there before the whole line could hang."""
    line = ADVERSARIAL[name]
    whole, quarter = text.normalize(line), text.normalize(line[: len(line) // 4])
    for rule, spaced, glued in text._compiled():
        part = seconds_to_scan(spaced, glued, quarter)
        assert part < 0.5, f"{rule.name} on a quarter of {name}: {part:.2f} s"
        full = seconds_to_scan(spaced, glued, whole)
        assert full < 0.5, f"{rule.name} on {name}: {full:.2f} s"
        if full < 0.05:
            continue
        part = min([part] + [seconds_to_scan(spaced, glued, quarter) for _ in range(2)])
        full = min([full] + [seconds_to_scan(spaced, glued, whole) for _ in range(2)])
        assert full < 8 * part, f"{rule.name} on {name}: {full:.3f} s, {part:.3f} s on a quarter of it"
    start = time.thread_time()
    text.diagnose_text(line)
    assert time.thread_time() - start < 1.0


def test_lines_are_cut_before_any_rule_sees_them():
    message = "No registered implementation for custom call to foo for platform CUDA"
    assert text.cap_lines("x" * 10 * text.MAX_LINE + "\n" + message).split("\n")[0] == "x" * text.MAX_LINE
    assert [f.code for f in text.diagnose_text("x" * 10_000_000 + "\n" + message)][0] == "target-not-registered"


# -- bounded reading ----------------------------------------------------------------------------------


def write_log(path: Path, megabytes: int, message: str) -> None:
    noise = "".join(f"I0101 00:00:00.{i:06d} 1 gpu_compiler.cc:1] compiling module jit_step_{i} and cuda buffers\n" for i in range(10_000))
    with path.open("w") as stream:
        for index in range(megabytes * 1_000_000 // len(noise) + 1):
            stream.write(noise)
            if index == 7:
                stream.write(message + "\n")


def test_a_200_mb_log_in_bounded_time_and_memory(tmp_path):
    log = tmp_path / "big.log"
    write_log(log, 200, "E0101 custom_call.cc:1] No registered implementation for custom call to my_op for platform CUDA")
    done, _, _ = doctor("--json", "--log", str(log), seconds=10)
    report = json.loads(done.stdout)
    assert report["findings"][0]["code"] == "target-not-registered" and "my_op" in report["findings"][0]["title"]
    assert re.search(r"\(2\d\d\.\d MB; read the first and last lines", report["checks"][0]["detail"])


@pytest.mark.parametrize(
    "inserted, found",
    [
        ("Segmentation fault", True),
        ("Segmen7ation fault", False),  # a word broken by a digit is not a word, folded or not
        ("registered as 42 PJRT", True),
        ("no anchor at all 123", False),
    ],
)
@pytest.mark.parametrize("where", [0, 5_000, -1])
@pytest.mark.parametrize("chatter", [True, False], ids=["numbered-chatter", "distinct-lines"])
def test_a_long_text_is_searched_by_distinct_lines_with_the_same_answer(inserted, found, where, chatter):
    anchors = text.interesting()
    distinct = ("".join("qwzy"[(i >> (2 * k)) & 3] for k in range(8)) for i in range(10_000))
    lines = [f"I0101 00:00:{i % 60:02d}.{i:06d} step {i} loss 0.{i:04d}" for i in range(10_000)] if chatter else list(distinct)
    lines.insert(where if where >= 0 else len(lines), inserted)
    long_text = "\n".join(lines)
    assert len(long_text) > text.FOLD_ABOVE
    assert (anchors.within(long_text) is not None) == found == any(word in long_text for word in anchors.words)


def test_digits_an_anchor_word_holds_are_not_folded():
    anchors = text.Anchors(("sm_90", "Fatal"))
    chatter = "\n".join(f"compiling step {i} for sm_80" for i in range(10_000))
    assert anchors.within(chatter) is None  # '8' is read as 0, '9' and '0' as themselves
    assert anchors.within(chatter + "\ncompiling for sm_90").words == ("sm_90",)
    with pytest.raises(ValueError, match="spans lines"):
        text.Anchors(("two\nlines",))


def test_a_log_whose_every_line_names_a_rule_word_stays_bounded(tmp_path):
    log = tmp_path / "cuda.log"
    log.write_text("I0101 cuda_executor.cc:1] cuda stream launched kernel fusion\n" * 600_000 + "Fatal Python error: Segmentation fault\n")
    done, _, _ = doctor("--json", "--log", str(log), seconds=20)
    assert "kernel-crash" in {f["code"] for f in json.loads(done.stdout)["findings"]}


def test_a_log_without_newlines_is_cut_into_lines():
    collector = inputs.LogCollector(text.interesting())
    for _ in range(50):
        collector.feed(b"a" * 1_000_000)
    collector.feed(b"\nFatal Python error: Segmentation fault\n")
    kept = collector.finish()
    assert kept.bytes == 50_000_000 + 40 and len(kept.text) < 10 * inputs.MAX_LINE * inputs.LOG_TAIL_LINES
    assert "Segmentation fault" in kept.text


def test_the_middle_of_a_log_keeps_matching_lines_with_context():
    collector = inputs.LogCollector(text.interesting())
    lines = [f"noise {i}" for i in range(5000)]
    lines[2500] = "No registered implementation for custom"
    lines[2501] = "call to my_op for platform CUDA"  # a message a logger wrapped
    collector.feed(("\n".join(lines) + "\n").encode())
    kept = collector.finish()
    assert "No registered implementation for custom\ncall to my_op" in kept.text
    assert "noise 2400" not in kept.text and kept.omitted > 0


# -- doctor -- COMMAND --------------------------------------------------------------------------------


def test_100_mb_of_command_output_in_bounded_time_and_memory():
    script = (
        "import sys\n"
        "block = ('I0101 executor.cc:1] step done ' + 'x' * 70 + '\\n') * 10000\n"
        "for _ in range(100): sys.stdout.write(block)\n"
        "print('OSError: ./libop.so: cannot open shared object file: No such file or directory')\n"
        "sys.exit(1)\n"
    )
    done, _, _ = doctor("--json", "--", sys.executable, "-c", script, seconds=20)
    report = json.loads(done.stdout)
    assert report["command"]["returncode"] == 1
    assert "library-not-found" in {f["code"] for f in report["findings"]}


def test_a_backgrounded_grandchild_holding_stdout_does_not_keep_doctor_waiting(tmp_path):
    marker = tmp_path / "late"
    script = f"(sleep 30; touch {marker}) & echo started; exit 0"
    done, wall, _ = doctor("--json", "--", "sh", "-c", script, seconds=10)
    assert wall < 20 and json.loads(done.stdout)["command"]["returncode"] == 0  # not the grandchild's 30 s
    time.sleep(0.5)
    assert not marker.exists()


def test_timeout_stops_the_whole_process_group(tmp_path):
    marker = tmp_path / "late"
    script = f"(sleep 5; touch {marker}) & sleep 60"
    done, _, _ = doctor("--json", "--timeout", "1", "--", "sh", "-c", script, seconds=10)
    report = json.loads(done.stdout)
    assert report["command"]["returncode"] is None and "timed out" in report["checks"][-1]["detail"]
    time.sleep(5)
    assert not marker.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "soon"])
def test_timeout_must_be_a_finite_positive_number(value):
    done = subprocess.run(
        [sys.executable, "-m", "xlacc", "doctor", "--timeout", value, "--", "true"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "--timeout" in done.stderr


# -- folder walks --------------------------------------------------------------------------------------


def test_links_are_never_followed(tmp_path):
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "loop").symlink_to(project)
    (project / "system").symlink_to("/usr/include")
    shutil.copy(ROOT / "tests/artifacts/doctor/sources/stream_ignored.cu", project / "sub")
    done, _, _ = doctor("--json", str(project), seconds=10)
    checks = json.loads(done.stdout)["checks"]
    assert [c["name"] for c in checks if c["name"].startswith("source ")] == [f"source {project / 'sub' / 'stream_ignored.cu'}"]
    assert "2 symbolic links not followed" in checks[0]["detail"]


def test_the_file_cap_applies_while_walking_and_keeps_the_files_that_name_xla(tmp_path, monkeypatch):
    """In a large repository the op's files came last in walk order and were cut away (TransformerEngine)."""
    for index in range(30):
        folder = tmp_path / f"d{index:02d}"
        folder.mkdir()
        for number in range(40):
            (folder / f"m{number}.py").write_text("x = 1\n")
    op = tmp_path / "d29" / "op.py"
    op.write_text("import jax\ny = jax.ffi.ffi_call('op', out)(x)\n")
    walked = inputs.walk(tmp_path)
    assert len(walked.files) == inputs.MAX_FILES and walked.truncated and op in walked.files
    done, _, _ = doctor("--json", str(tmp_path), seconds=10)
    assert "read 400 files, those that name XLA's custom-call API first" in json.loads(done.stdout)["checks"][0]["detail"]
    monkeypatch.setattr(inputs, "MAX_CANDIDATES", 500)
    walked = inputs.walk(tmp_path)
    assert walked.truncated and max(f.parent.name for f in walked.files) < "d29"  # it stopped, rather than read everything and cut


# -- sources no parser can take -----------------------------------------------------------------------

SOURCES = {
    "nested.py": "import jax\nx = a" + ".b" * 100_000 + "\njax.ffi.register_ffi_target('t', x, platform='GPU')\n",
    "calls.py": "import jax\nx = " + "f(" * 3000 + ")" * 3000 + "\n",
    "latin1.py": b"# caf\xe9\nimport jax\njax.ffi.register_ffi_target('t', c, platform='GPU')\n",
    "nul.py": b"import jax\x00\njax.ffi.register_ffi_target('t', c, platform='GPU')\n",
    "deep.cu": "void f(cudaStream_t s) {" + "{" * 50_000 + "}" * 50_000 + "}\n",
    "binary.cu": bytes(range(256)) * 1000,
    "broken.ipynb": "{ not json",
    "cells.ipynb": json.dumps({"cells": [{"cell_type": "code", "source": 5}, "x", {"cell_type": "code", "source": ["!pip install x\n"]}]}),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_sources_no_parser_can_take_give_a_clear_answer(tmp_path, name):
    path = tmp_path / name
    content = SOURCES[name]
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    done, _, _ = doctor("--json", str(path), seconds=10)
    report = json.loads(done.stdout)
    if name == "nested.py":
        assert "nested too deeply" in report["checks"][0]["detail"]
    if name == "latin1.py":
        assert [f["code"] for f in report["findings"]] == ["platform-name"]


@pytest.mark.parametrize("tag, value", [(1, 0x7FFF_FFFF_FFFF_FFFF), (1, 0xFFFF_FFFF), (0x7FFF_FFFF, 5)])
def test_a_library_with_a_corrupt_dynamic_section_is_library_invalid(tmp_path, host_library, tag, value):
    """A DT_NEEDED whose name lies outside the string table (what a damaged copy holds), or an unknown tag."""
    import struct

    from elftools.elf.elffile import ELFFile

    data = bytearray(host_library.read_bytes())
    with host_library.open("rb") as stream:
        start = ELFFile(stream).get_section_by_name(".dynamic")["sh_offset"]
    struct.pack_into("<qQ", data, start, tag, value)
    broken = tmp_path / "libbroken.so"
    broken.write_bytes(bytes(data))
    done, _, _ = doctor("--json", "--so", str(broken), "--symbol", "f", seconds=10)
    codes = [f["code"] for f in json.loads(done.stdout)["findings"]]
    assert codes in ([], ["library-invalid"]) and done.returncode == (1 if codes else 0)
    if value == 0x7FFF_FFFF_FFFF_FFFF:
        assert codes == ["library-invalid"]


# -- files that are not files ---------------------------------------------------------------------------


def _special_file(folder: Path, kind: str) -> Path:
    """A named pipe, a link to a device, or a socket (bound by a relative name: socket paths are short)."""
    if kind == "fifo":
        os.mkfifo(folder / "pipe.cu")
        return folder / "pipe.cu"
    if kind == "socket":
        import socket

        server = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(folder)
        try:
            server.bind("sock.log")
        finally:
            os.chdir(here)
        return folder / "sock.log"
    device = {"zero": "/dev/zero", "urandom": "/dev/urandom"}[kind]
    (folder / f"{kind}.log").symlink_to(device)
    return folder / f"{kind}.log"


SPECIAL_KINDS = {"fifo": "a named pipe", "zero": "a character device", "urandom": "a character device", "socket": "a socket"}


@pytest.mark.parametrize("named_by", ["path", "--so"])
@pytest.mark.parametrize("kind", sorted(SPECIAL_KINDS))
def test_a_named_pipe_a_device_or_a_socket_is_refused_before_it_is_opened(tmp_path, kind, named_by):
    path = _special_file(tmp_path, kind)
    args = [str(path)] if named_by == "path" else ["--so", str(path)]
    done, _, _ = doctor(*args, seconds=10)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 2  # and the peak-rss line
    assert f"{path}: {SPECIAL_KINDS[kind]}, not a regular file" in done.stderr


@pytest.mark.parametrize("kind", ["zero", "urandom", "socket"])
def test_log_refuses_devices_and_sockets(tmp_path, kind):
    path = _special_file(tmp_path, kind)
    done, _, _ = doctor("--log", str(path), seconds=10)
    assert done.returncode == 2 and f"{path}: {SPECIAL_KINDS[kind]}; --log takes a regular file or a pipe" in done.stderr


def test_log_from_a_named_pipe_without_a_writer_reads_as_empty(tmp_path):
    os.mkfifo(tmp_path / "train.log")
    done, _, _ = doctor("--json", "--log", str(tmp_path / "train.log"), seconds=10)
    assert done.returncode == 0 and json.loads(done.stdout)["checks"][0]["detail"].startswith("0 lines")


def test_log_from_a_named_pipe_is_read_until_its_writer_closes_it(tmp_path):
    import threading

    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)

    def write() -> None:  # its open waits for doctor's; doctor's read waits for the close
        with fifo.open("w") as stream:
            stream.write("step 1\n")
            stream.flush()
            time.sleep(1)
            stream.write("Segmentation fault (core dumped)\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    done, _, _ = doctor("--json", "--log", str(fifo), seconds=15)
    writer.join(5)
    assert not writer.is_alive()
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["kernel-crash"]


def test_log_from_an_anonymous_pipe_as_bash_passes_it():
    """`--log <(python train.py 2>&1)` names /dev/fd/63, the read end of a pipe."""
    read, write = os.pipe()
    os.write(write, b"Segmentation fault (core dumped)\n")
    os.close(write)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "xlacc", "doctor", "--json", "--log", f"/dev/fd/{read}"],
            cwd=ROOT, capture_output=True, text=True, timeout=30, pass_fds=(read,),
        )
    finally:
        os.close(read)
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["kernel-crash"]


# -- many findings alike -------------------------------------------------------------------------------


def test_20000_identical_launches_are_reported_three_times_and_counted(tmp_path):
    source = tmp_path / "many.cu"
    body = "  k<<<1, 1>>>(x);\n" * 20_000
    source.write_text(f"__global__ void k(float* x) {{ x[0] = 1; }}\nvoid f(cudaStream_t s, float* x) {{\n{body}}}\n")
    done, _, _ = doctor("--json", str(source), seconds=20)
    ignored = [f["evidence"] for f in json.loads(done.stdout)["findings"] if f["code"] == "stream-ignored"]
    assert len(ignored) == 3 and "(line 3)" in ignored[0] and ignored[2].endswith("(and 19997 more like it)")
    text, _, _ = doctor(str(source), seconds=20)
    assert text.stdout.count("✗ stream-ignored") == 3 and "(and 19997 more like it)" in text.stdout
    assert len(text.stdout) < 1_000_000


# -- how a command ended ------------------------------------------------------------------------------


def test_a_command_that_ignores_sigterm_is_said_to_time_out_at_its_timeout():
    done, _, _ = doctor("--json", "--timeout", "1", "--", "bash", "-c", 'trap "" TERM INT; sleep 30', seconds=15)
    report = json.loads(done.stdout)
    detail = report["checks"][-1]["detail"]
    assert detail.startswith("timed out after 1 s; it ignored SIGTERM") and "SIGKILL 2" in detail
    assert report["command"]["timeout"] == 1 and report["command"]["seconds"] >= 3


def test_a_tiny_timeout_is_not_printed_as_0_s():
    done, _, _ = doctor("--timeout", "1e-9", "--", "sleep", "5", seconds=15)
    assert "timed out after less than 0.01 s; its process group was stopped" in done.stdout


# -- empty flag values -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_arch_is_a_usage_error(value):
    done, _, _ = doctor("--arch", value, seconds=10)
    assert done.returncode == 2 and "--arch takes a GPU architecture such as sm_90; got an empty value" in done.stderr


def test_an_empty_symbol_is_a_usage_error_in_the_api(host_library):
    import xlacc

    with pytest.raises(UsageError, match="--symbol takes the name of an entry point"):
        xlacc.doctor(so=host_library, symbols=("",))


def test_an_error_after_a_progress_bar_on_the_same_line_is_found(tmp_path):
    """A progress bar redraws itself with \\r; the error that follows it, with no newline between,
    was read as the tail of one cut line and missed."""
    log = tmp_path / "run.log"
    bar = "".join(f"\rstep {i}/2000 [{'#' * (i // 100):<20}]" for i in range(2000))
    log.write_bytes((bar + "\rE0101 No registered implementation for custom call to my_op for platform CUDA\r\n").encode())
    done, _, _ = doctor("--json", "--log", str(log), seconds=10)
    report = json.loads(done.stdout)
    assert [f["code"] for f in report["findings"]][:1] == ["target-not-registered"], report["findings"]
    assert report["checks"][0]["detail"].startswith("2002 lines")  # an empty first line, 2000 steps, the error


def test_a_one_line_log_says_1_line():
    assert counted(1, "line") == "1 line" and counted(2, "line") == "2 lines" and counted(3, "library", "libraries") == "3 libraries"


def _doctor_cpu_seconds(project: Path, comment_lines: int) -> float:
    """CPU time of doctor on a project whose kernel ends in a comment of ``comment_lines`` lines."""
    from xlacc import api
    from xlacc.commands.new import project as scaffold

    shutil.rmtree(project, ignore_errors=True)
    scaffold.create(scaffold.NewRequest(name="big", platform="cpu", frameworks=["jax"], directory=project))
    kernel = project / "kernel.cc"
    kernel.write_text(kernel.read_text() + "".join(f"// note {i} on the kernel above\n" for i in range(comment_lines)))
    started = time.process_time()
    api.doctor(project)
    return time.process_time() - started


def test_a_kernel_ending_in_a_long_comment_is_read_in_linear_time(tmp_path):
    """A kernel with a 51 MB comment block kept doctor busy over 2 minutes (the pass that drops
    #include lines scanned the blanked comment from every line start): 4x the lines costs at most
    5x the CPU time."""
    _doctor_cpu_seconds(tmp_path / "big", 1_000)  # warm
    small = min(_doctor_cpu_seconds(tmp_path / "big", 10_000) for _ in range(2))
    large = min(_doctor_cpu_seconds(tmp_path / "big", 40_000) for _ in range(2))
    assert large < 5 * small + 0.05, f"10k lines {small:.3f} s, 40k {large:.3f} s"
