"""Version skew: a library's build record against the jaxlib, CUDA plugin and driver that load it.

The done-when case builds one cpu project against two header sets: a copy of the installed FFI
headers posing as another jaxlib's (its own dist-info, a newer FFI API minor) and the real ones.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from needs import needs_ffi_headers, needs_gxx
from typer.testing import CliRunner

from xlacc import spec
from xlacc.cli import app
from xlacc.commands.doctor.rules import build_record as skew
from xlacc.commands.doctor.rules import environment
from xlacc.commands.new import project as scaffold
from xlacc.commands.smoke import run_smoke
from xlacc.ground import toolchain
from xlacc.ground.report import Report

runner = CliRunner()
OTHER_JAXLIB = "0.99.0"


def record(**fields) -> dict[str, str]:
    return {"jaxlib": "0.10.2", "ffi_api": "0.3", "cuda": "none", "platform": "cpu", **fields}


def runtime(**fields) -> skew.Runtime:
    return skew.Runtime(**{"jaxlib": "0.10.2", "ffi_api": (0, 3), **fields})


# -- the comparison -------------------------------------------------------------------------------


def test_the_same_headers_and_jaxlib_give_nothing():
    assert skew.skew_findings(record(), runtime()) == []


def test_newer_headers_than_the_runtime_are_an_error_that_names_both_sides():
    [found] = skew.skew_findings(record(jaxlib="0.11.2", ffi_api="0.4"), runtime(), "libop.so")
    assert (found.code, found.severity) == ("ffi-api-skew", "error")
    assert "FFI API 0.4" in found.evidence and "jaxlib 0.11.2" in found.evidence and "jaxlib 0.10.2 implements FFI API 0.3" in found.evidence
    assert "xlacc build --force" in found.fix and "upgrade jax and jaxlib to 0.11.2" in found.fix


def test_another_major_is_an_error_even_when_older():
    [found] = skew.skew_findings(record(jaxlib="0.4.30", ffi_api="0.1"), runtime(ffi_api=(1, 0)))
    assert found.severity == "error" and "downgrade jax and jaxlib to 0.4.30" in found.fix


def test_headers_of_unknown_origin_say_to_rebuild_or_install_their_jaxlib():
    [found] = skew.skew_findings(record(jaxlib="none", ffi_api="0.9"), runtime())
    assert "unknown (--ffi-include)" in found.evidence and "install the jaxlib whose headers built it" in found.fix


def test_older_headers_of_the_same_major_are_accepted_and_said_so():
    [found] = skew.skew_findings(record(jaxlib="0.8.0", ffi_api="0.1"), runtime())
    assert (found.code, found.severity) == ("ffi-api-skew", "info") and "accepts it" in found.evidence


def test_another_jaxlib_with_the_same_ffi_api_is_information():
    [found] = skew.skew_findings(record(jaxlib="0.10.1"), runtime())
    assert found.severity == "info" and "0.10.1" in found.title


def test_without_jaxlib_or_without_ffi_headers_nothing_is_compared():
    assert skew.skew_findings(record(ffi_api="9.9"), runtime(jaxlib=None, ffi_api=None)) == []
    assert skew.skew_findings(record(ffi_api="none", jaxlib="none"), runtime()) == []


def test_a_driver_older_than_the_toolkit_is_an_error_that_says_upgrade_or_rebuild():
    [found] = skew.skew_findings(record(cuda="13.0", platform="cuda"), runtime(driver_cuda=(12, 8)))
    assert found.severity == "error" and "CUDA 13.0 > 12.8" in found.title
    assert "Upgrade the NVIDIA driver" in found.fix and "--nvcc" in found.fix
    assert skew.skew_findings(record(cuda="12.8", platform="cuda"), runtime(driver_cuda=(13, 0))) == []


def test_a_plugin_of_another_cuda_major_is_a_warning_naming_both():
    plugins = {"jax-cuda13-plugin": "0.10.2"}
    [found] = skew.skew_findings(record(cuda="12.8", platform="cuda"), runtime(plugins=plugins))
    assert found.severity == "warning" and "CUDA 12" in found.title and "CUDA 13" in found.title and 'jax[cuda12]' in found.fix
    assert skew.skew_findings(record(cuda="13.0", platform="cuda"), runtime(plugins=plugins)) == []


def test_the_driver_cuda_is_read_from_nvidia_smis_banner(monkeypatch):
    banner = "| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0     |"
    monkeypatch.setattr(environment, "find_executable", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(environment, "run_command", lambda argv: (0, banner))
    assert skew.driver_cuda() == (13, 0)
    monkeypatch.setattr(environment, "find_executable", lambda name: None)
    assert skew.driver_cuda() is None


# -- two header sets on the CPU (done when) -------------------------------------------------------


def installed_api() -> tuple[int, int]:
    return environment.ffi_api_version(toolchain.ffi_include_dir())


def headers_of_another_jaxlib(site: Path) -> Path:
    """The installed FFI headers copied as ``site/jaxlib/include`` of a jaxlib 0.99.0 (its own
    dist-info), whose FFI API minor is one newer than the installed one's."""
    include = site / "jaxlib" / "include"
    shutil.copytree(toolchain.ffi_include_dir() / "xla", include / "xla")
    c_api = include / "xla" / "ffi" / "api" / "c_api.h"
    newer = installed_api()[1] + 1
    c_api.write_text(re.sub(r"(#define\s+XLA_FFI_API_MINOR\s+)\d+", rf"\g<1>{newer}", c_api.read_text()))
    dist_info = site / f"jaxlib-{OTHER_JAXLIB}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: jaxlib\nVersion: {OTHER_JAXLIB}\n")
    return include


