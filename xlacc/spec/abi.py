"""The ABI table: the one home of dtypes, platform names, api_version numbers and file suffixes.

Everything xlacc derives from them (symbol names, registration and call numbers, C types) comes
from here, so that templates, build, run-smoke and doctor can never disagree.
"""

from __future__ import annotations

DTYPES = ("f16", "bf16", "f32", "f64", "i32", "i64")
ATTR_TYPES = ("f32", "f64", "i32", "i64")
# The values an attribute's type holds (a default outside its range would overflow in the bindings).
ATTR_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "f32": (-3.4028235e38, 3.4028235e38)}  # FLT_MAX, rounded up
PLATFORMS = ("cuda", "cpu")
APIS = ("ffi", "legacy")
FRAMEWORKS = ("jax", "torchax", "torch-xla")
# What `xlacc new` writes when --framework is not given: JAX, and both PyTorch routes (torchax runs
# the op on XLA:GPU; torch_xla lowers it, and run-smoke runs what it emits through jaxlib).
DEFAULT_FRAMEWORKS = ("jax", "torchax", "torch-xla")
# [backward] kind: "kernel" runs NAME_backward_launch<T>() from the kernel file; "reference"
# differentiates the reference (xp=jax.numpy) and needs no kernel.
BACKWARD_KINDS = ("kernel", "reference")
GRAD_PREFIX = "grad_"  # the cotangent of `out` is `grad_out`, the gradient of `x` is `grad_x`

# Per spec dtype: the C++ type in a kernel (xlacc/kernel.h), the xlacc::DType and FFI DataType
# names, the NumPy and torch dtype names, and the element size. Templates render from this table.
DTYPE_INFO: dict[str, dict[str, str]] = {
    "f16": {"c": "xlacc::f16_t", "enum": "F16", "ffi": "F16", "numpy": "float16", "torch": "float16", "bytes": "2"},
    "bf16": {"c": "xlacc::bf16_t", "enum": "BF16", "ffi": "BF16", "numpy": "bfloat16", "torch": "bfloat16", "bytes": "2"},
    "f32": {"c": "float", "enum": "F32", "ffi": "F32", "numpy": "float32", "torch": "float32", "bytes": "4"},
    "f64": {"c": "double", "enum": "F64", "ffi": "F64", "numpy": "float64", "torch": "float64", "bytes": "8"},
    "i32": {"c": "int32_t", "enum": "S32", "ffi": "S32", "numpy": "int32", "torch": "int32", "bytes": "4"},
    "i64": {"c": "int64_t", "enum": "S64", "ffi": "S64", "numpy": "int64", "torch": "int64", "bytes": "8"},
}
ATTR_C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t"}
# (rtol, atol) by dtype: the generated tests and `xlacc run-smoke` compare with this one table.
# An element passes when |out - ref| <= atol + rtol * |ref|, the reference computed in float64:
# half types are loose (about 5 and 2.5 ulps), float32 allows the rounding of a reduction, float64
# only the order of operations, integers nothing.
TOLERANCES: dict[str, tuple[float, float]] = {
    "f16": (5e-3, 1e-3),
    "bf16": (2e-2, 1e-2),
    "f32": (1e-5, 1e-6),
    "f64": (1e-12, 1e-14),
    "i32": (0.0, 0.0),
    "i64": (0.0, 0.0),
}

# HLO CustomCallApiVersion values (the 7th argument of torch_xla's _xla_custom_call, and
# jax.ffi.ffi_call's custom_call_api_version).
HLO_API_STATUS_RETURNING = 2
HLO_API_STATUS_RETURNING_UNIFIED = 3
HLO_API_TYPED_FFI = 4
# jax.ffi.register_ffi_target's own scale: 0 = legacy registry, 1 = typed FFI registry.
JAX_REGISTER_LEGACY = 0
JAX_REGISTER_FFI = 1

KERNEL_SUFFIXES = {"cuda": (".cu",), "cpu": (".cc", ".cpp", ".cxx")}
SOURCE_SUFFIX = {platform: suffixes[0] for platform, suffixes in KERNEL_SUFFIXES.items()}  # what xlacc names its files
PLATFORM_OF_SUFFIX = {suffix: platform for platform, suffixes in KERNEL_SUFFIXES.items() for suffix in suffixes}
