"""`xlacc update`: xlacc's files follow the spec and the installed xlacc; the user's edits survive."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from needs import needs_ffi_headers

from xlacc import spec as specmod
from xlacc.commands.build import builder
from xlacc.commands.new import project as scaffold
from xlacc.commands.new import update
from xlacc.commands.new.project import NewRequest
from xlacc.commands.smoke import run_smoke as smoke
from xlacc.ground import resources
from xlacc.ground.errors import UsageError
from xlacc.spec import drift


@pytest.fixture
def project(tmp_path):
    scaffold.create(NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=tmp_path / "op"))
    return tmp_path / "op"


@pytest.fixture
def upgraded_templates(tmp_path, monkeypatch):
    """A copy of the templates as a newer xlacc might ship them, used from here on."""
    newer = tmp_path / "newer-templates"
    shutil.copytree(resources.templates_root(), newer)
    monkeypatch.setattr(resources, "templates_root", lambda: newer)
    return newer


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def statuses(report):
    return report.data["files"]


def test_an_untouched_project_is_up_to_date(project):
    before = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    report = update.run(update.UpdateRequest(project))
    assert set(statuses(report).values()) == {"up to date"}
    assert not report.failed
    assert {p: p.read_text() for p in project.rglob("*") if p.is_file()} == before


@needs_ffi_headers
def test_an_upgrade_keeps_the_kernel_edit_and_merges_an_edit_to_xlaccs_file(project, upgraded_templates):
    # The user tunes the kernel and adds a helper to xlacc's jax bindings.
    edit(project / "kernel.cc", "  return xlacc::Status::Ok();\n}", "  return xlacc::Status::Ok();  // checked by hand\n}")
    (project / "op" / "jax.py").write_text((project / "op" / "jax.py").read_text() + "\n\ndef twice(x, y):\n    return op(op(x, y), y)\n")
    # The newer xlacc changes its entry points, the top of the bindings, and the kernel's header.
    edit(upgraded_templates / "_common/project/entry_points.j2", "namespace {\n", "// Newer entry points.\nnamespace {\n")
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # newer bindings\n")
    edit(upgraded_templates / "add/kernel.cc.j2", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // newer header line\n")

    report = update.run(update.UpdateRequest(project))

    assert not report.failed, report.checks
    assert statuses(report)["op/_entry_points.cc"] == "updated"
    assert statuses(report)["op/jax.py"] == "merged"
    assert statuses(report)["kernel.cc"] == "merged"
    kernel = (project / "kernel.cc").read_text()
    assert "// checked by hand" in kernel and "// newer header line" in kernel
    bindings = (project / "op" / "jax.py").read_text()
    assert "def twice(x, y):" in bindings and "import ctypes  # newer bindings" in bindings
    assert "// Newer entry points." in (project / "op" / "_entry_points.cc").read_text()
    # The merged files still count as edited, so the next update merges again instead of replacing.
    again = update.run(update.UpdateRequest(project))
    assert statuses(again)["op/jax.py"] == "up to date" and "def twice" in (project / "op" / "jax.py").read_text()
    assert builder.build_spec(specmod.load(project)).ok


def test_a_conflict_is_marked_in_the_file_and_fails_the_update(project, upgraded_templates):
    edit(project / "kernel.cc", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // mine\n")
    edit(upgraded_templates / "add/kernel.cc.j2", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // theirs\n")
    report = update.run(update.UpdateRequest(project))
    assert report.failed and statuses(report)["kernel.cc"] == "conflict"
    assert [f.code for f in report.findings] == ["update-conflict"]
    text = (project / "kernel.cc").read_text()
    assert "<<<<<<< yours\n#include <xlacc/kernel.h>  // mine\n=======\n#include <xlacc/kernel.h>  // theirs\n>>>>>>> xlacc" in text


def test_an_update_after_an_unresolved_conflict_still_reports_it(project, upgraded_templates):
    """The second update called the marked file "up to date: your edits kept" and exited 0."""
    edit(project / "kernel.cc", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // mine\n")
    edit(upgraded_templates / "add/kernel.cc.j2", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // theirs\n")
    assert update.run(update.UpdateRequest(project)).failed

    again = update.run(update.UpdateRequest(project))

    assert again.failed and statuses(again)["kernel.cc"] == "conflict"
    assert [f.code for f in again.findings] == ["update-conflict"] and "still holds an earlier update's conflict markers" in again.findings[0].evidence


def test_a_conflict_resolved_in_part_is_still_a_conflict(project, upgraded_templates):
    """With only the `<<<<<<< yours` line deleted, the file was "your edits kept"."""
    edit(project / "kernel.cc", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // mine\n")
    edit(upgraded_templates / "add/kernel.cc.j2", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // theirs\n")
    assert update.run(update.UpdateRequest(project)).failed
    edit(project / "kernel.cc", "<<<<<<< yours\n", "")

    again = update.run(update.UpdateRequest(project))

    assert again.failed and statuses(again)["kernel.cc"] == "conflict"


def test_build_and_run_smoke_refuse_a_project_with_unresolved_conflicts(project, upgraded_templates):
    edit(project / "op" / "jax.py", "import ctypes\n", "import ctypes  # mine\n")
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # theirs\n")
    assert update.run(update.UpdateRequest(project)).failed
    line = (project / "op" / "jax.py").read_text().splitlines().index("<<<<<<< yours") + 1

    built = builder.build_spec(specmod.load(project))
    assert not built.ok and [f.code for f in built.findings] == ["update-conflict"]
    assert built.checks[0].name == "conflicts" and f"op/jax.py:{line}" in built.checks[0].detail
    smoke_report = smoke.run(smoke.SmokeRequest(project, None, None, 0, None, None, 60.0, False))
    assert smoke_report.failed and [f.code for f in smoke_report.findings] == ["update-conflict"]


def test_dry_run_shows_the_diff_and_writes_nothing(project, upgraded_templates):
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # newer bindings\n")
    before = (project / "op" / "jax.py").read_text()
    report = update.run(update.UpdateRequest(project, dry_run=True))
    assert statuses(report)["op/jax.py"] == "updated"
    assert any("+import ctypes  # newer bindings" in note for note in report.notes)
    assert (project / "op" / "jax.py").read_text() == before


@needs_ffi_headers
def test_a_new_signature_regenerates_bindings_and_the_user_files_nobody_edited(tmp_path):
    project = tmp_path / "op"
    scaffold.create(NewRequest(name="op", template="blank", platform="cpu", frameworks=["jax"], inputs=["x"], directory=project))
    spec_file = project / specmod.SPEC_FILE
    edit(spec_file, "[[outputs]]", '[[inputs]]\nname = "bias"\ndtype = "f32"\n\n[[outputs]]')
    edit(spec_file, 'rule = "... -> ..."', 'rule = "..., ... -> ..."')  # the sharding rule names every input

    stale = builder.build_spec(specmod.load(project))
    assert not stale.ok and [f.code for f in stale.findings] == ["spec-changed"]
    smoke_report = smoke.run(smoke.SmokeRequest(project, None, None, 0, None, None, 60.0, False))
    assert smoke_report.failed and [f.code for f in smoke_report.findings] == ["spec-changed"]
    assert not any(c.name.startswith(("jax", "registration")) for c in smoke_report.checks)  # nothing ran

    report = update.run(update.UpdateRequest(project))
    assert not report.failed
    assert statuses(report)["op/_entry_points.cc"] == "updated" and statuses(report)["kernel.cc"] == "updated"
    assert "const xlacc::Tensor& bias" in (project / "kernel.cc").read_text()
    assert not any("change it to match" in note for note in report.notes)  # xlacc rewrote the unedited kernel
    assert drift.signature_changes(specmod.load(project)) == []
    assert builder.build_spec(specmod.load(project)).ok


@needs_ffi_headers
def test_a_new_attribute_names_the_launch_the_user_must_change_and_what_changed(tmp_path):
    """The add template's kernel does not follow the signature: update says what its launch
    function is called with now; build and doctor said which key changed."""
    project = tmp_path / "op"
    scaffold.create(NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project))
    edit(project / specmod.SPEC_FILE, "[build]", '[[attrs]]\nname = "alpha"\ntype = "f32"\ndefault = 1.0\n\n[build]')
    assert drift.signature_changes(specmod.load(project)) == ["attrs: added alpha"]

    report = update.run(update.UpdateRequest(project))
    assert statuses(report)["kernel.cc"] == "up to date" and statuses(report)["op/_entry_points.cc"] == "updated"
    line = next(n for n, text in enumerate((project / "kernel.cc").read_text().splitlines(), 1) if "op_launch(" in text)
    expected = (
        f"{project / 'kernel.cc'}:{line}: op_launch<T>() takes (xlacc::Stream, const xlacc::Tensor& x, const xlacc::Tensor& y, const xlacc::Tensor& out) "
        "and is called with (xlacc::Stream stream, const xlacc::Tensor& x, const xlacc::Tensor& y, const xlacc::Tensor& out, float alpha) now: change it to match"
    )
    assert [c.detail for c in report.checks if c.name == "launch function" and c.ok is False] == [expected]
    assert report.code() == 1  # it printed the new signature and exited 0: the change the user owes was easy to miss
    kernel_line = next(c for c in report.checks if c.name == "kernel.cc")
    assert kernel_line.ok is None and "its launch function no longer takes what the entry points pass" in kernel_line.detail

    built = builder.build_spec(specmod.load(project))  # the user missed it: the failed build says it
    assert not built.ok and [c.detail for c in built.checks if c.name == "launch function"] == [expected]
    compile_error = next(f for f in built.findings if f.code == "compile-error")
    assert compile_error.evidence.startswith(expected) and "Fix the lines shown" not in compile_error.fix


def test_deleted_files_the_user_removed_stay_deleted_and_xlaccs_come_back(project):
    (project / "test_op.py").unlink()
    (project / "op" / "_entry_points.cc").unlink()
    report = update.run(update.UpdateRequest(project))
    assert statuses(report)["test_op.py"] == "left deleted" and not (project / "test_op.py").exists()
    assert statuses(report)["op/_entry_points.cc"] == "added" and (project / "op" / "_entry_points.cc").is_file()


def test_an_edited_file_without_its_merge_base_is_never_overwritten(project, upgraded_templates):
    edit(project / "op" / "jax.py", "import ctypes\n", "import ctypes  # mine\n")
    shutil.rmtree(project / ".xlacc")
    edit(upgraded_templates / "_common/project/jax.py.j2", "def register():", "def register():  # newer")
    report = update.run(update.UpdateRequest(project))
    assert report.failed and statuses(report)["op/jax.py"] == "conflict"
    assert "# mine" in (project / "op" / "jax.py").read_text()
    assert "def register():  # newer" in (project / "op" / "jax.py.xlacc-new").read_text()
    assert report.findings[0].fix.startswith("Compare op/jax.py with op/jax.py.xlacc-new: carry what you need into your file")


def test_a_file_that_is_not_utf8_keeps_its_bytes_and_gets_xlaccs_text_beside_it(project, upgraded_templates):
    """A Latin-1 byte once made the user's whole file the empty side of a conflict."""
    bindings = project / "op" / "jax.py"
    mine = bindings.read_bytes() + "# J\xfcrgen: my edit\n".encode("latin-1")
    bindings.write_bytes(mine)
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # newer bindings\n")

    report = update.run(update.UpdateRequest(project))

    assert report.failed and statuses(report)["op/jax.py"] == "conflict"
    assert bindings.read_bytes() == mine
    assert "import ctypes  # newer bindings" in (project / "op" / "jax.py.xlacc-new").read_text()
    assert "not UTF-8 text (byte 0xfc on line" in report.checks[[c.name for c in report.checks].index("op/jax.py")].detail
    again = update.run(update.UpdateRequest(project))  # xlacc's text has not changed since
    assert not again.failed and statuses(again)["op/jax.py"] == "kept" and bindings.read_bytes() == mine


