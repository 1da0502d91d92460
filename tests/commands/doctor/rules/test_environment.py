"""Environment checks, given environments: package versions, executables, nvidia-smi, nvcc, headers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from locations import REPO_DIR

from xlacc.commands.doctor import engine
from xlacc.commands.doctor.rules import environment
from xlacc.ground.catalogue import WORDINGS
from xlacc.ground.errors import ToolchainMissing
from xlacc.ground.toolchain import Compiler

ROOT = REPO_DIR
H200 = "NVIDIA H200, 9.0, 570.86.15\n"
C_API = "#define XLA_FFI_API_MAJOR {major}\n#define XLA_FFI_API_MINOR {minor}\n"


class World:
    """The environment a test describes; installs itself over environment's probes."""

    def __init__(self, monkeypatch, tmp_path):
        self.monkeypatch = monkeypatch
        self.tmp_path = tmp_path
        self.versions: dict[str, str] = {}
        self.sources: dict[str, str] = {}  # a package's __version__ as its files say
        self.executables: dict[str, str] = {}
        self.outputs: dict[str, tuple[int, str]] = {}
        self.nvcc: Compiler | None = Compiler(Path("/usr/local/cuda/bin/nvcc"), "13.0.48", "nvcc", "PATH")
        self.cxx: Compiler | None = Compiler(Path("/usr/bin/g++"), "12.2.0", "g++", "PATH")
        self.include: Path | None = None
        for variable in ("PJRT_DEVICE", "XLA_FLAGS", *environment.INCLUDE_PATH_VARIABLES, *environment.JAX_ALLOCATOR_SETTINGS):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setattr(environment, "package_version", self.versions.get)
        monkeypatch.setattr(environment, "find_executable", self.executables.get)
        monkeypatch.setattr(environment, "module_source_version", self.sources.get)
        monkeypatch.setattr(environment, "run_command", self._run)
        monkeypatch.setattr(environment, "nvcc_compiler", self._nvcc)
        monkeypatch.setattr(environment, "host_compiler", self._cxx)
        monkeypatch.setattr(environment, "jaxlib_include", lambda: self.include)

    def _run(self, argv, timeout=None):
        key = "jax" if argv[0] == sys.executable else Path(argv[0]).name
        return self.outputs.get(key)

    def _nvcc(self):
        if self.nvcc is None:
            raise ToolchainMissing("no nvcc found: install a CUDA toolkit")
        return self.nvcc

    def _cxx(self):
        if self.cxx is None:
            raise ToolchainMissing("no C++ compiler found: install g++")
        return self.cxx

    def gpu(self, listing: str = H200) -> None:
        self.executables["nvidia-smi"] = "/usr/bin/nvidia-smi"
        self.outputs["nvidia-smi"] = (0, listing)

    def headers(self, name: str, major: int, minor: int) -> Path:
        directory = self.tmp_path / name
        (directory / "xla/ffi/api").mkdir(parents=True)
        (directory / "xla/ffi/api/c_api.h").write_text(C_API.format(major=major, minor=minor))
        return directory

    def run(self) -> dict:
        report = engine.run(engine.DoctorRequest([], None, [], None, None, False, [], []))
        return {"report": report, "codes": [f.code for f in report.findings], "checks": {c.name: c for c in report.checks}}


@pytest.fixture
def world(monkeypatch, tmp_path) -> World:
    return World(monkeypatch, tmp_path)


def finding(result: dict, code: str):
    return next(f for f in result["report"].findings if f.code == code)


def test_a_healthy_gpu_machine_is_clean(world):
    world.versions.update({"jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda13-plugin": "0.10.2"})
    world.gpu()
    world.outputs["jax"] = (0, "gpu\n")
    world.include = world.headers("jaxlib", 0, 3)
    result = world.run()
    assert result["codes"] == [] and result["report"].code() == 0
    assert result["checks"]["GPUs"].detail == "NVIDIA H200 (sm_90); driver 570.86.15"
    assert result["checks"]["nvcc"].detail.startswith("13.0.48 (CUDA 13.0)")
    assert "FFI API 0.3" in result["checks"]["XLA FFI headers"].detail
    assert list(result["checks"]) == ["Python", "jax", "XLA FFI headers", "torch_xla", "torchax", "PJRT_DEVICE", "nvcc", "host C++ compiler", "GPUs", "XLA_FLAGS"]


def test_a_cuda_home_that_holds_no_nvcc_is_named_beside_the_nvcc_used(world):
    world.nvcc = Compiler(Path("/usr/local/cuda/bin/nvcc"), "13.0.48", "nvcc", "PATH", notes=("$CUDA_HOME=/etc/passwd not used: a file, not a folder",))
    detail = world.run()["checks"]["nvcc"].detail
    assert detail.endswith("via PATH; $CUDA_HOME=/etc/passwd not used: a file, not a folder")