def skew_findings_of(*args: str) -> list[dict]:
    result = runner.invoke(app, ["doctor", "--json", *args])
    return [f for f in json.loads(result.output)["findings"] if f["code"] == "ffi-api-skew"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("skew") / "skewed"
    scaffold.create(scaffold.NewRequest(name="skewed", template="add", platform="cpu", frameworks=["jax"], directory=root))
    return root


@needs_gxx
@needs_ffi_headers
def test_a_library_built_against_another_jaxlibs_headers_gets_the_skew_finding(project: Path, tmp_path: Path):
    other = headers_of_another_jaxlib(tmp_path / "site")
    built = runner.invoke(app, ["build", str(project), "--ffi-include", str(other), "--force", "--json"])
    assert json.loads(built.output)["exit_code"] == 0, built.output
    library = spec.load(project).library
    running = environment.package_version("jaxlib")
    major, minor = installed_api()
    for found in (skew_findings_of(str(project)), skew_findings_of("--so", str(library))):
        assert [f["severity"] for f in found] == ["error"]
        assert f"FFI API {major}.{minor + 1} (headers of jaxlib {OTHER_JAXLIB})" in found[0]["evidence"]
        assert f"jaxlib {running} implements FFI API {major}.{minor}" in found[0]["evidence"]
        assert "xlacc build --force" in found[0]["fix"] and f"upgrade jax and jaxlib to {OTHER_JAXLIB}" in found[0]["fix"]

    report = Report(title="run-smoke")
    assert run_smoke.matches_runtime(spec.load(project), report) is False
    assert [c.ok for c in report.checks if c.name == "built against"] == [False]
    assert [f.code for f in report.findings] == ["ffi-api-skew"]


@needs_gxx
@needs_ffi_headers
def test_the_same_project_built_against_the_running_headers_gets_none(project: Path):
    built = runner.invoke(app, ["build", str(project), "--force", "--json"])
    assert json.loads(built.output)["exit_code"] == 0, built.output
    assert skew_findings_of(str(project)) == []
    report = Report(title="run-smoke")
    assert run_smoke.matches_runtime(spec.load(project), report) is True and report.findings == []
