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
