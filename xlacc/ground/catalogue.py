"""The catalogue of every finding code xlacc gives: what each means, why it happens, how to fix it.

It is the only source of codes and texts, for doctor's rules and for the other commands (build's
compiler messages, run-smoke's harnesses). Rules never write these texts themselves: they call
:func:`make` with a code and the evidence they saw, and may override the title or fix with
something more specific. A harness that reports a code in its own situation takes its words from
:data:`WORDINGS`. docs/doctor.md and the README's table are generated from this module
(``python -m xlacc.commands.doctor.docs``), and a test keeps them equal.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from xlacc.ground.report import Finding, Severity

GROUPS = {
    "environment": "Environment",
    "build": "Build",
    "registration": "Registration and call",
    "library": "Shared object",
    "source": "Source",
    "runtime": "Runtime",
    "project": "Project and build",
    "transforms": "Sharding, vmap and grad",
}
DEFAULT_LIKELIHOOD = 0.5


@dataclass(frozen=True)
class CatalogueEntry:
    code: str
    group: str
    severity: Severity
    title: str
    explanation: str
    fix: str
    example: str  # one line: a text or snippet that triggers it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


CATALOGUE: tuple[CatalogueEntry, ...] = (
    # -- environment ----------------------------------------------------------------------------
    CatalogueEntry(
        "nvcc-missing",
        "environment",
        "warning",
        "nvcc not found: CUDA kernels cannot be built here",
        "`xlacc build` compiles .cu files with nvcc; none was found via --nvcc, $CUDACXX, PATH, "
        "$CUDA_HOME/bin, /usr/local/cuda/bin or pip's nvidia-cuda-nvcc. CPU kernels (.cc) still build with g++.",
        "`pip install -e '.[cuda]'` (CUDA 13 nvcc, runtime and CCCL headers from PyPI, about 130 MB), "
        "or install a CUDA toolkit and put its bin/ on PATH, or pass `--nvcc PATH`.",
        "`xlacc doctor` on a machine without a CUDA toolkit: `nvcc: command not found`",
    ),
    CatalogueEntry(
        "no-gpu",
        "environment",
        "info",
        "no NVIDIA GPU visible",
        "nvidia-smi is missing or lists no GPU (or a framework does not see it). Kernels still build, and "
        "programs still lower for the GPU (`lowering_platforms=(\"cuda\",)`), but nothing runs on a GPU here.",
        "Run on a machine with an NVIDIA GPU and its driver; pass `--arch sm_XY` to check a .so for the GPU "
        "it will run on; for JAX on a GPU install the CUDA plugin (`pip install \"jax[cuda13]\"`).",
        "`nvidia-smi` absent, or `CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected`",
    ),
    CatalogueEntry(
        "torch-xla-no-cuda",
        "environment",
        "info",
        "this torch_xla has no CUDA backend",
        "XLA:CUDA was deprecated in torch_xla 2.8 (no CUDA wheels were built) and removed in 2.9; the PyPI "
        "wheels of every version are CPU/TPU builds. Custom-call registration needs the PJRT CUDA runtime "
        "(2.9: `RuntimeError: RegisterCustomCall not implemented` on every platform).",
        "Run PyTorch programs with custom calls on the GPU through torchax (PyTorch on JAX), or call the op through JAX "
        "(`jax.ffi`), or use a torch_xla <= 2.7 built from source with CUDA; with this torch_xla, check the lowering on "
        "the CPU (`torch_xla._XLAC._get_xla_tensors_hlo([out])`), as `xlacc run-smoke` does before it runs the "
        "emitted program through jaxlib.",
        "`RuntimeError: No PjRtPlugin registered for: CUDA` or `RegisterCustomCall not implemented`",
    ),
    CatalogueEntry(
        "torch-xla-version-mismatch",
        "environment",
        "error",
        "torch and torch_xla are different releases",
        "torch_xla's `_XLAC` extension is built against one torch release and its wheel does not pin torch: "
        "with another torch it fails at import with an undefined C++ symbol from c10/ATen.",
        "Install the same release of both: `pip install torch==X.Y.Z torch_xla==X.Y.Z`.",
        "`ImportError: .../_XLAC.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZNK3c1010TensorImpl...`",
    ),
    CatalogueEntry(
        "jax-legacy-api-removed",
        "environment",
        "error",
        "old JAX custom-call API (removed in JAX 0.6)",
        "`jax.lib.xla_client.register_custom_call_target` was removed in JAX v0.6.0, and `jax.lib.xla_client` "
        "later disappeared altogether; code written for it fails at import or registration.",
        "Register with `jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(lib.SYMBOL), platform=\"CUDA\")` "
        "(api_version=1, typed FFI; api_version=0 for a legacy entry point) and call with `jax.ffi.ffi_call`.",
        "`AttributeError: register_custom_call_target has been removed in JAX v0.6.0; use the JAX FFI instead`",
    ),
    CatalogueEntry(
        "ffi-api-skew",
        "environment",
        "error",
        "FFI headers, plugin and runtime are from different releases",
        "A typed FFI handler carries the XLA FFI API version of the headers it was compiled with; jaxlib refuses "
        "handlers from newer headers (`the handler's API version ... is incompatible`, `Unexpected ... size ... "
        "Check installed software versions`), and the lookup then reports `No FFI handler registered`. A jax "
        "CUDA plugin of another release than jaxlib is the same skew inside JAX.",
        "Build against the runtime's own headers (`jax.ffi.include_dir()`, what `xlacc build` uses by default) "
        "and rebuild after every jaxlib upgrade; install the CUDA plugin of jaxlib's exact version "
        "(`pip install -U \"jax[cuda13]\"`).",
        "`XLA FFI handler registration for my_op on platform CUDA (canonical cuda) failed because the handler's API version (0.4) is incompatible with the framework's API version (0.3)`",
    ),
    # -- build ----------------------------------------------------------------------------------
    CatalogueEntry(
        "compile-error",
        "build",
        "error",
        "the compiler rejected the sources",
        "`xlacc build` ran nvcc (or the host compiler for a cpu project) and it failed; the evidence is the "
        "compiler's own `file:line` lines (warnings from XLA's headers are shown only with `--verbose`).",
        "Fix the lines shown; `xlacc build --verbose` prints the command line and the full compiler output.",
        "`kernel.cu(12): error: identifier \"blockIdx_x\" is undefined`",
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
    ),
    # -- registration and call ------------------------------------------------------------------
    CatalogueEntry(
        "platform-name",
        "registration",
        "error",
        "registered for a platform name XLA never looks up",
        "The legacy registry matches (name, platform) exactly and case-sensitively, and JAX accepts any platform "
        "string at registration and queues it silently: only \"CUDA\" or \"gpu\" (GPU) and \"cpu\" or \"Host\" "
        "(CPU) ever apply. torch_xla <= 2.8 accepts exactly \"CUDA\".",
        "JAX: `platform=\"CUDA\"` (or \"gpu\"); torch_xla: exactly `\"CUDA\"`; on the CPU: `\"cpu\"`.",
        "`jax.ffi.register_ffi_target(\"my_op\", capsule, platform=\"GPU\")`",
    ),
    CatalogueEntry(
        "api-version-mismatch",
        "registration",
        "error",
        "entry-point signature, registration and api_version do not fit",
        "The HLO api_version picks the registry and the calling convention: 1 = `void f(cudaStream_t, void** "
        "buffers, const char* opaque, size_t len)`, 2 and 3 = the same plus `XlaCustomCallStatus*`, 4 = a typed "
        "FFI handler (`XLA_FFI_DEFINE_HANDLER_SYMBOL`). JAX's register_ffi_target has its own scale: 0 = legacy "
        "registry, 1 (default) = typed. A legacy function registered as typed crashes during registration, a "
        "typed handler called as legacy crashes at execution, and torch_xla can only call legacy targets.",
        "Make all three agree. Typed FFI: register with api_version=1 and call with api 4 (JAX only). "
        "Status-returning legacy (5 parameters): register with api_version=0 (JAX) or through torch_xla, call "
        "with api 2 on the GPU (3 on the CPU). Add the `XlaCustomCallStatus*` parameter instead of calling a "
        "4-parameter function with api 2 or 3.",
        "`_xla_custom_call([a, b], \"XlaGpuSimpleAdd\", [[3]], [torch.float32], False, \"\", 4, {})` with `void XlaGpuSimpleAdd(cudaStream_t, void**, const char*, size_t)`",
    ),
    CatalogueEntry(
        "api-version-invalid",
        "registration",
        "error",
        "api_version value not accepted",
        "HLO api_version 0 (UNSPECIFIED) always fails (`Unknown custom-call API version enum value: 0`); "
        "torch_xla's `stablehlo_custom_call` defaults to 0 and `_xla_custom_call` takes all 8 arguments "
        "positionally with no defaults. JAX's register_ffi_target takes only 0 or 1.",
        "Pass the api_version explicitly: 2 (GPU legacy, status-returning), 3 (CPU legacy), 4 (typed FFI, JAX); "
        "register_ffi_target: 1 for a typed handler, 0 for a legacy function.",
        "`UNIMPLEMENTED: API version 2 is not supported by RegisterCustomCallTarget. Supported versions are 0 and 1.`",
    ),
    CatalogueEntry(
        "legacy-api-deprecated",
        "registration",
        "warning",
        "deprecated custom-call API version",
        "XLA logs an error for API_VERSION_ORIGINAL (api 1; on XLA:CPU also api 2) and says it will be removed; "
        "the 4-parameter entry point cannot report a failure.",
        "Move to typed FFI (api 4, `XLA_FFI_DEFINE_HANDLER_SYMBOL`) for JAX, or a status-returning entry point "
        "(api 2 on the GPU, 3 on the CPU) for torch_xla; `xlacc new` writes both.",
        "`Custom call API version `API_VERSION_ORIGINAL` is not supported by XLA:GPU ... It will be fully removed in November 2025.`",
    ),
    CatalogueEntry(
        "target-not-registered",
        "registration",
        "error",
        "custom-call target not registered",
        "XLA looks a target up when the program is compiled, in that process, under the exact name and "
        "platform; nothing was registered there under this name.",
        "Register before the first call, in the same process: `jax.ffi.register_ffi_target(\"NAME\", "
        "jax.ffi.pycapsule(lib.SYMBOL), platform=\"CUDA\")` or `torch_xla._XLAC._xla_register_custom_call_target("
        "\"NAME\", capsule, \"CUDA\")`; the name is case-sensitive. Pending JAX registrations for unknown platforms "
        "are listed in `jaxlib.xla_client._custom_callback`.",
        "`UNIMPLEMENTED: No registered implementation for custom call to XlaGpuSimpleAdd for platform CUDA`",
    ),
    CatalogueEntry(
        "capsule-required",
        "registration",
        "error",
        "function pointer passed without a PyCapsule",
        "Registration takes a PyCapsule holding the function pointer; an int address "
        "(`ctypes.cast(f, c_void_p).value`) or a ctypes function object is refused.",
        "Wrap it: `jax.ffi.pycapsule(lib.SYMBOL)`, or `ctypes.pythonapi.PyCapsule_New(addr, None, None)` "
        "with `restype = ctypes.py_object`.",
        "`TypeError: _xla_register_custom_call_target(): incompatible function arguments ... (arg0: str, arg1: typing_extensions.CapsuleType, arg2: str)`",
    ),
    CatalogueEntry(
        "fixed-target-api",
        "registration",
        "error",
        "_xla_gpu_custom_call cannot call your target",
        "torch_xla 2.5-2.8's `_xla_gpu_custom_call` always emits target \"triton_kernel_call\" with api 2 and a "
        "tuple result, whatever you pass; torch_xla 2.9 removed it.",
        "Use `torch_xla._XLAC._xla_custom_call(inputs, \"TARGET\", output_shapes, output_dtypes, False, "
        "backend_config, 2, {})`.",
        "`AttributeError: module '_XLAC' has no attribute '_xla_gpu_custom_call'`",
    ),
    CatalogueEntry(
        "operand-mismatch",
        "registration",
        "error",
        "operands do not match the handler's binding",
        "A typed handler decodes its operands by its `.Arg<...>()` list: count, dtype and rank must match the "
        "call. Legacy calls check nothing: a wrong count reads past `buffers[]`.",
        "Pass exactly the operands the binding declares, with its dtypes (cast with `.astype`), or bind "
        "`ffi::AnyBuffer` and check the dtype inside the handler.",
        "`[execute] Wrong number of arguments: expected 2 but got 1`",
    ),
    CatalogueEntry(
        "result-mismatch",
        "registration",
        "error",
        "results do not match the handler's binding",
        "The call's results (count, dtype, rank) must match the handler's `.Ret<...>()` list; a legacy call with "
        "the wrong result count returns garbage silently.",
        "Give one result_shape_dtypes entry (torch_xla: one output shape and dtype) per `.Ret<...>()`, with the "
        "declared dtypes.",
        "`[execute] Wrong number of results: expected 1 but got 2`",
    ),
    CatalogueEntry(
        "backend-config-invalid",
        "registration",
        "error",
        "backend_config or attributes do not fit the api_version",
        "Typed FFI (api 4) reads attributes from an MLIR dictionary (`{n = 3 : i64}`) or the ffi_call's keyword "
        "arguments, decoded by `.Attr<T>(\"name\")`; legacy calls (api 1-3) get the raw string. Attributes with "
        "api < 4, `legacy_backend_config` with api 4, a missing or mistyped attribute, or a non-dictionary "
        "string with api 4 fail (torch_xla's get_stablehlo crashes on the last).",
        "api 4: pass attributes as keyword arguments (`ffi_call(...)(x, n=np.int64(3))`) or a `{name = value : "
        "type}` dictionary, matching each `.Attr<T>(\"name\")`; api 1-3: a plain string that the kernel parses.",
        "`[execute] Wrong number of attributes: expected 1 but got 0`",
    ),
    CatalogueEntry(
        "output-dtype-type",
        "registration",
        "error",
        "output dtype given as a string",
        "`_xla_custom_call`'s output_dtypes must be `torch.dtype` objects; a string such as `str(x.dtype)` is "
        "misread as another type.",
        "Pass the dtype itself: `[x.dtype]` or `[torch.float32]`.",
        "`_xla_custom_call([q], \"op\", [list(q.shape)], [str(q.dtype)], ...)` -> `RuntimeError: Type not supported: QUInt8`",
    ),
    CatalogueEntry(
        "opaque-size-mismatch",
        "registration",
        "error",
        "backend_config packed with another size than the struct the kernel reads",
        "A legacy entry point reads its backend_config (`opaque`) as a C struct; Python packs it with "
        "`struct.pack`. When the two sizes differ the kernel reads fields from the wrong bytes (or past the "
        "string's end): garbage sizes, out-of-bounds launches.",
        "Make the struct.pack format match the C struct field by field, padding included (`struct.calcsize` must "
        "equal `sizeof`), or pack the descriptor in C++ (`PackDescriptor`) so both sides share one definition.",
        "`struct.pack(\"<qi\", n, k)` (12 bytes) for `struct Desc { int64_t n; int64_t k; }` (16 bytes)",
    ),
    # -- shared object --------------------------------------------------------------------------
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
    ),
    # -- source ---------------------------------------------------------------------------------
    CatalogueEntry(
        "hardcoded-size",
        "source",
        "error",
        "element count fixed in the entry point",
        "The entry point (or the launch function it runs) passes a constant element count to the kernel instead of "
        "reading it from the call: other shapes are computed partly or written out of bounds.",
        "Read sizes from the call: an xlacc launch function from its tensors (`x.numel()`, `x.dim(i)`); typed FFI "
        "handlers from their buffers (`buffer.element_count()`, `buffer.dimensions()`); legacy entry points parse "
        "them from backend_config (`opaque`, `opaque_len`).",
        "`const int size = 3;` then `SimpleAddKernel<<<blocks, threads, 0, stream>>>(a, b, out, size);`",
    ),
    CatalogueEntry(
        "stream-ignored",
        "source",
        "error",
        "kernel launched on the default stream, not XLA's",
        "XLA hands the entry point the stream its work is ordered on; a launch without it (`<<<grid, block>>>`) "
        "runs on the legacy default stream: unordered with XLA's buffers, and it breaks CUDA-graph capture.",
        "Launch with `<<<grid, block, shared_bytes, stream>>>`, or pass the stream to the launch call "
        "(`xlacc::launch(kernel, grid, block, shared_bytes, stream, ...)`, `cudaLaunchKernel(kernel, grid, block, "
        "args, shared_bytes, stream)`); a typed handler binds the stream with `.Ctx<ffi::PlatformStream<cudaStream_t>>()`.",
        "`SimpleAddKernel<<<blocks, threads>>>(a, b, out, n);` inside `void f(cudaStream_t stream, void** buffers, ...)`",
    ),
    CatalogueEntry(
        "unchecked-launch",
        "source",
        "warning",
        "kernel launch not checked",
        "A launch that fails (no kernel image for this GPU, a bad grid) leaves the outputs untouched and "
        "raises no error anywhere.",
        "Read the launch's error right after it and return it: a launch function returning xlacc::Status ends with "
        "`return xlacc::launch_status(\"kernel\");`; a typed FFI handler returns "
        "`ffi::Error::Internal(cudaGetErrorString(err))` when `cudaError_t err = cudaGetLastError();` is not cudaSuccess; "
        "a legacy entry point passes that message to `XlaCustomCallStatusSetFailure(status, message, length)`.",
        "`kernel<<<g, b, 0, stream>>>(...);` as the last line of the entry point",
    ),
    CatalogueEntry(
        "host-sync-in-handler",
        "source",
        "warning",
        "synchronisation or allocation inside a handler",
        "Handlers run asynchronously on XLA's stream, and with `kCmdBufferCompatible` inside CUDA-graph capture: "
        "cudaDeviceSynchronize/cudaStreamSynchronize/cudaMemcpy stall the pipeline and fail under capture "
        "(`operation not permitted when stream is capturing`), cudaMalloc/cudaFree synchronise the device.",
        "Drop the synchronisation (XLA orders the stream); get scratch memory from XLA (a scratch result, or "
        "`ffi::ScratchAllocator`) or allocate once outside the handler.",
        "`cudaDeviceSynchronize();` inside `XlaGpuSimpleAdd(cudaStream_t stream, void** buffers, ...)`",
    ),
    CatalogueEntry(
        "buffer-order",
        "source",
        "error",
        "a legacy entry point reads and writes its buffers in the wrong order",
        "A legacy custom call gets one array of pointers: the operands first, in call order, then the results. "
        "Writing `buffers[i]` with i below the operand count overwrites an input XLA may still use, and reading "
        "a result slot as an input reads uninitialised memory.",
        "Index operands 0..N-1 and results N.. (N = the number of operands of the call); a typed FFI handler "
        "(`.Arg<>()`/`.Ret<>()`) cannot mix them up.",
        "`float* out = (float*)buffers[0]; const float* x = (const float*)buffers[1];` for a call with one operand",
    ),
    CatalogueEntry(
        "opaque-unchecked",
        "source",
        "warning",
        "backend_config read as a struct without checking its length",
        "The entry point copies or casts `opaque` to a struct and never compares `opaque_len` with its size: a "
        "call with another (or an empty) backend_config makes it read past the string.",
        "Check first: `if (opaque_len != sizeof(Desc)) { XlaCustomCallStatusSetFailure(status, ...); return; }` "
        "(typed FFI: pass the sizes as attributes instead).",
        "`std::memcpy(&desc, opaque, sizeof(desc));` in an entry point that never reads `opaque_len`",
    ),
    CatalogueEntry(
        "exception-escapes",
        "source",
        "warning",
        "a C++ exception can leave an entry point",
        "XLA calls entry points from C code built without exception handling: an exception thrown inside one "
        "(directly or by a function it calls) is not caught and ends the process with std::terminate (SIGABRT) "
        "instead of reporting an error.",
        "Catch inside the entry point and report the failure: `XlaCustomCallStatusSetFailure(status, msg, len)` "
        "(legacy) or `return ffi::Error::Internal(msg)` (typed FFI).",
        "`throw std::runtime_error(cudaGetErrorString(err));` in a function an entry point calls",
    ),
    CatalogueEntry(
        "ld-preload",
        "source",
        "warning",
        "relying on LD_PRELOAD to provide a target",
        "Loading a library registers nothing: XLA never searches the process for a symbol named like the "
        "target. Its registries are filled only by a registration call (`jax.ffi.register_ffi_target`, "
        "`_xla_register_custom_call_target`) in the process that compiles the program.",
        "Load the library with ctypes and register the entry point explicitly, before the first call.",
        "`LD_PRELOAD=./xla_gpu_custom_ops.so python test_script.py`",
    ),
    CatalogueEntry(
        "op-optimized-away",
        "source",
        "warning",
        "the op compiles to no custom call",
        "An XLA implementation that returns a constant (`torch.zeros_like(x)`) is constant-folded: the HLO "
        "shows a broadcast, no custom-call, and no kernel ever runs.",
        "Make the XLA implementation call `torch_xla._XLAC._xla_custom_call(...)` (or `jax.ffi.ffi_call`) and "
        "return its result; `_get_xla_tensors_hlo([out])` must show `custom_call_target=\"...\"`.",
        "`@impl(lib, \"paged_attention\", \"XLA\")` whose body is `return torch.zeros_like(query)`",
    ),
    # -- runtime --------------------------------------------------------------------------------
    CatalogueEntry(
        "kernel-crash",
        "runtime",
        "error",
        "the process was killed by a signal",
        "Custom calls crash instead of failing when registration and call disagree (a legacy function registered "
        "as typed FFI crashes during registration; a typed handler called as legacy crashes at execution), when "
        "a kernel writes out of bounds (legacy calls check no sizes), or on an abort inside XLA.",
        "Run custom-call code in a child process (`xlacc run-smoke` does) and check `xlacc doctor` on the "
        "sources for api-version-mismatch and hardcoded-size; look for a `Check failed:` line above the crash.",
        "`Fatal Python error: Segmentation fault` / exit status -11 (SIGSEGV)",
    ),
    CatalogueEntry(
        "cuda-init-before-fork",
        "runtime",
        "error",
        "CUDA initialised before forking",
        "A forked child cannot use the CUDA context its parent created (`Cannot re-initialize CUDA in forked "
        "subprocess`), and JAX warns that os.fork() is incompatible with its threads.",
        "Start children with `multiprocessing.get_context(\"spawn\")` (or `set_start_method(\"spawn\")`), or "
        "initialise CUDA, torch_xla or JAX only inside the children.",
        "`RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method`",
    ),
    # -- project and build ---------------------------------------------------------------------
    CatalogueEntry(
        "spec-changed",
        "project",
        "error",
        "xlacc.toml changed since the code was generated",
        "The op's signature in xlacc.toml (its inputs, outputs, attributes, platform, api or frameworks) is not "
        "the one the entry points and bindings were generated from, so a build would compile the old signature "
        "and run-smoke would test it.",
        "Run `xlacc update`: it regenerates xlacc's files from the spec, merges your edits, and names each launch "
        "function of your kernel whose parameters changed (`NAME_launch<T>() in kernel.cu is called with (...) now`).",
        "an `[[inputs]]` table added to xlacc.toml, then `xlacc build`",
    ),
    CatalogueEntry(
        "update-conflict",
        "project",
        "error",
        "xlacc update could not merge your edits with its changes",
        "A file you edited was also changed by xlacc (a new xlacc version or a new signature) in the same lines. "
        "Both versions are left in the file between `<<<<<<< yours` and `>>>>>>> xlacc` markers; nothing was lost.",
        "Edit each marked region to what it should be and delete the markers, then `xlacc build`.",
        "`<<<<<<< yours` in kernel.cu after `xlacc update`",
    ),
    CatalogueEntry(
        "example-inputs-ignore-size",
        "project",
        "warning",
        "example_inputs ignores the size it is asked for",
        "run-smoke checks the op at several problem sizes (1, an odd size no block divides, a large one) by calling "
        "the reference's `example_inputs(size, rng)` with each. When the operands do not depend on `size`, every "
        "check runs the same small problem while its label names the size asked for: tails, grids and large "
        "offsets go untested.",
        "Build the operands from `size` (about `size` elements: `random_array(rng, (size,), dtype)`, or rows of a "
        "fixed width with `size // width` rows), so each numerics check runs the problem it names.",
        "`def example_inputs(size, rng): return [np.ones(2, np.float32)], {}`",
    ),
    CatalogueEntry(
        "template-stub-link",
        "project",
        "error",
        "a __global__ function template is instantiated in another file",
        "CUDA 13's nvcc compiles with `-static-global-template-stub=true` by default: the host stub of a "
        "`__global__` template instantiation is local to the file that instantiates it, so a launch of the "
        "template from another .cu file cannot link (`undefined reference to` the instantiation, `hidden symbol "
        "... isn't defined`).",
        "Instantiate the template in the file that launches it (one translation unit), or add "
        "`-static-global-template-stub=false` to the compiler flags (`[build] flags` in xlacc.toml, `--flag` for "
        "kernel files).",
        "`warning #20280-D: when \"-static-global-template-stub=true\" ... must have a definition in the current translation unit`",
    ),
    # -- sharding, vmap and grad ---------------------------------------------------------------
    CatalogueEntry(
        "custom-call-replicated",
        "transforms",
        "error",
        "a custom call runs on gathered inputs instead of per shard",
        "XLA cannot split an ffi_call or custom call it knows nothing about: under jax.jit over sharded inputs it "
        "all-gathers every input onto each device, runs the kernel on the whole array everywhere and returns a "
        "replicated result. The numbers are right and the op stops scaling (measured on two H200s: 12.9x slower "
        "than XLA's own sharded add).",
        "Tell XLA how the op splits: wrap the call in `jax.experimental.custom_partitioning` with a Shardy "
        "`sharding_rule` (xlacc projects: a [sharding] table in xlacc.toml, then `xlacc update`), or call it inside "
        "`jax.shard_map(op, mesh=..., in_specs=..., out_specs=...)` so that it runs on each shard.",
        "compiled HLO: `%all-gather = f32[16]{0} all-gather(%param) ...` then `custom-call(%all-gather, %all-gather.1), custom_call_target=\"add\"`",
    ),
    CatalogueEntry(
        "sharding-rule-missing",
        "transforms",
        "error",
        "custom_partitioning without a Shardy sharding_rule",
        "Shardy is jax's partitioner (jax_use_shardy_partitioner, the default): it reads a custom_partitioning "
        "op's `sharding_rule` and refuses the old GSPMD callbacks (`infer_sharding_from_operands`, "
        "`propagate_user_sharding`) given without one; jax 0.11 drops them.",
        "Pass `sharding_rule=` to `def_partition`, in einsum-like notation: `\"..., ... -> ...\"` for an elementwise "
        "op, `\"... c, c -> ... c\"` for a row-wise one whose rows stay whole (raise in `partition` if `c` is split), "
        "and `factor=size` keywords for compound factors such as `(k g)`.",
        "`NotImplementedError: Shardy is used, but sharding propagation callbacks instead of sharding_rule are provided. Need to provide sharding_rule to migrate to Shardy.`",
    ),
    CatalogueEntry(
        "vmap-method-missing",
        "transforms",
        "error",
        "jax.vmap of an ffi_call that has no vmap_method",
        "`jax.ffi.ffi_call(...)` without `vmap_method` has no batching rule: jax.vmap (or a transform that uses it, "
        "such as jax.jacobian) raises. jax 0.11 moves batching of FFI calls to jax.experimental.hijax and calls "
        "vmap_method deprecated.",
        "Say how a batch runs: `vmap_method=\"broadcast_all\"` (an elementwise kernel takes the batch as one more dim; "
        "unbatched operands are copied), `\"expand_dims\"` (the kernel broadcasts size-1 dims itself) or "
        "`\"sequential\"` (one launch per example); or wrap the call in `jax.custom_batching.custom_vmap` with a rule "
        "that folds the batch into a dim the kernel already loops over, as xlacc's generated bindings do.",
        "`NotImplementedError: vmap is only supported for the ffi_call primitive when vmap_method is one of 'sequential', ... Got vmap_method=None.`",
    ),
    CatalogueEntry(
        "grad-undefined",
        "transforms",
        "error",
        "jax.grad of a custom call without a backward",
        "XLA cannot differentiate a kernel it cannot see: jax.grad, jax.vjp and jax.jvp of an ffi_call raise.",
        "Wrap the op in `jax.custom_vjp` whose backward calls a backward kernel (or differentiates a jax.numpy "
        "reference); in an xlacc project add a [backward] table to xlacc.toml (kind = \"kernel\" with "
        "NAME_backward_launch<T>() in the kernel file, or kind = \"reference\") and run `xlacc update`.",
        "`ValueError: The FFI call to `my_op` cannot be differentiated. You can use `jax.custom_jvp` or `jax.custom_jvp` to add support.`",
    ),
    # -- torchax (PyTorch on JAX) ---------------------------------------------------------------
    CatalogueEntry(
        "torchax-no-lowering",
        "runtime",
        "error",
        "an op has no torchax lowering",
        "torchax runs each torch op through its table of jax lowerings. An aten op missing from the table raises "
        "`OperatorNotFound: Operator with name aten::X has no lowering`. A torch.library op (such as `xlacc::NAME`) "
        "with no `override_op_definition` falls through to its own implementation with torchax tensors, which fails "
        "with `torchax Tensors can only do math within the torchax environment` although the code runs inside it; "
        "the traceback then passes through torch/_library.",
        "For an xlacc op: `NAME.torch.register_torchax()` once torchax is imported (importing NAME.torch after "
        "torchax, or calling NAME() on torchax tensors, does it). For your own op: "
        "`torchax.default_env().override_op_definition(torch.ops.NS.op.default, lambda *args: "
        "torchax.interop.call_jax(jax_fn, *args))`, with the jax function taking the op's arguments positionally. "
        "For an aten op: the same override with a jax implementation, or ops torchax lowers.",
        "`torchax.tensor.OperatorNotFound: Operator with name aten::poisson has no lowering`",
    ),
    CatalogueEntry(
        "torchax-mixed-tensors",
        "runtime",
        "error",
        "torch tensors, torchax tensors and jax arrays mixed",
        "Under torchax every tensor an op or a jitted function sees must be a torchax tensor (device \"jax\", a jax "
        "array inside), used inside `torchax.default_env()`. A plain CPU or CUDA tensor in the mix fails with "
        "`Expect a Tensor or a View but got <class 'torch.Tensor'>` (eager) or a bare `AssertionError: <class "
        "'torch.Tensor'>` (torchax.interop.jax_jit, call_jax); a jax array given to a torch op fails with `must be "
        "Tensor, not jaxlib._jax.ArrayImpl`; a torchax tensor used outside the environment fails with `torchax "
        "Tensors can only do math within the torchax environment`.",
        "Bring torch tensors in with `t.to(\"jax\")` inside `with torchax.default_env():` (a copy) and jax arrays "
        "with `torchax.interop.torch_view(a)` (no copy, as a KV cache held by jax should be); take the array out with "
        "`t.jax()`; run every torchax op inside the environment (or `torchax.enable_globally()`).",
        "`AssertionError: Expect a Tensor or a View but got <class 'torch.Tensor'>; usually this means there is a mixed math between XLATensor and torch.Tensor`",
    ),
    CatalogueEntry(
        "torchax-shadowed",
        "environment",
        "error",
        "torch_xla's old copy of torchax replaced the torchax you installed",
        "torch_xla 2.9.0's wheel carries its own `torchax` package (torchax 0.0.6) in the same place as torchax's: "
        "whichever pip installs last owns the files, while pip still lists the other's version. With torch_xla's copy "
        "`import torchax` needs flax (`torchax/checkpoint.py`) and lacks the interop xlacc's torch bindings use.",
        "Install torchax again after torch_xla, without touching its dependencies: "
        "`pip install --force-reinstall --no-deps torchax==0.0.13`.",
        "`File \".../torchax/checkpoint.py\", line 4, in <module> from flax.training import checkpoints ModuleNotFoundError: No module named 'flax'`",
    ),
    CatalogueEntry(
        "xla-flags-invalid",
        "environment",
        "error",
        "XLA_FLAGS holds a flag this XLA does not know",
        "XLA reads XLA_FLAGS when its first backend starts and aborts the process on a flag it does not know, "
        "or one whose value does not parse: every jax program in this environment dies before it runs, "
        "whatever its code.",
        "Remove the flag from XLA_FLAGS, or correct its name or value (`--xla_name=value`; "
        "`python -c \"import jax; jax.devices()\"` shows the same abort).",
        "`F1124 parse_flags_from_env.cc:234] Unknown flag in XLA_FLAGS: --xla_bogus_flag=1`",
    ),
    CatalogueEntry(
        "jax-preallocation",
        "environment",
        "error",
        "jax's allocator holds the GPU memory torch needs",
        "When jax starts on a GPU it takes 75% of the GPU's memory for its own pool (XLA_PYTHON_CLIENT_PREALLOCATE "
        "defaults to true). torchax runs torch and jax in one process: torch's CUDA allocator then finds only the rest, "
        "and its out-of-memory message counts jax's pool as memory \"this process has in use\", with next to nothing "
        "allocated by PyTorch.",
        "Set `XLA_PYTHON_CLIENT_PREALLOCATE=false` before jax starts (in the shell, or `os.environ` before `import jax`), "
        "or cap jax's share with `XLA_PYTHON_CLIENT_MEM_FRACTION=0.4`; xlacc's torchax harness and the generated "
        "examples set the first.",
        "`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 39.59 GiB. ... this process has 59.92 GiB memory in use. Of the allocated memory 0 bytes is allocated by PyTorch`",
    ),
)

BY_CODE: dict[str, CatalogueEntry] = {entry.code: entry for entry in CATALOGUE}
CODES: tuple[str, ...] = tuple(BY_CODE)


@dataclass(frozen=True)
class Wording:
    """How one command words a catalogue code in its own situation; severity None keeps the catalogue's."""

    title: str
    fix: str
    severity: Severity | None = None


