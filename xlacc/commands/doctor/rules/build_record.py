"""Version skew between a library and the runtime that loads it: the build record ``xlacc build``
compiled into the library (the FFI API version of its headers, their jaxlib, its CUDA) against
the jaxlib, jax CUDA plugin and driver installed here. The one home of that comparison: doctor's
library and project checks and run-smoke call :func:`library_skew`.

The runtime is read without importing jax: jaxlib's version from its package metadata, the FFI
API it implements from its installed ``xla/ffi/api/c_api.h``. A jax CUDA plugin of another release
than jaxlib is reported by the environment check, not here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from xlacc.commands.doctor.rules import environment
from xlacc.commands.doctor.section import Section
from xlacc.ground.report import Finding
from xlacc.readers import build_record, elf

SECTION_NAME = "built against"
DRIVER_CUDA = re.compile(r"CUDA Version:\s*(\d+)\.(\d+)")
PLUGIN_CUDA = re.compile(r"jax-cuda(\d+)-")
REBUILD = "`xlacc build --force` (without --ffi-include: the running jaxlib's own headers)"


@dataclass
class Runtime:
    """What would load the library here."""

    jaxlib: str | None  # None: not installed
    ffi_api: tuple[int, int] | None
    plugins: dict[str, str] = field(default_factory=dict)  # jax CUDA plugin -> version
    driver_cuda: tuple[int, int] | None = None  # the newest CUDA the driver runs; None: no driver seen


def runtime(with_driver: bool = False) -> Runtime:
    include = environment.jaxlib_include()
    plugins = {name: v for name in environment.CUDA_PLUGINS if (v := environment.package_version(name))}
    return Runtime(
        jaxlib=environment.package_version("jaxlib"),
        ffi_api=environment.ffi_api_version(include) if include else None,
        plugins=plugins,
        driver_cuda=driver_cuda() if with_driver else None,
    )


def driver_cuda() -> tuple[int, int] | None:
    """The CUDA version the driver supports, from nvidia-smi's banner; None without a driver."""
    smi = environment.find_executable("nvidia-smi")
    answer = environment.run_command([smi]) if smi else None
    found = DRIVER_CUDA.search(answer[1]) if answer and answer[0] == 0 else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def library_skew(path: Path) -> tuple[dict[str, str] | None, list[Finding]]:
    """The library's build record (None when it has none) and where it disagrees with the runtime."""
    record = build_record.read_record(path)
    if record is None:
        return None, []
    return record, skew_findings(record, runtime(with_driver=record["cuda"] != build_record.NONE), path.name)


def section(path: Path) -> Section:
    """Doctor's line for a library: what it was built against, and any skew."""
    try:
        record, findings = library_skew(path)
    except elf.ElfError as exc:
        return Section(SECTION_NAME, f"not read ({exc})", skipped=True)
    if record is None:
        return Section(SECTION_NAME, "no build record (not built by `xlacc build`, or before it recorded one): versions not compared", skipped=True)
    return Section(SECTION_NAME, describe(record), findings)


def describe(record: dict[str, str]) -> str:
    parts = []
    if record["ffi_api"] != build_record.NONE:
        parts.append(f"FFI API {record['ffi_api']} (headers of jaxlib {_jaxlib(record)})")
    if record["cuda"] != build_record.NONE:
        parts.append(f"CUDA {record['cuda']}")
    return ", ".join(parts) or "no FFI headers, no CUDA"


def _jaxlib(record: dict[str, str]) -> str:
    return record["jaxlib"] if record["jaxlib"] != build_record.NONE else "unknown (--ffi-include)"


def skew_findings(record: dict[str, str], here: Runtime, library: str = "the library") -> list[Finding]:
    return _ffi_findings(record, here, library) + _cuda_findings(record, here, library)


def _version(text: str) -> tuple[int, ...] | None:
    numbers = environment.release(text)
    return numbers or None