def test_no_host_compiler_fails_its_line(world):
    world.cxx = None
    result = world.run()
    line = result["checks"]["host C++ compiler"]
    assert line.ok is False and "no C++ compiler found" in line.detail and "nvcc needs one" in line.detail
    assert result["report"].code() == 1


def test_no_nvcc(world):
    world.nvcc = None
    result = world.run()
    assert "no nvcc found" in finding(result, "nvcc-missing").evidence
    assert result["checks"]["nvcc"].ok is True  # a warning: CPU kernels still build


@pytest.mark.parametrize(
    "smi, evidence",
    [(None, "nvidia-smi not found"), ("", "nvidia-smi lists no GPU"), ("hangs", "nvidia-smi did not answer in 5 s, or failed")],
)
def test_no_gpu_is_info(world, smi, evidence):
    if smi is not None:
        world.gpu(smi)
    if smi == "hangs":
        world.outputs.pop("nvidia-smi")  # run_command's None: no answer in time, or a failure
    result = world.run()
    found = finding(result, "no-gpu")
    assert found.severity == "info" and found.evidence == evidence
    assert result["report"].code() == 0


@pytest.mark.parametrize(
    "torch, torch_xla, mismatch",
    [("2.8.0", "2.9.0", True), ("2.9.0+cpu", "2.9.0", False), ("2.9.1", "2.9.0", False), (None, "2.9.0", True)],
)
def test_torch_and_torch_xla_must_be_the_same_release(world, torch, torch_xla, mismatch):
    world.versions.update({k: v for k, v in {"torch": torch, "torch_xla": torch_xla}.items() if v})
    result = world.run()
    assert ("torch-xla-version-mismatch" in result["codes"]) is mismatch
    if mismatch:
        assert "pip install torch==2.9.0 torch_xla==2.9.0" in finding(result, "torch-xla-version-mismatch").fix


@pytest.mark.parametrize(
    "torch_xla, pjrt, severity",
    [("2.9.0", None, "info"), ("2.8.1", None, "info"), ("2.9.0", "CUDA", "error"), ("2.7.0", "CUDA", None)],
)
def test_torch_xla_without_cuda(world, monkeypatch, torch_xla, pjrt, severity):
    world.versions.update({"torch": torch_xla, "torch_xla": torch_xla})
    if pjrt:
        monkeypatch.setenv("PJRT_DEVICE", pjrt)
    result = world.run()
    if severity is None:
        assert "torch-xla-no-cuda" not in result["codes"]
    else:
        assert finding(result, "torch-xla-no-cuda").severity == severity
    assert result["checks"]["PJRT_DEVICE"].detail == (pjrt or "unset")


def test_plugin_of_another_release_than_jaxlib(world):
    world.versions.update({"jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda13-plugin": "0.9.0"})
    result = world.run()
    assert "jax-cuda13-plugin 0.9.0 with jaxlib 0.10.2" in finding(result, "ffi-api-skew").evidence


def test_headers_on_the_include_path_newer_than_the_runtime(world, monkeypatch):
    world.versions.update({"jax": "0.10.2", "jaxlib": "0.10.2"})
    world.include = world.headers("jaxlib", 0, 3)
    monkeypatch.setenv("CPATH", str(world.headers("xla_checkout", 0, 4)))
    result = world.run()
    evidence = finding(result, "ffi-api-skew").evidence
    assert "$CPATH" in evidence and "FFI API 0.4" in evidence and "implements FFI API 0.3" in evidence


def test_same_headers_on_the_include_path_are_fine(world, monkeypatch):
    world.include = world.headers("jaxlib", 0, 3)
    monkeypatch.setenv("CPLUS_INCLUDE_PATH", str(world.headers("copy", 0, 3)))
    assert "ffi-api-skew" not in world.run()["codes"]


def test_gpu_visible_but_jax_has_no_plugin(world):
    world.versions.update({"jax": "0.10.2", "jaxlib": "0.10.2"})
    world.gpu()
    result = world.run()
    found = finding(result, "no-gpu")
    assert found.title == "jax will not use the GPU" and "jax[cuda13]" in found.fix


def test_gpu_visible_plugin_installed_but_jax_sees_only_the_cpu(world):
    world.versions.update({"jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda13-plugin": "0.10.2"})
    world.gpu()
    world.outputs["jax"] = (0, "cpu\n")
    assert finding(world.run(), "no-gpu").title == "jax does not see the GPU"