# What run-smoke's harnesses say when they see a code themselves (they measured it, so their
# findings are sure where doctor's rules guess: op-optimized-away is an error there).
WORDINGS: dict[str, dict[str, Wording]] = {
    "run-smoke jax": {
        "platform-name": Wording(
            "JAX queued a registration for a platform that never appears",
            'register with platform="CUDA" (or "gpu") for a GPU kernel and "cpu" for a CPU one: '
            "jax.ffi.register_ffi_target accepts any string and keeps the others pending, so XLA never sees the target",
        ),
        "target-not-registered": Wording(
            "the target is not registered where XLA looks for it",
            "call register() before the first call, with the project's platform and the registry that matches the "
            "call's api_version (typed FFI: register api_version=1, call 4; legacy: register api_version=0, call 2 on GPU / 3 on CPU)",
        ),
        "api-version-mismatch": Wording(
            "the target sits in one registry and is called through the other",
            "a typed FFI handler (XLA_FFI_DEFINE_HANDLER_SYMBOL) registers with api_version=1 and is called with api_version 4; "
            "a legacy entry point registers with api_version=0 and is called with 2 (GPU) or 3 (CPU)",
        ),
        "op-optimized-away": Wording(
            "the op runs without the custom call",
            "call jax.ffi.ffi_call with the target and make the op's result depend on it; a call with no results "
            "needs has_side_effect=True or XLA removes it as dead code",
            severity="error",
        ),
        "api-version-invalid": Wording(
            "register_ffi_target was given an api_version it does not take",
            "set REGISTER_API_VERSION in NAME/jax.py to jax's own scale: 1 for a typed FFI handler, 0 for a legacy "
            "entry point (the HLO numbers 2-4 belong to API_VERSION, the call's)",
        ),
        "no-gpu": Wording(
            "execution needs a GPU",
            "run `xlacc run-smoke` where jax sees an NVIDIA GPU (pip install 'jax[cuda13]') to run numerics and --bench",
        ),
    },
    "run-smoke torch-xla": {
        "torch-xla-no-cuda": Wording(
            "this torch_xla cannot run a custom call itself",
            "torch_xla 2.9 (PyPI) has no CUDA backend and no custom-call registration; XLA:CUDA was removed in 2.9. "
            "Run a PyTorch model with this op on the GPU through torchax (`--framework torchax`: the same torch op), "
            "or through JAX; torch_xla's emitted program is checked through jaxlib",
        ),
        "op-optimized-away": Wording(
            "the op lowers without the custom call",
            "the op's XLA implementation must return the outputs of torch_xla._XLAC._xla_custom_call; "
            "a constant such as torch.zeros_like(x) is folded and the kernel never runs",
            severity="error",
        ),
        "api-version-mismatch": Wording(
            "the custom call's api_version does not fit the legacy entry point",
            "torch_xla calls legacy entry points only: api_version 2 (API_VERSION_STATUS_RETURNING) on cuda, "
            "3 (API_VERSION_STATUS_RETURNING_UNIFIED) on cpu, where only 3 passes backend_config",
        ),
        "backend-config-invalid": Wording(
            "backend_config is not what the entry point parses",
            "pass NAME.backend_config(...) (`key=value` pairs joined by ';') as _xla_custom_call's 6th argument",
        ),
        "hardcoded-size": Wording(
            "backend_config does not follow the operands' sizes",
            "legacy entry points read sizes from backend_config: put every shape in it, never a constant",
        ),
        "operand-mismatch": Wording(
            "the custom call's operands are not the spec's inputs in order",
            "pass the inputs to _xla_custom_call in the order of [[inputs]] in xlacc.toml: buffers[i] in the kernel is operand i",
        ),
        "result-mismatch": Wording(
            "the custom call's result shapes or dtypes differ from the reference's",
            "give _xla_custom_call one shape and one torch.dtype per [[outputs]] entry, as the reference computes them",
        ),
    },
}


def wordings(context: str) -> dict[str, tuple[str, str, str]]:
    """``{code: (severity, title, fix)}`` for a harness: its words, the catalogue's severity."""
    return {
        code: (wording.severity or entry(code).severity, wording.title, wording.fix)
        for code, wording in WORDINGS[context].items()
    }


def entry(code: str) -> CatalogueEntry:
    try:
        return BY_CODE[code]
    except KeyError:
        raise ValueError(f"unknown finding code {code!r}") from None


def make(
    code: str,
    evidence: str,
    *,
    title: str | None = None,
    fix: str | None = None,
    likelihood: float | None = None,
    severity: Severity | None = None,
) -> Finding:
    """A Finding for ``code`` with the catalogue's title, fix and severity unless overridden."""
    known = entry(code)
    return Finding(
        code=code,
        severity=severity or known.severity,
        title=title or known.title,
        evidence=evidence,
        fix=fix or known.fix,
        likelihood=DEFAULT_LIKELIHOOD if likelihood is None else likelihood,
    )
