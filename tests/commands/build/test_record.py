"""The build record: `xlacc build` compiles what the library was built against into `.xlacc_build`,
for a project and for `xlacc build FILE.cc`, readable without loading the library."""

from __future__ import annotations

import json
from pathlib import Path

from needs import needs_ffi_headers, needs_gxx
from typer.testing import CliRunner

from xlacc import spec
from xlacc.cli import app
from xlacc.commands.build import record
from xlacc.commands.doctor.rules import environment
from xlacc.commands.new import project as scaffold
from xlacc.ground import toolchain
from xlacc.readers import build_record

runner = CliRunner()
FFI_SOURCE = """\
#include "xla/ffi/api/ffi.h"
extern "C" int xk_answer() { return 42; }
"""


def installed_api() -> str:
    major, minor = environment.ffi_api_version(toolchain.ffi_include_dir())
    return f"{major}.{minor}"


@needs_gxx
@needs_ffi_headers
def test_a_project_library_records_the_headers_and_jaxlib(tmp_path: Path):
    project = tmp_path / "rec"
    scaffold.create(scaffold.NewRequest(name="rec", template="add", platform="cpu", frameworks=["jax"], directory=project))
    result = runner.invoke(app, ["build", str(project), "--json"])
    assert result.exit_code == 0, result.output
    fields = build_record.read_record(spec.load(project).library)
    assert fields == {"jaxlib": environment.package_version("jaxlib"), "ffi_api": installed_api(), "cuda": "none", "platform": "cpu"}


@needs_gxx
@needs_ffi_headers
def test_a_file_build_records_them_too_and_a_cached_build_keeps_the_record(tmp_path: Path):
    source = tmp_path / "answer.cc"
    source.write_text(FFI_SOURCE)
    assert runner.invoke(app, ["build", str(source), "--json"]).exit_code == 0
    library = tmp_path / "build" / "libanswer.so"
    assert build_record.read_record(library)["ffi_api"] == installed_api()
    again = runner.invoke(app, ["build", str(source), "--json"])
    assert json.loads(again.output)["exit_code"] == 0
    assert build_record.read_record(library)["ffi_api"] == installed_api()


@needs_gxx
def test_a_library_without_ffi_headers_records_none(tmp_path: Path):
    source = tmp_path / "plain.cc"
    source.write_text('extern "C" int xk_plain() { return 1; }\n')
    assert runner.invoke(app, ["build", str(source), "--json"]).exit_code == 0
    fields = build_record.read_record(tmp_path / "build" / "libplain.so")
    assert fields["ffi_api"] == "none" and fields["jaxlib"] == "none" and fields["platform"] == "cpu"


def test_a_library_of_another_tool_has_no_record(tmp_path: Path):
    assert build_record.parse_record(b"something else\njaxlib=1\n") is None
    assert build_record.parse_record(b"") is None


def test_values_cannot_break_the_generated_source():
    text = build_record.format_record({"jaxlib": '0.1"; int x = 1; //\n', "platform": "cpu"})
    assert '"' not in text and text.count("\n") == len(build_record.KEYS) + 1
    assert build_record.parse_record(text.encode())["jaxlib"].startswith("0.1_")


def test_headers_outside_a_jaxlib_installation_have_no_jaxlib_version(tmp_path: Path):
    (tmp_path / "include").mkdir()
    assert record.headers_jaxlib(tmp_path / "include") is None