def test_xla_flags_are_shown(world, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_enable_command_buffer=")
    check = world.run()["checks"]["XLA_FLAGS"]
    assert check.ok is True and check.detail == "--xla_gpu_enable_command_buffer="


def test_xla_flags_xla_cannot_parse_are_an_error(world, monkeypatch):
    """Every jax program aborts on them; doctor showed them with a tick."""
    monkeypatch.setenv("XLA_FLAGS", "--xla_bogus_flag=1")
    world.versions.update({"jax": "0.10.2", "jaxlib": "0.10.2"})
    world.outputs["jax"] = (-6, "F1124 03:28:04.536888 17393 parse_flags_from_env.cc:234] Unknown flag in XLA_FLAGS: --xla_bogus_flag=1")
    result = world.run()
    assert result["checks"]["XLA_FLAGS"].ok is False
    assert finding(result, "xla-flags-invalid").title == "XLA_FLAGS holds `--xla_bogus_flag=1`, which this XLA does not know"


@pytest.mark.parametrize(
    "torch, jax, drifted",
    [("2.9.0+cu128", "0.10.2", []), ("2.11.0", "0.11.2", []), ("2.12.0", "0.10.2", ["torch 2.12.0"]), ("2.9.0", "0.12.0", ["jax 0.12.0"])],
)
def test_torchax_versions_say_when_they_drift_from_the_tested_set(world, torch, jax, drifted):
    world.versions.update({"torchax": "0.0.13", "torch": torch, "jax": jax})
    check = world.run()["checks"]["torchax"]
    assert check.ok is True and f"torchax 0.0.13, torch {torch}, jax {jax}" in check.detail
    if drifted:
        assert f"{drifted[0]} drift from the tested releases" in check.detail and "pip install 'xlacc[torchax]'" in check.detail
    else:
        assert check.detail.endswith("a tested set")


def test_torchax_not_installed_is_skipped(world):
    world.versions.update({"torch": "2.9.0"})
    assert world.run()["checks"]["torchax"].ok is None


@pytest.mark.parametrize("on_disk", ["0.0.13", "0.0.6"])
def test_torch_xla_s_copy_of_torchax_over_the_installed_one_is_named(world, on_disk):
    world.versions.update({"torchax": "0.0.13", "torch": "2.9.0", "jax": "0.10.2", "torch_xla": "2.9.0"})
    world.sources["torchax"] = on_disk
    result = world.run()
    assert ("torchax-shadowed" in result["codes"]) is (on_disk != "0.0.13")
    if on_disk != "0.0.13":
        shadowed = finding(result, "torchax-shadowed")
        assert "on disk is 0.0.6" in shadowed.evidence and "torch_xla 2.9.0 ships that copy" in shadowed.evidence
        assert shadowed.fix == "`pip install --force-reinstall --no-deps torchax==0.0.13`" and result["report"].code() == 1


def test_source_version_is_read_without_importing(tmp_path, monkeypatch):
    package = tmp_path / "shadowpkg"
    package.mkdir()
    (package / "__init__.py").write_text('raise SystemExit("imported")\n__version__ = "0.0.6"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert environment.module_source_version("shadowpkg") == "0.0.6"
    assert environment.module_source_version("no_such_package_here") is None


@pytest.mark.parametrize("setting", [None, ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), ("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.4")])
def test_torchax_on_a_gpu_warns_that_jax_takes_the_memory_torch_needs(world, monkeypatch, setting):
    world.versions.update({"torchax": "0.0.13", "torch": "2.11.0", "jax": "0.11.2"})
    world.gpu()
    if setting:
        monkeypatch.setenv(*setting)
    codes = world.run()["codes"]
    assert ("jax-preallocation" in codes) is (setting is None)
    if setting is None:
        assert finding(world.run(), "jax-preallocation").severity == "warning"


def test_release_parsing():
    assert environment.release("2.9.0+cpu") == (2, 9, 0)
    assert environment.release("0.10.2.dev20251122") == (0, 10, 2)
    assert environment.release(None) == ()


def test_this_machine_end_to_end():
    """The real environment, in a child: the report is well formed and jax is never imported here."""
    done = subprocess.run([sys.executable, "-m", "xlacc", "doctor", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    assert done.returncode == report["exit_code"] in (0, 1)
    assert [c["name"] for c in report["checks"]][:2] == ["Python", "jax"]


def test_what_a_harness_saw_in_its_words():
    no_gpu = environment.framework_sees_no_gpu("add", "jax", "TFRT_CPU_0", "run-smoke jax")
    assert no_gpu.code == "no-gpu" and no_gpu.evidence == "add is a cuda project and jax sees no GPU here (devices: TFRT_CPU_0)"
    assert no_gpu.title == WORDINGS["run-smoke jax"]["no-gpu"].title
    ran = environment.torch_xla_cannot_run("2.9.0", "CPU", True, "run-smoke torch-xla")
    assert ran.code == "torch-xla-no-cuda" and ran.evidence.endswith("the program it emitted ran through jaxlib's XLA instead")
    assert "only the lowering was checked" in environment.torch_xla_cannot_run("2.9.0", "CPU", False, "run-smoke torch-xla").evidence
