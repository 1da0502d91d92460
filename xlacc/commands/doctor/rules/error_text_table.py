"""The error texts doctor knows, as data: each rule is a pattern for one message (xla-custom-calls.md
section 2, or a text seen in jax, torch_xla or jaxlib's binaries) and the causes it points to,
ranked by likelihood. :mod:`xlacc.commands.doctor.rules.error_text` matches them;
:mod:`.error_text_frameworks` holds the texts of jax's transforms and of torchax.

Patterns write whitespace as ``\\s+`` (``\\s*`` where a terminal may have wrapped inside a word).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlacc.commands.doctor.rules.crash import crash_fix

MAX_MATCHES_PER_RULE = 5
# A target name, stopped before the words that follow it in XLA's messages.
TARGET_BEFORE_FOR = r"(?P<target>[\w.\-:]{1,256}?)(?=\s*for\s*(?:platform\s*)?[A-Z]|[^\w.\-:]|$)"
TARGET_BEFORE_ON = r"(?P<target>[\w.\-:]{1,256}?)(?=\s*on\s*(?:a\s*)?platform|[^\w.\-:]|$)"


@dataclass(frozen=True)
class Cause:
    """One explanation of a matched text. Templates may name the pattern's groups: ``{target}``."""

    code: str
    likelihood: float
    how_to_tell: str = ""
    title: str | None = None
    fix: str | None = None
    severity: str | None = None
    when: tuple[str, str] | None = None  # (group, regex): only if that group matches
    unless: tuple[str, str] | None = None  # (group, regex): not if that group matches

    def applies(self, groups: dict[str, str]) -> bool:
        if self.when and not re.search(self.when[1], groups.get(self.when[0], "")):
            return False
        if self.unless and re.search(self.unless[1], groups.get(self.unless[0], "")):
            return False
        return True


@dataclass(frozen=True)
class TextRule:
    name: str
    anchors: tuple[str, ...]  # words one of which the text must hold before the pattern runs
    pattern: str
    causes: tuple[Cause, ...]
    flags: int = 0
    max_matches: int = MAX_MATCHES_PER_RULE


def _rule(name: str, anchors: tuple[str, ...], pattern: str, *causes: Cause, flags: int = 0,
          max_matches: int = MAX_MATCHES_PER_RULE) -> TextRule:
    return TextRule(name, anchors, pattern, causes, flags, max_matches)


TORCH_INCLUDE_FIX = (
    "It is one of PyTorch's headers: wrap the launcher with `xlacc new NAME --from FILE`, whose build puts xlacc's "
    "PyTorch stand-ins (xlacc_torch_compat.h) on the include path in front of the real torch headers, so the "
    "launcher compiles unchanged and without libtorch."
)
REGISTERED_AS_TYPED = (
    "This lookup searched the legacy registry (the call used api_version 1-3). A target registered with "
    "`jax.ffi.register_ffi_target(...)` and no api_version=0 sits in the typed FFI registry instead: if that is "
    "how `{target}` is registered, register it with api_version=0 or call it with api_version 4."
)
REGISTERED_AS_LEGACY = (
    "This lookup searched the typed FFI registry (the call used api_version 4). A target registered with "
    "api_version=0 (JAX) or through torch_xla sits in the legacy registry: if `{target}` is a typed handler, "
    "register it with api_version=1; if it is a legacy function, call it with api_version 2."
)
WRONG_PLATFORM = (
    "If the registration passed a platform other than \"CUDA\"/\"gpu\" or \"cpu\"/\"Host\" (\"GPU\", \"cuda\", "
    "\"foo\"), JAX queued it silently and it never applied."
)
NOT_REGISTERED = (
    "Most likely no registration of `{target}` ran in this process before the program was compiled, or it "
    "used another spelling (names are case-sensitive). Tell: print right after your registration line; "
    "if it never prints, or the name differs, this is it."
)
ELSEWHERE = (
    "If `{target}` is expected from a library that is only LD_PRELOADed, or registered in another process "
    "(a parent, a server, a worker), nothing registered it in this one."
)