def test_a_file_saved_with_crlf_merges_line_by_line_and_keeps_its_line_endings(project, upgraded_templates):
    bindings = project / "op" / "jax.py"
    crlf = bindings.read_text().replace("\n", "\r\n") + "\r\ndef twice(x, y):\r\n    return op(op(x, y), y)\r\n"
    bindings.write_bytes(crlf.encode())
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # newer bindings\n")

    report = update.run(update.UpdateRequest(project))

    assert not report.failed and statuses(report)["op/jax.py"] == "merged"
    merged = bindings.read_bytes().decode()
    assert "import ctypes  # newer bindings\r\n" in merged and "def twice(x, y):\r\n" in merged
    assert merged.count("\r\n") == merged.count("\n")


def test_a_conflict_in_a_crlf_file_is_marked_with_crlf_and_found_by_build(project, upgraded_templates):
    bindings = project / "op" / "jax.py"
    bindings.write_bytes(bindings.read_text().replace("import ctypes\n", "import ctypes  # mine\n").replace("\n", "\r\n").encode())
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # theirs\n")
    assert update.run(update.UpdateRequest(project)).failed
    assert b"<<<<<<< yours\r\nimport ctypes  # mine\r\n=======\r\nimport ctypes  # theirs\r\n>>>>>>> xlacc\r\n" in bindings.read_bytes()
    built = builder.build_spec(specmod.load(project))
    assert not built.ok and [f.code for f in built.findings] == ["update-conflict"]


