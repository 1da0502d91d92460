"""doctor's custom-call-replicated: compiled HLO (a file, an --xla_dump_to folder, a command's dump)
in which all-gathers feed a custom call."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from locations import REPO_DIR

from xlacc.commands.doctor.rules import hlo_sharding

ROOT = REPO_DIR
ARTIFACTS = ROOT / "tests" / "artifacts" / "doctor"
REPLICATED = (ARTIFACTS / "sources" / "replicated_custom_call.hlo").read_text()
SHARDED = (ARTIFACTS / "sources" / "clean" / "sharded_custom_call.hlo").read_text()

# What XLA:GPU prints: asynchronous all-gathers, a copy in between, and cuBLAS's own custom call.
GPU_STYLE = """
ENTRY %main {
  %p0 = f32[8]{0} parameter(0)
  %p1 = f32[8]{0} parameter(1)
  %ags = (f32[8]{0}, f32[16]{0}) all-gather-start(%p0), replica_groups={{0,1}}, dimensions={0}
  %agd = f32[16]{0} all-gather-done(%ags)
  %copy = f32[16]{0} copy(%agd)
  %gemm = f32[16]{0} custom-call(%copy, %p1), custom_call_target="__cublas$gemm"
  ROOT %call = f32[16]{0} custom-call(%copy, %p1), custom_call_target="my_kernel", api_version=API_VERSION_TYPED_FFI
}
"""


def test_a_custom_call_on_gathered_inputs_is_named_with_the_gathers():
    (finding,) = hlo_sharding.diagnose(REPLICATED, where="module.txt")
    assert finding.code == "custom-call-replicated" and "`addc`" in finding.title
    assert finding.evidence.startswith("module.txt: 2 of the 2 operands") and "all-gather(%param)" in finding.evidence
    assert "metadata" not in finding.evidence and "custom_partitioning" in finding.fix


def test_a_partitioned_custom_call_is_clean():
    assert "custom_call_target=\"addc\"" in SHARDED and hlo_sharding.diagnose(SHARDED) == []


def test_asynchronous_gathers_behind_a_copy_count_and_xlas_own_calls_do_not():
    findings = hlo_sharding.diagnose(GPU_STYLE)
    assert [f.title for f in findings] == ["`my_kernel` runs on gathered, unsplit inputs"]
    assert "1 of the 2 operands" in findings[0].evidence


def test_a_commands_own_dump_folder_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_force_host_platform_device_count=2 --xla_dump_to={tmp_path}")
    env, folder, _ = hlo_sharding.dump_environment()
    assert folder == tmp_path and env["XLA_FLAGS"] == os.environ["XLA_FLAGS"]
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    env, folder, cleanup = hlo_sharding.dump_environment()
    with cleanup:
        assert env["XLA_FLAGS"] == f"--xla_force_host_platform_device_count=2 --xla_dump_to={folder} --xla_dump_hlo_as_text"
    assert not folder.exists()


def test_doctor_reads_the_compiled_hlo_a_command_dumps(tmp_path):
    """The command plays XLA: it writes a compiled module into the folder XLA_FLAGS names."""
    script = (
        "import os, re, shutil; "
        "folder = re.search(r'--xla_dump_to=(\\S+)', os.environ['XLA_FLAGS']).group(1); "
        f"shutil.copy({str(ARTIFACTS / 'sources' / 'replicated_custom_call.hlo')!r}, "
        "os.path.join(folder, 'module_0000.jit_f.cpu_after_optimizations.txt'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run([sys.executable, "-m", "xlacc", "doctor", "--json", "--", sys.executable, "-c", script],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    report = json.loads(done.stdout)
    assert done.returncode == 1 and [f["code"] for f in report["findings"]] == ["custom-call-replicated"]
    assert "module_0000.jit_f.cpu_after_optimizations.txt" in report["findings"][0]["evidence"]
