"""The environment: Python, jax and its CUDA plugin, torch and torch_xla, torchax (and whether its
torch and jax are a tested set), PJRT_DEVICE, nvcc, the driver and GPUs, XLA_FLAGS, and whether the
FFI headers a build would use match the runtime.

Versions come from package metadata, never from importing jax or torch; only when a GPU is visible
and a jax CUDA plugin installed does a child process ask jax which devices it sees. Each probe is a
small module-level function, so tests can hand in another environment.

What ffi-api-skew covers here: the FFI API version (XLA_FFI_API_MAJOR/MINOR) of jaxlib's own
headers, which is what jaxlib accepts, against every other copy of ``xla/ffi/api/c_api.h`` that a
compiler would pick up from $CPATH, $CPLUS_INCLUDE_PATH or $C_INCLUDE_PATH; and a jax CUDA plugin
whose release differs from jaxlib's. A built library's own headers are compared by
``rules/build_record`` (from the record ``xlacc build`` compiles in); for libraries without one, the
error texts are matched instead.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from xlacc.commands.doctor.guard import run_rule
from xlacc.commands.doctor.rules import error_text as text
from xlacc.commands.doctor.section import Section
from xlacc.ground import toolchain
from xlacc.ground.catalogue import make
from xlacc.ground.errors import XlaccError
from xlacc.ground.report import Finding

CUDA_PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin", "jax-cuda13-pjrt", "jax-cuda12-pjrt")
INCLUDE_PATH_VARIABLES = ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH")
FFI_C_API = Path("xla/ffi/api/c_api.h")
FFI_VERSION = re.compile(r"#define\s+XLA_FFI_API_(MAJOR|MINOR)\s+(\d+)")
TORCH_XLA_WITHOUT_CUDA = (2, 8)  # CUDA deprecated in 2.8 (no wheels), removed in 2.9
NVIDIA_SMI_QUERY = ["--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"]
JAX_DEVICES_CODE = "import jax; print(' '.join(sorted({d.platform for d in jax.devices()})))"
XLA_FLAGS_CODE = "import jax; jax.devices('cpu')"  # XLA parses XLA_FLAGS as its first backend starts
PROBE_TIMEOUT_S = 5.0  # a tool that answers at once; a hung one must not hold doctor past its budget
JAX_TIMEOUT_S = 120.0
# The releases torchax was tested with by xlacc (pyproject's torchax extra pins torchax and bounds
# torch and jax to these): torchax imports private jax modules, so another jax may break it.
TORCHAX_TESTED = {"torchax": ("0.0.13",), "torch": ("2.9", "2.11"), "jax": ("0.10.2", "0.11.2")}
# Settings that keep jax from taking most of the GPU up front, which torch's allocator then lacks.
JAX_ALLOCATOR_SETTINGS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR")


# -- probes (replaced in tests) -----------------------------------------------------------------


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def torch_xla_version() -> str | None:
    return package_version("torch_xla") or package_version("torch-xla")


def module_source_version(module: str) -> str | None:
    """The `__version__` written in a package's __init__.py, read without importing it (torchax's
    import pulls in torch and jax): what runs, where the metadata says what pip installed."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith("__init__.py"):
        return None
    try:
        source = Path(spec.origin).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", source, re.M)
    return found.group(1) if found else None


def find_executable(name: str) -> str | None:
    return shutil.which(name)


def run_command(argv: list[str], timeout: float = PROBE_TIMEOUT_S) -> tuple[int, str] | None:
    """(exit code, stdout + stderr), or None when it could not run or timed out (then its whole
    group is stopped)."""
    answer = toolchain.probe(argv, timeout=timeout)
    return None if answer.returncode is None else (answer.returncode, answer.output)


def nvcc_compiler():
    return toolchain.find_nvcc()


def host_compiler():
    return toolchain.find_host_cxx()


def jaxlib_include() -> Path | None:
    return toolchain.jaxlib_include()


# -- helpers ------------------------------------------------------------------------------------


def release(version: str | None) -> tuple[int, ...]:
    """``2.9.0+cpu`` -> (2, 9, 0); unparsable parts end the tuple."""
    numbers = []
    for part in re.split(r"[.+]", version or ""):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)