@pytest.mark.parametrize("path", ["op/jax.py", "kernel.cc", "op/reference.py"])
@pytest.mark.parametrize("kind", ["directory", "named pipe"])
def test_a_generated_file_that_is_not_a_regular_file_is_a_one_line_error_and_nothing_is_written(project, path, kind):
    target = project / path
    target.unlink()
    if kind == "directory":
        target.mkdir()
    else:
        os.mkfifo(target)
    edit(project / specmod.SPEC_FILE, 'api = "ffi"', 'api = "legacy"')  # xlacc's files change
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    with pytest.raises(UsageError, match=f"{path}.* not a (regular )?file: .*nothing was written") as info:
        update.run(update.UpdateRequest(project))
    assert "\n" not in str(info.value)
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_a_spec_saved_with_a_byte_order_mark_reads_and_updates(project, upgraded_templates):
    """Windows editors write one: 'Invalid statement (at line 1, column 1)'."""
    spec_file = project / "xlacc.toml"
    spec_file.write_bytes(b"\xef\xbb\xbf" + spec_file.read_bytes())
    edit(upgraded_templates / "_common/project/jax.py.j2", "import ctypes\n", "import ctypes  # newer bindings\n")

    assert specmod.load(project).name == "op"
    assert not update.run(update.UpdateRequest(project)).failed
    assert spec_file.read_bytes().startswith(b"\xef\xbb\xbf") and specmod.load(project).name == "op"