def _ffi_findings(record: dict[str, str], here: Runtime, library: str) -> list[Finding]:
    built = _version(record["ffi_api"])
    if built is None or len(built) < 2 or here.jaxlib is None or here.ffi_api is None:
        return []
    built_api, runs_api = built[:2], here.ffi_api
    built_by = f"{library} was built against FFI API {record['ffi_api']} (headers of jaxlib {_jaxlib(record)})"
    runs = f"the running jaxlib {here.jaxlib} implements FFI API {runs_api[0]}.{runs_api[1]}"
    if built_api[0] != runs_api[0] or built_api[1] > runs_api[1]:
        return [environment.version_skew(f"{built_by}; {runs}: it refuses the library's handlers (`No FFI handler registered`)",
                     title=f"{library} was built for FFI API {record['ffi_api']}, jaxlib {here.jaxlib} implements {runs_api[0]}.{runs_api[1]}",
                     fix=_fix(record, here, newer_headers=built_api > runs_api), likelihood=0.9)]
    if record["jaxlib"] not in (build_record.NONE, here.jaxlib) or built_api != runs_api:
        return [environment.version_skew(f"{built_by}; {runs}, which accepts it: the FFI keeps older handlers working within a major version",
                     title=f"{library} was built against jaxlib {_jaxlib(record)}'s headers, jaxlib {here.jaxlib} runs it",
                     fix=f"Nothing needed while it registers and runs; if it does not, rebuild it: {REBUILD}.",
                     severity="info", likelihood=0.3)]
    return []


def _fix(record: dict[str, str], here: Runtime, newer_headers: bool) -> str:
    """Which side to change: the library (rebuild) or the runtime (jaxlib to the headers' release)."""
    rebuild = f"Rebuild the library against the running jaxlib {here.jaxlib}: {REBUILD}."
    if record["jaxlib"] == build_record.NONE:
        keep = "To keep this library (a prebuilt wheel), install the jaxlib whose headers built it"
    else:
        direction = "upgrade" if newer_headers else "downgrade"
        plugin = ", and the jax CUDA plugin of that release" if here.plugins else ""
        keep = f"To keep this library (a prebuilt wheel), {direction} jax and jaxlib to {record['jaxlib']} (`pip install jax=={record['jaxlib']} jaxlib=={record['jaxlib']}`){plugin}"
    return f"{rebuild} {keep}."


def _cuda_findings(record: dict[str, str], here: Runtime, library: str) -> list[Finding]:
    built = _version(record["cuda"])
    if built is None:
        return []
    findings = []
    if here.driver_cuda is not None and built[:2] > here.driver_cuda:
        driver = f"{here.driver_cuda[0]}.{here.driver_cuda[1]}"
        findings.append(environment.version_skew(f"{library} was built with CUDA {record['cuda']} (nvcc); the driver here runs CUDA {driver} at most: "
                             "its kernels will not load (`cudaErrorInsufficientDriver`, `the provided PTX was compiled with an unsupported toolchain`)",
                             title=f"{library} needs a newer driver than this one (CUDA {record['cuda']} > {driver})",
                             fix=f"Upgrade the NVIDIA driver to one for CUDA {record['cuda']}, or rebuild with an nvcc of CUDA {driver} or older (`xlacc build --force --nvcc PATH`).",
                             likelihood=0.8))
    for plugin, version in here.plugins.items():
        plugin_cuda = PLUGIN_CUDA.match(plugin)
        if plugin_cuda and int(plugin_cuda.group(1)) != built[0]:
            findings.append(environment.version_skew(f"{library} was built with CUDA {record['cuda']} (nvcc); jax runs {plugin} {version}, on CUDA {plugin_cuda.group(1)}: "
                                 "two CUDA majors in one process (streams and buffers jax hands the handler come from the other runtime)",
                                 title=f"{library} was built with CUDA {built[0]}, jax runs CUDA {plugin_cuda.group(1)}",
                                 fix=f"Rebuild with an nvcc of CUDA {plugin_cuda.group(1)} (`xlacc build --force --nvcc PATH`), "
                                     f"or, to keep this library, install jax's CUDA {built[0]} plugin (`pip install -U \"jax[cuda{built[0]}]\"`).",
                                 severity="warning", likelihood=0.6))
    return findings
