"""Finding codes about registering and calling a custom call."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(
        "platform-name",
        "registration",
        "error",
        "registered for a platform name XLA never looks up",
        "The legacy registry matches (name, platform) exactly and case-sensitively, and JAX accepts any platform "
        "string at registration and queues it silently: only \"CUDA\" or \"gpu\" (NVIDIA GPU), \"ROCM\" (AMD GPU) and "
        "\"cpu\" or \"Host\" (CPU) ever apply. torch_xla <= 2.8 accepts exactly \"CUDA\".",
        "JAX: `platform=\"CUDA\"` (or \"gpu\"); torch_xla: exactly `\"CUDA\"`; on the CPU: `\"cpu\"`.",
        "`jax.ffi.register_ffi_target(\"my_op\", capsule, platform=\"GPU\")`",
        home=RULES + "registration",
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
        home=RULES + "registration",
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
        home=RULES + "registration",
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
        home=RULES + "registration",
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
        home=RULES + "registration",
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
        home=RULES + "python",
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
        home=RULES + "python",
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
        home=RULES + "custom_call",
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
        home=RULES + "custom_call",
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
        home=RULES + "custom_call",
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
        home=RULES + "python",
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
        home=RULES + "crossfile",
    ),
)