def test_a_deleted_kernel_is_left_deleted_and_said_to_be_needed(project):
    (project / "kernel.cc").unlink()
    report = update.run(update.UpdateRequest(project))
    check = next(c for c in report.checks if c.name == "kernel.cc")
    assert check.ok is None and "`cp .xlacc/base/kernel.cc kernel.cc` brings back the text xlacc wrote" in check.detail
    assert not (project / "kernel.cc").exists()
    with pytest.raises(UsageError, match=r"kernel.cc: no such file .*`cp .xlacc/base/kernel.cc kernel.cc`"):
        builder.build_spec(specmod.load(project))
    (project / "op" / "reference.py").unlink()
    with pytest.raises(UsageError, match=r"op/reference.py: no such file \(run-smoke checks the op against it\); `cp .xlacc/base/op/reference.py"):
        smoke.run(smoke.SmokeRequest(project, None, None, 0, None, None, 60.0, False))
    shutil.rmtree(project / ".xlacc")
    with pytest.raises(UsageError, match=r"`xlacc new` of the same op in another folder writes the template's"):
        smoke.run(smoke.SmokeRequest(project, None, None, 0, None, None, 60.0, False))


def test_an_edited_file_a_rename_leaves_behind_is_kept_and_said_to_be_unused(project):
    edit(project / "op" / "reference.py", "import numpy as np\n", "import numpy as np  # mine\n")
    spec_file = project / "xlacc.toml"
    edit(spec_file, 'name = "op"', 'name = "renamed"')
    report = update.run(update.UpdateRequest(project))
    check = next(c for c in report.checks if c.name == "op/reference.py")
    assert statuses(report)["op/reference.py"] == "left behind" and check.ok is None and "nothing uses it now" in check.detail
    assert "# mine" in (project / "op" / "reference.py").read_text() and (project / "renamed" / "reference.py").is_file()


def _update_cpu_seconds(project, comment_lines: int) -> float:
    """CPU time of `xlacc update` after a spec change, on a kernel ending in a long comment."""
    shutil.rmtree(project, ignore_errors=True)
    scaffold.create(NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project))
    kernel = project / "kernel.cc"
    kernel.write_text(kernel.read_text() + "".join(f"// note {i} on the kernel above\n" for i in range(comment_lines)))
    edit(project / "xlacc.toml", 'grads = ["x", "y"]', 'grads = ["x"]')
    started = time.process_time()
    update.run(update.UpdateRequest(project))
    return time.process_time() - started


def test_update_of_a_kernel_ending_in_a_long_comment_takes_linear_time(tmp_path):
    """An 80,000-line comment made `xlacc update` take 18 s (the pass dropping #include lines
    scanned the blanked comment from every line start): 4x the lines costs at most 5x the CPU time."""
    _update_cpu_seconds(tmp_path / "op", 1_000)  # warm
    small = min(_update_cpu_seconds(tmp_path / "op", 10_000) for _ in range(2))
    large = min(_update_cpu_seconds(tmp_path / "op", 40_000) for _ in range(2))
    assert large < 5 * small + 0.05, f"10k lines {small:.3f} s, 40k {large:.3f} s"