RULES: tuple[TextRule, ...] = (
    _rule(
        "include-missing",
        ("No such file", "file not found", "cannot open source file"),
        r"(?:fatal\s+error|catastrophic\s+error|error):\s+(?:(?P<header>[\w./+-]{1,256}):\s+No\s+such\s+file\s+or\s+directory"
        r"|'(?P<clang>[\w./+-]{1,256})'\s+file\s+not\s+found|cannot\s+open\s+source\s+file\s+\"(?P<edg>[\w./+-]{1,256})\")",
        Cause("include-missing", 0.95, title="`{header}` is on no include path (a PyTorch header)", fix=TORCH_INCLUDE_FIX,
              when=("header", r"^(?:torch|ATen|c10|caffe2|pybind11)/")),
        Cause("include-missing", 0.95, title="`{header}` is on no include path", unless=("header", r"^(?:torch|ATen|c10|caffe2|pybind11)/")),
    ),
    _rule(
        "legacy-lookup",
        ("registered", "implementation"),
        r"No\s+registered\s+implementation\s+for\s+(?:untyped\s+)?custom\s+call\s+to\s+"
        + TARGET_BEFORE_FOR
        + r"(?:\s*for\s*(?:platform\s*)?(?P<platform>[A-Z]\w*))?",
        Cause("target-not-registered", 0.6, NOT_REGISTERED, title="custom-call target `{target}` is not registered"),
        Cause("api-version-mismatch", 0.45, REGISTERED_AS_TYPED, title="`{target}` may be registered as typed FFI but called as legacy"),
        Cause("platform-name", 0.35, WRONG_PLATFORM, title="`{target}` may be registered under another platform name"),
        Cause("ld-preload", 0.2, ELSEWHERE, title="`{target}` may be expected from a preloaded library or another process"),
    ),
    _rule(
        "ffi-lookup",
        ("FFI",),
        r"No\s+FFI\s+handler\s+registered\s+for\s+"
        + TARGET_BEFORE_ON
        + r"\s*on\s*(?:a\s*)?platform\s*(?P<platform>\w+)(?:\s*\(canonical\s*(?P<canonical>\w+)\))?",
        Cause("target-not-registered", 0.6, NOT_REGISTERED, title="no FFI handler registered for `{target}`"),
        Cause("api-version-mismatch", 0.45, REGISTERED_AS_LEGACY, title="`{target}` may be registered as legacy but called as typed FFI"),
        Cause("platform-name", 0.35, WRONG_PLATFORM, title="`{target}` may be registered under another platform name"),
        Cause(
            "ffi-api-skew",
            0.15,
            "If a registration of `{target}` did run: a handler compiled against newer FFI headers than this "
            "jaxlib is refused at registration (look for `the handler's API version ... is incompatible` above).",
            title="the handler for `{target}` may have been refused (FFI header version)",
        ),
    ),
    _rule(
        "xla-flags",
        ("XLA_FLAGS",),
        r"Unknown\s+flags?\s+in\s+XLA_FLAGS:\s*(?P<flag>\S{1,256})",
        Cause("xla-flags-invalid", 0.95, title="XLA_FLAGS holds `{flag}`, which this XLA does not know"),
    ),
    _rule(
        "xla-flag-value",
        ("interpret",),
        r"Couldn't\s+interpret\s+value\s+(?P<value>\S{1,256}?)\s+for\s+flag\s+(?P<flag>\w{1,256})",
        Cause("xla-flags-invalid", 0.95, title="XLA_FLAGS gives --{flag} the value `{value}`, which does not parse"),
    ),
    _rule(
        "deprecated-api",
        ("API_VERSION",),
        r"Custom\s+call\s+API\s+version\s+`?(?P<api>API_VERSION_\w+?)`?\s+is\s+not\s+supported\s+by\s+XLA:(?P<backend>\w+)"
        r"(?:.{0,200}?Custom\s+call\s+target:\s*(?P<target>[\w.\-:]{1,256}))?",
        Cause("legacy-api-deprecated", 0.8, title="`{target}` uses the deprecated {api} on XLA:{backend}"),
    ),
    _rule(
        "ffi-metadata",
        ("FFI",),
        r"Fetching\s+XLA\s+FFI\s+metadata\s+failed",
        Cause(
            "api-version-mismatch",
            0.85,
            "XLA calls a typed FFI handler once at registration to read its metadata; a function that is not an "
            "`XLA_FFI_DEFINE_HANDLER_SYMBOL` handler (a legacy `(stream, buffers, opaque, opaque_len, status)` entry "
            "point) misreads that call and fails or crashes. Register legacy functions with api_version=0.",
            title="a function that is not a typed FFI handler was registered as one (api_version=1)",
        ),
    ),
    _rule(
        "argument-count",
        ("Wrong",),
        r"Wrong\s+number\s+of\s+arguments:\s*expected\s+(?:at\s+least\s+)?(?P<expected>\d+)\s+but\s+got\s+(?P<got>\d+)",
        Cause("operand-mismatch", 0.85, title="the call passes {got} operands, the handler binds {expected}"),
    ),
    _rule(
        "result-count",
        ("Wrong",),
        r"Wrong\s+number\s+of\s+results:\s*expected\s+(?:at\s+least\s+)?(?P<expected>\d+)\s+but\s+got\s+(?P<got>\d+)",
        Cause("result-mismatch", 0.85, title="the call asks for {got} results, the handler binds {expected}"),
    ),
    _rule(
        "attribute-count",
        ("Wrong",),
        r"Wrong\s+number\s+of\s+attributes:\s*expected\s+(?P<expected>\d+)(?:\s+attributes)?\s+but\s+got\s+(?P<got>\d+)"
        r"(?:\s+with\s+name\(s\):\s*(?P<names>[\w, ]{0,256}\w))?",
        Cause("backend-config-invalid", 0.85, title="the call passes {got} attributes, the handler binds {expected}"),
    ),
    _rule(
        "buffer-decode",
        ("Wrong",),
        r"(?:Failed\s+to\s+decode\s+all\s+FFI\s+handler\s+operands\s*\(bad\s+operands\s+at:\s*(?P<at>[\d,\s]{1,64}?)\)\s*"
        r"(?:Diagnostics:\s*)?)?Wrong\s+buffer\s+(?P<what>dtype|rank):\s*expected\s+(?P<expected>\w+)\s+but\s+got\s+(?P<got>\w+)",
        Cause(
            "operand-mismatch",
            0.6,
            "The bad index counts the handler's arguments first, then its results, then its attributes: "
            "an index below the number of `.Arg` is an operand.",
            title="a buffer's {what} is {got}, the handler expects {expected}",
        ),
        Cause(
            "result-mismatch",
            0.45,
            "An index at or past the number of `.Arg` bindings is a result: check result_shape_dtypes.",
            title="a result's {what} may be {got} where the handler expects {expected}",
        ),
    ),
    _rule(
        "attribute-decode",
        ("Wrong", "mismatch", "Unexpected"),
        r"(?P<diag>Wrong\s+scalar\s+data\s+type:\s*expected\s+\w+\s+but\s+got\s+\w+"
        r"|Attribute\s+name\s+mismatch:\s*\S{1,128}\s+vs\s+\S{1,128}"
        r"|Wrong\s+attribute\s+type:\s*expected\s+\w+\s+but\s+got\s+\w+"
        r"|Wrong\s+array\s+data\s+type:\s*expected\s+\w+\s+but\s+got\s+\w+"
        r"|Unexpected\s+attribute:\s*\S{1,128})",
        Cause("backend-config-invalid", 0.75, title="an attribute does not match the handler's binding ({diag})"),
    ),
    _rule(
        "undiagnosed-decode",
        ("FFI",),
        r"Failed\s+to\s+decode\s+all\s+FFI\s+handler\s+operands\s*\(bad\s+operands\s+at:\s*(?P<at>[\d,\s]{1,64}?)\)"
        r"(?!\s*(?:Diagnostics:\s*)?(?:Wrong|Attribute|Unexpected))",
        Cause("operand-mismatch", 0.5, "Index {at} counts arguments first, then results, then attributes."),
        Cause("result-mismatch", 0.4, "Index {at} counts arguments first, then results, then attributes."),
        Cause("backend-config-invalid", 0.35, "Index {at} counts arguments first, then results, then attributes."),
    ),
    _rule(
        "attributes-with-legacy-api",
        ("ffi_call",),
        r"The\s+use\s+of\s+ffi_call\s+attributes\s+requires\s+a\s+custom\s+call\s+API\s+version\s+of\s+at\s+least\s+4;?"
        r"\s*got\s+api_version=(?P<api>\d+)",
        Cause("backend-config-invalid", 0.9, title="attributes passed to an ffi_call with api_version {api}"),
    ),
    _rule(
        "legacy-config-with-ffi",
        ("legacy_backend_config",),
        r"The\s+use\s+of\s+the\s+legacy_backend_config\s+parameter\s+requires\s+custom_call_api_version\s*<\s*4",
        Cause("backend-config-invalid", 0.9, title="legacy_backend_config passed to a typed FFI call (api 4)"),
    ),
    _rule(
        "backend-config-format",
        ("dictionary",),
        # Texts found in jaxlib 0.10.2's binaries (XLA's backend_config checks).
        r"(?P<msg>unsupported\s+user-encoded\s+backend\s+config,\s+backend\s+config\s+must\s+be\s+a\s+dictionary\s+attribute"
        r"|Couldn't\s+parse\s+backend\s+config\s+into\s+a\s+dictionary\s+attribute"
        r"|unsupported\s+dictionary\s+attribute\s+backend\s+config,\s+backend\s+config\s+must\s+be\s+a\s+user-encoded\s+string\s+attribute)",
        Cause("backend-config-invalid", 0.85),
    ),
    _rule(
        "no-kernel-image",
        ("image", "KernelImage", "NO_BINARY"),
        r"(?P<msg>no\s+kernel\s+image\s+is\s+available\s+for\s+execution\s+on\s+the\s+device"
        r"|cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU)",
        Cause(
            "arch-mismatch",
            0.9,
            "`xlacc doctor --so LIB --arch sm_XY` lists the archs in the library and the one needed; "
            "`nvidia-smi --query-gpu=compute_cap --format=csv` gives this GPU's.",
        ),
    ),
    _rule(
        "torch-xla-platform",
        ("PJRT",),
        r"Custom\s+call\s+targets\s+can\s+only\s+be\s+registered\s+for\s+PJRT\s+CUDA\s+runtime",
        Cause(
            "platform-name",
            0.6,
            "torch_xla 2.5-2.8 raises this when the platform string is not exactly \"CUDA\".",
            title="torch_xla registration needs the platform exactly \"CUDA\"",
        ),
        Cause(
            "torch-xla-no-cuda",
            0.45,
            "If the platform was \"CUDA\": the runtime is not PJRT CUDA (PJRT_DEVICE is not CUDA, or this "
            "torch_xla has no CUDA backend).",
        ),
    ),
    _rule(
        "torch-xla-registration-removed",
        ("RegisterCustomCall",),
        r"RegisterCustomCall\s+not\s+implemented",
        Cause("torch-xla-no-cuda", 0.9, title="torch_xla 2.9+ cannot register custom-call targets", severity="error"),
    ),
    _rule(
        "torch-xla-no-cuda-plugin",
        ("PjRt", "PJRT"),
        r"(?P<msg>No\s+PjRtPlugin\s+registered\s+for:?\s*CUDA|Unknown\s+PJRT_DEVICE\s+'?CUDA'?)",
        Cause("torch-xla-no-cuda", 0.9, severity="error"),
    ),
    _rule(
        "torch-xla-capsule",
        ("_xla_register_custom_call_target",),
        r"_xla_register_custom_call_target\(\):\s*incompatible\s+function\s+arguments"
        r"(?:.{0,400}?Invoked\s+with:\s*(?P<invoked>'[^']{0,256}',\s*[^,]{1,256},\s*'[^']{0,64}'))?",
        Cause(
            "capsule-required",
            0.85,
            "The second argument must be a PyCapsule; ints, ctypes pointers and ctypes functions are refused.",
        ),
    ),
    _rule(
        "jax-capsule",
        ("api_version",),
        r"(?P<msg>Unsupported\s+custom\s+call\s+target\s+type\s+for\s+api_version=\d"
        r"|Custom\s+call\s+target\s+registration\s+with\s+api_version=\d\s+requires\s+a\s+PyCapsule)",
        Cause("capsule-required", 0.9),
    ),
    _rule(
        "torch-xla-abi",
        ("undefined",),
        r"(?:_XLAC|libtorch_xla)[\w.\-]{0,128}\.so:\s*undefined\s+symbol:\s*(?P<symbol>\w{1,512})",
        Cause("torch-xla-version-mismatch", 0.9),
    ),
    _rule(
        "gpu-custom-call-removed",
        ("_xla_gpu_custom_call",),
        r"has\s+no\s+attribute\s+'_xla_gpu_custom_call'",
        Cause("fixed-target-api", 0.9),
    ),
    _rule(
        "jax-old-api",
        ("register_custom_call_target", "xla_client"),
        r"(?P<msg>register_custom_call_target\s+has\s+been\s+removed\s+in\s+JAX"
        r"|cannot\s+import\s+name\s+'xla_client'\s+from\s+'jax\.lib'"
        r"|No\s+module\s+named\s+'jax\.lib\.xla_client'"
        r"|module\s+'jax\.lib(?:\.xla_client)?'\s+has\s+no\s+attribute\s+'(?:xla_client|register_custom_call_target)')",
        Cause("jax-legacy-api-removed", 0.9),
    ),
    _rule(
        "ctypes-symbol",
        ("undefined",),
        r"AttributeError:\s*(?P<lib>[^\s:]{1,1024}):\s*undefined\s+symbol:\s*(?P<symbol>[\w$.]{1,512})",
        Cause(
            "symbol-missing",
            0.5,
            "`xlacc doctor --so {lib} --symbol {symbol}` tells missing, mangled and hidden apart.",
            title="`{symbol}` is not exported by {lib}",
        ),
        Cause(
            "symbol-mangled",
            0.35,
            "If `{symbol}` is defined in a .cu/.cc file without `extern \"C\"`, it is exported under a mangled name.",
            title="`{symbol}` may be exported under a C++-mangled name",
        ),
        Cause(
            "symbol-hidden",
            0.25,
            "If the library is built with -fvisibility=hidden, `{symbol}` needs visibility(\"default\").",
            title="`{symbol}` may be hidden",
        ),
    ),
    _rule(
        "load-time-symbol",
        ("undefined",),
        r"(?:OSError|ImportError):\s*(?P<lib>(?![^\s:]{0,1024}(?:_XLAC|libtorch_xla))[^\s:]{1,1024}):\s*undefined\s+symbol:\s*(?P<symbol>[\w$.]{1,512})",
        Cause(
            "dependency-missing",
            0.8,
            "XLA does not export XlaCustomCallStatusSetFailure to libraries loaded next to JAX's runtime.",
            title="{lib} needs `{symbol}`, which nothing loaded provides",
            fix="Declare it weak and check it: `extern \"C\" void XlaCustomCallStatusSetFailure(XlaCustomCallStatus*, "
            "const char*, size_t) __attribute__((weak));` then `if (XlaCustomCallStatusSetFailure) ...`; or use a typed "
            "FFI handler, which reports errors by its return value.",
            when=("symbol", r"^XlaCustomCallStatus"),
        ),
        Cause(
            "dependency-missing",
            0.8,
            "The library references `{symbol}` but none of the libraries it links (or loaded before it with "
            "RTLD_GLOBAL) defines it.",
            title="{lib} needs `{symbol}`, which nothing loaded provides",
            unless=("symbol", r"^XlaCustomCallStatus"),
        ),
    ),
    _rule(
        "dlopen-missing",
        ("cannot",),
        r"(?<![^\s:'\"])(?P<lib>[^\s:'\"]{1,512}?\.so[\w.]{0,32}):\s*cannot\s+open\s+shared\s+object\s+file:\s*No\s+such\s+file\s+or\s+directory",
        Cause("library-not-found", 0.7, "A path: the file itself is absent.", title="{lib} not found", when=("lib", "/")),
        Cause(
            "dependency-missing",
            0.3,
            "If {lib} does exist, one of the libraries it needs is missing: `xlacc doctor --so {lib}` lists them.",
            title="a library {lib} needs may be missing",
            when=("lib", "/"),
        ),
        Cause(
            "dependency-missing",
            0.6,
            "A bare name is usually a dependency (DT_NEEDED) the loader searched for on the library path.",
            title="{lib} not found on the library search path",
            unless=("lib", "/"),
        ),
        Cause(
            "library-not-found",
            0.4,
            "If your code loads `{lib}` by this bare name, ctypes searched only the library path: use a path.",
            title="{lib} not found",
            unless=("lib", "/"),
        ),
    ),
    _rule(
        "dlopen-invalid",
        ("ELF", "too short", "ET_DYN", "position-independent"),
        r"(?<![^\s:'\"])(?P<lib>[^\s:'\"]{1,512}):\s*(?P<why>invalid\s+ELF\s+header|file\s+too\s+short|wrong\s+ELF\s+class:\s*\w{1,32}"
        r"|only\s+ET_DYN\s+and\s+ET_EXEC\s+can\s+be\s+loaded|cannot\s+dynamically\s+load\s+position-independent\s+executable)",
        Cause("library-invalid", 0.9, title="{lib}: {why}"),
    ),
    _rule(
        "api-version-zero",
        ("enum",),
        r"Unknown\s+custom-call\s+API\s+version\s+enum\s+value:\s*(?P<api>-?\d+)",
        Cause(
            "api-version-invalid",
            0.9,
            "torch_xla's stablehlo_custom_call defaults to api_version=0; `_xla_custom_call` needs it as its 7th argument.",
            title="custom call with api_version {api}",
        ),
    ),
    _rule(
        "register-api-version",
        ("RegisterCustomCallTarget",),
        r"API\s+version\s+(?P<api>-?\d+)\s+is\s+not\s+supported\s+by\s+RegisterCustomCallTarget",
        Cause(
            "api-version-invalid",
            0.9,
            "register_ffi_target counts 0 (legacy) and 1 (typed FFI), not the HLO numbers 1-4.",
            title="register_ffi_target called with api_version={api}",
        ),
    ),
    _rule(
        "xla-custom-call-arguments",
        ("_xla_custom_call",),
        r"_xla_custom_call\(\):\s*incompatible\s+function\s+arguments",
        Cause(
            "api-version-invalid",
            0.5,
            "`_xla_custom_call` takes 8 positional arguments and has no defaults: inputs, target, output_shapes, "
            "output_dtypes, has_side_effect, backend_config, api_version, frontend_attributes ({{}}).",
            title="_xla_custom_call called with missing or mistyped arguments",
        ),
    ),
    _rule(
        "dtype-type",
        ("supported:",),
        r"Type\s+not\s+supported:\s*(?P<type>\w+)",
        Cause(
            "output-dtype-type",
            0.6,
            "torch_xla 2.9 raises this (`QUInt8`) when output_dtypes holds a string such as str(x.dtype).",
        ),
    ),
    _rule(
        "crash",
        ("Fatal", "Segmentation", "Aborted", "Bus error", "SIG", "llegal", "ILLEGAL", "misaligned"),
        r"(?P<what>Fatal\s+Python\s+error:\s*(?:Segmentation\s+fault|Aborted|Bus\s+error|Floating\s+point\s+exception|Illegal\s+instruction)"
        r"|Segmentation\s+fault|Aborted\s+\(core\s+dumped\)|Bus\s+error\s+\(core\s+dumped\)|\bSIG(?:SEGV|ABRT|BUS|FPE|ILL)\b"
        r"|an\s+illegal\s+memory\s+access\s+was\s+encountered|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress|misaligned\s+address)",
        Cause("kernel-crash", 0.8, title="the process crashed ({what})", fix=crash_fix()),
        max_matches=1,
    ),
    _rule(
        "fork-after-cuda",
        ("forked",),
        r"Cannot\s+re-initialize\s+CUDA\s+in\s+forked\s+subprocess",
        Cause("cuda-init-before-fork", 0.9),
    ),
    _rule(
        "jax-fork-warning",
        ("fork",),
        r"os\.fork\(\)\s+was\s+called\.\s+os\.fork\(\)\s+is\s+incompatible\s+with\s+multithreaded\s+code,?\s+and\s+JAX\s+is\s+multithreaded",
        Cause("cuda-init-before-fork", 0.6, severity="warning", title="os.fork() after JAX started its threads"),
    ),
    _rule(
        "ffi-handler-version",
        ("FFI",),
        r"XLA\s+FFI\s+handler\s+registration\s+for\s+(?P<target>\S{1,256})\s+on\s+platform\s+(?P<platform>\S{1,64})(?:\s+\(canonical\s+\w{1,64}\))?"
        r"\s+failed\s+because\s+the\s+handler's\s+API\s+version\s+\((?P<handler>\d+\.\d+)\)\s+is\s+incompatible\s+with\s+the"
        r"\s+framework's\s+API\s+version\s+\((?P<framework>\d+\.\d+)\)",
        Cause("ffi-api-skew", 0.95, title="`{target}` was built for FFI API {handler}, the runtime implements {framework}"),
    ),
    _rule(
        "ffi-struct-size",
        ("FFI", "Unexpected"),
        r"Unexpected\s+(?P<struct>\S{1,128})\s+size:\s*expected\s+(?:at\s+least\s+)?(?P<expected>\d+),?\s+got\s+(?P<got>\d+)\.?"
        r"\s+Check\s+installed\s+software\s+versions\.?(?:\s+The\s+framework\s+XLA\s+FFI\s+API\s+version\s+is\s+(?P<framework>\d+\.\d+))?",
        Cause("ffi-api-skew", 0.9, title="FFI struct {struct} has another size than the runtime expects"),
    ),
    _rule(
        "stream-capture",
        ("capturing", "Capture", "CAPTURE"),
        r"(?P<msg>operation\s+not\s+permitted\s+when\s+stream\s+is\s+capturing|cudaErrorStreamCapture\w+|CUDA_ERROR_STREAM_CAPTURE_\w+)",
        Cause("host-sync-in-handler", 0.75, severity="error"),
    ),
    _rule(
        "nvcc-missing",
        ("nvcc",),
        r"(?P<msg>nvcc:\s*(?:command\s+)?not\s+found|No\s+such\s+file\s+or\s+directory:\s*'nvcc'|no\s+nvcc\s+found)",
        Cause("nvcc-missing", 0.9),
    ),
    _rule(
        "no-gpu",
        ("CUDA-", "CUDA_ERROR_NO_DEVICE", "initialize backend", "NVIDIA-SMI"),
        r"(?P<msg>no\s+CUDA-capable\s+device\s+is\s+detected|CUDA_ERROR_NO_DEVICE|Unable\s+to\s+initialize\s+backend\s+'cuda'"
        r"|a\s+CUDA-enabled\s+jaxlib\s+is\s+not\s+installed|NVIDIA-SMI\s+has\s+failed)",
        Cause("no-gpu", 0.8),
    ),
    _rule(
        "template-stub",
        ("static-global-template-stub",),
        r"(?P<msg>static-global-template-stub=true[^.]{0,200}must\s+have\s+a\s+definition\s+in\s+the\s+current\s+translation\s+unit)",
        Cause("template-stub-link", 0.9),
    ),
)
