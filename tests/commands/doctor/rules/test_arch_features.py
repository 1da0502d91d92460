"""xlacc.commands.doctor.rules.arch_features: code guarded for sm_90a, and a build without sm_90a."""

from __future__ import annotations

from pathlib import Path

from xlacc.commands.doctor.rules import arch_features

GUARDED = b"#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#define HAS_WGMMA 1\n#endif\n"
PLAIN = b"__global__ void k(float* out) { out[threadIdx.x] = 0.f; }\n"


def test_a_plain_sm_90_build_of_guarded_code_is_said_with_the_files_and_the_fix():
    [finding] = arch_features.left_out({Path("kernel.cu"): GUARDED, Path("entry.cu"): PLAIN}, ["sm_80", "sm_90"], in_project=True)
    assert finding.code == "arch-specific-code-left-out" and finding.severity == "warning"
    assert finding.title == "code only sm_90a compiles, and no sm_90a in the build"
    assert finding.evidence.startswith("kernel.cu guards code with __CUDA_ARCH_FEAT_SM90_ALL, which only sm_90a compiles; this build's archs are sm_80, sm_90")
    assert "`arch_specific = true` under [build]" in finding.fix and "--arch sm_90a" in finding.fix


def test_kernel_files_built_without_a_project_are_told_the_flag():
    [finding] = arch_features.left_out({Path("a.cu"): GUARDED, Path("b.cuh"): GUARDED}, ["sm_90"], in_project=False)
    assert finding.evidence.startswith("a.cu, b.cuh guard code")
    assert finding.fix == "Build with `--arch sm_90a` (nvcc `-gencode arch=compute_90a,code=sm_90a`)."


def test_nothing_to_say_when_the_variant_is_built_the_arch_is_not_or_nothing_is_guarded():
    assert arch_features.left_out({Path("k.cu"): GUARDED}, ["sm_90", "sm_90a"], in_project=True) == []
    assert arch_features.left_out({Path("k.cu"): GUARDED}, ["sm_90a"], in_project=True) == []
    assert arch_features.left_out({Path("k.cu"): GUARDED}, ["sm_80"], in_project=True) == []  # no Hopper build: no Hopper code expected
    assert arch_features.left_out({Path("k.cu"): PLAIN}, ["sm_90"], in_project=True) == []
