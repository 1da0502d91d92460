"""The op's model: one ``xlacc.toml`` per project describes one custom call.

- :mod:`xlacc.spec.abi`: dtypes, platform names, api_version numbers, file suffixes (one home).
- :mod:`xlacc.spec.checks`: what a user may write (names that become code, flags, archs).
- :mod:`xlacc.spec.model`: the op (tensors, attributes, build, sharding, backward) and every name
  derived from it.
- :mod:`xlacc.spec.reading`: finding and reading ``xlacc.toml``, and xlacc's record ``.xlacc/record.toml``.
- :mod:`xlacc.spec.drift`: how a project moved on from what xlacc generated.
- :mod:`xlacc.spec.names`: the names generated code keeps for itself.
- :mod:`xlacc.spec.sharding`: the sharding-rule notation.

``xlacc new`` builds its spec through :func:`from_dict` like a file read from disk, so this is the
one validator of names, dtypes and choices.
"""

from xlacc.spec.abi import (
    APIS,
    ATTR_C_TYPES,
    ATTR_TYPES,
    DEFAULT_FRAMEWORKS,
    DTYPE_INFO,
    DTYPES,
    FRAMEWORKS,
    HLO_API_STATUS_RETURNING,
    HLO_API_STATUS_RETURNING_UNIFIED,
    HLO_API_TYPED_FFI,
    JAX_REGISTER_FFI,
    JAX_REGISTER_LEGACY,
    PLATFORM_OF_SUFFIX,
    PLATFORMS,
    SOURCE_SUFFIX,
    TOLERANCES,
)
from xlacc.spec.checks import (
    PATH_TEXT,
    check_identifier,
    check_member_name,
    check_op_name,
    check_target,
    flag_problem,
    parse_archs,
)
from xlacc.spec.drift import (
    kernel_launch_mismatches,
    launch_mismatches,
    signature_changes,
)
from xlacc.spec.model import (
    Attr,
    Backward,
    Build,
    Call,
    Generated,
    Origin,
    Sharding,
    Spec,
    Tensor,
)
from xlacc.spec.reading import (
    BASE_DIR,
    RECORD_DIR,
    RECORD_FILE,
    SPEC_FILE,
    find_spec,
    from_dict,
    load,
    read_toml,
    refuse_inside_a_record,
)

__all__ = [
    "APIS",
    "ATTR_C_TYPES",
    "ATTR_TYPES",
    "DEFAULT_FRAMEWORKS",
    "DTYPE_INFO",
    "DTYPES",
    "FRAMEWORKS",
    "HLO_API_STATUS_RETURNING",
    "HLO_API_STATUS_RETURNING_UNIFIED",
    "HLO_API_TYPED_FFI",
    "JAX_REGISTER_FFI",
    "JAX_REGISTER_LEGACY",
    "PLATFORM_OF_SUFFIX",
    "PLATFORMS",
    "SOURCE_SUFFIX",
    "TOLERANCES",
    "PATH_TEXT",
    "check_identifier",
    "check_member_name",
    "check_op_name",
    "check_target",
    "flag_problem",
    "parse_archs",
    "kernel_launch_mismatches",
    "launch_mismatches",
    "signature_changes",
    "Attr",
    "Backward",
    "Build",
    "Call",
    "Generated",
    "Origin",
    "Sharding",
    "Spec",
    "Tensor",
    "BASE_DIR",
    "RECORD_DIR",
    "RECORD_FILE",
    "SPEC_FILE",
    "find_spec",
    "from_dict",
    "load",
    "read_toml",
    "refuse_inside_a_record",
]
