"""`xlacc update` on a project an earlier xlacc wrote (tests/artifacts/previous_layout): the record
moves out of xlacc.toml to .xlacc/record.toml, the generic checks out of test_NAME.py to
NAME/checks.py, and every edit of the user's stays."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from locations import ARTIFACTS_DIR
from needs import needs_ffi_headers, needs_gxx, needs_jax

from xlacc import spec as specmod
from xlacc.commands.build import builder
from xlacc.commands.new import migrate, update

PREVIOUS = ARTIFACTS_DIR / "previous_layout" / "add"
MY_TEST = '''

# mine: adding zero changes nothing
def test_adding_zero_is_the_identity(custom_call):
    x = np.arange(5, dtype=np.float32)
    (got,) = as_tuple(custom_call(jax.numpy.asarray(x), jax.numpy.zeros(5, np.float32)))
    np.testing.assert_array_equal(np.asarray(got), x)
'''


@pytest.fixture
def previous(tmp_path):
    """A copy of the project as the previous layout wrote it."""
    return shutil.copytree(PREVIOUS, tmp_path / "add")


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def edit_every_user_file(project):
    """An edit in each of the user's files: the spec's keys and comments, the kernel, the
    reference, and the tests (one added, one changed)."""
    edit(project / "xlacc.toml", "[build]\n", "# my note on the build\n[build]\n")
    edit(project / "xlacc.toml", "defines = []", 'defines = ["MY_TUNING=1"]')
    edit(project / "kernel.cc", "#include <xlacc/kernel.h>\n", "#include <xlacc/kernel.h>  // tuned by hand\n")
    edit(project / "add" / "reference.py", "    return x + y\n", "    return x + y  # my reference\n")
    edit(project / "test_add.py", '"size", [1, 1000, 4099]', '"size", [1, 1000, 4099, 5]')
    (project / "test_add.py").write_text((project / "test_add.py").read_text() + MY_TEST)


def checks_by_name(report):
    return {c.name: c for c in report.checks}


def test_update_moves_the_record_and_the_checks_and_keeps_an_edit_in_every_user_file(previous):
    edit_every_user_file(previous)

    report = update.run(update.UpdateRequest(previous))

    assert not report.failed, report.checks
    lines = checks_by_name(report)
    assert lines["xlacc.toml"].ok and "moved xlacc's record ([generated]) to .xlacc/record.toml" in lines["xlacc.toml"].detail
    assert lines["add/checks.py"].detail == "added"
    moved = lines["test_add.py"].detail
    assert moved.startswith("merged: the generic checks moved to add/checks.py; kept yours: test_matches_reference, test_adding_zero_is_the_identity")
    spec_text = (previous / "xlacc.toml").read_text()
    assert "[generated" not in spec_text and "Written by xlacc" not in spec_text
    assert "# my note on the build\n[build]" in spec_text and 'defines = ["MY_TUNING=1"]' in spec_text
    assert "// tuned by hand" in (previous / "kernel.cc").read_text()
    assert "return x + y  # my reference" in (previous / "add" / "reference.py").read_text()
    tests = (previous / "test_add.py").read_text()
    assert "def test_adding_zero_is_the_identity(custom_call):" in tests and '"size", [1, 1000, 4099, 5]' in tests
    assert "from add.checks import (" in tests and "def test_vmap_matches_each_example" not in tests
    spec = specmod.load(previous)
    assert not spec.generated.legacy and "add/checks.py" in spec.generated.files
    assert spec.build.defines == ("MY_TUNING=1",)


def test_a_second_update_finds_nothing_to_move(previous):
    edit_every_user_file(previous)
    assert not update.run(update.UpdateRequest(previous)).failed
    before = {p: p.read_bytes() for p in previous.rglob("*") if p.is_file()}

    again = update.run(update.UpdateRequest(previous))

    assert "xlacc.toml" not in checks_by_name(again) and not again.failed
    assert set(again.data["files"].values()) == {"up to date"}
    assert {p: p.read_bytes() for p in previous.rglob("*") if p.is_file()} == before


def test_an_untouched_test_file_becomes_the_short_one(previous):
    report = update.run(update.UpdateRequest(previous))
    assert checks_by_name(report)["test_add.py"].detail == "updated: the generic checks moved to add/checks.py"
    assert len((previous / "test_add.py").read_text().splitlines()) <= 40


@pytest.mark.slow
@needs_gxx
@needs_jax
@needs_ffi_headers
def test_the_migrated_projects_tests_run_the_generic_checks_and_the_users(previous):
    edit_every_user_file(previous)
    assert not update.run(update.UpdateRequest(previous)).failed
    assert builder.build_spec(specmod.load(previous)).ok
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONDONTWRITEBYTECODE": "1", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist", "test_add.py"],
        capture_output=True, text=True, cwd=previous, env=env, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    passed = set(re.findall(r"::(\w+)(?:\[[^\]]*\])? PASSED", result.stdout))
    generic = {
        "test_lowers_to_the_custom_call",
        "test_sharded_call_runs_once_per_shard_without_collectives",
        "test_vmap_matches_each_example_in_one_launch_where_the_batch_folds",
        "test_gradients_match_finite_differences_and_the_reference",
    }
    assert passed == generic | {"test_matches_reference", "test_adding_zero_is_the_identity"}, result.stdout[-3000:]
    assert "test_matches_reference[5-f32] PASSED" in result.stdout  # the user's added size


# -- the record's earlier home: xlacc.toml's [generated] table, cut out whatever its shape ---------


def test_a_spec_saved_with_crlf_keeps_crlf_when_its_record_moves_out(previous):
    spec_file = previous / "xlacc.toml"
    spec_file.write_bytes(spec_file.read_bytes().replace(b"\n", b"\r\n"))

    assert not update.run(update.UpdateRequest(previous)).failed

    text = spec_file.read_bytes()
    assert b"[generated" not in text and b"[build]\r\n" in text and text.count(b"\r\n") == text.count(b"\n")


def test_tables_after_the_record_are_the_users_and_stay(previous):
    """A table appended below [generated] was cut away with the record, with exit 0."""
    spec_file = previous / "xlacc.toml"
    spec_file.write_text(spec_file.read_text() + '\n# alpha: the scale of y (my note)\n[[attrs]]\nname = "alpha"\ntype = "f32"\ndefault = 2.0\n')

    report = update.run(update.UpdateRequest(previous))
    assert {c.name for c in report.checks if c.ok is False} == {"launch function"}  # the kernel's to change, by the user

    assert [a.name for a in specmod.load(previous).attrs] == ["alpha"]
    assert "alpha" in (previous / "add" / "jax.py").read_text()
    assert "# alpha: the scale of y (my note)\n[[attrs]]" in spec_file.read_text() and "[generated" not in spec_file.read_text()


def test_the_record_moved_to_the_top_moves_out_and_nothing_else_goes(previous):
    spec_file = previous / "xlacc.toml"
    text = spec_file.read_text()
    start = text.index("# Written by xlacc")
    spec_file.write_text(text[start:] + "\n" + text[:start])
    before = specmod.load(previous)

    assert not update.run(update.UpdateRequest(previous)).failed

    after = spec_file.read_text()
    assert "[generated" not in after and after.startswith("# The `add` custom call.")  # the comments above [op] stay
    assert specmod.load(previous).signature_digest == before.signature_digest


@pytest.mark.parametrize("header", ["[generated]  # keep this", "[ generated ]", '["generated"]'])
def test_a_record_header_written_another_valid_way_is_still_the_record(previous, header):
    spec_file = previous / "xlacc.toml"
    edit(spec_file, "\n[generated]\n", f"\n{header}\n")

    assert not update.run(update.UpdateRequest(previous)).failed

    assert not re.findall(r'^\[\s*"?generated', spec_file.read_text(), re.MULTILINE)
    assert specmod.load(previous).generated.files["xlacc.toml"]


# -- moving the tests: the user's statements, and what they use ------------------------------------

BASE = '''"""Old tests."""

import numpy as np

CONSTANT = 3


def helper():
    return CONSTANT


def test_generic():
    assert helper() == 3


def test_other_generic():
    assert True
'''
NEW = '''"""New tests."""

import numpy as np

from op.checks import (
    test_generic,
    test_other_generic,
)


def test_mine():
    assert np.int32(1) == 1
'''


def test_a_users_test_is_carried_with_the_helpers_it_uses():
    current = BASE + "\n\ndef test_added():\n    assert helper() + 1 == 4\n"
    moved = migrate.move_tests(BASE, current, NEW, "op.checks", "test_op.py")
    assert moved.kept == ["test_added"] and moved.needed == ["CONSTANT", "helper"]
    namespace = {}
    exec(compile(_without_checks_import(moved.text), "test_op.py", "exec"), namespace)
    namespace["test_added"]()  # what it uses came along
    assert "test_generic,\n" in moved.text and "def test_mine" in moved.text


def test_a_generic_check_the_user_deleted_stays_out_and_an_edited_one_replaces_xlaccs():
    current = BASE.replace("def test_other_generic():\n    assert True\n", "").replace("assert helper() == 3", "assert helper() == 3  # mine")
    moved = migrate.move_tests(BASE, current, NEW, "op.checks", "test_op.py")
    assert moved.skipped == ["test_other_generic"] and moved.kept == ["test_generic"]
    assert "test_other_generic" not in moved.text and "    test_generic,\n" not in moved.text
    assert "assert helper() == 3  # mine" in moved.text


def test_a_file_that_did_not_move_is_left_to_the_merge():
    assert migrate.moved_checks(NEW, NEW, "op.checks") == set()
    assert migrate.moved_checks("not python (", NEW, "op.checks") == set()
    with pytest.raises(SyntaxError):
        migrate.move_tests(BASE, "not python (", NEW, "op.checks", "test_op.py")


def _without_checks_import(text):
    """The moved text without its import of op.checks, which these tests do not have."""
    return re.sub(r"from op\.checks import \([^)]*\)\n", "", text)


def test_a_stale_generated_table_beside_the_record_file_is_moved_out_too(previous):
    """Both homes (a branch merged from before the move): the record file is the record, and the
    table left in xlacc.toml goes."""
    assert not update.run(update.UpdateRequest(previous)).failed
    spec_file = previous / "xlacc.toml"
    spec_file.write_text(spec_file.read_text() + '\n[generated]\nxlacc = "0.1.0"\n')
    recorded = specmod.load(previous).generated
    assert not recorded.legacy and recorded.files

    report = update.run(update.UpdateRequest(previous))

    assert "moved xlacc's record" in checks_by_name(report)["xlacc.toml"].detail and not report.failed
    assert "[generated]" not in spec_file.read_text() and specmod.load(previous).generated.files == recorded.files
