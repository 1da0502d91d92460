"""Compiler, header and GPU discovery: fake tools on a controlled PATH, plus the real ones here."""

from __future__ import annotations

import importlib.util
import re
import shutil
import time
from pathlib import Path

import pytest
from process_support import alive

from xlacc.ground import toolchain
from xlacc.ground.errors import ToolchainMissing
from xlacc.readers import elf


def fake_tool(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def fake_nvcc(directory: Path, release: str) -> Path:
    return fake_tool(directory, "nvcc", f'echo "Cuda compilation tools, release {release}, V{release}.77"')


@pytest.fixture
def fresh_ffi_lookup():
    toolchain._installed_ffi_include.cache_clear()
    yield
    toolchain._installed_ffi_include.cache_clear()


# -- nvcc -----------------------------------------------------------------------------------------


def test_no_nvcc_anywhere_says_what_to_install(bare_env):
    with pytest.raises(ToolchainMissing) as caught:
        toolchain.find_nvcc()
    message = str(caught.value)
    assert "no nvcc found" in message
    assert "pip install -e '.[cuda]'" in message and "--nvcc" in message
    assert caught.value.exit_code == 2


def test_nvcc_search_order(bare_env, tmp_path, monkeypatch):
    explicit = fake_nvcc(tmp_path / "explicit", "11.1")
    monkeypatch.setenv("CUDACXX", str(fake_nvcc(tmp_path / "cudacxx", "12.1")))
    monkeypatch.setenv("PATH", str(fake_nvcc(tmp_path / "path", "12.2").parent))
    monkeypatch.setenv("CUDA_HOME", str(fake_nvcc(tmp_path / "home" / "bin", "12.3").parent.parent))
    pip_nvcc = fake_nvcc(tmp_path / "site-packages" / "nvidia" / "cu13" / "bin", "12.4")
    monkeypatch.setattr(toolchain, "_pathfinder_binary", lambda name: pip_nvcc if name == "nvcc" else None)

    found = toolchain.find_nvcc(explicit)
    assert (found.source, found.version, found.kind, found.path) == ("--nvcc", "11.1.77", "nvcc", explicit)
    expected_after_removing = [
        ("$CUDACXX", "12.1.77", None),
        ("PATH", "12.2.77", ("delenv", "CUDACXX")),
        ("$CUDA_HOME", "12.3.77", ("setenv", "PATH", str(bare_env))),
        ("pip", "12.4.77", ("delenv", "CUDA_HOME")),
    ]
    for source, version, change in expected_after_removing:
        if change and change[0] == "delenv":
            monkeypatch.delenv(change[1])
        elif change:
            monkeypatch.setenv(change[1], change[2])
        found = toolchain.find_nvcc()
        assert (found.source, found.version) == (source, version)


def test_default_toolkit_root_is_searched(bare_env, tmp_path, monkeypatch):
    root = fake_nvcc(tmp_path / "cuda" / "bin", "13.0").parent.parent
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOMES", (("/usr/local/cuda", root),))
    assert toolchain.find_nvcc().source == "/usr/local/cuda"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_named_nvcc_that_does_not_exist_is_an_error(bare_env, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("CUDACXX", "/nonexistent/nvcc")
    with pytest.raises(ToolchainMissing, match=r"(--nvcc|\$CUDACXX)=/nonexistent/nvcc is not an executable file"):
        toolchain.find_nvcc(Path("/nonexistent/nvcc") if how == "flag" else None)


def test_a_program_that_prints_no_version_is_refused(bare_env, tmp_path):
    impostor = fake_tool(tmp_path, "nvcc", "echo hello")
    with pytest.raises(ToolchainMissing, match="did not print a version"):
        toolchain.find_nvcc(impostor)


def test_version_is_remembered_until_the_compiler_changes(bare_env, tmp_path):
    calls = tmp_path / "calls"
    nvcc = fake_tool(tmp_path / "bin", "nvcc", f'echo x >> {calls}\necho "Cuda compilation tools, release 13.0, V13.0.88"')
    memo: toolchain.VersionMemo = {}
    assert toolchain.find_nvcc(nvcc, versions=memo).version == "13.0.88"
    assert toolchain.find_nvcc(nvcc, versions=memo).version == "13.0.88"
    assert calls.read_text().count("x") == 1
    nvcc.write_text(nvcc.read_text().replace("V13.0.88", "V13.1.80").replace("13.0,", "13.1,"))
    assert toolchain.find_nvcc(nvcc, versions=memo).version == "13.1.80"
    assert calls.read_text().count("x") == 2


def test_cuda_version_is_major_minor():
    nvcc = toolchain.Compiler(Path("/x/nvcc"), "13.0.88", "nvcc", "PATH")
    assert toolchain.cuda_version(nvcc) == "13.0"


def test_real_nvcc_if_present():
    try:
        nvcc = toolchain.find_nvcc()
    except ToolchainMissing:
        pytest.skip("no nvcc on this machine")
    assert re.fullmatch(r"\d+\.\d+\.\d+", nvcc.version)
    assert re.fullmatch(r"\d+\.\d+", toolchain.cuda_version(nvcc))


@pytest.mark.parametrize("kind", ["file", "empty folder", "missing"])
def test_an_unusable_cuda_home_is_named_not_silently_passed_over(bare_env, tmp_path, monkeypatch, kind):
    home = tmp_path / "cuda-home"
    if kind == "file":
        home.write_text("not a toolkit")
    elif kind == "empty folder":
        home.mkdir()
    why = {"file": "a file, not a folder", "empty folder": "no bin/nvcc in it", "missing": "no such folder"}[kind]
    monkeypatch.setenv("CUDA_HOME", str(home))
    with pytest.raises(ToolchainMissing, match=re.escape(f"$CUDA_HOME={home} not used: {why}")):
        toolchain.find_nvcc()
    fake_nvcc(bare_env, "13.0")  # another nvcc is found: used, and the variable's problem said beside it
    found = toolchain.find_nvcc()
    assert found.source == "PATH"
    assert found.describe().endswith(f"(found via PATH); $CUDA_HOME={home} not used: {why}")


# -- host compiler --------------------------------------------------------------------------------


def test_host_compiler_order_and_kinds(bare_env, tmp_path, monkeypatch):
    fake_tool(bare_env, "g++", 'echo "g++ (Debian 12.2.0-14) 12.2.0"')
    fake_tool(bare_env, "clang++", 'echo "Debian clang version 16.0.6 (15)"')
    found = toolchain.find_host_cxx()
    assert (found.kind, found.version, found.source) == ("g++", "12.2.0", "PATH")
    monkeypatch.setenv("CXX", "clang++")
    found = toolchain.find_host_cxx()
    assert (found.kind, found.version, found.source) == ("clang++", "16.0.6", "$CXX")


def test_no_host_compiler_says_what_to_install(bare_env):
    with pytest.raises(ToolchainMissing, match=r"no C\+\+ compiler found: install g\+\+"):
        toolchain.find_host_cxx()


def test_real_host_compiler():
    if not any(shutil.which(name) for name in toolchain.HOST_CXX_NAMES):
        pytest.skip("no C++ compiler on this machine")
    cxx = toolchain.find_host_cxx()
    assert cxx.kind in ("g++", "c++", "clang++")
    assert re.fullmatch(r"\d+(\.\d+)+", cxx.version)


def test_cxx_may_name_a_launcher_and_the_compiler(bare_env, monkeypatch):
    fake_tool(bare_env, "launch", 'exec "$@"')
    fake_tool(bare_env, "g++", 'echo "g++ (Debian 12.2.0-14) 12.2.0"')
    monkeypatch.setenv("CXX", "launch g++")
    found = toolchain.find_host_cxx()
    assert (found.kind, found.version, found.source, found.argv) == ("g++", "12.2.0", "$CXX", [str(bare_env / "launch"), "g++"])
    assert found.describe() == f"g++ 12.2.0 at {bare_env / 'launch'} g++ (found via $CXX)"
    monkeypatch.setenv("CXX", "nosuch g++")
    with pytest.raises(ToolchainMissing, match=r"\$CXX=nosuch g\+\+: nosuch is not an executable file"):
        toolchain.find_host_cxx()


def test_a_compiler_path_with_a_space_in_cxx_is_one_program(bare_env, tmp_path, monkeypatch):
    compiler = fake_tool(tmp_path / "my tools", "g++", 'echo "g++ (Debian 12.2.0-14) 12.2.0"')
    monkeypatch.setenv("CXX", str(compiler))
    assert toolchain.find_host_cxx().argv == [str(compiler)]


# -- cuobjdump ------------------------------------------------------------------------------------


def test_cuobjdump_next_to_nvcc_wins(bare_env, tmp_path, monkeypatch):
    nvcc_path = fake_nvcc(tmp_path / "kit" / "bin", "13.0")
    beside = fake_tool(nvcc_path.parent, "cuobjdump", "true")
    fake_tool(bare_env, "cuobjdump", "true")
    nvcc = toolchain.find_nvcc(nvcc_path)
    assert toolchain.find_cuobjdump(nvcc) == beside
    assert toolchain.find_cuobjdump(None) == bare_env / "cuobjdump"


def test_no_cuobjdump_is_none(bare_env):
    assert toolchain.find_cuobjdump(None) is None


# -- FFI headers ----------------------------------------------------------------------------------


def make_ffi_include(root: Path) -> Path:
    api = root / "xla" / "ffi" / "api"
    api.mkdir(parents=True)
    for name in ("ffi.h", "api.h", "c_api.h"):
        (api / name).write_text(f"// {name}\n")
    return root


def test_explicit_ffi_include(tmp_path):
    include = make_ffi_include(tmp_path / "inc")
    assert toolchain.ffi_include_dir(include) == include
    with pytest.raises(ToolchainMissing, match="--ffi-include .*no xla/ffi/api/ffi.h there"):
        toolchain.ffi_include_dir(tmp_path)


def test_ffi_include_from_jaxlib_without_importing_it(fresh_ffi_lookup):
    if importlib.util.find_spec("jaxlib") is None:
        pytest.skip("jaxlib is not installed")
    include = toolchain.ffi_include_dir()
    assert (include / "xla/ffi/api/ffi.h").is_file()
    assert include.parent.name == "jaxlib"


def test_missing_ffi_headers_say_how_to_get_them(fresh_ffi_lookup, monkeypatch):
    monkeypatch.setattr(toolchain, "jaxlib_include", lambda: None)
    monkeypatch.setattr(toolchain, "_jax_reported_include", lambda: None)
    with pytest.raises(ToolchainMissing) as caught:
        toolchain.ffi_include_dir()
    assert "pip install -e '.[jax]'" in str(caught.value) and "--ffi-include" in str(caught.value)
    assert caught.value.exit_code == 2


@pytest.mark.slow
def test_jax_reports_the_same_include_dir():
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    reported = toolchain._jax_reported_include()
    assert reported is not None and reported == toolchain.jaxlib_include()


def test_ffi_headers_digest_follows_content(tmp_path):
    include = make_ffi_include(tmp_path / "inc")
    before = toolchain.ffi_headers_digest(include)
    assert toolchain.ffi_headers_digest(include) == before
    (include / "xla/ffi/api/api.h").write_text("// changed\n")
    assert toolchain.ffi_headers_digest(include) != before


# -- GPU archs ------------------------------------------------------------------------------------


def test_visible_gpu_archs_from_nvidia_smi(bare_env):
    fake_tool(bare_env, "nvidia-smi", 'printf "9.0\\n8.0\\n9.0\\n"')
    assert toolchain.visible_gpu_archs() == ["sm_80", "sm_90"]


@pytest.mark.parametrize("body", ["exit 9", "sleep 5"])
def test_visible_gpu_archs_when_nvidia_smi_fails_or_hangs(bare_env, monkeypatch, body):
    monkeypatch.setattr(toolchain, "NVIDIA_SMI_TIMEOUT_S", 0.3)
    fake_tool(bare_env, "nvidia-smi", f'echo "9.0"\n{body}' if body == "exit 9" else f"exec {body}")
    assert toolchain.visible_gpu_archs() == []


def test_no_nvidia_smi_means_no_gpu(bare_env):
    assert toolchain.visible_gpu_archs() == []


def test_resolve_archs(bare_env):
    assert toolchain.resolve_archs(("sm_90", "sm_80", "sm_90")) == (["sm_80", "sm_90"], "as requested")
    archs, why = toolchain.resolve_archs(None)
    assert archs == list(toolchain.DEFAULT_ARCHS) == ["sm_80", "sm_90"]
    assert why.startswith("no GPU visible") and "PTX compute_90" in why
    fake_tool(bare_env, "nvidia-smi", 'echo "9.0"')
    assert toolchain.resolve_archs(()) == (["sm_90"], "the visible GPU")


def test_arch_specific_archs_replace_a_visible_gpus_and_join_the_defaults(bare_env):
    archs, why = toolchain.resolve_archs(None, arch_specific=True)
    assert archs == ["sm_80", "sm_90", "sm_90a"]  # the portable PTX stays compute_90
    assert why.startswith("no GPU visible") and "sm_80, sm_90, sm_90a + PTX compute_90" in why
    fake_tool(bare_env, "nvidia-smi", 'echo "9.0"; echo "8.0"')
    assert toolchain.resolve_archs(None, arch_specific=True) == (["sm_80", "sm_90a"], "the visible GPUs, arch-specific ([build] arch_specific)")
    assert toolchain.resolve_archs(None) == (["sm_80", "sm_90"], "the visible GPUs")
    assert toolchain.resolve_archs(("sm_90",), arch_specific=True) == (["sm_90"], "as requested")  # --arch and a list of archs win


def test_arch_specific_variant():
    assert [toolchain.arch_specific_variant(a) for a in ("sm_75", "sm_80", "sm_90", "sm_90a", "sm_100", "sm_120")] == [
        None, None, "sm_90a", None, "sm_100a", "sm_120a"
    ]


def test_arch_number():
    assert [toolchain.arch_number(a) for a in ("sm_80", "sm_90a", "sm_100", "compute_75")] == [80, 90, 100, 75]


# -- tools asked a question: --version, nvidia-smi, ldconfig ----------------------------------------


SLEEP = shutil.which("sleep")  # found before bare_env empties PATH


def test_output_that_is_not_utf8_is_read_not_a_crash(bare_env, tmp_path, monkeypatch):
    fake_tool(bare_env, "g++", r'printf "g++ \377 12.2.0\n"')
    fake_tool(bare_env, "nvcc", r'printf "release 13.0, V13.0.88 \377\n"')
    fake_tool(bare_env, "nvidia-smi", r'printf "9.0\n\377\n"')
    fake_tool(bare_env, "ldconfig", r'printf "\377\376\n\tlibfake.so.1 (libc6,x86-64) => /x/libfake.so.1\n"')
    assert toolchain.find_host_cxx().version == "12.2.0"
    assert toolchain.find_nvcc().version == "13.0.88"
    assert toolchain.visible_gpu_archs() == ["sm_90"]
    elf._ldconfig_names.cache_clear()
    try:
        elf._ldconfig_names()  # the names parsed are the host's ABI's: only that it answers matters here
    finally:
        elf._ldconfig_names.cache_clear()


@pytest.mark.parametrize("tool", ["nvcc", "nvidia-smi", "ldconfig"])
def test_a_tool_that_hangs_is_stopped_with_its_children_and_said_to_hang(bare_env, tmp_path, monkeypatch, tool):
    monkeypatch.setattr(toolchain, "PROBE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(toolchain, "NVIDIA_SMI_TIMEOUT_S", 0.5)
    pid_file = tmp_path / "child.pid"
    fake_tool(bare_env, tool, f"{SLEEP} 30 &\necho $! > {pid_file}\nwait")
    started = time.monotonic()
    if tool == "nvcc":
        with pytest.raises(ToolchainMissing, match=r"^nvcc --version did not answer in 0.5 s: xlacc stopped it"):
            toolchain.find_nvcc()
    elif tool == "nvidia-smi":
        archs, why = toolchain.resolve_archs(None)
        assert archs == list(toolchain.DEFAULT_ARCHS)
        assert why.startswith("no GPU visible (nvidia-smi did not answer in 0.5 s): default sm_80, sm_90")
    else:
        elf._ldconfig_names.cache_clear()
        try:
            assert elf._ldconfig_names() == frozenset()
        finally:
            elf._ldconfig_names.cache_clear()
    assert time.monotonic() - started < 15  # not the 30 s its leftover process sleeps
    assert not alive(pid_file)


def test_a_version_wrapper_that_leaves_a_process_behind_answers_at_once(bare_env, tmp_path):
    pid_file = tmp_path / "child.pid"
    nvcc = fake_tool(tmp_path, "nvcc", f'echo "Cuda compilation tools, release 13.0, V13.0.88"\n{SLEEP} 30 &\necho $! > {pid_file}')
    started = time.monotonic()
    assert toolchain.find_nvcc(nvcc).version == "13.0.88"
    assert time.monotonic() - started < 15  # not the 30 s its leftover process sleeps
    assert not alive(pid_file)


def test_a_failing_nvidia_smi_is_said_to_fail(bare_env):
    fake_tool(bare_env, "nvidia-smi", 'echo "NVIDIA-SMI has failed"; exit 9')
    assert toolchain.resolve_archs(None)[1].startswith("no GPU visible (nvidia-smi failed (exit 9)): default")
