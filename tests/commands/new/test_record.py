"""The record of what xlacc wrote: .xlacc/record.toml, apart from the user's xlacc.toml."""

from __future__ import annotations

import hashlib
import shutil

import pytest
from locations import ARTIFACTS_DIR

from xlacc import spec as specmod
from xlacc.commands.new import project as scaffold
from xlacc.commands.new import record
from xlacc.commands.new.project import NewRequest
from xlacc.ground.errors import SpecError, UsageError
from xlacc.ground.version import __version__
from xlacc.spec.reading import tomllib


@pytest.fixture
def project(tmp_path):
    scaffold.create(NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=tmp_path / "op"))
    return tmp_path / "op"


def test_xlacc_toml_holds_only_the_users_choices_and_the_record_is_apart(project):
    spec_text = (project / "xlacc.toml").read_text()
    assert "generated" not in tomllib.loads(spec_text) and "Written by xlacc" not in spec_text
    written = tomllib.loads((project / ".xlacc" / "record.toml").read_text())
    spec = specmod.load(project)
    assert written["xlacc"] == __version__ and written["template"] == "add" and written["signature"] == spec.signature_digest
    for path, digest in written["files"].items():
        assert digest == "sha256:" + hashlib.sha256((project / path).read_bytes()).hexdigest()[:16], path
    assert spec.generated.files == written["files"] and not spec.generated.legacy


def test_the_base_of_the_spec_is_the_spec_as_written(project):
    assert (project / ".xlacc" / "base" / "xlacc.toml").read_text() == (project / "xlacc.toml").read_text()


@pytest.mark.parametrize(
    "line, key",
    [('"../outside.txt" = "sha256:00"', "[files]"), ('"/etc/passwd" = "sha256:00"', "[files]")],
)
def test_a_recorded_path_outside_the_project_is_refused(project, line, key):
    path = project / ".xlacc" / "record.toml"
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(SpecError, match=r"record\.toml: \[files\] .*a path inside the project"):
        specmod.load(project)


def test_an_unknown_key_in_the_record_is_named(project):
    path = project / ".xlacc" / "record.toml"
    path.write_text("templat = 'add'\n" + path.read_text())
    with pytest.raises(SpecError, match=r"record\.toml: \[templat\] unknown key; did you mean 'template'\?"):
        specmod.load(project)


def test_a_project_without_a_record_loads_with_none(project):
    (project / ".xlacc" / "record.toml").unlink()
    assert specmod.load(project).generated is None


def test_the_previous_layouts_record_in_xlacc_toml_is_still_read(tmp_path):
    previous = shutil.copytree(ARTIFACTS_DIR / "previous_layout" / "add", tmp_path / "add")
    spec = specmod.load(previous)
    assert spec.generated.legacy and spec.generated.template == "add" and "test_add.py" in spec.generated.files
    spec_text = (previous / "xlacc.toml").read_text()
    assert record.file_digest("xlacc.toml", spec_text) == spec.generated.files["xlacc.toml"]  # taken without the record


def test_new_force_on_a_previous_layout_replaces_what_xlacc_wrote_and_drops_the_old_record(tmp_path):
    previous = shutil.copytree(ARTIFACTS_DIR / "previous_layout" / "add", tmp_path / "add")
    report = scaffold.create(NewRequest(name="add", template="add", platform="cpu", frameworks=["jax"], directory=previous, force=True))
    assert not report.data["backups"]  # nothing was the user's
    assert "[generated" not in (previous / "xlacc.toml").read_text() and not specmod.load(previous).generated.legacy


def test_a_header_like_line_inside_a_string_is_refused_not_cut():
    text = '[op]\nname = "op"\n\n[notes]\ntext = """\n[generated]\nkept = 1\n"""\n\n[generated]\nxlacc = "0"\n'
    with pytest.raises(UsageError, match="cannot be told apart from your tables"):
        record.without_record(text)