def ffi_api_version(include_dir: Path) -> tuple[int, int] | None:
    try:
        text = (include_dir / FFI_C_API).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = dict(FFI_VERSION.findall(text))
    if "MAJOR" not in found or "MINOR" not in found:
        return None
    return int(found["MAJOR"]), int(found["MINOR"])


def visible_gpus() -> list[tuple[str, str, str]] | None:
    """(name, sm_XY, driver) per GPU; None when nvidia-smi is absent or fails."""
    smi = find_executable("nvidia-smi")
    if smi is None:
        return None
    result = run_command([smi, *NVIDIA_SMI_QUERY])
    if result is None or result[0] != 0:
        return None
    gpus = []
    for line in result[1].splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and re.fullmatch(r"\d+\.\d+", parts[1]):
            gpus.append((parts[0], "sm_" + parts[1].replace(".", ""), parts[2]))
    return gpus


# -- checks -------------------------------------------------------------------------------------


def python_section() -> Section:
    return Section("Python", f"{sys.version.split()[0]} at {sys.executable}")


def jax_section(gpus: list | None) -> Section:
    jax, jaxlib = package_version("jax"), package_version("jaxlib")
    if jax is None:
        return Section("jax", "not installed", skipped=True)
    plugins = {name: v for name in CUDA_PLUGINS if (v := package_version(name))}
    plugin_text = ", ".join(f"{n} {v}" for n, v in plugins.items()) or "no CUDA plugin"
    section = Section("jax", f"jax {jax}, jaxlib {jaxlib or 'missing'}, {plugin_text}")
    for name, version in plugins.items():
        if jaxlib and release(version) != release(jaxlib):
            section.findings.append(
                make(
                    "ffi-api-skew",
                    f"{name} {version} with jaxlib {jaxlib}: the plugin must be jaxlib's exact release",
                    title="the jax CUDA plugin and jaxlib are different releases",
                    likelihood=0.8,
                )
            )
    if gpus:
        section.findings.extend(_jax_sees_gpu(plugins))
    return section


def _jax_sees_gpu(plugins: dict[str, str]) -> list:
    if not plugins:
        return [
            make(
                "no-gpu",
                "a GPU is visible, but no jax CUDA plugin is installed: jax runs on the CPU",
                title="jax will not use the GPU",
                fix="`pip install -U \"jax[cuda13]\"` (or jax[cuda12] for a CUDA 12 driver).",
                likelihood=0.8,
            )
        ]
    result = run_command([sys.executable, "-c", JAX_DEVICES_CODE], timeout=JAX_TIMEOUT_S)
    if result is not None and result[0] == 0 and "gpu" in result[1].split():
        return []
    said = " ".join((result[1] if result else "timed out").split())[-300:]
    return [
        make(
            "no-gpu",
            f"a GPU is visible and a CUDA plugin installed, but jax.devices() says: {said}",
            title="jax does not see the GPU",
            fix="Match the plugin to the driver (`nvidia-smi` shows the CUDA version it supports) and to jaxlib's release.",
            likelihood=0.7,
        )
    ]


def ffi_headers_section() -> Section:
    include = jaxlib_include()
    if include is None:
        return Section("XLA FFI headers", "jaxlib not installed (no headers)", skipped=True)
    runtime = ffi_api_version(include)
    runtime_text = f"{runtime[0]}.{runtime[1]}" if runtime else "unknown"
    section = Section("XLA FFI headers", f"jaxlib's FFI API {runtime_text} at {include}")
    for variable in INCLUDE_PATH_VARIABLES:
        for directory in filter(None, os.environ.get(variable, "").split(os.pathsep)):
            other = ffi_api_version(Path(directory))
            if other is None or Path(directory).resolve() == include.resolve() or other == runtime:
                continue
            section.findings.append(
                make(
                    "ffi-api-skew",
                    f"${variable} puts {Path(directory) / FFI_C_API} (FFI API {other[0]}.{other[1]}) on the include path; "
                    f"the runtime jaxlib implements FFI API {runtime_text}",
                    likelihood=0.8,
                )
            )
    return section


