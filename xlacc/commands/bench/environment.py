"""What the numbers were measured on, read in the bench child: the device, its driver and clocks,
jax, jaxlib, CUDA and cuDNN, Python, XLA_FLAGS. Anything unreadable is left out, never guessed."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

SMI_FIELDS = ("name", "driver_version", "memory.total", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem")
SMI_TIMEOUT = 10


def collect(device: Any) -> dict[str, Any]:
    import jax  # lazy: jax only in the bench child
    import jaxlib  # lazy: jax only in the bench child

    found: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "device": str(getattr(device, "device_kind", device)),
        "platform": device.platform,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
    }
    if device.platform == "gpu":
        found.update(cuda_versions())
        found.update(nvidia_smi(getattr(device, "local_hardware_id", None) or 0))
        found["sms"] = getattr(device, "core_count", None)
    else:
        found["cpu"] = cpu_name()
    return {k: v for k, v in found.items() if v not in (None, "")}


def cuda_versions() -> dict[str, Any]:
    """CUDA runtime and cuDNN as jaxlib's CUDA plugin reports them (a private module: guarded)."""
    try:
        from jax._src.lib import cuda_versions as versions  # lazy: jax only in the bench child
    except ImportError:
        return {}
    if versions is None:
        return {}
    found = {}
    for key, name in (("cuda_runtime", "cuda_runtime_get_version"), ("cudnn", "cudnn_get_version"), ("cuda_driver_api", "cuda_driver_get_version")):
        try:
            found[key] = _version_text(getattr(versions, name)())
        except Exception:  # a function this jaxlib lacks or that fails: left out
            continue
    return found


def _version_text(number: int) -> str:
    """12080 -> 12.8; cuDNN's 91900 -> 9.19.0."""
    if number >= 90000 or number < 10000:  # cuDNN 9: major*10000 + minor*100 + patch
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 10}"


def nvidia_smi(index: int) -> dict[str, str]:
    if shutil.which("nvidia-smi") is None:
        return {}
    try:
        done = subprocess.run(["nvidia-smi", f"--id={index}", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=SMI_TIMEOUT)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = [v.strip() for v in done.stdout.strip().split(",")]
    if done.returncode != 0 or len(values) != len(SMI_FIELDS):
        return {}
    named = dict(zip(SMI_FIELDS, values))
    return {
        "gpu_name": named["name"],
        "driver": named["driver_version"],
        "memory": named["memory.total"],
        "clocks": f"SM {named['clocks.sm']} (max {named['clocks.max.sm']}), memory {named['clocks.mem']} (max {named['clocks.max.mem']})",
    }


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_cache_mib() -> float | None:
    """The largest cache of CPU 0 (Linux sysfs), in MiB; None where it cannot be read."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = entry.read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 / 1024, "M": 1.0, "G": 1024.0}.get(text[-1:], None)
        if scale is not None and text[:-1].isdigit():
            sizes.append(int(text[:-1]) * scale)
    return max(sizes) if sizes else None
