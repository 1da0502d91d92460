"""Finding codes about a shared library and what it exports."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(
        "library-invalid",
        "library",
        "error",
        "not a loadable shared library",
        "The file is not an ELF shared library for this machine: not ELF at all, cut short, an object file or "
        "executable, or built for another CPU architecture.",
        "Rebuild it with `xlacc build` (or `nvcc -shared -Xcompiler -fPIC`), copy it whole, and build for this "
        "machine's CPU architecture.",
        "`OSError: ./xla_gpu_custom_ops.so: invalid ELF header`",
        home=RULES + "library",
    ),
    CatalogueEntry(
        "library-not-found",
        "library",
        "error",
        "shared library not found",
        "No file at that path. ctypes resolves a relative path against the current directory, not the script's.",
        "Build it first (`xlacc build`), and load it by an absolute path (e.g. `Path(__file__).parent / "
        "\"build/libop.so\"`).",
        "`OSError: ./xla_gpu_custom_ops.so: cannot open shared object file: No such file or directory`",
        home=RULES + "library",
    ),
    CatalogueEntry(
        "dependency-missing",
        "library",
        "error",
        "a library it needs cannot be found",
        "A DT_NEEDED entry is on none of RPATH/RUNPATH, LD_LIBRARY_PATH, the ld.so cache or the standard "
        "directories, or the library needs a symbol at load time that nothing loaded provides.",
        "Install the missing library or add its directory to LD_LIBRARY_PATH; link the CUDA runtime statically "
        "(nvcc's default, `-cudart static`); give libraries shipped alongside an `$ORIGIN` RUNPATH.",
        "`OSError: libcudart.so.12: cannot open shared object file: No such file or directory`",
        home=RULES + "library",
    ),
    CatalogueEntry(
        "symbol-missing",
        "library",
        "error",
        "entry point not in the library",
        "No symbol of that name exists, exported or hidden, C or C++: a typo, another name, or the file "
        "defining it was not compiled in.",
        "Use the exported name (the closest ones are listed), or add the source that defines it to the build.",
        "`AttributeError: ./libop.so: undefined symbol: XlaGpuSimpleAdd`",
        home=RULES + "symbols",
    ),
    CatalogueEntry(
        "symbol-mangled",
        "library",
        "error",
        "entry point exported only under a C++-mangled name",
        "Without `extern \"C\"` the C++ compiler encodes the parameter types into the symbol name "
        "(`_Z15XlaGpuSimpleAddP11CUstream_stPPvPKcm`), so ctypes cannot find the plain name.",
        "Declare the entry point `extern \"C\"` (`XLA_FFI_DEFINE_HANDLER_SYMBOL` already is).",
        "`void XlaGpuSimpleAdd(cudaStream_t, void**, const char*, size_t)` defined without `extern \"C\"`",
        home=RULES + "symbols",
    ),
    CatalogueEntry(
        "symbol-hidden",
        "library",
        "error",
        "entry point present but not exported",
        "The symbol is defined but LOCAL or hidden (`-fvisibility=hidden`, `static`, an anonymous namespace or "
        "a version script), so the dynamic linker and ctypes cannot see it.",
        "Mark it `__attribute__((visibility(\"default\")))` (xlacc builds with -fvisibility=hidden), and keep it "
        "out of anonymous namespaces and `static`.",
        "`nvcc -shared -Xcompiler -fPIC,-fvisibility=hidden` on an entry point without visibility(\"default\")",
        home=RULES + "symbols",
    ),
    CatalogueEntry(
        "arch-mismatch",
        "library",
        "error",
        "no GPU code for this GPU",
        "The library's fatbin holds neither SASS for this GPU's architecture nor PTX the driver can JIT-compile "
        "for it. A launch then fails (`no kernel image is available for execution on the device`), and without "
        "a launch check the outputs silently stay zeros or garbage.",
        "Rebuild for the GPU: `xlacc build --arch sm_XY`, or `-gencode arch=compute_XY,code=[sm_XY,compute_XY]` "
        "(SASS, plus PTX that newer GPUs can JIT).",
        "`INTERNAL: launch failed: no kernel image is available for execution on the device`",
        home=RULES + "verify",
    ),
)
