"""Finding codes about the environment: toolkits, frameworks, GPUs, variables."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
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
        home=RULES + "environment",
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
        home=RULES + "environment",
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
        home=RULES + "environment",
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
        home=RULES + "environment",
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
        home=RULES + "python",
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
        home=RULES + "environment",
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
        home=RULES + "environment",
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
        home=RULES + "error_text",
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
        home=RULES + "environment",
    ),
)
