"""xlacc.ground.paths: where xlacc may write, and writes of a whole set of files that happen all or not at all."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from xlacc.commands.build.output import library_output
from xlacc.ground import paths
from xlacc.ground.errors import UsageError

# The first 18 bytes of a little-endian ELF shared object (e_type ET_DYN at offset 16).
SHARED_OBJECT_HEADER = b"\x7fELF\x02\x01\x01" + bytes(9) + (3).to_bytes(2, "little")


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "demo"
    (root / "build").mkdir(parents=True)
    (root / "kernel.cc").write_text("// the user's kernel\n")
    (root / "xlacc.toml").write_text("[op]\n")
    return root


def output(project: Path, path, **overrides) -> Path:
    arguments = {"roots": (project,), "sources": (project / "kernel.cc",), "origin": f"-o {str(path)!r}"}
    arguments.update(overrides)
    return library_output(Path(path), **arguments)


# -- library_output ---------------------------------------------------------------------------


def test_a_new_library_inside_the_project_is_allowed(project):
    assert output(project, project / "build" / "libdemo.so") == project.resolve() / "build" / "libdemo.so"
    assert output(project, project / "lib" / "new" / "libdemo.so").parent.name == "new"  # made later


def test_an_existing_shared_library_may_be_replaced(project):
    library = project / "build" / "libdemo.so"
    library.write_bytes(SHARED_OBJECT_HEADER + bytes(100))
    assert output(project, library) == library.resolve()


@pytest.mark.parametrize(
    "relative, fragment",
    [
        ("kernel.cc", "is one of the sources"),
        ("xlacc.toml", "exists and is not a shared library"),
        ("build", "is a directory"),
        ("../victim.txt", "leads outside"),
        ("/etc/libc.so", "leads outside"),
    ],
)
def test_paths_that_would_lose_a_file_are_refused(project, relative, fragment):
    with pytest.raises(UsageError, match=fragment) as caught:
        output(project, project / relative)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("-o ")


def test_an_elf_executable_is_not_a_library_to_replace(project):
    program = project / "build" / "tool"
    program.write_bytes(SHARED_OBJECT_HEADER[:16] + (2).to_bytes(2, "little"))  # ET_EXEC
    with pytest.raises(UsageError, match="not a shared library"):
        output(project, program)


def test_a_symlink_that_leads_out_is_refused(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "out").symlink_to(outside)
    with pytest.raises(UsageError, match="leads outside"):
        output(project, project / "out" / "libdemo.so")
    assert list(outside.iterdir()) == []


def test_a_hard_link_to_a_source_is_the_source(project):
    os.link(project / "kernel.cc", project / "build" / "libdemo.so")
    with pytest.raises(UsageError, match="is one of the sources"):
        output(project, project / "build" / "libdemo.so")


def test_a_file_where_the_directory_goes_is_named(project):
    (project / "lib").write_text("not a directory")
    with pytest.raises(UsageError, match="lib is a file, not a directory"):
        output(project, project / "lib" / "libdemo.so")


def test_make_directory_turns_os_errors_into_one_line(project):
    (project / "blocked").write_text("a file")
    with pytest.raises(UsageError, match="cannot create .*blocked"):
        paths.make_directory(project / "blocked")


# -- write_all ----------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def test_write_all_writes_every_file_with_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        paths.write_all(tmp_path / "new", {"a.txt": "text", "sub/dir/b.bin": b"\x00\x01"})
    finally:
        os.umask(old)
    assert (tmp_path / "new" / "a.txt").read_text() == "text"
    assert (tmp_path / "new" / "sub" / "dir" / "b.bin").read_bytes() == b"\x00\x01"
    assert stat.S_IMODE((tmp_path / "new" / "a.txt").stat().st_mode) == 0o644
    assert [p.name for p in (tmp_path / "new").iterdir() if p.name.startswith(".")] == []


def test_write_all_keeps_a_replaced_files_mode(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o751)
    paths.write_all(tmp_path, {"run.sh": "new"})
    assert script.read_text() == "new" and stat.S_IMODE(script.stat().st_mode) == 0o751


def test_a_directory_in_the_way_changes_nothing(tmp_path):
    (tmp_path / "kernel.cc").mkdir()
    (tmp_path / "reference.py").write_text("mine")
    before = snapshot(tmp_path)
    with pytest.raises(UsageError, match="kernel.cc is a directory"):
        paths.write_all(tmp_path, {"reference.py": "generated", "kernel.cc": "generated"})
    assert snapshot(tmp_path) == before


def test_a_failure_while_renaming_puts_everything_back(tmp_path, monkeypatch):
    (tmp_path / "one.txt").write_text("user's one")
    before = snapshot(tmp_path)
    real_replace = os.replace
    calls = []

    def fail_on_the_third(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(paths.os, "replace", fail_on_the_third)
    with pytest.raises(UsageError, match="No space left on device; nothing was written"):
        paths.write_all(tmp_path, {"one.txt": "new one", "new/two.txt": "two", "three.txt": "three"})
    monkeypatch.undo()
    assert snapshot(tmp_path) == before  # one.txt restored, two.txt and its directory gone


def test_ctrl_c_while_writing_changes_nothing_and_is_raised(tmp_path, monkeypatch):
    (tmp_path / "one.txt").write_text("user's one")
    before = snapshot(tmp_path)
    real_write = paths._write_temporary
    written = []

    def interrupted(target, data):
        if written:
            raise KeyboardInterrupt
        written.append(target)
        return real_write(target, data)

    monkeypatch.setattr(paths, "_write_temporary", interrupted)
    with pytest.raises(KeyboardInterrupt):
        paths.write_all(tmp_path, {"one.txt": "new", "two.txt": "two"})
    assert snapshot(tmp_path) == before


def terminated(signum, frame):
    raise SystemExit(128 + signum)  # as the CLI's SIGTERM handler does


@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)])
@pytest.mark.parametrize("after", [1, 3])  # the first rename, the last
def test_a_signal_just_after_a_rename_puts_everything_back_then_interrupts(tmp_path, monkeypatch, signum, raised, after):
    """A signal between a rename and its record once left that file replaced after "interrupted"."""
    (tmp_path / "one.txt").write_text("user's one")
    (tmp_path / "two.txt").write_text("user's two")
    before = snapshot(tmp_path)
    real_replace = os.replace
    renames = []

    def signalled_after_renaming(src, dst):
        real_replace(src, dst)
        renames.append(dst)
        if len(renames) == after:
            os.kill(os.getpid(), signum)

    monkeypatch.setattr(paths.os, "replace", signalled_after_renaming)
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler), signal.SIGTERM: signal.signal(signal.SIGTERM, terminated)}
    try:
        with pytest.raises(raised):
            paths.write_all(tmp_path, {"one.txt": "new one", "two.txt": "new two", "three.txt": "three"})
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    monkeypatch.undo()
    assert snapshot(tmp_path) == before


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_what_a_killed_write_left_is_cleared_and_nothing_else(tmp_path):
    dead, alive = dead_pid(), os.getpid()
    (tmp_path / "sub").mkdir()
    leftovers = [f".one.txt.{dead}.0123abcd.tmp", f".one.txt.{dead}.deadbeef.bak", f"sub/.two.py.{dead}.00ff00ff.tmp"]
    kept = [
        f".one.txt.{alive}.0123abcd.tmp",  # a write still running
        f".other.txt.{dead}.0123abcd.tmp",  # not a file this write touches
        ".one.txt.notes.tmp", f".one.txt.{dead}.tmp", f"one.txt.{dead}.0123abcd.bak",  # the user's names
    ]
    for name in leftovers + kept:
        (tmp_path / name).write_text("x")
    paths.clear_leftovers(tmp_path, ["one.txt", "sub/two.py", "missing/three.txt"])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == sorted(kept)


@pytest.mark.parametrize("relative", ["../escape.txt", "/tmp/absolute.txt", "link/inside.txt"])
def test_write_all_refuses_paths_that_leave_the_root(tmp_path, relative):
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(UsageError):
        paths.write_all(root, {relative: "x", "fine.txt": "y"})
    assert not (root / "fine.txt").exists() and not (tmp_path / "escape.txt").exists() and not (tmp_path / "inside.txt").exists()
