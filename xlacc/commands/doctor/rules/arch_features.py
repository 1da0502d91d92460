"""Code that only an arch-specific target compiles, and a build whose archs leave it out.

A kernel guards instructions only sm_90a has (wgmma, setmaxnreg) with ``#if
__CUDA_ARCH_FEAT_SM90_ALL``. Built for sm_90 and not sm_90a, the guard is false in every pass: on
an H100 the kernel runs its other branch (slower) or nothing (the outputs keep whatever was there),
and neither the compiler nor the loader says a word. nvcc has no warning for it, so xlacc reads the
sources for the guard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers.cxx_macros import arch_specific_guards


def left_out(sources: Mapping[Path, bytes], archs: Sequence[str], *, in_project: bool) -> list[Finding]:
    """One finding per arch whose guarded code ``sources`` hold while ``archs`` build the plain
    arch without its arch-specific variant (sm_90 without sm_90a)."""
    guarded: dict[int, list[str]] = {}
    for path, text in sources.items():
        for number in sorted(arch_specific_guards(text)):
            guarded.setdefault(number, []).append(path.name)
    built = set(archs)
    return [_finding(number, files, archs, in_project) for number, files in sorted(guarded.items())
            if f"sm_{number}" in built and f"sm_{number}a" not in built]  # fmt: skip


def _finding(number: int, files: list[str], archs: Sequence[str], in_project: bool) -> Finding:
    plain, specific = f"sm_{number}", f"sm_{number}a"
    names = ", ".join(dict.fromkeys(files))
    evidence = (f"{names} guard{'s' if len(files) == 1 else ''} code with __CUDA_ARCH_FEAT_SM{number}_ALL, which only {specific} compiles; "
                f"this build's archs are {', '.join(archs)}: on an {plain} GPU that code is left out")  # fmt: skip
    if in_project:
        fix = (f"Add `arch_specific = true` under [build] in xlacc.toml (auto archs then build {specific} for a visible {plain} GPU), "
               f"or list \"{specific}\" in [build] archs, or `xlacc build --arch {specific}`.")  # fmt: skip
    else:
        fix = f"Build with `--arch {specific}` (nvcc `-gencode arch=compute_{number}a,code=sm_{number}a`)."
    return make("arch-specific-code-left-out", evidence, title=f"code only {specific} compiles, and no {specific} in the build", fix=fix)