def torch_section() -> Section:
    torch, torch_xla = package_version("torch"), torch_xla_version()
    if torch_xla is None:
        return Section("torch_xla", f"not installed (torch {torch})" if torch else "not installed", skipped=True)
    section = Section("torch_xla", f"torch {torch or 'missing'}, torch_xla {torch_xla}")
    if release(torch)[:2] != release(torch_xla)[:2]:
        section.findings.append(
            make(
                "torch-xla-version-mismatch",
                f"torch {torch or 'not installed'} with torch_xla {torch_xla}: torch_xla {'.'.join(map(str, release(torch_xla)[:2]))}.* "
                "needs the same torch release",
                fix=f"`pip install torch=={torch_xla.split('+')[0]} torch_xla=={torch_xla.split('+')[0]}`",
                likelihood=0.9,
            )
        )
    if release(torch_xla)[:2] >= TORCH_XLA_WITHOUT_CUDA:
        wants_cuda = os.environ.get("PJRT_DEVICE", "").upper() in ("CUDA", "GPU")
        section.findings.append(
            make(
                "torch-xla-no-cuda",
                f"torch_xla {torch_xla} has no XLA:CUDA backend (deprecated in 2.8, removed in 2.9)"
                + ("; PJRT_DEVICE=" + os.environ["PJRT_DEVICE"] + " asks for it" if wants_cuda else ""),
                severity="error" if wants_cuda else None,  # else the catalogue's: information
                likelihood=0.8,
            )
        )
    return section


def torchax_section(gpus: list | None) -> Section:
    """torchax with the torch and jax it runs on: whether xlacc tested that set, and whether jax
    would take the GPU memory torch's allocator needs."""
    versions = {name: package_version(name) for name in TORCHAX_TESTED}
    if versions["torchax"] is None:
        return Section("torchax", "not installed", skipped=True)
    listed = ", ".join(f"{name} {version or 'missing'}" for name, version in versions.items())
    untested = [f"{name} {version}" for name, version in versions.items() if not _tested(name, version)]
    if untested:
        tested = "; ".join(f"{name} {', '.join(releases)}" for name, releases in TORCHAX_TESTED.items())
        detail = (
            f"{listed}: {', '.join(untested)} drift from the tested releases ({tested}); torchax imports private jax "
            "modules, so if it fails to import or lower, install a tested set (`pip install 'xlacc[torchax]'`)"
        )
    else:
        detail = f"{listed}: a tested set"
    section = Section("torchax", detail)
    running = module_source_version("torchax")
    if running and running != versions["torchax"]:
        torch_xla = torch_xla_version()
        section.findings.append(
            make(
                "torchax-shadowed",
                f"pip lists torchax {versions['torchax']} but the torchax package on disk is {running}"
                + (f": torch_xla {torch_xla} ships that copy and was installed after it" if torch_xla else ""),
                fix=f"`pip install --force-reinstall --no-deps torchax=={versions['torchax']}`",
                likelihood=0.95,
            )
        )
    if gpus and versions["torch"] and not any(os.environ.get(name) for name in JAX_ALLOCATOR_SETTINGS):
        section.findings.append(
            make(
                "jax-preallocation",
                "torchax runs torch and jax in one process and none of "
                f"{', '.join(JAX_ALLOCATOR_SETTINGS)} is set: jax will take most of the GPU's memory when it starts",
                severity="warning",
                likelihood=0.5,
            )
        )
    return section


def _tested(name: str, version: str | None) -> bool:
    if version is None:
        return False
    got = release(version)
    return any(got[: len(release(tested))] == release(tested) for tested in TORCHAX_TESTED[name])


def xla_flags_section() -> Section:
    """XLA_FLAGS as set, tried where jaxlib is installed: XLA aborts every program on a flag it does not know."""
    value = os.environ.get("XLA_FLAGS")
    if not value or package_version("jaxlib") is None:
        return variable_section("XLA_FLAGS")
    result = run_command([sys.executable, "-c", XLA_FLAGS_CODE], timeout=JAX_TIMEOUT_S)
    if result is None or result[0] == 0:
        return Section("XLA_FLAGS", value)

    return Section("XLA_FLAGS", value, findings=[f for f in text.diagnose_text(result[1]) if f.code == "xla-flags-invalid"])


def variable_section(name: str) -> Section:
    value = os.environ.get(name)
    return Section(name, value if value else "unset", skipped=not value)


