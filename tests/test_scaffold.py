"""`xlacc new`: which files a project gets, the overwrite policy, and name validation."""

from __future__ import annotations

import pytest

from xlacc import scaffold
from xlacc import spec as specmod
from xlacc.errors import UsageError
from xlacc.scaffold import NewRequest


def request(tmp_path, **kwargs):
    kwargs.setdefault("name", "myop")
    kwargs.setdefault("directory", tmp_path / kwargs["name"])
    return NewRequest(**kwargs)


@pytest.mark.parametrize(
    "platform, frameworks, expected",
    [
        ("cuda", ["jax", "torch-xla"], {"xlacc.toml", "kernel.cu", "reference.py", "jax_ops.py", "torch_xla_ops.py", "test_myop.py"}),
        ("cpu", ["jax"], {"xlacc.toml", "kernel.cc", "reference.py", "jax_ops.py", "test_myop.py"}),
        ("cuda", ["torch-xla"], {"xlacc.toml", "kernel.cu", "reference.py", "torch_xla_ops.py", "test_myop.py"}),
    ],
)
def test_files_follow_platform_and_frameworks(tmp_path, platform, frameworks, expected):
    report = scaffold.create(request(tmp_path, platform=platform, frameworks=frameworks))
    project = tmp_path / "myop"
    assert {p.name for p in project.iterdir()} == expected
    assert not report.failed
    spec = specmod.load(project)
    assert spec.platform == platform and spec.frameworks == tuple(frameworks)


def test_every_template_renders_every_combination_and_reads_back(tmp_path):
    for template in scaffold.available_templates():
        for platform in ("cuda", "cpu"):
            for api in ("ffi", "legacy"):
                req = request(tmp_path, template=template, platform=platform, api=api)
                try:
                    spec, meta = scaffold.spec_for(req)
                except UsageError as exc:  # a template may support one platform only
                    assert "supports --platform" in str(exc)
                    continue
                files = scaffold.render(spec, meta)  # round-trips xlacc.toml and compiles the Python
                assert spec.kernel_file in files


def test_dry_run_writes_nothing(tmp_path):
    report = scaffold.create(request(tmp_path, dry_run=True))
    assert not (tmp_path / "myop").exists()
    assert all("would write" in c.detail for c in report.checks)
    assert report.data["dry_run"] is True


def test_non_empty_directory_is_refused_and_left_untouched(tmp_path):
    project = tmp_path / "myop"
    project.mkdir()
    (project / "kernel.cu").write_text("// my own kernel\n")
    with pytest.raises(UsageError, match="not empty; nothing was written"):
        scaffold.create(request(tmp_path))
    assert [p.name for p in project.iterdir()] == ["kernel.cu"]
    assert (project / "kernel.cu").read_text() == "// my own kernel\n"


def test_force_overwrites_generated_files_and_keeps_others(tmp_path):
    project = tmp_path / "myop"
    project.mkdir()
    (project / "kernel.cu").write_text("// old\n")
    (project / "notes.txt").write_text("mine\n")
    report = scaffold.create(request(tmp_path, force=True))
    assert "XLA_FFI_DEFINE_HANDLER_SYMBOL" in (project / "kernel.cu").read_text()
    assert (project / "notes.txt").read_text() == "mine\n"
    assert any("overwrote" in c.detail for c in report.checks)
    assert not list(project.glob(".*.tmp"))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "bad-name"}, "invalid name"),
        ({"name": "int"}, "keyword"),
        ({"name": "__init"}, "reserved"),
        ({"template": "nope"}, "unknown template"),
        ({"platform": "rocm"}, "invalid platform"),
        ({"api": "typed"}, "invalid api"),
        ({"frameworks": ["tensorflow"]}, "invalid framework"),
        ({"dtypes": ["float32"]}, "invalid dtype"),
        ({"target": 'x"); import os; os.system("rm -rf /'}, "invalid target"),
        ({"template": "add", "inputs": ["a:f32"]}, "blank"),
    ],
)
def test_bad_requests_are_one_line_usage_errors(tmp_path, kwargs, message):
    with pytest.raises(UsageError, match=message) as info:
        scaffold.create(request(tmp_path, **kwargs))
    assert "\n" not in str(info.value)
    assert not (tmp_path / kwargs.get("name", "myop")).exists()


@pytest.mark.parametrize("flag", [("inputs", ["x:f32", 'y"+1:f32']), ("outputs", ["z;drop:f32"]), ("attrs", ["eps:f32=1e-6; evil()"])])
def test_blank_flags_cannot_inject_code(tmp_path, flag):
    with pytest.raises(UsageError):
        scaffold.create(request(tmp_path, template="blank", **{flag[0]: flag[1]}))


@pytest.mark.parametrize("flag", [("inputs", ["xp:f32"]), ("attrs", ["status:i32"]), ("outputs", ["stream:f32"]), ("inputs", ["x", "x"])])
def test_blank_names_that_would_shadow_generated_code_are_refused(tmp_path, flag):
    with pytest.raises(UsageError, match="uses that name itself|used twice"):
        scaffold.create(request(tmp_path, template="blank", **{flag[0]: flag[1]}))


def test_blank_signature_from_flags(tmp_path):
    scaffold.create(
        request(tmp_path, template="blank", inputs=["a:T", "b:i32"], outputs=["c:T"], attrs=["scale:f32=0.5", "k:i64"], dtypes=["f32", "f16"])
    )
    spec = specmod.load(tmp_path / "myop")
    assert [(t.name, t.dtypes) for t in spec.inputs] == [("a", ("f32", "f16")), ("b", ("i32",))]
    assert spec.outputs[0].dtypes == ("f32", "f16") and spec.outputs[0].like == "a"
    assert [(a.name, a.type, a.default) for a in spec.attrs] == [("scale", "f32", 0.5), ("k", "i64", None)]


def test_generated_code_carries_the_facts(tmp_path):
    scaffold.create(request(tmp_path, name="op", platform="cuda", api="ffi", frameworks=["jax", "torch-xla"]))
    project = tmp_path / "op"
    kernel = (project / "kernel.cu").read_text()
    jax_ops = (project / "jax_ops.py").read_text()
    torch_ops = (project / "torch_xla_ops.py").read_text()
    assert "kCmdBufferCompatible" in kernel
    assert "cudaGetLastError" in kernel and "xlacc::launch(" in kernel and ", stream, xp, yp, outp, n)" in kernel
    assert "__attribute__((weak))" in kernel and "XlaCustomCallStatusSetFailure" in kernel
    assert 'PLATFORM = "CUDA"' in jax_ops and "REGISTER_API_VERSION = 1" in jax_ops and "API_VERSION = 4" in jax_ops
    assert 'PLATFORM = "CUDA"' in torch_ops and "API_VERSION = API_VERSION_STATUS_RETURNING" in torch_ops
    assert "PyCapsule_New" in torch_ops and "torch.float32" in torch_ops
    assert "const int size" not in kernel  # sizes come from the buffers or backend_config


def test_the_wheel_ships_every_template(tmp_path):
    """Installed from a wheel, xlacc finds its templates inside the package (xlacc/templates)."""
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0 and "hatchling" in built.stderr:
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(root)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    names = set(zipfile.ZipFile(next(tmp_path.glob("xlacc-*.whl"))).namelist())
    for source in (root / "templates").rglob("*"):
        if source.is_file():
            assert f"xlacc/templates/{source.relative_to(root / 'templates').as_posix()}" in names
