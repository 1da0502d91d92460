"""Finding codes about kernels and entry points in source."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
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
        home=RULES + "sizes",
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
        home=RULES + "launches",
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
        home=RULES + "launches",
    ),
    CatalogueEntry(
        "host-sync-in-handler",
        "source",
        "warning",
        "synchronisation or allocation inside a handler",
        "Handlers run asynchronously on XLA's stream, and with `kCmdBufferCompatible` inside CUDA-graph capture: "
        "cudaDeviceSynchronize/cudaStreamSynchronize/cudaMemcpy stall the pipeline and fail under capture "
        "(`operation not permitted when stream is capturing`), cudaMalloc/cudaFree synchronise the device (the hip* "
        "calls alike). An error where the handler is declared `kCmdBufferCompatible`; calls inside `std::call_once` "
        "run once per process and are not counted.",
        "Drop the synchronisation (XLA orders the stream); get scratch memory from XLA (a scratch result, or "
        "`ffi::ScratchAllocator`) or allocate once outside the handler.",
        "`cudaDeviceSynchronize();` inside `XlaGpuSimpleAdd(cudaStream_t stream, void** buffers, ...)`",
        home=RULES + "host_sync",
    ),
    CatalogueEntry(
        "host-source-in-graph",
        "source",
        "error",
        "a captured handler copies from host memory that dies with the call",
        "XLA captures a handler declared `kCmdBufferCompatible` into a CUDA graph once and replays the graph: a "
        "`cudaMemcpyAsync` (or `hipMemcpyAsync`) from host memory becomes a node that copies from the same address at "
        "every replay. A local variable, array or container of the handler is gone by then, so the device gets "
        "whatever lies there, silently.",
        "Write the value on the device (a kernel argument, or `cudaMemsetAsync` for a byte pattern), pass it as an "
        "attribute, or keep the host memory alive as long as the executable (state the handler owns, `ffi::State`); "
        "else do not declare the handler `kCmdBufferCompatible`.",
        "`std::vector<float> init(n, -INFINITY); cudaMemcpyAsync(lse, init.data(), bytes, cudaMemcpyHostToDevice, "
        "stream);` in a `kCmdBufferCompatible` handler",
        home=RULES + "host_sync",
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
        home=RULES + "buffers",
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
        home=RULES + "entry_points",
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
        home=RULES + "entry_points",
    ),
    CatalogueEntry(
        "handler-exits",
        "source",
        "warning",
        "an entry point can end the process",
        "An entry point that calls `abort()`, `exit()` or `std::terminate()` (often through an error-check macro) "
        "ends the whole process on that path: XLA and Python get no error to report, a training or serving job "
        "dies without a traceback.",
        "Report the failure instead: `return ffi::Error::Internal(msg)` (typed FFI) or "
        "`XlaCustomCallStatusSetFailure(status, msg, len)` (legacy), from an error-check macro that returns.",
        "`#define HIP_CHECK(e) if ((e) != hipSuccess) { fprintf(stderr, ...); std::abort(); }` used in a handler",
        home=RULES + "entry_points",
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
        home=RULES + "registration",
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
        home=RULES + "custom_call",
    ),
    CatalogueEntry(
        "closed-over-array",
        "source",
        "warning",
        "an array is compiled into the program as a constant",
        "A jitted function that closes over an array (a KV cache, weights) instead of taking it as an argument gets "
        "it compiled in as a constant, its contents when the function was traced: compile time grows with it (seconds "
        "per GiB) and the device holds it twice. A custom call that writes such an array in place "
        "(`input_output_aliases`) writes into a copy made for that call: every call starts from the traced contents, "
        "and a KV cache forgets every token written after the trace.",
        "Pass the array to the jitted function as an argument, donated where the step updates it: "
        "`jax.jit(step, donate_argnums=1)(query, cache)`, not `jax.jit(lambda q: step(q, cache))(query)`.",
        "`%constant.3 = bf16[32768,16,8,128]{3,2,1,0} constant({...})` in the HLO of `jax.jit(lambda q: attention(q, key_cache))`",
        home=RULES + "hlo_constants",
    ),
)
