"""Finding codes about building the library."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(
        "compile-error",
        "build",
        "error",
        "the compiler rejected the sources",
        "`xlacc build` ran nvcc (or the host compiler for a cpu project) and it failed; the evidence is the "
        "compiler's own `file:line` lines (warnings from XLA's headers are shown only with `--verbose`).",
        "Fix the lines shown; `xlacc build --verbose` prints the command line and the full compiler output.",
        "`kernel.cu(12): error: identifier \"blockIdx_x\" is undefined`",
        home=RULES + "compiler",
    ),
    CatalogueEntry(
        "compiler-warning",
        "build",
        "warning",
        "the compiler warned about the sources",
        "The library was built, and the compiler printed warnings about the project's own files (not about "
        "XLA's headers).",
        "Review the warnings shown; `xlacc build --verbose` prints every compiler line.",
        "`kernel.cu(30): warning #177-D: variable \"n\" was declared but never referenced`",
        home=RULES + "compiler",
    ),
    CatalogueEntry(
        "arch-specific-code-left-out",
        "build",
        "warning",
        "code only an arch-specific target compiles, and no such target in the build",
        "The sources guard code with `__CUDA_ARCH_FEAT_SM90_ALL` (instructions only sm_90a has: wgmma, "
        "setmaxnreg), but the build compiles sm_90 and not sm_90a. The guard is then false in every pass: on an "
        "H100 or H200 the kernel runs its other branch, slower, or nothing at all, and the outputs keep what was "
        "in them. Neither nvcc nor the driver says so.",
        "Build the arch-specific target: `arch_specific = true` under [build] (auto archs), \"sm_90a\" in [build] "
        "archs, or `xlacc build --arch sm_90a`.",
        "`kernel.cu guards code with __CUDA_ARCH_FEAT_SM90_ALL, which only sm_90a compiles; this build's archs are sm_90`",
        home=RULES + "arch_features",
    ),
    CatalogueEntry(
        "library-unreadable",
        "build",
        "error",
        "the library xlacc just built cannot be read back",
        "After linking, `xlacc build` reads the library's symbols and GPU code; a library it cannot parse was "
        "written incompletely (a full disk, another process writing the same path).",
        "Rebuild with `xlacc build --force`; check free disk space and that no other build writes the same output.",
        "`build/libop.so: ELF file cut short (4096 bytes, its headers need 18432)`",
        home="xlacc.commands.build.builder",
    ),
)