def nvcc_section() -> Section:
    try:
        nvcc = nvcc_compiler()
    except XlaccError as exc:
        found = find_executable("nvcc") is not None or "not answer" in str(exc) or "failed" in str(exc)
        if found:
            return Section("nvcc", "found, but it does not work", findings=[make("nvcc-missing", str(exc), title="nvcc does not work", likelihood=0.9)])
        return Section("nvcc", "not found", findings=[make("nvcc-missing", str(exc), likelihood=0.9)])
    passed_over = "".join(f"; {note}" for note in nvcc.notes)  # a $CUDA_HOME that holds no nvcc, ...
    return Section("nvcc", f"{nvcc.version} (CUDA {'.'.join(nvcc.version.split('.')[:2])}) at {nvcc.path}, via {nvcc.source}{passed_over}")


def host_compiler_section() -> Section:
    """The host C++ compiler: cpu projects build with it, and nvcc hands it every project's host code."""
    try:
        cxx = host_compiler()
    except XlaccError as exc:
        return Section("host C++ compiler", f"{exc}; nvcc needs one for the host code of cuda projects too", failed=True)
    return Section("host C++ compiler", f"{cxx.kind} {cxx.version} at {cxx.path}, via {cxx.source}")


def gpu_section(gpus: list | None) -> Section:
    if not gpus:
        if find_executable("nvidia-smi") is None:
            evidence = "nvidia-smi not found"
        else:
            evidence = "nvidia-smi lists no GPU" if gpus == [] else f"nvidia-smi did not answer in {PROBE_TIMEOUT_S:g} s, or failed"
        return Section("GPUs", "none", findings=[make("no-gpu", evidence, likelihood=0.9)], skipped=True)
    listed = "; ".join(f"{name} ({arch})" for name, arch, _ in gpus)
    return Section("GPUs", f"{listed}; driver {gpus[0][2]}")


def check_environment() -> list[Section]:
    gpus = visible_gpus()
    sections = [
        ("Python", python_section, ()),
        ("jax", jax_section, (gpus,)),
        ("XLA FFI headers", ffi_headers_section, ()),
        ("torch_xla", torch_section, ()),
        ("torchax", torchax_section, (gpus,)),
        ("PJRT_DEVICE", variable_section, ("PJRT_DEVICE",)),
        ("nvcc", nvcc_section, ()),
        ("host C++ compiler", host_compiler_section, ()),
        ("GPUs", gpu_section, (gpus,)),
        ("XLA_FLAGS", xla_flags_section, ()),
    ]
    return [_guarded(name, section, *args) for name, section, args in sections]


def _guarded(name: str, section: Callable[..., Section], *args) -> Section:
    """One section of the environment; a check that raises is a rule-crashed finding in its place."""
    crashes: list[Finding] = []
    done = run_rule(section, *args, empty=None, crashes=crashes)
    return done if done is not None else Section(name, "not checked", crashes)


# -- what run-smoke's harnesses saw: they hand it here, in their own words (``context``) ----------


def framework_sees_no_gpu(project: str, framework: str, devices: str, context: str) -> Finding:
    """no-gpu for a cuda project whose framework, in run-smoke's child process, lists only ``devices``."""
    return make("no-gpu", f"{project} is a cuda project and {framework} sees no GPU here (devices: {devices})", context=context)


def torch_xla_cannot_run(version: str, device_type: str, ran_through_jaxlib: bool, context: str) -> Finding:
    """torch-xla-no-cuda for a torch_xla that cannot register a custom call: its program went through
    jaxlib instead (``ran_through_jaxlib``), or only its lowering was checked."""
    without = f"torch_xla {version}, PJRT device {device_type}: it cannot register custom-call targets"
    if ran_through_jaxlib:
        return make("torch-xla-no-cuda", f"{without}; the program it emitted ran through jaxlib's XLA instead", context=context)
    return make("torch-xla-no-cuda", f"{without}; only the lowering was checked (running its program through jaxlib needs a GPU)", context=context)


def version_skew(evidence: str, **worded) -> Finding:
    """ffi-api-skew for a built library whose record (``rules.build_record`` reads it) disagrees with
    this runtime: one code for every side of the skew, made here."""
    return make("ffi-api-skew", evidence, **worded)
