"""xlacc from Python, for notebooks and build scripts, in the way of torch's ``cpp_extension.load``.

    import xlacc
    add_op = xlacc.load("add_op")             # builds when stale, imports the op's package
    out = add_op.jax.add_op(x, y)

``build`` and ``doctor`` return the Report the command line renders (``report.failed``,
``report.checks``, ``report.findings``, ``report.to_json()``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from xlacc.ground.errors import XlaccError
from xlacc.ground.report import Report


class BuildError(XlaccError):
    """``load`` could not build the library; ``report`` holds the compiler's errors."""

    def __init__(self, report: Report):
        lines = [f"{f.code}: {f.title}\n{f.evidence}" for f in report.findings if f.severity == "error"]
        super().__init__(f"{report.title} failed\n" + "\n".join(lines))
        self.report = report


def build(project: str | Path = ".", *, force: bool = False, arch: str | None = None) -> Report:
    """Build a project (when its cache is stale, or always with ``force``) and verify the library."""
    from xlacc.commands.build import builder

    return builder.run(builder.BuildRequest(paths=[Path(project)], archs=arch, force=force))


def load(project: str | Path = ".", *, force: bool = False) -> ModuleType:
    """Build the project when stale and import its Python package (``NAME``, with ``NAME.jax`` and
    ``NAME.torch`` importing on first use). Raises BuildError when the build fails."""
    from xlacc import spec as spec_mod

    spec = spec_mod.load(Path(project))
    report = build(spec.root, force=force)
    if report.failed:
        raise BuildError(report)
    root = str(spec.root.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    importlib.invalidate_caches()
    return importlib.import_module(spec.package)


def doctor(*paths: str | Path, so: str | Path | None = None, log: str | Path | None = None, symbols: tuple[str, ...] = ()) -> Report:
    """Diagnose sources, folders or projects, a shared object, a log; the environment with no argument."""
    from xlacc.commands.doctor import engine

    request = engine.DoctorRequest([Path(p) for p in paths], so=Path(so) if so else None, symbols=list(symbols), log=str(log) if log else None)
    return engine.run(request)
